package nic

import (
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/rocectl/rocectl/internal/testkit/fdtest"
)

// A held attribute reads what the file holds at each read: rewritten in
// place (a counter moving), not a number (never a 0), longer than any
// number. Once its file is removed or replaced (a driver reload re-creates
// the device's files) its reads fail, so that the holder opens the name
// again; sysfs fails them itself (ENODEV), a tree under --root by the
// link count.
func TestAttrReadsEachTimeAnew(t *testing.T) {
	root := t.TempDir()
	dir := filepath.Join(root, "sys/class/infiniband/mlx5_0/ports/1/hw_counters")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	write := func(name, body string) {
		t.Helper()
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("np_cnp_sent", "10\n")
	write("out_of_buffer", "3\n")
	fs := NewFS(root, true)
	d := fs.Dir("/sys/class/infiniband/mlx5_0/ports/1/hw_counters")
	defer d.Close()
	a, err := d.OpenAttr("np_cnp_sent")
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	for _, tc := range []struct {
		body string
		want uint64
		err  error
	}{
		{"10\n", 10, nil},
		{"123456789012\n", 123456789012, nil}, // longer than the last value
		{"7\n", 7, nil},                       // shorter: the file was truncated, nothing of 123… is left
		{"N/A\n", 0, strconv.ErrSyntax},
		{"18446744073709551616\n", 0, strconv.ErrRange},
		{strings.Repeat("9", attrBuf) + "\n", 0, strconv.ErrRange},
		{"", 0, strconv.ErrSyntax},
		{"11\n", 11, nil},
	} {
		write("np_cnp_sent", tc.body)
		v, err := a.ReadUint()
		if !errors.Is(err, tc.err) || err == nil && v != tc.want {
			t.Errorf("holding %q: %d, %v; want %d, %v", tc.body, v, err, tc.want, tc.err)
		}
	}

	// Removed, then replaced (a new file by the same name).
	b, err := d.OpenAttr("out_of_buffer")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(filepath.Join(dir, "out_of_buffer")); err != nil {
		t.Fatal(err)
	}
	if v, err := b.ReadUint(); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("removed: %d, %v; want ENOENT", v, err)
	}
	write("out_of_buffer", "4\n")
	if v, err := b.ReadUint(); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("replaced: %d, %v; want ENOENT (the held file is not the new one)", v, err)
	}
	b.Close()
	if b, err = d.OpenAttr("out_of_buffer"); err != nil {
		t.Fatal(err)
	}
	if v, err := b.ReadUint(); v != 4 || err != nil {
		t.Errorf("opened again: %d, %v; want 4", v, err)
	}
	b.Close()

	// Closed: no read, and Close again (or of nil) does nothing.
	b.Close()
	var none *Attr
	none.Close()
	if _, err := b.ReadUint(); !errors.Is(err, os.ErrClosed) {
		t.Errorf("read after Close: %v, want os.ErrClosed", err)
	}
}

// Only a regular file is held: a FIFO is refused at the open, as every
// attribute read refuses it (it would block); a name that is not there is
// ENOENT.
func TestOpenAttrRefuses(t *testing.T) {
	root := t.TempDir()
	if err := syscall.Mkfifo(filepath.Join(root, "fifo"), 0o644); err != nil {
		t.Fatal(err)
	}
	d := NewFS(root, true).Dir("/")
	defer d.Close()
	if _, err := d.OpenAttr("fifo"); !errors.Is(err, ErrNotRegular) {
		t.Errorf("FIFO: %v, want ErrNotRegular", err)
	}
	if _, err := d.OpenAttr("gone"); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("absent: %v, want ENOENT", err)
	}
}

// Close releases the descriptor at once; one held through a deadline
// (the live host's) is released too.
func TestAttrCloseReleasesItsDescriptor(t *testing.T) {
	root := t.TempDir()
	if err := os.WriteFile(filepath.Join(root, "c"), []byte("1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	real, err := filepath.EvalSymlinks(root)
	if err != nil {
		t.Fatal(err)
	}
	for _, fs := range []FS{NewFS(root, true), NewFS(root, true).WithTimeout(DefaultTimeout)} {
		d := fs.Dir("/")
		var held []*Attr
		for range 3 {
			a, err := d.OpenAttr("c")
			if err != nil {
				t.Fatal(err)
			}
			if v, err := a.ReadUint(); v != 1 || err != nil {
				t.Fatalf("read %d, %v", v, err)
			}
			held = append(held, a)
		}
		d.Close()
		if n := fdtest.Under(t, real); n != 3 {
			t.Errorf("%d descriptors below the tree with 3 attributes held, want 3", n)
		}
		for _, a := range held {
			a.Close()
		}
		if n := fdtest.Under(t, real); n != 0 {
			t.Errorf("%d descriptors below the tree after Close, want 0", n)
		}
	}
}

// On a snapshot whose files are in memory, nothing is held: each read
// goes to the tree, and sees a value added to it.
func TestAttrInMemory(t *testing.T) {
	tr := NewMemTree(4)
	for _, e := range []struct {
		p    string
		typ  uint8
		data string
	}{{"/sys", unix.DT_DIR, ""}, {"/sys/c", unix.DT_REG, "5\n"}, {"/sys/na", unix.DT_REG, "N/A\n"}} {
		if err := tr.Add(e.p, e.typ, e.data); err != nil {
			t.Fatal(err)
		}
	}
	d := NewMemFS(t.TempDir(), tr).Dir("/sys")
	for name, want := range map[string]error{"c": nil, "na": strconv.ErrSyntax} {
		a, err := d.OpenAttr(name)
		if err != nil {
			t.Fatal(err)
		}
		if v, err := a.ReadUint(); !errors.Is(err, want) || want == nil && v != 5 {
			t.Errorf("%s: %d, %v; want %v", name, v, err, want)
		}
		a.Close()
	}
}
