package nic

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// ReadString stops after a read that does not fill its 4 KiB buffer; files
// of a buffer's size and more must still come back whole.
func TestReadStringWholeFileAtAnySize(t *testing.T) {
	dir := t.TempDir()
	fs := NewFS(dir, true)
	for _, size := range []int{0, 1, 4095, 4096, 4097, 8192, 10000} {
		data := bytes.Repeat([]byte("x"), size)
		if size > 0 {
			data[size-1] = '\n'
		}
		if err := os.WriteFile(filepath.Join(dir, "f"), data, 0o600); err != nil {
			t.Fatal(err)
		}
		got, err := fs.ReadString("/f")
		if want := string(bytes.TrimSuffix(data, []byte("\n"))); err != nil || got != want {
			t.Errorf("%d bytes: read %d bytes, %v", size, len(got), err)
		}
	}
}

// symlinkTree makes a root with sysfs-like relative links: a class entry
// to a device directory, a link inside the device, a link chain, a link
// that leaves the root and one that dangles. The root is reached through
// a symlink itself, and given relative, as --root may be.
func symlinkTree(t *testing.T) (root string) {
	t.Helper()
	top := t.TempDir()
	real := filepath.Join(top, "real")
	for p, target := range map[string]string{
		"sys/class/net/eth0": "../../devices/pci0000:00/0000:00:01.0/net/eth0",
		"sys/devices/pci0000:00/0000:00:01.0/net/eth0/device": "../../../0000:00:01.0",
		"sys/class/chain":    "net/eth0",
		"sys/class/out":      "../../..",
		"sys/class/dangling": "../nowhere",
	} {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(real, p)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(target, filepath.Join(real, p)); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(real, "sys/devices/pci0000:00/0000:00:01.0/net/eth0/mtu"), []byte("1500\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(real, "sys/devices/pci0000:00/0000:00:01.0/vendor"), []byte("0x15b3\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("real", filepath.Join(top, "root")); err != nil {
		t.Fatal(err)
	}
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	rel, err := filepath.Rel(wd, filepath.Join(top, "root"))
	if err != nil {
		t.Fatal(err)
	}
	return rel
}

// TestResolve: links are followed inside the root, by openat2 and by the
// walk for old kernels alike; a link whose ".." climbs past the root stops
// at it (as in a chroot), one that leads nowhere fails.
func TestResolve(t *testing.T) {
	root := symlinkTree(t)
	for _, fs := range bothResolvers(t, root) {
		for p, want := range map[string]string{
			"/sys/class/net/eth0":        "/sys/devices/pci0000:00/0000:00:01.0/net/eth0",
			"/sys/class/chain":           "/sys/devices/pci0000:00/0000:00:01.0/net/eth0",
			"/sys/class/net/eth0/device": "/sys/devices/pci0000:00/0000:00:01.0",
			"/sys/class/net/eth0/mtu":    "/sys/devices/pci0000:00/0000:00:01.0/net/eth0/mtu",
			"/sys/devices":               "/sys/devices",
			"/sys/class/out":             "/",
			"/":                          "/",
		} {
			if got, err := fs.Resolve(p); err != nil || got != want {
				t.Errorf("%s: Resolve(%s) = %q, %v; want %q", resolver(fs), p, got, err, want)
			}
		}
		for _, p := range []string{"/sys/class/dangling", "/sys/class/absent"} {
			if got, err := fs.Resolve(p); err == nil {
				t.Errorf("%s: Resolve(%s) = %q, want an error", resolver(fs), p, got)
			}
		}
	}
}

// TestDir: a Dir reads what the FS reads below the path it was made for,
// through the resolved path, and its errors name the path as asked for.
func TestDir(t *testing.T) {
	fs := NewFS(symlinkTree(t), true)
	d := fs.Dir("/sys/class/net/eth0")
	if d.real != "/sys/devices/pci0000:00/0000:00:01.0/net/eth0" || d.Path() != "/sys/class/net/eth0" {
		t.Errorf("Dir = %+v", d)
	}
	for _, rel := range []string{"mtu", "device/vendor"} {
		want, err := fs.ReadTrimmed("/sys/class/net/eth0/" + rel)
		if got, err2 := d.ReadTrimmed(rel); err != nil || err2 != nil || got != want {
			t.Errorf("%s: Dir read %q %v, FS read %q %v", rel, got, err2, want, err)
		}
	}
	_, err := d.ReadString("absent")
	var pe *os.PathError
	if !errors.As(err, &pe) || !errors.Is(err, os.ErrNotExist) || pe.Path != fs.Path("/sys/class/net/eth0/absent") {
		t.Errorf("missing file: %v, want ENOENT naming the path as asked", err)
	}
	// A path that does not resolve is read through as it is.
	if d := fs.Dir("/sys/class/dangling"); d.real != d.Path() {
		t.Errorf("dangling: %+v", d)
	}
	if _, err := fs.Dir("/sys/class/absent").ReadString("x"); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("absent dir: %v", err)
	}
}
