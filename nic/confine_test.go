package nic

import (
	"errors"
	"net"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// bothResolvers returns FSs over root that resolve paths with openat2 and
// with the user-space walk that stands in for it on kernels before 5.6.
func bothResolvers(t *testing.T, root string) []FS {
	t.Helper()
	walk := NewFS(root, false)
	walk.dir.noOpenat2.Store(true)
	return []FS{NewFS(root, false), walk}
}

func resolver(fs FS) string {
	if fs.dir.noOpenat2.Load() {
		return "walk"
	}
	return "openat2"
}

// escapeTree is a --root tree whose attribute files are symlinks that
// leave it: an absolute link to a file outside (as a capture of a host
// holds /sys/... links, or as someone may plant one), and a relative one
// that climbs past the root. Inside the tree, at the path the absolute
// link names, lies a decoy: a confined FS must reach that one.
func escapeTree(t *testing.T) (root, outside, decoy string) {
	t.Helper()
	top := t.TempDir()
	outside = filepath.Join(top, "outside")
	root = filepath.Join(top, "root")
	decoy = filepath.Join(root, outside)
	for _, f := range []string{outside, decoy} {
		if err := os.MkdirAll(filepath.Dir(f), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(f, []byte("1500\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	net := filepath.Join(root, "sys/class/net/eth0")
	if err := os.MkdirAll(net, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, filepath.Join(net, "mtu")); err != nil {
		t.Fatal(err)
	}
	// From root/sys/class/net/eth0, ten ".." are far above the root.
	if err := os.Symlink(strings.Repeat("../", 10)+strings.TrimPrefix(outside, "/"), filepath.Join(net, "up")); err != nil {
		t.Fatal(err)
	}
	return root, outside, decoy
}

// TestRootConfinesSymlinks is the reproducer: a write through an
// absolute symlink in the --root tree changed the file outside the tree.
// Now every path resolves inside the root: the write lands on the tree's
// own file at that path, and the file outside is untouched.
func TestRootConfinesSymlinks(t *testing.T) {
	for _, name := range []string{"mtu", "up"} {
		root, outside, decoy := escapeTree(t)
		for _, fs := range bothResolvers(t, root) {
			p := "/sys/class/net/eth0/" + name
			if err := fs.WriteString(p, "9000"); err != nil {
				t.Fatalf("%s %s: %v", resolver(fs), name, err)
			}
			if got, err := fs.ReadTrimmed(p); err != nil || got != "9000" {
				t.Errorf("%s %s: read back %q, %v", resolver(fs), name, got, err)
			}
			if got, err := fs.Resolve(p); err != nil || got != outside {
				t.Errorf("%s %s: Resolve = %q, %v; want %s (inside the root)", resolver(fs), name, got, err, outside)
			}
			assertFile(t, outside, "1500\n")
			assertFile(t, decoy, "9000\n")
			if err := os.WriteFile(decoy, []byte("1500\n"), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	// Without a decoy the write fails instead of reaching out.
	root, outside, decoy := escapeTree(t)
	if err := os.Remove(decoy); err != nil {
		t.Fatal(err)
	}
	for _, fs := range bothResolvers(t, root) {
		if err := fs.WriteString("/sys/class/net/eth0/mtu", "9000"); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s: write through a link out of the root: %v, want ENOENT", resolver(fs), err)
		}
		if fs.Exists("/sys/class/net/eth0/mtu") {
			t.Errorf("%s: Exists follows the link out of the root", resolver(fs))
		}
	}
	assertFile(t, outside, "1500\n")
}

func assertFile(t *testing.T, path, want string) {
	t.Helper()
	if got, err := os.ReadFile(path); err != nil || string(got) != want {
		t.Errorf("%s holds %q, %v; want %q", path, got, err, want)
	}
}

// TestConfinedDirOps: mkdir, rmdir, readdir and readlink resolve the
// parent inside the root too, and act on the last name itself.
func TestConfinedDirOps(t *testing.T) {
	top := t.TempDir()
	root, outside := filepath.Join(top, "root"), filepath.Join(top, "outside")
	for _, d := range []string{filepath.Join(root, outside), outside} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.MkdirAll(filepath.Join(root, "sys/kernel/config"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, filepath.Join(root, "sys/kernel/config/rdma_cm")); err != nil {
		t.Fatal(err)
	}
	for _, fs := range bothResolvers(t, root) {
		if err := fs.Mkdir("/sys/kernel/config/rdma_cm/mlx5_0"); err != nil {
			t.Fatalf("%s: %v", resolver(fs), err)
		}
		if names, err := fs.ReadDir("/sys/kernel/config/rdma_cm"); err != nil || strings.Join(names, ",") != "mlx5_0" {
			t.Errorf("%s: ReadDir = %q, %v", resolver(fs), names, err)
		}
		if ents, _ := os.ReadDir(outside); len(ents) != 0 {
			t.Errorf("%s: mkdir reached out of the root: %v", resolver(fs), ents)
		}
		if target, err := fs.Readlink("/sys/kernel/config/rdma_cm"); err != nil || target != outside {
			t.Errorf("%s: Readlink = %q, %v", resolver(fs), target, err)
		}
		if err := fs.Rmdir("/sys/kernel/config/rdma_cm/mlx5_0"); err != nil {
			t.Errorf("%s: %v", resolver(fs), err)
		}
		if _, err := os.Stat(filepath.Join(root, outside, "mlx5_0")); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s: rmdir left %v", resolver(fs), err)
		}
	}
}

// TestWalkInRoot checks the fallback for kernels without openat2 on its
// own: absolute links and ".." stop at the root, loops end in ELOOP, the
// resolved path comes back, and the last name is opened with the flags
// asked for.
func TestWalkInRoot(t *testing.T) {
	root := t.TempDir()
	for p, target := range map[string]string{
		"a/abs":   "/b",
		"a/up":    "../../../../b",
		"a/loop1": "loop2",
		"a/loop2": "loop1",
		"a/dir":   "/a/../b/",
	} {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(root, p)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(target, filepath.Join(root, p)); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.MkdirAll(filepath.Join(root, "b"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "b/f"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	rfd, err := unix.Open(root, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(rfd)
	for rel, want := range map[string]string{
		"a/abs/f": "b/f", "a/up/f": "b/f", "a/dir/f": "b/f", "a/dir": "b",
		"../../b/f": "b/f", ".": "", "a/..": "", "b/./f": "b/f",
	} {
		fd, got, err := walkInRoot(rfd, rel, unix.O_PATH|unix.O_CLOEXEC)
		if err != nil || got != want {
			t.Errorf("walkInRoot(%s) = %q, %v; want %q", rel, got, err, want)
			continue
		}
		var st unix.Stat_t
		if err := unix.Fstat(fd, &st); err != nil {
			t.Error(err)
		}
		unix.Close(fd)
	}
	if _, _, err := walkInRoot(rfd, "a/loop1", unix.O_PATH); !errors.Is(err, syscall.ELOOP) {
		t.Errorf("a link loop: %v, want ELOOP", err)
	}
	if _, _, err := walkInRoot(rfd, "b/f/x", unix.O_PATH); !errors.Is(err, syscall.ENOTDIR) {
		t.Errorf("a file as a directory: %v, want ENOTDIR", err)
	}
	fd, _, err := walkInRoot(rfd, "a/abs/f", unix.O_RDONLY|unix.O_CLOEXEC)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(fd)
	buf := make([]byte, 4)
	if n, err := unix.Read(fd, buf); err != nil || string(buf[:n]) != "x" {
		t.Errorf("read through the walk's descriptor: %q, %v", buf[:n], err)
	}
}

// TestNonRegularAttributeRefused is the reproducer for a FIFO in
// the tree, which hung audit and apply forever (open(2) of a FIFO waits
// for its other end). A FIFO, a socket or a device where an attribute is
// expected is refused at once, naming the path and what it is.
func TestNonRegularAttributeRefused(t *testing.T) {
	root := t.TempDir()
	dir := filepath.Join(root, "sys/class/net/eth0")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := unix.Mkfifo(filepath.Join(dir, "mtu"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := unix.Mknod(filepath.Join(dir, "speed"), unix.S_IFCHR|0o644, int(unix.Mkdev(1, 3))); err != nil {
		t.Fatal(err) // /dev/null's numbers
	}
	l, err := net.Listen("unix", filepath.Join(dir, "carrier"))
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	for _, fs := range bothResolvers(t, root) {
		fs = fs.WithTimeout(10 * time.Second) // a hang fails the test, not the run
		for name, kind := range map[string]string{"mtu": "FIFO", "speed": "character device", "carrier": "socket", "": "directory"} {
			p := "/sys/class/net/eth0/" + name
			_, rerr := fs.ReadString(p)
			werr := fs.WriteString(p, "1")
			for op, err := range map[string]error{"read": rerr, "write": werr} {
				if name == "" && op == "write" {
					if !errors.Is(err, syscall.EISDIR) {
						t.Errorf("%s: write to a directory: %v", resolver(fs), err)
					}
					continue
				}
				var pe *os.PathError
				if !errors.Is(err, ErrNotRegular) || !errors.As(err, &pe) || pe.Path != fs.Path(p) || !strings.Contains(err.Error(), "it is a "+kind) {
					t.Errorf("%s: %s of a %s: %v; want ErrNotRegular naming %s and its type", resolver(fs), op, kind, err, fs.Path(p))
				}
			}
		}
		d := fs.Dir("/sys/class/net/eth0")
		for name, kind := range map[string]string{"mtu": "FIFO", "speed": "character device", "carrier": "socket", ".": "directory"} {
			_, err := d.ReadString(name)
			var pe *os.PathError
			if !errors.Is(err, ErrNotRegular) || !errors.As(err, &pe) || pe.Path != fs.Path("/sys/class/net/eth0/"+name) || !strings.Contains(err.Error(), "it is a "+kind) {
				t.Errorf("%s: Dir read of a %s: %v; want ErrNotRegular naming it and its type", resolver(fs), kind, err)
			}
		}
	}
}

// TestDeadline: an operation that does not return within the FS's
// timeout is abandoned with an error naming the path; its goroutine ends
// when the call finally returns (here, when the test lets it).
func TestDeadline(t *testing.T) {
	fs := NewFS(t.TempDir(), false).WithTimeout(20 * time.Millisecond)
	release, ended := make(chan struct{}), make(chan struct{})
	start := time.Now()
	err := fs.withDeadline("write", "/sys/class/net/eth0/mtu", func() error {
		defer close(ended)
		<-release // a driver that does not answer
		return nil
	})
	close(release)
	<-ended
	var pe *os.PathError
	if !errors.Is(err, os.ErrDeadlineExceeded) || !errors.As(err, &pe) || pe.Op != "write" || pe.Path != fs.Path("/sys/class/net/eth0/mtu") {
		t.Errorf("blocked operation: %v, want ErrDeadlineExceeded naming the path", err)
	}
	if time.Since(start) > 10*time.Second {
		t.Errorf("the deadline did not fire: %v", time.Since(start))
	}
	// The live host has the deadline; a tree of plain files on tmpfs or a
	// local disk relies on the regular-file check.
	if live := NewFS("/", true); live.timeout != DefaultTimeout {
		t.Errorf("live host timeout %v", live.timeout)
	}
	// Within the deadline, the operation's own answer comes back.
	want := errors.New("EIO")
	if err := fs.WithTimeout(time.Minute).withDeadline("read", "/x", func() error { return want }); err != want {
		t.Errorf("got %v, want the operation's error", err)
	}
}

// TestRootCanonical: the root is recorded (journals) absolute with its
// symlinks resolved, however it was given.
func TestRootCanonical(t *testing.T) {
	root := symlinkTree(t) // relative, through a symlink
	abs, err := filepath.Abs(root)
	if err != nil {
		t.Fatal(err)
	}
	want, err := filepath.EvalSymlinks(abs)
	if err != nil {
		t.Fatal(err)
	}
	for _, given := range []string{root, root + "/", abs, want} {
		if got := NewFS(given, true).Root(); got != want {
			t.Errorf("NewFS(%s).Root() = %s, want %s", given, got, want)
		}
	}
	if got := NewFS("", true).Root(); got != "/" {
		t.Errorf("live root: %s", got)
	}
	// A root that does not exist (yet) is made absolute.
	if got := NewFS("no/such/root", true).Root(); !filepath.IsAbs(got) || !strings.HasSuffix(got, "/no/such/root") {
		t.Errorf("missing root: %s", got)
	}
}

// TestConfined: the path handed to writers outside FS (the NCCL file's
// atomic replacement) has its directory resolved inside the root.
func TestConfined(t *testing.T) {
	top := t.TempDir()
	root, outside := filepath.Join(top, "root"), filepath.Join(top, "etc-outside")
	for _, d := range []string{outside, filepath.Join(root, outside)} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink(outside, filepath.Join(root, "etc")); err != nil {
		t.Fatal(err)
	}
	for _, fs := range bothResolvers(t, root) {
		got, err := fs.Confined("/etc/nccl.conf")
		if want := filepath.Join(fs.Root(), outside, "nccl.conf"); err != nil || got != want {
			t.Errorf("%s: Confined = %q, %v; want %q", resolver(fs), got, err, want)
		}
		if _, err := fs.Confined("/missing/nccl.conf"); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s: missing directory: %v", resolver(fs), err)
		}
	}
	if got, err := NewFS("/", true).Confined("/etc/../etc/hostname"); err != nil || got != "/etc/hostname" {
		t.Errorf("live root: %q, %v", got, err)
	}
}

// TestDirConfinesSymlinks: reads below a held Dir open names relative to
// it, and a name that leads out of it (an absolute link, ".." past the
// root, a "../" of its own) is opened from the root instead: it reaches
// the tree's decoy, never the file outside. A FIFO below a Dir is refused
// as below the FS.
func TestDirConfinesSymlinks(t *testing.T) {
	root, outside, decoy := escapeTree(t)
	if err := os.WriteFile(decoy, []byte("4200\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := unix.Mkfifo(filepath.Join(root, "sys/class/net/eth0/fifo"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, fs := range bothResolvers(t, root) {
		d := fs.Dir("/sys/class/net/eth0")
		if held := d.open != nil; held == fs.dir.noOpenat2.Load() {
			t.Errorf("%s: directory held %v", resolver(fs), held)
		}
		for _, rel := range []string{"mtu", "up", strings.Repeat("../", 8) + strings.TrimPrefix(outside, "/")} {
			if got, err := d.ReadTrimmed(rel); err != nil || got != "4200" {
				t.Errorf("%s: Dir read %s = %q, %v; want the decoy's 4200", resolver(fs), rel, got, err)
			}
		}
		if _, err := d.ReadString("fifo"); !errors.Is(err, ErrNotRegular) {
			t.Errorf("%s: Dir read of a FIFO: %v, want ErrNotRegular", resolver(fs), err)
		}
		if names, err := d.ReadDir("."); err != nil || strings.Join(names, ",") != "fifo,mtu,up" {
			t.Errorf("%s: Dir ReadDir = %v, %v", resolver(fs), names, err)
		}
	}
	assertFile(t, outside, "1500\n")
}
