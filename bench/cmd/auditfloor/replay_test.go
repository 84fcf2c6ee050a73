package main

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
)

// tree writes a small snapshot-like tree (a device directory reached
// through a /sys/class symlink, as rocectl's nic.Dir opens it) and a list
// of the calls an audit of it could make, in strace's format.
func tree(t *testing.T) (root, list string) {
	t.Helper()
	root = t.TempDir()
	dev := filepath.Join(root, "sys/devices/pci/infiniband/mlx5_0")
	for _, d := range []string{dev + "/ports/1", root + "/sys/devices/pci/net/ens1f0np0", root + "/sys/class/infiniband"} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(dev+"/ports/1/state", []byte("4: ACTIVE\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("../../devices/pci/infiniband/mlx5_0", root+"/sys/class/infiniband/mlx5_0"); err != nil {
		t.Fatal(err)
	}
	list = strings.NewReplacer("@ROOT", root, "@DEV", dev).Replace(`7 openat2(5<@ROOT>, "sys/class/infiniband/mlx5_0", {flags=O_RDONLY|O_CLOEXEC|O_PATH|O_DIRECTORY, resolve=RESOLVE_NO_MAGICLINKS|RESOLVE_IN_ROOT}, 24) = 6<@DEV>
7 openat2(6<@DEV>, "ports/1/state", {flags=O_RDONLY|O_NONBLOCK|O_CLOEXEC, resolve=RESOLVE_NO_MAGICLINKS|RESOLVE_BENEATH}, 24) = 7<@DEV/ports/1/state>
7 openat2(6<@DEV>, "hca_type", {flags=O_RDONLY|O_NONBLOCK|O_CLOEXEC, resolve=RESOLVE_NO_MAGICLINKS|RESOLVE_BENEATH}, 24) = -1 ENOENT (No such file or directory)
7 openat2(5<@ROOT>, "sys/devices/pci/net", {flags=O_RDONLY|O_CLOEXEC|O_DIRECTORY, resolve=RESOLVE_NO_MAGICLINKS|RESOLVE_IN_ROOT}, 24) = 7<@ROOT/sys/devices/pci/net>
7 getdents64(7<@ROOT/sys/devices/pci/net>, 0x37d489be000 /* 3 entries */, 8192) = 80
7 getdents64(7<@ROOT/sys/devices/pci/net>, 0x37d489be000 /* 0 entries */, 8192) = 0
8 getdents64(8<@ROOT/sys/class/infiniband>, 0x37d489be000 /* 3 entries */, 8192) = 80
8 getdents64(8<@ROOT/sys/class/infiniband>, 0x37d489be000 /* 0 entries */, 8192) = 0
`)
	return root, list
}

func TestReplay(t *testing.T) {
	root, list := tree(t)
	calls, _, err := parseList("LIST", strings.NewReader(list), false)
	if err != nil {
		t.Fatal(err)
	}
	p := newPlan(calls)
	// The root is opened by path (rocectl opens it with openat); the
	// device directory by the list's own open, which is kept.
	if len(p.pre) != 1 || p.bases[p.pre[0]] != root {
		t.Errorf("opened by path first: %v of %q, want the root only", p.pre, p.bases)
	}
	// The device directory's burst: its open, then the two calls below
	// it, in list order; every other call a unit of its own.
	var burst []string
	for _, u := range p.units {
		if len(u) > 1 {
			for _, o := range u {
				burst = append(burst, o.rel)
			}
		}
	}
	if want := []string{"sys/class/infiniband/mlx5_0", "ports/1/state", "hca_type"}; !slices.Equal(burst, want) {
		t.Errorf("burst %q, want %q", burst, want)
	}
	c, err := p.replay()
	if err != nil {
		t.Fatal(err)
	}
	want := counts{
		ops:   [nKinds]int{kindPath: 1, kindDir: 1, kindFile: 2, kindList: 1},
		opens: 1 + 5, failed: 1,
		fstat: 1, read: 1,
		getdents: 2 + 2, // each directory: its entries, then 0
		close:    4,     // the kept directory when its burst ends; not the root, not the failed open
	}
	if c != want {
		t.Errorf("counts %+v, want %+v", c, want)
	}
	if c.calls() != 6+1+1+4+4 {
		t.Errorf("calls %d", c.calls())
	}
}

// A tree other than the one traced is refused: the calls would differ.
func TestReplayOtherTree(t *testing.T) {
	root, list := tree(t)
	calls, _, err := parseList("LIST", strings.NewReader(list), false)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(filepath.Join(root, "sys/devices/pci/infiniband/mlx5_0/ports/1/state")); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "sys/devices/pci/infiniband/mlx5_0/hca_type"), []byte("MT4125\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err = newPlan(calls).replay()
	want := []string{
		"line 2: open ports/1/state: no such file or directory; the list has it opened",
		"line 3: open hca_type succeeded; the list has it fail with ENOENT",
	}
	if err == nil || strings.Join(sortedLines(err.Error()), "\n") != strings.Join(want, "\n") {
		t.Errorf("error %v, want:\n%s", err, strings.Join(want, "\n"))
	}
}

// sortedLines: the goroutines report in any order.
func sortedLines(s string) []string {
	l := strings.Split(s, "\n")
	slices.Sort(l)
	return l
}

func TestPlanFileRoundTrip(t *testing.T) {
	_, list := tree(t)
	calls, _, err := parseList("LIST", strings.NewReader(list), false)
	if err != nil {
		t.Fatal(err)
	}
	p := newPlan(calls)
	data := p.marshal()
	q, err := unmarshalPlan(data)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(p, q) {
		t.Errorf("read back\n%+v\nwrote\n%+v", q, p)
	}
	for _, bad := range [][]byte{data[:len(data)-1], append(data[:len(data):len(data)], 0), []byte("auditfloor plan 0\n"), data[:len(planMagic)+1]} {
		if _, err := unmarshalPlan(bad); !errors.Is(err, errPlan) {
			t.Errorf("%d bytes: %v, want errPlan", len(bad), err)
		}
	}
}

// A written attribute: the replay writes the list's bytes into the tree
// (truncating, as rocectl's open does), through a plan file too, and the
// least calls read it, write it and read it back. A plan that writes is
// replayed only when asked to (-writes).
func TestReplayWrites(t *testing.T) {
	root := t.TempDir()
	dev := filepath.Join(root, "sys/devices/pci/net/ens1f0np0")
	if err := os.MkdirAll(dev+"/ecn/roce_np/enable", 0o755); err != nil {
		t.Fatal(err)
	}
	attr := dev + "/ecn/roce_np/enable/3"
	if err := os.WriteFile(attr, []byte("0000\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	list := strings.NewReplacer("@ROOT", root, "@DEV", dev).Replace(`7 openat2(5<@ROOT>, "sys/devices/pci/net/ens1f0np0/ecn/roce_np/enable/3", {flags=O_WRONLY|O_TRUNC|O_NONBLOCK|O_CLOEXEC, resolve=RESOLVE_NO_MAGICLINKS|RESOLVE_IN_ROOT}, 24) = 9<@DEV/ecn/roce_np/enable/3>
7 write(9<@DEV/ecn/roce_np/enable/3>, "1\n", 2) = 2
`)
	calls, _, err := parseList("LIST", strings.NewReader(list), true)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name  string
		calls []call
		want  counts
	}{
		{"as listed", calls, counts{ops: [nKinds]int{kindWrite: 1}, opens: 1 + 1, fstat: 1, write: 1, close: 1}},
		{"least", leastCalls(calls), counts{ops: [nKinds]int{kindFile: 2, kindWrite: 1}, opens: 1 + 3, fstat: 3, read: 2, write: 1, close: 3}},
	} {
		if err := os.WriteFile(attr, []byte("0000\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		q, err := unmarshalPlan(newPlan(tc.calls).marshal())
		if err != nil {
			t.Fatal(err)
		}
		c, err := q.replay()
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if c != tc.want {
			t.Errorf("%s: counts %+v, want %+v", tc.name, c, tc.want)
		}
		if got, _ := os.ReadFile(attr); string(got) != "1\n" {
			t.Errorf("%s: the attribute holds %q, want %q", tc.name, got, "1\n")
		}
	}
	file := filepath.Join(t.TempDir(), "plan")
	if err := os.WriteFile(file, newPlan(calls).marshal(), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := runPlan(file, false, false, false); err == nil || !strings.Contains(err.Error(), "the plan writes to the tree; -writes replays it") {
		t.Errorf("a plan that writes, replayed without -writes: %v", err)
	}
}

// An apply lists its state dir's journals too: -under keeps the host
// root's calls only (a directory beside the root that shares its prefix
// is not in it).
func TestCallsUnder(t *testing.T) {
	calls := []call{
		{line: 1, kind: kindFile, base: "/dev/shm/r", rel: "sys/class/net/x/mtu"},
		{line: 2, kind: kindFile, base: "/dev/shm/r/sys/devices/pci/net/x", rel: "ecn/roce_np/enable/3"},
		{line: 3, kind: kindList, base: "/tmp/st/state/journal"},
		{line: 4, kind: kindList, base: "/dev/shm/r2/sys/class/net"},
		{line: 5, kind: kindList, base: "/dev/shm/r/sys/class/net"},
	}
	var lines []int
	for _, c := range callsUnder(calls, "/dev/shm/r/") {
		lines = append(lines, c.line)
	}
	if want := []int{1, 2, 5}; !slices.Equal(lines, want) {
		t.Errorf("kept lines %v, want %v", lines, want)
	}
}
