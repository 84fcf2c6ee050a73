package nic

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// FS reads and writes the kernel's pseudo file systems (sysfs, configfs,
// debugfs) under a root prefix, like prometheus/procfs's NewFS(mount). With
// root "/" it is the live host; tests and --root point it at a copy of a real
// host's tree, and --snapshot at a capture.
//
// Paths given to FS methods are absolute host paths ("/sys/class/net"); FS
// joins them to the root. Symlinks inside the tree are followed relative to
// the root, so fixture trees keep the real sysfs layout
// (class/infiniband/<dev> -> ../../devices/.../infiniband/<dev>).
type FS struct {
	root     string
	rootReal string // root with its symlinks resolved, "" until known
	readOnly bool
}

// ErrReadOnly is returned by writes to a read-only FS (a snapshot).
var ErrReadOnly = errors.New("read-only snapshot: no writes")

// NewFS returns an FS rooted at root ("" or "/" for the live host).
func NewFS(root string, readOnly bool) FS {
	if root == "" {
		root = "/"
	}
	f := FS{root: filepath.Clean(root), readOnly: readOnly}
	// Resolve maps paths back under the root; resolving the root itself
	// once here spares every call a walk up through /tmp and its parents.
	if f.root != "/" {
		f.rootReal, _ = evalSymlinks(f.root)
	}
	return f
}

// CheckWrite says whether a change to p may go ahead: not on a read-only FS.
// Writers outside FS (atomic file replacement) call it first.
func (f FS) CheckWrite(op, p string) error {
	if f.readOnly {
		return &os.PathError{Op: op, Path: p, Err: ErrReadOnly}
	}
	return nil
}

// Root is the prefix every path is joined to.
func (f FS) Root() string { return f.root }

// ReadOnly reports whether writes are refused.
func (f FS) ReadOnly() bool { return f.readOnly }

// Path maps a host path to the path on this machine.
func (f FS) Path(p string) string {
	if f.root == "/" {
		return filepath.Clean(p)
	}
	return filepath.Join(f.root, p)
}

// ReadString returns the file's content with one trailing newline removed.
// It reads with plain open/read/close system calls: os.Open adds an fstat,
// fcntls and a (failing) netpoller registration to every file, which
// triples the cost of a host's thousands of one-line attribute reads.
func (f FS) ReadString(p string) (string, error) {
	b, err := readSmall(f.Path(p))
	if err != nil {
		return "", err
	}
	return strings.TrimSuffix(string(b), "\n"), nil
}

func readSmall(path string) ([]byte, error) {
	fd, err := retryEINTR(func() (int, error) { return unix.Open(path, unix.O_RDONLY|unix.O_CLOEXEC, 0) })
	if err != nil {
		return nil, &os.PathError{Op: "open", Path: path, Err: err}
	}
	defer unix.Close(fd)
	var buf [4096]byte
	var out []byte
	for {
		n, err := retryEINTR(func() (int, error) { return unix.Read(fd, buf[:]) })
		if err != nil {
			return nil, &os.PathError{Op: "read", Path: path, Err: err}
		}
		out = append(out, buf[:n]...)
		// A read that leaves the buffer part empty has reached the end:
		// sysfs, configfs and debugfs attributes hand over their whole
		// value in the first read, and regular files read short only at
		// EOF. That spares the second read(2) that would return 0, one
		// system call in four of a host's attribute reads.
		if n < len(buf) {
			return out, nil
		}
	}
}

// ReadTrimmed returns the file's content with surrounding space removed.
func (f FS) ReadTrimmed(p string) (string, error) {
	s, err := f.ReadString(p)
	return strings.TrimSpace(s), err
}

// Exists reports whether p exists (following symlinks).
func (f FS) Exists(p string) bool {
	_, err := os.Stat(f.Path(p))
	return err == nil
}

// WriteString writes s and a newline to an existing file, as `echo s > p`
// does (attribute parsers take the trailing newline; it also keeps fixture
// trees byte-identical to what they held). No create.
func (f FS) WriteString(p, s string) error {
	if err := f.CheckWrite("write", p); err != nil {
		return err
	}
	if !strings.HasSuffix(s, "\n") {
		s += "\n"
	}
	// Plain system calls, as in ReadString; one write(2), as echo does:
	// attribute files take their value in a single write.
	path := f.Path(p)
	fd, err := retryEINTR(func() (int, error) { return unix.Open(path, unix.O_WRONLY|unix.O_TRUNC|unix.O_CLOEXEC, 0) })
	if err != nil {
		return &os.PathError{Op: "open", Path: path, Err: err}
	}
	n, err := retryEINTR(func() (int, error) { return unix.Write(fd, []byte(s)) })
	if err == nil && n != len(s) {
		err = unix.EIO
	}
	if cerr := unix.Close(fd); err == nil {
		err = cerr
	}
	if err != nil {
		return &os.PathError{Op: "write", Path: path, Err: err}
	}
	return nil
}

// Mkdir creates a configfs directory (rdma_cm/<dev>); an existing one is fine.
func (f FS) Mkdir(p string) error {
	if err := f.CheckWrite("mkdir", p); err != nil {
		return err
	}
	err := os.Mkdir(f.Path(p), 0o755)
	if errors.Is(err, os.ErrExist) {
		return nil
	}
	return err
}

// Rmdir removes a configfs directory.
func (f FS) Rmdir(p string) error {
	if err := f.CheckWrite("rmdir", p); err != nil {
		return err
	}
	return os.Remove(f.Path(p))
}

// ReadDir lists the names in a directory, sorted.
func (f FS) ReadDir(p string) ([]string, error) {
	ents, err := os.ReadDir(f.Path(p))
	if err != nil {
		return nil, err
	}
	names := make([]string, 0, len(ents))
	for _, e := range ents {
		names = append(names, e.Name())
	}
	return names, nil
}

// Readlink returns a symlink's target as stored (usually relative).
func (f FS) Readlink(p string) (string, error) {
	return os.Readlink(f.Path(p))
}

// Resolve follows symlinks and returns the host path p refers to, e.g.
// /sys/class/net/eth0 -> /sys/devices/pci0000:00/.../net/eth0.
func (f FS) Resolve(p string) (string, error) {
	real, err := realPath(f.Path(p))
	if err != nil {
		return "", err
	}
	if f.root == "/" {
		return real, nil
	}
	rootReal := f.rootReal
	if rootReal == "" { // the root did not exist when the FS was made
		if rootReal, err = evalSymlinks(f.root); err != nil {
			return "", err
		}
	}
	rel, err := filepath.Rel(rootReal, real)
	if err != nil || strings.HasPrefix(rel, "..") {
		return "", fmt.Errorf("%s resolves outside the root %s", p, f.root)
	}
	return "/" + rel, nil
}

// realPath is filepath.EvalSymlinks done by the kernel: it opens path
// (O_PATH: no access to the file itself) and reads the name of the
// descriptor back from /proc/self/fd. EvalSymlinks lstats every component
// of the path and of every link's target, each a walk from the root: ~15
// system calls for a /sys/class/infiniband/<dev>/device under a snapshot
// root, against 3 here. Without /proc it falls back to EvalSymlinks.
func realPath(path string) (string, error) {
	fd, err := retryEINTR(func() (int, error) { return unix.Open(path, unix.O_PATH|unix.O_CLOEXEC, 0) })
	if err != nil {
		return "", &os.PathError{Op: "open", Path: path, Err: err}
	}
	defer unix.Close(fd)
	var buf [unix.PathMax]byte
	n, err := unix.Readlink("/proc/self/fd/"+strconv.Itoa(fd), buf[:])
	if err != nil || n == len(buf) || buf[0] != '/' {
		return evalSymlinks(path)
	}
	return string(buf[:n]), nil
}

// evalSymlinks is filepath.EvalSymlinks made absolute, as realPath's
// answers are (a relative root, a relative path under it).
func evalSymlinks(path string) (string, error) {
	real, err := filepath.EvalSymlinks(path)
	if err != nil {
		return "", err
	}
	return filepath.Abs(real)
}

// Dir is a directory of the host reached through its symlinks once: reads
// below it open the resolved path, so the kernel does not walk the
// symlinks again for each file (under a snapshot root, a read through
// /sys/class/net/<if>/ costs twice what one through the device's own
// directory does). Errors still name the path as asked for. Keep a Dir
// for one pass over the host (a discovery, an observation): a renamed
// netdev or a re-probed device changes where the links lead.
type Dir struct {
	fs   FS
	path string // as asked for, for errors
	real string // host path with the symlinks resolved; path when that failed
}

// Dir resolves p. A p that does not resolve (absent, outside the root)
// gives a Dir that reads through p itself, with the errors that brings.
func (f FS) Dir(p string) Dir {
	real, err := f.Resolve(p)
	if err != nil {
		real = p
	}
	return Dir{fs: f, path: p, real: real}
}

// Path is the directory as asked for.
func (d Dir) Path() string { return d.path }

// ReadString reads d/rel as FS.ReadString does.
func (d Dir) ReadString(rel string) (string, error) {
	b, err := readSmall(d.fs.Path(d.real + "/" + rel))
	if err != nil {
		var pe *os.PathError
		if d.real != d.path && errors.As(err, &pe) {
			pe.Path = d.fs.Path(d.path + "/" + rel)
		}
		return "", err
	}
	return strings.TrimSuffix(string(b), "\n"), nil
}

// ReadTrimmed reads d/rel as FS.ReadTrimmed does.
func (d Dir) ReadTrimmed(rel string) (string, error) {
	s, err := d.ReadString(rel)
	return strings.TrimSpace(s), err
}

// retryEINTR repeats a system call the Go runtime's signals interrupted, as
// package os does.
func retryEINTR(call func() (int, error)) (int, error) {
	for {
		n, err := call()
		if err != unix.EINTR {
			return n, err
		}
	}
}
