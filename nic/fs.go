package nic

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/sys/unix"
)

// FS reads and writes the kernel's pseudo file systems (sysfs, configfs,
// debugfs) under a root prefix, like prometheus/procfs's NewFS(mount). With
// root "/" it is the live host; tests and --root point it at a copy of a real
// host's tree, and --snapshot at a capture.
//
// Paths given to FS methods are absolute host paths ("/sys/class/net"). FS
// resolves them inside the root as a chroot would: symlinks are followed
// relative to the root, so fixture trees keep the real sysfs layout
// (class/infiniband/<dev> -> ../../devices/.../infiniband/<dev>), and
// neither ".." nor an absolute link leads out of it (openat2's
// RESOLVE_IN_ROOT; confine.go). Root "/" takes the same path.
//
// A file read or written as an attribute must be a regular file: a FIFO
// or a device in the tree would otherwise block a read or write forever.
// On the live host (and any root not on a local disk or tmpfs) every
// operation also has a deadline (DefaultTimeout): a driver may never
// answer.
type FS struct {
	root     string   // as given, cleaned: error messages name paths under it
	dir      *rootDir // the root, opened once
	readOnly bool
	timeout  time.Duration
	// unreadable are the files a capture could not read (a snapshot's
	// FS): their reads fail as they did on the host.
	unreadable *Unreadable
}

// mem is the tree that holds every file of a packed snapshot, whose reads
// are answered from it (nothing under the root is opened); nil for files
// on disk. It is kept in the rootDir, not in FS: one more word in FS would
// make a Dir's reads (where, a Dir and more) too big for a closure to
// capture by value, and cost every read of a tree on disk an allocation.
func (f FS) mem() *MemTree { return f.dir.mem }

// DefaultTimeout bounds each file operation. It is a backstop against a
// driver that never answers, not a latency target: mlx5 gives a firmware
// command 60 s before failing it, and an attribute write may wait for one.
const DefaultTimeout = 2 * time.Minute

// ErrReadOnly is returned by writes to a read-only FS (a snapshot).
var ErrReadOnly = errors.New("read-only snapshot: no writes")

// ErrNotRegular is the error (wrapped in an *os.PathError that names the
// path and its type) for a FIFO, socket, device or directory where an
// attribute file is expected.
var ErrNotRegular = errors.New("not a regular file")

// NewFS returns an FS rooted at root ("" or "/" for the live host).
func NewFS(root string, readOnly bool) FS {
	if root == "" {
		root = "/"
	}
	root = filepath.Clean(root)
	f := FS{root: root, dir: openRootDir(root), readOnly: readOnly, timeout: DefaultTimeout}
	if f.dir.plain {
		// A tree of plain files on a local disk or tmpfs (--root,
		// --snapshot): the regular-file check is what keeps its reads
		// from blocking, and the deadline's goroutine would double the
		// cost of each of a host's thousands of attribute reads.
		f.timeout = 0
	}
	return f
}

// NewMemFS returns a read-only FS whose files are t's. root is where the
// files came from (a packed snapshot's directory): error messages name
// paths under it, as for a tree there.
func NewMemFS(root string, t *MemTree) FS {
	f := NewFS(root, true)
	f.dir.mem, f.timeout = t, 0
	return f
}

// WithTimeout returns f with each operation bounded by d (0: none).
func (f FS) WithTimeout(d time.Duration) FS {
	f.timeout = d
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

// Root is the canonical root: absolute, its symlinks resolved, so that a
// journal written with --root ./tree rolls back with --root /abs/tree.
// A root that does not exist is only made absolute.
func (f FS) Root() string {
	if c := f.dir.canonical(); c != "" {
		return c
	}
	if abs, err := filepath.Abs(f.root); err == nil {
		return abs
	}
	return f.root
}

// ReadOnly reports whether writes are refused.
func (f FS) ReadOnly() bool { return f.readOnly }

// Path maps a host path to the path on this machine, lexically: for
// messages, and for the rare writer outside FS. It does not confine; the
// FS methods do.
func (f FS) Path(p string) string {
	if f.root == "/" {
		return filepath.Clean(p)
	}
	return filepath.Join(f.root, p)
}

// ReadString returns the file's content with one trailing newline removed.
// It reads with plain open/fstat/read/close system calls: os.Open adds
// fcntls and a (failing) netpoller registration to every file, which
// costs a host's thousands of one-line attribute reads dearly.
func (f FS) ReadString(p string) (string, error) { return f.readString(where{rel: p}) }

// readString is ReadString of w, for FS and Dir alike.
func (f FS) readString(w where) (string, error) {
	var buf [attrBuf]byte
	b, err := f.readWith(w, buf[:0])
	if err != nil {
		return "", err
	}
	return string(bytes.TrimSuffix(b, []byte("\n"))), nil
}

// attrBuf is the stack buffer a one-line attribute is read into before it
// becomes a string: sysfs values are a few bytes, GIDs 39; longer files
// grow it on the heap.
const attrBuf = 128

// ReadFile reads the regular file p whole (inside the root, with the
// deadline): files that are not attributes, as the NCCL config file.
func (f FS) ReadFile(p string) ([]byte, error) { return f.readWith(where{rel: p}, nil) }

// Confined is the machine path of p for the few writers that must use
// package os (the NCCL file's atomic replacement: temp file, fsync,
// rename): its directory resolved inside the root as the FS methods
// resolve paths, its last name as given (nccl.WriteConf refuses a
// symlink there). Unlike the FS methods it resolves once, not at each use.
func (f FS) Confined(p string) (string, error) {
	dir, name := filepath.Split(filepath.Clean("/" + p))
	real, err := f.Resolve(dir)
	if err != nil {
		return "", err
	}
	return filepath.Join(f.Root(), real, name), nil
}

// where is the file a read or listing opens: rel below the Dir d when in
// is set (a Dir's reads), else the host path rel from the root (an FS's).
// Errors name asked(), which is made only for them.
type where struct {
	d   Dir
	in  bool
	rel string
}

func (w where) open(fs FS, flags int) (int, error) {
	if w.in {
		return w.d.openRel(w.rel, flags)
	}
	return fs.dir.open(w.rel, flags)
}

func (w where) asked() string {
	if w.in {
		return w.d.path + "/" + w.rel
	}
	return w.rel
}

// readWith reads the whole attribute w. Without a deadline it reads here,
// into buf's free capacity when the value fits (a caller's stack buffer),
// without the closures a deadline's goroutine needs: they cost each of a
// snapshot's thousands of reads four allocations. With one, the
// goroutine reads into a buffer of its own (buf would escape with it).
func (f FS) readWith(w where, buf []byte) ([]byte, error) {
	if f.mem() != nil {
		return f.memRead(w, buf)
	}
	if f.timeout <= 0 {
		return f.readAttr(w, buf)
	}
	var out []byte
	err := f.withDeadline("read", w.asked(), func() error {
		var err error
		out, err = f.readAttr(w, nil)
		return err
	})
	return out, err
}

// readAttr opens w as an attribute (a regular file), reads it whole and
// closes it. The first read(2) goes into buf's free part, a caller's small
// stack buffer; a value that fills it is read again from the start, into
// a page or more: sysfs makes an attribute's whole value at each read and
// hands over the part at the file offset, so one read(2) of the whole
// value is what sees one consistent value.
func (f FS) readAttr(w where, buf []byte) ([]byte, error) {
	fd, err := f.openAttr(w, unix.O_RDONLY)
	if err != nil {
		return nil, err
	}
	defer unix.Close(fd)
	readErr := func(err error) error { return &os.PathError{Op: "read", Path: f.Path(w.asked()), Err: err} }
	if free := buf[len(buf):cap(buf)]; len(free) > 0 {
		n, err := retryEINTR(func() (int, error) { return unix.Read(fd, free) })
		if err != nil {
			return nil, readErr(err)
		}
		if n < len(free) {
			return buf[:len(buf)+n], nil
		}
		if _, err := unix.Seek(fd, 0, io.SeekStart); err != nil {
			return nil, readErr(err)
		}
	}
	out := make([]byte, len(buf), len(buf)+4096)
	copy(out, buf)
	for {
		if len(out) == cap(out) {
			out = slices.Grow(out, min(len(out), MaxAttr+1-len(out)))
		}
		free := out[len(out):cap(out)]
		n, err := retryEINTR(func() (int, error) { return unix.Read(fd, free) })
		if err != nil {
			return nil, readErr(err)
		}
		out = out[:len(out)+n]
		if len(out) > MaxAttr {
			return nil, readErr(fmt.Errorf("%w: more than the %d MiB cap for an attribute", ErrTooLarge, MaxAttr>>20))
		}
		// A read that leaves the buffer part empty has reached the
		// end: sysfs, configfs and debugfs attributes hand over their
		// whole value in the first read, and regular files read short
		// only at EOF. That spares the second read(2) that would
		// return 0.
		if n < len(free) {
			return out, nil
		}
	}
}

// MaxAttr bounds one attribute readAttr reads: sysfs hands over at most a
// page, configfs and debugfs little more; a --root tree's file that holds
// more is no attribute.
const MaxAttr = 16 << 20

// openFile opens the attribute p (flags O_RDONLY or O_WRONLY|O_TRUNC) and
// refuses anything but a regular file.
func (f FS) openFile(p string, flags int) (int, error) {
	return f.openAttr(where{rel: p}, flags)
}

// openAttr opens an attribute with open and refuses anything but a
// regular file. O_NONBLOCK keeps the open itself from waiting for a
// FIFO's other end; regular files ignore it.
func (f FS) openAttr(w where, flags int) (int, error) {
	fd, err := w.open(f, flags|unix.O_NONBLOCK)
	if err == unix.ENOENT {
		err = f.recordedErr(w, err)
	}
	if err == unix.ENXIO { // a FIFO without reader, a socket: say which
		if kind := f.kindOf(w); kind != "" {
			err = notRegular(kind)
		}
	}
	if err != nil {
		return -1, &os.PathError{Op: "open", Path: f.Path(w.asked()), Err: err}
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		unix.Close(fd)
		return -1, &os.PathError{Op: "open", Path: f.Path(w.asked()), Err: err}
	}
	if err := CheckRegular(st.Mode); err != nil {
		unix.Close(fd)
		return -1, &os.PathError{Op: "open", Path: f.Path(w.asked()), Err: err}
	}
	return fd, nil
}

func notRegular(kind string) error { return fmt.Errorf("%w: it is a %s", ErrNotRegular, kind) }

// CheckRegular refuses a file whose stat mode is not a regular file's,
// with ErrNotRegular naming its type ("it is a FIFO"): what every read of
// a file another user may have put in place checks on the file it opened.
func CheckRegular(mode uint32) error {
	if mode&unix.S_IFMT == unix.S_IFREG {
		return nil
	}
	return notRegular(fileKind(mode))
}

// kindOf names the type of w, "" when it cannot tell.
func (f FS) kindOf(w where) string {
	fd, err := w.open(f, unix.O_PATH)
	if err != nil {
		return ""
	}
	defer unix.Close(fd)
	var st unix.Stat_t
	if unix.Fstat(fd, &st) != nil {
		return ""
	}
	return fileKind(st.Mode)
}

// fileTypes are the file types by their mode bits: the name errors give
// them and the type getdents64 reports for them.
var fileTypes = [...]struct {
	mode uint32
	name string
	dt   uint8
}{
	{unix.S_IFREG, "regular file", unix.DT_REG},
	{unix.S_IFDIR, "directory", unix.DT_DIR},
	{unix.S_IFIFO, "FIFO", unix.DT_FIFO},
	{unix.S_IFSOCK, "socket", unix.DT_SOCK},
	{unix.S_IFCHR, "character device", unix.DT_CHR},
	{unix.S_IFBLK, "block device", unix.DT_BLK},
	{unix.S_IFLNK, "symlink", unix.DT_LNK},
}

func fileKind(mode uint32) string {
	for _, t := range fileTypes {
		if mode&unix.S_IFMT == t.mode {
			return t.name
		}
	}
	return fmt.Sprintf("file of type %#o", mode&unix.S_IFMT)
}

// ReadUint reads a one-line decimal attribute (an RDMA hw_counters file)
// as a number, without making a string of it: the agent reads hundreds a
// second. A content that is not a number is an error wrapping strconv's
// (errors.Is strconv.ErrSyntax or ErrRange), never a 0.
func (f FS) ReadUint(p string) (uint64, error) { return f.readUint(where{rel: p}) }

func (f FS) readUint(w where) (uint64, error) {
	var buf [attrBuf]byte
	b, err := f.readWith(w, buf[:0])
	if err != nil {
		return 0, err
	}
	return strconv.ParseUint(string(bytes.TrimSpace(b)), 10, 64)
}

// ReadTrimmed returns the file's content with surrounding space removed.
func (f FS) ReadTrimmed(p string) (string, error) {
	s, err := f.ReadString(p)
	return strings.TrimSpace(s), err
}

// Exists reports whether p exists (following symlinks, inside the root).
func (f FS) Exists(p string) bool { return f.exists(where{rel: p}) }

// exists is Exists of w, for FS and Dir alike.
func (f FS) exists(w where) bool {
	if f.mem() != nil {
		return f.memExists(w)
	}
	return f.withDeadline("stat", w.asked(), func() error {
		fd, err := w.open(f, unix.O_PATH)
		if err == nil {
			unix.Close(fd)
		}
		if err == unix.ENOENT && f.recordedErr(w, err) != err {
			return nil // there, but unreadable: as on the host
		}
		return err
	}) == nil
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
	return f.withDeadline("write", p, func() error {
		// Plain system calls, as in ReadString; one write(2), as echo
		// does: attribute files take their value in a single write.
		fd, err := f.openFile(p, unix.O_WRONLY|unix.O_TRUNC)
		if err != nil {
			return err
		}
		n, err := retryEINTR(func() (int, error) { return unix.Write(fd, []byte(s)) })
		if err == nil && n != len(s) {
			err = unix.EIO
		}
		if cerr := unix.Close(fd); err == nil {
			err = cerr
		}
		if err != nil {
			return &os.PathError{Op: "write", Path: f.Path(p), Err: err}
		}
		return nil
	})
}

// inParent runs fn on the directory that holds p (resolved inside the
// root) and p's last name: mkdir, rmdir and readlink act on the name
// itself, not on where it leads.
func (f FS) inParent(op, p string, fn func(dirfd int, name string) error) error {
	return f.withDeadline(op, p, func() error {
		clean := filepath.Clean("/" + p)
		dir, name := filepath.Split(clean)
		if name == "" {
			return &os.PathError{Op: op, Path: f.Path(p), Err: unix.EINVAL}
		}
		dfd, err := f.dir.open(dir, unix.O_PATH|unix.O_DIRECTORY)
		if err == nil {
			err = fn(dfd, name)
			unix.Close(dfd)
		}
		if err != nil {
			return &os.PathError{Op: op, Path: f.Path(p), Err: err}
		}
		return nil
	})
}

// Mkdir creates a configfs directory (rdma_cm/<dev>); an existing one is fine.
func (f FS) Mkdir(p string) error {
	if err := f.CheckWrite("mkdir", p); err != nil {
		return err
	}
	err := f.inParent("mkdir", p, func(dfd int, name string) error { return unix.Mkdirat(dfd, name, 0o755) })
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
	return f.inParent("rmdir", p, func(dfd int, name string) error { return unix.Unlinkat(dfd, name, unix.AT_REMOVEDIR) })
}

// ReadDir lists the names in a directory, sorted.
func (f FS) ReadDir(p string) ([]string, error) {
	return f.readDirWith(where{rel: p}, nil)
}

// readDirWith lists the directory w, sorted. keep, when not nil, says by
// its type (unix.DT_*) whether to list an entry. It reads with plain
// getdents64 calls, as ReadString reads with plain reads: an os.File adds
// an fcntl, a poller check and a finalizer to each of a host's hundreds
// of listings. Without a deadline it lists here, as readWith reads.
func (f FS) readDirWith(w where, keep func(typ uint8) bool) ([]string, error) {
	var names []string
	var err error
	if f.timeout <= 0 {
		names, err = f.listDir(w, keep)
	} else {
		err = f.withDeadline("readdir", w.asked(), func() error {
			var err error
			names, err = f.listDir(w, keep)
			return err
		})
	}
	if err != nil {
		return nil, err
	}
	if names == nil {
		names = []string{} // as os.File.Readdirnames: empty, never nil
	}
	sort.Strings(names)
	return names, nil
}

// listDir opens the directory w and returns the names keep keeps.
func (f FS) listDir(w where, keep func(typ uint8) bool) ([]string, error) {
	if f.mem() != nil {
		return f.memList(w, keep)
	}
	fd, err := w.open(f, unix.O_RDONLY|unix.O_DIRECTORY)
	if err != nil {
		return nil, &os.PathError{Op: "open", Path: f.Path(w.asked()), Err: err}
	}
	defer unix.Close(fd)
	var names []string
	var buf [8192]byte
	for {
		n, err := retryEINTR(func() (int, error) { return unix.Getdents(fd, buf[:]) })
		if err != nil {
			return nil, &os.PathError{Op: "readdirent", Path: f.Path(w.asked()), Err: err}
		}
		if n <= 0 {
			return names, nil
		}
		names = direntNames(fd, buf[:n], names, keep)
	}
}

// direntNames appends the names of the getdents64 records in buf, read
// from the directory dirfd, to names. It leaves out ".", ".." and deleted
// entries, as os.File.Readdirnames does, and the entries keep (when not
// nil) refuses by their type; a file system that does not give the type
// (DT_UNKNOWN) is asked with fstatat, as os.File.Readdir does.
func direntNames(dirfd int, buf []byte, names []string, keep func(typ uint8) bool) []string {
	// struct linux_dirent64: d_ino (8 bytes), d_off (8), d_reclen (2),
	// d_type (1), d_name (NUL-terminated, padded).
	const nameOff = 19
	for len(buf) >= nameOff {
		reclen := int(binary.NativeEndian.Uint16(buf[16:18]))
		if reclen < nameOff || reclen > len(buf) {
			break
		}
		rec := buf[:reclen]
		buf = buf[reclen:]
		name := rec[nameOff:]
		if i := bytes.IndexByte(name, 0); i >= 0 {
			name = name[:i]
		}
		if binary.NativeEndian.Uint64(rec[:8]) == 0 || string(name) == "." || string(name) == ".." {
			continue
		}
		if keep != nil {
			typ := rec[18]
			if typ == unix.DT_UNKNOWN {
				var st unix.Stat_t
				if unix.Fstatat(dirfd, string(name), &st, unix.AT_SYMLINK_NOFOLLOW) == nil {
					typ = direntType(st.Mode)
				}
			}
			if !keep(typ) {
				continue
			}
		}
		names = append(names, string(name))
	}
	return names
}

// direntType is the DT_* type of a file of mode.
func direntType(mode uint32) uint8 {
	for _, t := range fileTypes {
		if mode&unix.S_IFMT == t.mode {
			return t.dt
		}
	}
	return unix.DT_UNKNOWN
}

// Readlink returns a symlink's target as stored (usually relative).
func (f FS) Readlink(p string) (string, error) {
	if f.mem() != nil {
		return f.memReadlink(p)
	}
	var target string
	err := f.inParent("readlink", p, func(dfd int, name string) error {
		var err error
		target, err = readlinkAt(dfd, name)
		return err
	})
	return target, err
}

// Resolve follows symlinks inside the root and returns the host path p
// refers to, e.g. /sys/class/net/eth0 -> /sys/devices/pci0000:00/.../net/eth0.
func (f FS) Resolve(p string) (string, error) {
	var real string
	err := f.withDeadline("resolve", p, func() error {
		var err error
		real, err = f.resolve(p)
		if err != nil {
			return &os.PathError{Op: "resolve", Path: f.Path(p), Err: err}
		}
		return nil
	})
	return real, err
}

// resolve is the host path p leads to, from the tree in memory or on disk.
func (f FS) resolve(p string) (string, error) {
	if f.mem() != nil {
		return f.memResolve(p)
	}
	return f.dir.resolve(p)
}

// withDeadline runs op (one file operation on path p) and gives up after
// f's timeout. sysfs, configfs and debugfs I/O are blocking system calls
// that a stuck driver may never return from, and a signal does not
// interrupt them; the caller gets an error naming the path and can roll
// back or exit, while the abandoned call's goroutine ends if the kernel
// ever answers. Regular files never take that long, so in tests each
// goroutine ends before its operation returns.
func (f FS) withDeadline(op, p string, fn func() error) error {
	if f.timeout <= 0 {
		return fn()
	}
	done := make(chan error, 1)
	go func() { done <- fn() }()
	t := time.NewTimer(f.timeout)
	defer t.Stop()
	select {
	case err := <-done:
		return err
	case <-t.C:
		return &os.PathError{Op: op, Path: f.Path(p), Err: fmt.Errorf("no answer within %v, abandoned: %w", f.timeout, os.ErrDeadlineExceeded)}
	}
}

// Dir is a directory of the host reached through its symlinks once, and
// held open: reads below it open the name relative to the directory
// (openat2 with RESOLVE_BENEATH), so the kernel walks neither the
// symlinks nor the path from the root again for each file. For a
// snapshot's thousands of one-line attributes that halves the cost of an
// open (12.9 µs from the root through /sys/class/infiniband/<dev> against
// 5.2 µs below the held directory, measured on a 64-port snapshot). A
// name that leads out of the directory (a symlink such as "device")
// fails RESOLVE_BENEATH with EXDEV and is opened from the root instead,
// through the directory's resolved path, confined as every FS path is.
// Errors still name the path as asked for.
//
// The resolved path is asked of the kernel (/proc/self/fd) only when
// something needs it: such a name, or Resolved. Most Dirs never do, and
// the readlink costs as much as the open that made the Dir.
//
// Close the Dir when done with it (see Close): a descriptor left to the
// garbage collector stays open for the rest of a short process.
//
// Keep a Dir for one pass over the host (a discovery, an observation): a
// renamed netdev or a re-probed device changes where the links lead.
type Dir struct {
	fs   FS
	path string // as asked for, for errors
	// real is, for a Dir not held, the host path its reads go through:
	// where the walk resolved path to (kernels without openat2),
	// or path itself when it did not resolve. A held Dir's is its
	// handle's.
	real  string
	found bool       // path resolved to a directory
	open  *dirHandle // the directory, nil when reads go through the root
	// mem is the directory when the FS's files are in memory. With it
	// a where (a Dir and more) is 128 bytes, the most a closure captures
	// by value: another word would cost every read an allocation
	// (TestTreeReadAllocatesOnlyItsValue).
	mem *memNode
}

// dirHandle owns a held Dir's descriptor, which the Dir's copies share.
// Close releases it; a cleanup closes it when no copy refers to it any
// more, if Close never did.
type dirHandle struct {
	mu      sync.RWMutex // held for reading while fd is in use; Close takes it
	fd      int          // -1 once closed
	cleanup runtime.Cleanup
	once    sync.Once
	real    string // the directory's host path, asked of the kernel once
}

// Dir resolves p. A p that does not resolve (absent, outside the root)
// gives a Dir that reads through p itself, with the errors that brings.
func (f FS) Dir(p string) Dir {
	d := Dir{fs: f, path: p, real: p}
	var got Dir
	var err error
	if f.mem() != nil {
		if n, err := f.mem().lookup(nil, p, true); err == nil && n.typ == unix.DT_DIR {
			d.found, d.real, d.mem = true, n.path, n
		}
		return d
	}
	if f.timeout <= 0 {
		got, err = f.openDir(p)
	} else {
		// got is written by the call, read only once it has returned.
		err = f.withDeadline("resolve", p, func() error {
			var err error
			got, err = f.openDir(p)
			return err
		})
	}
	if err == nil {
		d.found, d.open = true, got.open
		if got.open == nil {
			d.real = got.real
		}
	}
	return d
}

// openDir resolves p for Dir: the directory held open, or, without
// openat2, where the walk led.
func (f FS) openDir(p string) (got Dir, err error) {
	fd, walked, err := f.dir.openResolved(p, unix.O_PATH|unix.O_DIRECTORY)
	if err != nil {
		return got, err
	}
	if walked != "" || f.dir.noOpenat2.Load() {
		// No openat2: relative opens could not be confined below
		// the directory either. The walk said where it is.
		unix.Close(fd)
		got.real = "/" + walked
		return got, nil
	}
	h := &dirHandle{fd: fd}
	h.cleanup = runtime.AddCleanup(h, func(fd int) { unix.Close(fd) }, fd)
	got.open = h
	return got, nil
}

// Close releases the directory's descriptor now. A process starts with
// room for 64 descriptors; each time it holds more than its table has
// room for, the kernel grows the table, and in a multi-threaded process
// (any Go program) waits for an RCU grace period to do so
// (synchronize_rcu in expand_fdtable), while every open of every thread
// waits: 10 to 20 ms each on the 2-CPU bench machine, more than a whole
// 64-port discovery. After Close, d and its copies read from the root:
// through the resolved path if something asked for it before, else
// through the path as asked. Closing twice does nothing.
func (d Dir) Close() {
	h := d.open
	if h == nil {
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.fd >= 0 {
		h.cleanup.Stop()
		unix.Close(h.fd)
		h.fd = -1
	}
}

// Path is the directory as asked for.
func (d Dir) Path() string { return d.path }

// Resolved is where the directory is on the host, its symlinks resolved
// (/sys/devices/pci0000:3a/0000:3a:00.0/0000:3b:00.0 for
// /sys/class/infiniband/mlx5_0/device); false when the path did not
// resolve to a directory. Ask before Close: after it, a Dir that was
// never asked answers the path as asked.
func (d Dir) Resolved() (string, bool) {
	if !d.found {
		return "", false
	}
	return d.resolved(), true
}

// resolved is the host path reads that leave the directory go through.
func (d Dir) resolved() string {
	h := d.open
	if h == nil {
		return d.real
	}
	h.once.Do(func() {
		h.mu.RLock()
		defer h.mu.RUnlock()
		h.real = d.path // as a Dir that did not resolve
		if h.fd >= 0 {
			if real, err := d.fs.dir.realPath(h.fd, "", d.path); err == nil {
				h.real = real
			}
		}
	})
	return h.real
}

// openRel opens rel (flags as for open(2)) below the held directory, or
// from the root when the directory is not held (or no longer) or rel
// leads out of it.
func (d Dir) openRel(rel string, flags int) (int, error) {
	if h := d.open; h != nil {
		h.mu.RLock()
		if h.fd >= 0 {
			fd, err := openBeneath(h.fd, rel, flags)
			h.mu.RUnlock()
			if err != unix.EXDEV {
				return fd, err
			}
		} else {
			h.mu.RUnlock()
		}
	}
	return d.fs.dir.open(d.resolved()+"/"+rel, flags)
}

// ReadString reads d/rel as FS.ReadString does.
func (d Dir) ReadString(rel string) (string, error) {
	return d.fs.readString(where{d: d, in: true, rel: rel})
}

// ReadUint reads d/rel as FS.ReadUint does: opened below the held
// directory, one path component to resolve instead of the whole sysfs
// path.
func (d Dir) ReadUint(rel string) (uint64, error) {
	return d.fs.readUint(where{d: d, in: true, rel: rel})
}

// ReadTrimmed reads d/rel as FS.ReadTrimmed does.
func (d Dir) ReadTrimmed(rel string) (string, error) {
	s, err := d.ReadString(rel)
	return strings.TrimSpace(s), err
}

// ReadDir lists the names in d/rel ("." for d itself), sorted.
func (d Dir) ReadDir(rel string) ([]string, error) {
	return d.fs.readDirWith(where{d: d, in: true, rel: rel}, nil)
}

// Exists reports whether d/rel exists, as FS.Exists does.
func (d Dir) Exists(rel string) bool { return d.fs.exists(where{d: d, in: true, rel: rel}) }

// Resolve returns the host path d/rel leads to, as FS.Resolve does.
func (d Dir) Resolve(rel string) (string, error) {
	asked := d.path + "/" + rel
	if d.mem != nil {
		n, err := d.fs.mem().lookup(d.mem, rel, true)
		if err != nil {
			return "", &os.PathError{Op: "resolve", Path: d.fs.Path(asked), Err: err}
		}
		return n.path, nil
	}
	if d.open == nil {
		// Not held: the walk (or the root's openat2) resolves the path
		// reads go through, and says where it ends.
		real, err := d.fs.Resolve(d.real + "/" + rel)
		if pe, ok := err.(*os.PathError); ok {
			pe.Path = d.fs.Path(asked)
		}
		return real, err
	}
	var real string
	err := d.fs.withDeadline("resolve", asked, func() error {
		fd, err := d.openRel(rel, unix.O_PATH)
		if err == nil {
			real, err = d.fs.dir.realPath(fd, "", asked)
			unix.Close(fd)
		}
		if err != nil {
			return &os.PathError{Op: "resolve", Path: d.fs.Path(asked), Err: err}
		}
		return nil
	})
	if err != nil {
		return "", err
	}
	return real, nil
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
