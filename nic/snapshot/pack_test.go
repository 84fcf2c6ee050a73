package snapshot_test

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/rocectl/rocectl/internal/testkit/fixturehost"
	"github.com/rocectl/rocectl/nic"
	"github.com/rocectl/rocectl/nic/snapshot"
)

// linkChain is 41 links, chain/c0 -> c1 -> ... -> c40 -> the file nl:
// following c0 takes 41 links, one more than the kernel follows in one
// lookup (ELOOP), c1 takes 40.
func linkChain() []packEntry {
	var out []packEntry
	for i := range 41 {
		next := fmt.Sprintf("c%d", i+1)
		if i == 40 {
			next = "../nl"
		}
		out = append(out, packEntry{p: fmt.Sprintf("home/alice/chain/c%d", i), link: next})
	}
	return out
}

// packEntry is a file (data) or symlink (link) that packedAndTree adds.
type packEntry struct{ p, link, data string }

// packedAndTree copies the fixture host twice, adds files outside /sys
// and symlinks that test resolution at its edges, and packs one copy.
// It returns both snapshots' FSes and the host paths of the tree.
func packedAndTree(t *testing.T, host string, extra ...packEntry) (tree, packed nic.FS, paths []string) {
	t.Helper()
	dirs := [2]string{filepath.Join(t.TempDir(), "tree"), filepath.Join(t.TempDir(), "packed")}
	for _, d := range dirs {
		if err := fixturehost.CopyTree(fixturehost.Dir(host), d); err != nil {
			t.Fatal(err)
		}
		for _, e := range append([]packEntry{
			{p: "etc/nccl.conf", data: "NCCL_IB_TC=106\n"},
			{p: "home/alice/.nccl.conf", link: "/etc/nccl.conf"},
			{p: "home/alice/up", link: "../../../../../.."},
			{p: "home/alice/abs", link: "/sys/class/net"},
			{p: "home/alice/loop1", link: "loop2"},
			{p: "home/alice/loop2", link: "loop1"},
			{p: "home/alice/dot", link: "./.././alice/abs/"},
			{p: "home/alice/empty", data: ""},
			{p: "home/alice/nl", data: "a\nb\n\n"},
			{p: "home/alice/tofile", link: "nl/"},
			{p: "home/alice/filedot", link: "nl/../abs"},
			{p: "home/alice/fileself", link: "nl/."},
			// Below a Dir: ".." through a link that stays inside it.
			{p: "sys/t/a/b/f", data: "F\n"},
			{p: "sys/t/a/x", data: "AX\n"},
			{p: "sys/t/x", data: "TX\n"},
			{p: "sys/t/lnk", link: "a/b"},
			{p: "sys/t/up", link: "../class"},
			{p: "sys/t/abs", link: "/sys/t/a"},
		}, append(linkChain(), extra...)...) {
			full := filepath.Join(d, e.p)
			if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
				t.Fatal(err)
			}
			var err error
			if e.link != "" {
				err = os.Symlink(e.link, full)
			} else {
				err = os.WriteFile(full, []byte(e.data), 0o644)
			}
			if err != nil {
				t.Fatal(err)
			}
		}
	}
	// The files the capture could not read are asked for too: both
	// forms answer them with the recorded errno.
	meta, _, err := snapshot.ReadMeta(dirs[0])
	if err != nil {
		t.Fatal(err)
	}
	for _, u := range meta.Unreadable {
		paths = append(paths, strings.SplitN(u, ": ", 2)[0])
	}
	err = filepath.WalkDir(dirs[0], func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dirs[0], p)
		if rel != "." && !slices.Contains([]string{snapshot.MetaFile, snapshot.KernelFile, "README.md"}, rel) {
			paths = append(paths, "/"+filepath.ToSlash(rel))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := snapshot.Pack(dirs[1]); err != nil {
		t.Fatal(err)
	}
	for i, d := range dirs {
		s, err := snapshot.Open(d)
		if err != nil {
			t.Fatal(err)
		}
		if i == 0 {
			tree = s.FS()
		} else {
			packed = s.FS()
		}
	}
	return tree, packed, paths
}

// The FS of a packed snapshot answers every question as the FS of the
// same snapshot as a tree does: each path of the real hosts' fixture trees,
// asked as it is and through "..", ".", a trailing slash, a missing name,
// symlinks to files and directories, out of the root, in a loop. Both
// answers, errors included, are compared with the snapshot's directory
// taken out of them.
func TestPackedSnapshotReadsAsItsTree(t *testing.T) {
	hosts, err := os.ReadDir(filepath.Join(fixturehost.RepoRoot(), "testdata", "hosts"))
	if err != nil {
		t.Fatal(err)
	}
	for _, h := range hosts {
		t.Run(h.Name(), func(t *testing.T) {
			tree, packed, paths := packedAndTree(t, h.Name())
			var asked []string
			for _, p := range paths {
				asked = append(asked, p, p+"/", p+"/.", p+"/..", p+"/../"+path.Base(p), p+"/missing", p+"//x", "/.."+p)
			}
			asked = append(asked, "/", "", ".", "..", "/../..", "/home/alice/up/sys/class",
				"/home/alice/loop1/x", "/home/alice/dot/..", "/sys/class/net/../infiniband/")
			compared := 0
			for i, p := range asked {
				// Reads below a Dir for each path as it is.
				withDir := i < 8*len(paths) && i%8 == 0
				a, b := answers(tree, p, withDir), answers(packed, p, withDir)
				if a != b {
					t.Errorf("%q:\ntree:   %s\npacked: %s", p, a, b)
				}
				compared++
			}
			if compared < 1000 {
				t.Fatalf("only %d paths compared", compared)
			}
			// Reads below a held Dir resolve beneath it first
			// (RESOLVE_BENEATH), from the root when they leave it.
			for _, rel := range []string{"lnk/../x", "lnk/f", "x/../x", "x/", "x/.", "", ".", "..", "../t/x",
				"up/net", "up/..", "abs/x", "/x", "a//b/./f", "a/b/../../x", "missing/..", "lnk/"} {
				a, b := dirAnswers(tree, "/sys/t", rel), dirAnswers(packed, "/sys/t", rel)
				if a != b {
					t.Errorf("Dir(/sys/t) %q:\ntree:   %s\npacked: %s", rel, a, b)
				}
			}
		})
	}
}

// answers is everything an FS says of p, as one text.
func answers(f nic.FS, p string, withDir bool) string {
	var b strings.Builder
	clean := func(err error) string { return errText(f, err) }
	s, err := f.ReadString(p)
	fmt.Fprintf(&b, "read %q %s; ", s, clean(err))
	names, err := f.ReadDir(p)
	// A tree's root holds the snapshot's own files beside the host's.
	names = slices.DeleteFunc(names, func(n string) bool {
		return slices.Contains([]string{snapshot.MetaFile, snapshot.KernelFile, "README.md"}, n)
	})
	fmt.Fprintf(&b, "list %q %s; ", names, clean(err))
	fmt.Fprintf(&b, "exists %v; ", f.Exists(p))
	l, err := f.Readlink(p)
	fmt.Fprintf(&b, "readlink %q %s; ", l, clean(err))
	r, err := f.Resolve(p)
	fmt.Fprintf(&b, "resolve %q %s; ", r, clean(err))
	d := f.Dir(p)
	real, found := d.Resolved()
	fmt.Fprintf(&b, "dir %q %v; ", real, found)
	for _, rel := range withDirRels[:len(withDirRels)*boolInt(withDir)] {

		s, err := d.ReadString(rel)
		r, rerr := d.Resolve(rel)
		fmt.Fprintf(&b, "dir/%s %q %s %v %q %s; ", rel, s, clean(err), d.Exists(rel), r, clean(rerr))
	}
	d.Close()
	if in, err := f.OpenFileIn(p); err != nil {
		fmt.Fprintf(&b, "filein %s", clean(err))
	} else {
		data, st, err := in.Read()
		_, serr := in.Stat()
		fmt.Fprintf(&b, "filein %q %o %s %s", data, st.Mode, clean(err), clean(serr))
		in.Close()
	}
	return b.String()
}

// An FS over a pack refuses every write, as a snapshot's does, and
// reports the files as snapshot.Write makes them in a tree.
func TestPackedSnapshotRefusesWrites(t *testing.T) {
	_, packed, _ := packedAndTree(t, "cx6dx-ofed-factory")
	if err := packed.WriteString("/etc/nccl.conf", "x"); !errors.Is(err, nic.ErrReadOnly) {
		t.Errorf("WriteString: %v, want ErrReadOnly", err)
	}
	if err := packed.Mkdir("/sys/kernel/config/rdma_cm/x"); !errors.Is(err, nic.ErrReadOnly) {
		t.Errorf("Mkdir: %v, want ErrReadOnly", err)
	}
	in, err := packed.OpenFileIn("/etc/nccl.conf")
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	if err := in.Replace([]byte("y"), 0o644, nil); !errors.Is(err, nic.ErrReadOnly) {
		t.Errorf("Replace: %v, want ErrReadOnly", err)
	}
	if err := in.Remove(); !errors.Is(err, nic.ErrReadOnly) {
		t.Errorf("Remove: %v, want ErrReadOnly", err)
	}
}

var withDirRels = []string{"device", "device/vendor", "mtu", "../mtu", "ports/1/gid_attrs/types/0", "missing"}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// HWCounters answers alike from a tree on disk and from a pack: the
// fixture hosts' hw_counters directories, and one with a counter that does
// not parse (absent, not 0), a subdirectory (skipped) and a link (read
// through).
func TestPackedHWCounters(t *testing.T) {
	hw := "sys/devices/pci0000:3a/0000:3a:00.0/0000:3b:00.0/infiniband/mlx5_bond_0/ports/1/hw_counters/"
	tree, packed, paths := packedAndTree(t, "cx5-roce-lag",
		packEntry{p: hw + "bad", data: "many\n"}, packEntry{p: hw + "sub/x", data: "1\n"}, packEntry{p: hw + "link", link: "rx_write_requests"})
	asked := 0
	for _, p := range paths {
		if path.Dir(p) != "/sys/class/infiniband" {
			continue
		}
		dev := path.Base(p)
		for _, port := range nic.RDMAPorts(tree, dev) {
			a, aerr := nic.HWCounters(tree, dev, port)
			b, berr := nic.HWCounters(packed, dev, port)
			if fmt.Sprint(a, aerr) != fmt.Sprint(b, berr) || len(a) == 0 || (dev == "mlx5_bond_0" && !hwPlanted(a)) {
				t.Errorf("%s/%d:\ntree:   %v %v\npacked: %v %v", dev, port, a, aerr, b, berr)
			}
			asked++
		}
	}
	if asked == 0 {
		t.Fatal("no RDMA device with hw_counters in the fixture")
	}
	if _, err := nic.HWCounters(packed, "nodev", 1); err == nil {
		t.Error("HWCounters of a missing device: no error")
	}
}

// hwPlanted: the planted entries read as HWCounters reads them.
func hwPlanted(c map[string]uint64) bool {
	_, hasBad := c["bad"]
	_, hasSub := c["sub"]
	_, hasLink := c["link"]
	return !hasBad && !hasSub && hasLink && c["link"] == c["rx_write_requests"]
}

// dirAnswers is what a Dir of dir says of rel, as one text.
func dirAnswers(f nic.FS, dir, rel string) string {
	clean := func(err error) string { return errText(f, err) }
	d := f.Dir(dir)
	defer d.Close()
	s, err := d.ReadString(rel)
	names, lerr := d.ReadDir(rel)
	r, rerr := d.Resolve(rel)
	return fmt.Sprintf("read %q %s; list %q %s; exists %v; resolve %q %s", s, clean(err), names, clean(lerr), d.Exists(rel), r, clean(rerr))
}

// errText is err as both forms can compare it: "ok" for none, the
// snapshot's directory (and its parent, which paths with ".." reach) taken
// out.
func errText(f nic.FS, err error) string {
	if err == nil {
		return "ok"
	}
	msg := strings.ReplaceAll(err.Error(), f.Root(), "ROOT")
	return strings.ReplaceAll(msg, filepath.Dir(f.Root()), "PARENT")
}
