package fixturehost

import (
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/rocectl/rocectl/internal/testkit/dirtree"
	"github.com/rocectl/rocectl/nic/nictest"
	"github.com/rocectl/rocectl/nic/snapshot"
)

// RepoRoot is the directory holding rocectl's go.mod.
func RepoRoot() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..", "..")
}

// Dir is the path of a committed fixture host.
func Dir(name string) string { return filepath.Join(RepoRoot(), "testdata", "hosts", name) }

// Copy copies testdata/hosts/<name> into a fresh temporary directory and
// returns that root with a Sim holding the host's kernel state.
func Copy(t testing.TB, name string) (string, *nictest.Sim) {
	t.Helper()
	s, err := snapshot.Open(Dir(name))
	if err != nil {
		t.Fatal(err)
	}
	root := t.TempDir()
	if err := CopyTree(Dir(name), root); err != nil {
		t.Fatal(err)
	}
	sim := nictest.NewSim(s.State())
	setSpeeds(root, sim)
	setSlaves(root, sim)
	return root, sim
}

// setSlaves tells the simulator each bond's slaves, from the host's sysfs
// (sys/class/net/<slave>/master).
func setSlaves(root string, sim *nictest.Sim) {
	links, _ := filepath.Glob(filepath.Join(root, "sys", "class", "net", "*", "master"))
	slaves := map[string][]string{}
	for _, l := range links {
		if target, err := os.Readlink(l); err == nil {
			bond := filepath.Base(target)
			slaves[bond] = append(slaves[bond], filepath.Base(filepath.Dir(l)))
		}
	}
	for bond, ss := range slaves {
		sort.Strings(ss)
		sim.SetSlaves(bond, ss...)
	}
}

// setSpeeds gives the simulated links the speeds the host's sysfs
// reports: the driver models compute with them (mlx5's xoff), and the
// planner with what discovery reads there; a simulator at another speed
// (its default is 100 Gb/s) would check a ConnectX-7 at 400 Gb/s against
// a quarter of what the driver needs.
func setSpeeds(root string, sim *nictest.Sim) {
	files, _ := filepath.Glob(filepath.Join(root, "sys", "class", "net", "*", "speed"))
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		if mbps, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil && mbps > 0 {
			sim.SetSpeed(filepath.Base(filepath.Dir(f)), mbps)
		}
	}
}

// CopyTree copies src into dst (which must exist), keeping symlinks as links.
func CopyTree(src, dst string) error {
	return filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		out := filepath.Join(dst, rel)
		switch {
		case d.Type()&fs.ModeSymlink != 0:
			target, err := os.Readlink(p)
			if err != nil {
				return err
			}
			return os.Symlink(target, out)
		case d.IsDir():
			return os.MkdirAll(out, 0o755)
		default:
			data, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			return os.WriteFile(out, data, 0o644)
		}
	})
}

// Tree returns every file's content and every link's target under root,
// by relative path: two trees are byte-identical when their Trees are equal.
func Tree(t testing.TB, root string) map[string]string {
	t.Helper()
	tree, err := ReadTree(root)
	if err != nil {
		t.Fatal(err)
	}
	return tree
}

// ReadTree is Tree for programs (benchmarks) that have no testing.TB.
// Links are recorded, not followed: sysfs trees loop.
func ReadTree(root string) (map[string]string, error) { return dirtree.Read(root) }

// DiffTrees lists the paths whose content differs, sorted.
func DiffTrees(a, b map[string]string) []string {
	var out []string
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			out = append(out, k)
		}
	}
	for k := range b {
		if _, ok := a[k]; !ok {
			out = append(out, k)
		}
	}
	sort.Strings(out)
	return out
}

// Files is Tree with one kernel fact folded in, for comparing a host's
// files before and after a change: clearing OFED's forced traffic class is
// a write of -1, after which the kernel shows an empty attribute (mlx5
// main_ext.c traffic_class_show); a plain file keeps the "-1". Both read as
// "not forced".
func Files(t testing.TB, root string) map[string]string {
	tree := Tree(t, root)
	for k, v := range tree {
		if strings.HasSuffix(k, "/traffic_class") && v == "-1\n" {
			tree[k] = ""
		}
	}
	return tree
}
