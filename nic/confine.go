package nic

import (
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync/atomic"

	"golang.org/x/sys/unix"
)

// rootDir is an FS's root, opened once (O_PATH), that every path is
// resolved below: openat2 with RESOLVE_IN_ROOT makes ".." and absolute
// symlinks stop at it, as chroot does, so a link in a --root tree that
// points at /etc/... reaches the tree's etc, never the machine's.
// Kernels before 5.6 have no openat2; walkInRoot does the same in user
// space there.
type rootDir struct {
	path  string // the root as given, cleaned
	fd    int    // -1 when the root could not be opened (it may appear later)
	canon string // absolute, symlinks resolved; "" when unknown
	// plain: the root is on a local disk or tmpfs file system (a --root
	// copy, a snapshot), whose regular files never block for long.
	plain bool
	// noOpenat2 is set once openat2 answered ENOSYS, so that later calls
	// go straight to the walk. Tests set it to exercise the walk.
	noOpenat2 atomic.Bool
	// mem holds the files instead of the root (FS.mem), set once by
	// NewMemFS before the FS is used.
	mem *MemTree
}

// openRootDir opens root. The descriptor is closed when no FS refers to
// the rootDir any more: an FS is a value, copied freely, with no Close.
func openRootDir(root string) *rootDir {
	d := &rootDir{path: root, fd: -1}
	fd, err := retryEINTR(func() (int, error) {
		return unix.Open(root, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	})
	if err != nil {
		return d
	}
	d.fd = fd
	d.canon, _ = fdPath(fd)
	if d.canon == "" {
		d.canon = evalSymlinksAbs(root)
	}
	var st unix.Statfs_t
	if unix.Fstatfs(fd, &st) == nil {
		switch st.Type {
		case unix.TMPFS_MAGIC, unix.EXT4_SUPER_MAGIC, unix.XFS_SUPER_MAGIC, unix.BTRFS_SUPER_MAGIC, unix.OVERLAYFS_SUPER_MAGIC:
			d.plain = root != "/"
		}
	}
	runtime.AddCleanup(d, func(fd int) { unix.Close(fd) }, fd)
	return d
}

// canonical is the root's absolute, symlink-free path, "" when the root
// does not exist.
func (d *rootDir) canonical() string {
	if d.canon != "" {
		return d.canon
	}
	return evalSymlinksAbs(d.path)
}

// open opens the host path p below the root with flags (O_CLOEXEC added).
func (d *rootDir) open(p string, flags int) (int, error) {
	fd, _, err := d.openResolved(p, flags)
	return fd, err
}

// openResolved opens p. When the walk did the resolution (no openat2) it
// also returns the path it resolved to, relative to the root; the
// kernel's answer is in /proc.
func (d *rootDir) openResolved(p string, flags int) (fd int, walked string, err error) {
	flags |= unix.O_CLOEXEC
	rel := rootRel(p)
	if rel == "" {
		rel = "."
	}
	root := d.fd
	if root < 0 {
		// The root did not exist when the FS was made; try again now.
		if root, err = retryEINTR(func() (int, error) {
			return unix.Open(d.path, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
		}); err != nil {
			return -1, "", err
		}
		defer unix.Close(root)
	}
	defer runtime.KeepAlive(d) // the cleanup must not close d.fd under us
	if !d.noOpenat2.Load() {
		how := unix.OpenHow{Flags: uint64(flags), Resolve: unix.RESOLVE_IN_ROOT | unix.RESOLVE_NO_MAGICLINKS}
		for try := 0; ; try++ {
			fd, err = unix.Openat2(root, rel, &how)
			// EAGAIN: a rename raced with a ".." lookup; the kernel asks
			// for a retry.
			if err == unix.EINTR || (err == unix.EAGAIN && try < 16) {
				continue
			}
			break
		}
		if err != unix.ENOSYS {
			return fd, "", err
		}
		d.noOpenat2.Store(true)
	}
	return walkInRoot(root, rel, flags)
}

// rootRel is the host path p relative to the root, cleaned: "" for the
// root. An absolute, clean p (every path FS's callers make) costs no
// allocation: cleaning "/"+p would make one for each of an audit's
// thousands of opens.
func rootRel(p string) string {
	if !strings.HasPrefix(p, "/") {
		p = "/" + p
	}
	return strings.TrimPrefix(filepath.Clean(p), "/")
}

// resolve returns the host path p leads to, its symlinks followed inside
// the root.
func (d *rootDir) resolve(p string) (string, error) {
	fd, walked, err := d.openResolved(p, unix.O_PATH)
	if err != nil {
		return "", err
	}
	defer unix.Close(fd)
	return d.realPath(fd, walked, p)
}

// realPath is the host path of fd, which openResolved opened for p.
func (d *rootDir) realPath(fd int, walked, p string) (string, error) {
	if walked != "" || d.noOpenat2.Load() {
		return "/" + walked, nil
	}
	// The kernel knows where the descriptor is: one readlink of
	// /proc/self/fd/N instead of a walk.
	real, err := fdPath(fd)
	root := d.canonical()
	if err == nil && root != "" {
		if root == "/" {
			return real, nil
		}
		if rel, ok := strings.CutPrefix(real, root); ok && (rel == "" || rel[0] == '/') {
			if rel == "" {
				rel = "/"
			}
			return rel, nil
		}
	}
	// No /proc, or a bind mount that /proc names differently: walk.
	wfd, walked, err := d.walk(p)
	if err != nil {
		return "", err
	}
	unix.Close(wfd)
	return "/" + walked, nil
}

// openBeneath opens rel below the directory dirfd and nowhere else: a
// ".." or a symlink that would lead out of it fails with EXDEV
// (RESOLVE_BENEATH), so the caller can open it from the root instead.
func openBeneath(dirfd int, rel string, flags int) (int, error) {
	how := unix.OpenHow{Flags: uint64(flags | unix.O_CLOEXEC), Resolve: unix.RESOLVE_BENEATH | unix.RESOLVE_NO_MAGICLINKS}
	for try := 0; ; try++ {
		fd, err := unix.Openat2(dirfd, rel, &how)
		if err == unix.EINTR || (err == unix.EAGAIN && try < 16) {
			continue
		}
		return fd, err
	}
}

func (d *rootDir) walk(p string) (int, string, error) {
	rel := rootRel(p)
	root := d.fd
	if root < 0 {
		return -1, "", unix.ENOENT
	}
	defer runtime.KeepAlive(d)
	return walkInRoot(root, rel, unix.O_PATH|unix.O_CLOEXEC)
}

// maxSymlinks is the kernel's limit on links followed in one lookup.
const maxSymlinks = 40

// walkInRoot opens rel below the directory root as openat2 with
// RESOLVE_IN_ROOT does, for kernels without openat2: one name at a time
// with O_PATH|O_NOFOLLOW, reading each symlink itself, so that ".." at
// the root and absolute link targets stay at the root. It also returns
// the path it resolved to, relative to the root ("" for the root).
func walkInRoot(root int, rel string, flags int) (int, string, error) {
	// The directories below the root on the way, innermost last, and
	// their names: ".." pops one.
	var dirs []int
	var names []string
	defer func() {
		for _, fd := range dirs {
			unix.Close(fd)
		}
	}()
	cur := func() int {
		if len(dirs) == 0 {
			return root
		}
		return dirs[len(dirs)-1]
	}
	todo := strings.Split(rel, "/")
	links := 0
	for len(todo) > 0 {
		name := todo[0]
		todo = todo[1:]
		switch name {
		case "", ".":
			continue
		case "..":
			if n := len(dirs); n > 0 {
				unix.Close(dirs[n-1])
				dirs, names = dirs[:n-1], names[:n-1]
			}
			continue
		}
		dir := cur()
		fd, err := retryEINTR(func() (int, error) {
			return unix.Openat(dir, name, unix.O_PATH|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		})
		if err != nil {
			return -1, "", err
		}
		var st unix.Stat_t
		if err := unix.Fstat(fd, &st); err != nil {
			unix.Close(fd)
			return -1, "", err
		}
		if st.Mode&unix.S_IFMT == unix.S_IFLNK {
			target, err := readlinkAt(fd, "")
			unix.Close(fd)
			if err != nil {
				return -1, "", err
			}
			if links++; links > maxSymlinks {
				return -1, "", unix.ELOOP
			}
			if strings.HasPrefix(target, "/") { // absolute: from the root
				for _, d := range dirs {
					unix.Close(d)
				}
				dirs, names = nil, nil
			}
			todo = append(strings.Split(target, "/"), todo...)
			continue
		}
		if !moreNames(todo) {
			// The last name: open it as asked. O_NOFOLLOW: if it was
			// swapped for a link since, fail rather than follow it.
			unix.Close(fd)
			names = append(names, name)
			fd, err := retryEINTR(func() (int, error) { return unix.Openat(dir, name, flags|unix.O_NOFOLLOW, 0) })
			if err != nil {
				return -1, "", err
			}
			return fd, strings.Join(names, "/"), nil
		}
		dirs, names = append(dirs, fd), append(names, name)
	}
	// rel ends at a directory already open (the root, or after "..").
	dir := cur()
	fd, err := retryEINTR(func() (int, error) { return unix.Openat(dir, ".", flags, 0) })
	if err != nil {
		return -1, "", err
	}
	return fd, strings.Join(names, "/"), nil
}

// moreNames says whether todo still names something beyond "." and "".
func moreNames(todo []string) bool {
	for _, n := range todo {
		if n != "" && n != "." {
			return true
		}
	}
	return false
}

// readlinkAt is readlinkat(2) with a buffer that grows as needed.
func readlinkAt(dirfd int, name string) (string, error) {
	for size := 256; ; size *= 2 {
		buf := make([]byte, size)
		n, err := unix.Readlinkat(dirfd, name, buf)
		if err != nil {
			return "", err
		}
		if n < size {
			return string(buf[:n]), nil
		}
	}
}

// fdPath is the path the kernel has for a descriptor (/proc/self/fd/N).
func fdPath(fd int) (string, error) {
	var buf [unix.PathMax]byte
	n, err := unix.Readlink("/proc/self/fd/"+strconv.Itoa(fd), buf[:])
	if err != nil {
		return "", err
	}
	if n == len(buf) || buf[0] != '/' {
		return "", unix.ENAMETOOLONG
	}
	return string(buf[:n]), nil
}

// evalSymlinksAbs is filepath.EvalSymlinks made absolute, "" on error.
func evalSymlinksAbs(path string) string {
	real, err := filepath.EvalSymlinks(path)
	if err != nil {
		return ""
	}
	abs, err := filepath.Abs(real)
	if err != nil {
		return ""
	}
	return abs
}
