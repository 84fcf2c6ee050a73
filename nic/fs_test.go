package nic

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rocectl/rocectl/internal/testkit/fdtest"
)

// A read stops after a read(2) that does not fill the buffer's free
// part; files that fill it (the 128-byte stack buffer of a one-line
// value, each size it grows to, a 4 KiB sysfs page) must still come back
// whole, through an FS or a Dir, with a deadline or without.
func TestReadStringWholeFileAtAnySize(t *testing.T) {
	dir := t.TempDir()
	plain := NewFS(dir, true)
	for _, fs := range []FS{plain, plain.WithTimeout(time.Minute)} {
		d := fs.Dir("/")
		for _, size := range []int{0, 1, 127, 128, 129, 511, 512, 513, 640, 641, 4095, 4096, 4097, 8192, 10000} {
			data := bytes.Repeat([]byte("x"), size)
			if size > 0 {
				data[size-1] = '\n'
			}
			if err := os.WriteFile(filepath.Join(dir, "f"), data, 0o600); err != nil {
				t.Fatal(err)
			}
			want := string(bytes.TrimSuffix(data, []byte("\n")))
			if got, err := fs.ReadString("/f"); err != nil || got != want {
				t.Errorf("timeout %v: %d bytes: ReadString read %d bytes, %v", fs.timeout, size, len(got), err)
			}
			if got, err := d.ReadString("f"); err != nil || got != want {
				t.Errorf("timeout %v: %d bytes: Dir.ReadString read %d bytes, %v", fs.timeout, size, len(got), err)
			}
			if got, err := fs.ReadFile("/f"); err != nil || !bytes.Equal(got, data) {
				t.Errorf("timeout %v: %d bytes: ReadFile read %d bytes, %v", fs.timeout, size, len(got), err)
			}
		}
		d.Close()
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
// with openat2 and with the walk alike; a name that leads out of it
// ("device") is read through the directory's resolved path, which the
// Dir finds only then or when asked; errors name the path as asked for.
func TestDir(t *testing.T) {
	root := symlinkTree(t)
	for _, fs := range bothResolvers(t, root) {
		d := fs.Dir("/sys/class/net/eth0")
		if h := d.open; h != nil && h.real != "" {
			t.Errorf("%s: resolved before anything needed it: %q", resolver(fs), h.real)
		}
		for _, rel := range []string{"mtu", "device/vendor"} {
			want, err := fs.ReadTrimmed("/sys/class/net/eth0/" + rel)
			if got, err2 := d.ReadTrimmed(rel); err != nil || err2 != nil || got != want {
				t.Errorf("%s: %s: Dir read %q %v, FS read %q %v", resolver(fs), rel, got, err2, want, err)
			}
		}
		if real, ok := d.Resolved(); !ok || real != "/sys/devices/pci0000:00/0000:00:01.0/net/eth0" || d.Path() != "/sys/class/net/eth0" {
			t.Errorf("%s: Resolved = %q, %v", resolver(fs), real, ok)
		}
		_, err := d.ReadString("absent")
		var pe *os.PathError
		if !errors.As(err, &pe) || !errors.Is(err, os.ErrNotExist) || pe.Path != fs.Path("/sys/class/net/eth0/absent") {
			t.Errorf("%s: missing file: %v, want ENOENT naming the path as asked", resolver(fs), err)
		}
		for rel, want := range map[string]bool{"mtu": true, "device": true, "device/vendor": true, "absent": false, "device/absent": false} {
			if got := d.Exists(rel); got != want {
				t.Errorf("%s: Exists(%s) = %v", resolver(fs), rel, got)
			}
		}
		for rel, want := range map[string]string{"device": "/sys/devices/pci0000:00/0000:00:01.0", "mtu": "/sys/devices/pci0000:00/0000:00:01.0/net/eth0/mtu", ".": "/sys/devices/pci0000:00/0000:00:01.0/net/eth0"} {
			if got, err := d.Resolve(rel); err != nil || got != want {
				t.Errorf("%s: Resolve(%s) = %q, %v; want %q", resolver(fs), rel, got, err, want)
			}
		}
		if _, err := d.Resolve("absent"); !errors.As(err, &pe) || !errors.Is(err, os.ErrNotExist) || pe.Path != fs.Path("/sys/class/net/eth0/absent") {
			t.Errorf("%s: Resolve of a missing name: %v, want ENOENT naming the path as asked", resolver(fs), err)
		}
		// The device directory, reached through the class link: its
		// resolved path names the PCI function.
		dev := fs.Dir("/sys/class/net/eth0/device")
		if real, ok := dev.Resolved(); !ok || real != "/sys/devices/pci0000:00/0000:00:01.0" {
			t.Errorf("%s: device Resolved = %q, %v", resolver(fs), real, ok)
		}
		if names, err := dev.ReadDir("net"); err != nil || strings.Join(names, ",") != "eth0" {
			t.Errorf("%s: device ReadDir(net) = %v, %v", resolver(fs), names, err)
		}
		// A path that does not resolve is read through as it is.
		for _, p := range []string{"/sys/class/dangling", "/sys/class/absent", "/sys/class/net/eth0/mtu"} {
			d := fs.Dir(p)
			if real, ok := d.Resolved(); ok || d.open != nil || d.real != p {
				t.Errorf("%s: %s: Resolved = %q, %v; %+v", resolver(fs), p, real, ok, d)
			}
			if _, err := d.ReadString("x"); err == nil {
				t.Errorf("%s: %s: read below it succeeded", resolver(fs), p)
			}
			if d.Exists("x") {
				t.Errorf("%s: %s: Exists below it", resolver(fs), p)
			}
		}
	}
}

// TestDirClose: a closed Dir (and its copies) reads on from the root,
// through the resolved path when something asked for it before, and
// holds no descriptor; reads racing with Close read either way.
func TestDirClose(t *testing.T) {
	root := symlinkTree(t)
	for _, fs := range bothResolvers(t, root) {
		sys := fs.Root() + "/sys"
		before := fdtest.Under(t, sys)
		asked := fs.Dir("/sys/class/net/eth0")
		asked.Resolved()
		unasked := fs.Dir("/sys/class/net/eth0")
		var wg sync.WaitGroup
		copied := unasked
		wg.Go(func() {
			for range 200 {
				if got, err := copied.ReadTrimmed("mtu"); err != nil || got != "1500" {
					t.Errorf("%s: read racing Close: %q, %v", resolver(fs), got, err)
					return
				}
			}
		})
		asked.Close()
		unasked.Close()
		unasked.Close() // twice: nothing
		wg.Wait()
		if n := fdtest.Under(t, sys); n != before {
			t.Errorf("%s: %d descriptors open after Close, %d before", resolver(fs), n, before)
		}
		for _, d := range []Dir{asked, unasked, copied} {
			for rel, want := range map[string]string{"mtu": "1500", "device/vendor": "0x15b3"} {
				if got, err := d.ReadTrimmed(rel); err != nil || got != want {
					t.Errorf("%s: after Close, %s: %q, %v", resolver(fs), rel, got, err)
				}
			}
		}
		if real, _ := asked.Resolved(); real != "/sys/devices/pci0000:00/0000:00:01.0/net/eth0" {
			t.Errorf("%s: asked before Close: %q", resolver(fs), real)
		}
		if real, _ := unasked.Resolved(); fs.dir.noOpenat2.Load() == (real == "/sys/class/net/eth0") {
			t.Errorf("%s: never asked before Close: %q", resolver(fs), real)
		}
	}
}

// A read of a tree without a deadline (every --root and --snapshot)
// allocates the value it returns and the path openat2 is given, nothing
// else: a snapshot audit makes thousands of them, and each closure or
// error path built up front cost every one of them (seven allocations
// before; each fresh page a fault).
func TestTreeReadAllocatesOnlyItsValue(t *testing.T) {
	if raceBuild {
		t.Skip("the race detector's instrumentation allocates more; the count is the plain build's")
	}
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "sys/class/net/eth0/ecn/roce_np/enable"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "sys/class/net/eth0/ecn/roce_np/enable/3"), []byte("10\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	fs := NewFS(dir, true)
	if fs.timeout != 0 {
		t.Fatalf("a temporary directory's FS has a deadline (%v): reads would take the goroutine's path", fs.timeout)
	}
	d := fs.Dir("/sys/class/net/eth0/ecn")
	defer d.Close()
	for name, read := range map[string]func() (string, error){
		"Dir.ReadString": func() (string, error) { return d.ReadString("roce_np/enable/3") },
		"FS.ReadString":  func() (string, error) { return fs.ReadString("/sys/class/net/eth0/ecn/roce_np/enable/3") },
	} {
		var err error
		allocs := testing.AllocsPerRun(100, func() {
			var v string
			if v, err = read(); err == nil && v != "10" {
				err = errors.New("read " + v)
			}
		})
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if allocs > 2 {
			t.Errorf("%s: %.0f allocations a read, want at most 2 (the value, openat2's path)", name, allocs)
		}
	}
}
