package nic

import (
	"encoding/binary"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"golang.org/x/sys/unix"
)

// RDMADevices lists every entry of the class directory but directories,
// inside the root: a class directory reached through a link that leaves
// the tree is the tree's.
func TestRDMADevicesInsideRoot(t *testing.T) {
	top := t.TempDir()
	root := filepath.Join(top, "root")
	outside := filepath.Join(top, "sys/devices/virtual/infiniband_class")
	// The class directory outside the root holds outside_0; the tree's
	// own copy at the same path (the decoy) holds the devices.
	for _, class := range []string{outside, filepath.Join(root, outside)} {
		if err := os.MkdirAll(filepath.Join(class, "not-a-device"), 0o755); err != nil {
			t.Fatal(err)
		}
		for _, dev := range []string{"mlx5_0", "mlx5_10", "mlx5_2"} {
			if err := os.Symlink("../../"+dev, filepath.Join(class, dev)); err != nil {
				t.Fatal(err)
			}
		}
		if err := os.WriteFile(filepath.Join(class, "a-file"), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(outside, "outside_0"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(root, "sys/class"), 0o755); err != nil {
		t.Fatal(err)
	}
	// An absolute link: from the root it names the tree's copy, as in a
	// chroot; a reader given the prefixed path would follow it out to
	// outside_0.
	if err := os.Symlink(outside, filepath.Join(root, "sys/class/infiniband")); err != nil {
		t.Fatal(err)
	}
	want := []string{"a-file", "mlx5_0", "mlx5_10", "mlx5_2"}
	for _, fs := range bothResolvers(t, root) {
		if got := RDMADevices(fs); !slices.Equal(got, want) {
			t.Errorf("%s: RDMADevices = %v, want %v", resolver(fs), got, want)
		}
	}
	// The same tree with a relative link: the same list.
	if err := os.Remove(filepath.Join(root, "sys/class/infiniband")); err != nil {
		t.Fatal(err)
	}
	rel, err := filepath.Rel(filepath.Join(root, "sys/class"), filepath.Join(root, outside))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(rel, filepath.Join(root, "sys/class/infiniband")); err != nil {
		t.Fatal(err)
	}
	fs := NewFS(root, true)
	if got := RDMADevices(fs); !slices.Equal(got, want) {
		t.Errorf("RDMADevices = %v, want %v", got, want)
	}
	if got := RDMADevices(NewFS(t.TempDir(), true)); got != nil {
		t.Errorf("no class directory: %v", got)
	}
}

// direntNames reads getdents64 records as os.File.Readdirnames does, and
// asks fstatat for the type where the file system gives none.
func TestDirentNames(t *testing.T) {
	dir := t.TempDir()
	if err := os.Mkdir(filepath.Join(dir, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "file"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	fd, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(fd)
	var buf []byte
	rec := func(ino uint64, typ uint8, name string) {
		reclen := (19 + len(name) + 1 + 7) &^ 7
		r := make([]byte, reclen)
		binary.NativeEndian.PutUint64(r[0:], ino)
		binary.NativeEndian.PutUint16(r[16:], uint16(reclen))
		r[18] = typ
		copy(r[19:], name)
		buf = append(buf, r...)
	}
	rec(1, unix.DT_DIR, ".")
	rec(2, unix.DT_DIR, "..")
	rec(3, unix.DT_UNKNOWN, "sub")
	rec(4, unix.DT_UNKNOWN, "file")
	rec(0, unix.DT_REG, "deleted")
	rec(5, unix.DT_LNK, "a-rather-long-name-for-padding")
	rec(6, unix.DT_DIR, "dir")
	if got := direntNames(fd, buf, nil, nil); !slices.Equal(got, []string{"sub", "file", "a-rather-long-name-for-padding", "dir"}) {
		t.Errorf("all: %v", got)
	}
	notDir := func(typ uint8) bool { return typ != unix.DT_DIR }
	if got := direntNames(fd, buf, nil, notDir); !slices.Equal(got, []string{"file", "a-rather-long-name-for-padding"}) {
		t.Errorf("not directories: %v", got)
	}
	if got := direntNames(fd, buf[:len(buf)-3], nil, nil); len(got) != 3 {
		t.Errorf("a truncated record is not read: %v", got)
	}
}
