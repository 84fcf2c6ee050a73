package nic

import (
	"os"
	"path"
	"slices"
	"strings"
	"sync"
	"syscall"

	"github.com/rocectl/rocectl/internal/lib/thp"

	"golang.org/x/sys/unix"
)

// MemTree is a host's captured files held in memory: what a packed
// snapshot holds (snapshot.PackFile) instead of a directory tree. An FS
// over one (NewMemFS) answers every read from memory, with the answers and
// errors the same tree on disk gives, so that auditing a capture makes no
// file system call per attribute (a 64-port host's audit made 9,285).
//
// A tree holds directories, regular files and symlinks, by host path
// ("/sys/class/net/eth0"). Nothing else can be in it, so none of the
// checks a tree on disk needs against a planted FIFO or device apply.
// Paths are resolved as FS resolves them inside a root: cleaned as text,
// then symlinks followed name by name, an absolute target and ".." stopping
// at the tree's root (RESOLVE_IN_ROOT).
//
// Entries are added depth first, each directory's entries in name order
// right after it (Add): the order filepath.WalkDir visits a tree in. That
// keeps each directory's entries sorted for lookup, and lets a parser find
// an entry's directory without a table of every path.
type MemTree struct {
	root *memNode
	open []*memNode // the directories Add is inside, root first
	// chunks hold the nodes other than the root, in the order added:
	// a 64-port host's 11,000 entries are a few allocations, not 11,000.
	chunks [][]memNode
	// once makes each directory's kids from the chunks, in one array,
	// at the first read (index); Adds after it append to them.
	once    sync.Once
	indexed bool
}

type memNode struct {
	typ    uint8  // unix.DT_DIR, DT_REG or DT_LNK
	path   string // the physical host path
	name   string // its last name, "" for the root: what lookups compare
	data   string // a file's content, a symlink's target
	parent *memNode
	last   *memNode   // a directory's entry added last
	nkids  int        // a directory's number of entries
	kids   []*memNode // a directory's entries, in name order (index)
}

// NewMemTree returns a tree holding only the root directory; n is the
// number of entries expected.
func NewMemTree(n int) *MemTree {
	t := &MemTree{root: &memNode{typ: unix.DT_DIR, path: "/"}}
	t.root.parent = t.root // ".." of the root is the root
	t.open = []*memNode{t.root}
	// A 64-port host's 11,000 entries are 1.2 MB of nodes: on huge
	// pages (internal/lib/thp), as the pack they come from.
	t.chunks = [][]memNode{thp.Slice[memNode](max(n, 64))}
	return t
}

// Add puts an entry at the host path p: typ unix.DT_DIR, DT_REG (data is
// the content) or DT_LNK (data is the target, not empty). p must be
// absolute and clean, and come depth first in name order: in a directory
// added earlier that it is still inside of (no entry outside that
// directory came since), after that directory's entries so far and
// greater than their names. It fails with EINVAL for a path or type it
// cannot hold, ENOTDIR when the parent is not a directory, ENOENT when
// the parent is not where the order says it must be, and EEXIST for a
// name already there or out of name order. A tree is built by one
// goroutine, then read by many: Add does not lock.
func (t *MemTree) Add(p string, typ uint8, data string) error {
	i := strings.LastIndexByte(p, '/')
	if i < 0 {
		return syscall.EINVAL
	}
	dir, name := p[:i], p[i+1:]
	switch {
	case dir == "":
		dir = "/"
	case dir == "/": // "//name": the root's entries are "/name"
		return syscall.EINVAL
	}
	switch name {
	case "", ".", "..":
		return syscall.EINVAL
	}
	if strings.IndexByte(name, 0) >= 0 {
		return syscall.EINVAL // no file system holds a NUL in a name
	}
	switch typ {
	case unix.DT_DIR, unix.DT_REG:
	case unix.DT_LNK:
		if data == "" {
			return syscall.EINVAL // the kernel makes no empty symlink
		}
	default:
		return syscall.EINVAL
	}
	// The directory must be an open one, whose path was checked when it
	// was added: so p is clean if its last name is.
	for len(t.open) > 0 && t.open[len(t.open)-1].path != dir {
		t.open = t.open[:len(t.open)-1]
	}
	if len(t.open) == 0 {
		// Not inside any open directory: missing, out of order, or
		// not clean. Only the root's children can always come: reopen
		// it.
		t.open = []*memNode{t.root}
		if !cleanAbs(p) {
			return syscall.EINVAL
		}
		t.index()
		if n, _ := t.find(t.root, dir); n != nil && n.typ != unix.DT_DIR {
			return syscall.ENOTDIR
		}
		return syscall.ENOENT
	}
	parent := t.open[len(t.open)-1]
	if parent.last != nil && parent.last.name >= name {
		return syscall.EEXIST
	}
	c := &t.chunks[len(t.chunks)-1]
	if len(*c) == cap(*c) {
		t.chunks = append(t.chunks, make([]memNode, 0, 2*cap(*c)))
		c = &t.chunks[len(t.chunks)-1]
	}
	*c = append(*c, memNode{typ: typ, path: p, name: name, data: data, parent: parent})
	n := &(*c)[len(*c)-1]
	parent.last = n
	parent.nkids++
	if t.indexed {
		parent.kids = append(parent.kids, n)
	}
	if typ == unix.DT_DIR {
		t.open = append(t.open, n)
	}
	return nil
}

// index makes each directory's kids, once, before the first read: one
// array for all of them, each directory's part of it filled in the order
// added.
func (t *MemTree) index() {
	t.once.Do(func() {
		total := 0
		for _, c := range t.chunks {
			total += len(c)
		}
		all := make([]*memNode, total)
		off := 0
		reserve := func(n *memNode) {
			n.kids = all[off : off : off+n.nkids]
			off += n.nkids
		}
		reserve(t.root)
		for _, c := range t.chunks {
			for i := range c {
				if c[i].typ == unix.DT_DIR {
					reserve(&c[i])
				}
			}
		}
		for _, c := range t.chunks {
			for i := range c {
				c[i].parent.kids = append(c[i].parent.kids, &c[i])
			}
		}
		t.indexed = true
	})
}

// find is the node at the physical path p below dir, symlinks not
// followed; nil when there is none.
func (t *MemTree) find(dir *memNode, p string) (*memNode, bool) {
	n := dir
	for _, name := range strings.Split(strings.Trim(p, "/"), "/") {
		if name == "" {
			continue
		}
		if n = n.child(name); n == nil {
			return nil, false
		}
	}
	return n, true
}

// child is the entry name of the directory n, nil when there is none.
func (n *memNode) child(name string) *memNode {
	i, found := slices.BinarySearchFunc(n.kids, name, func(k *memNode, name string) int {
		return strings.Compare(k.name, name)
	})
	if !found {
		return nil
	}
	return n.kids[i]
}

// cleanAbs reports whether p is absolute and as path.Clean leaves it: no
// empty, "." or ".." name, no trailing slash.
func cleanAbs(p string) bool {
	if p == "/" {
		return true
	}
	if len(p) < 2 || p[0] != '/' || p[len(p)-1] == '/' {
		return false
	}
	for i := 0; i < len(p); {
		j := strings.IndexByte(p[i+1:], '/') + i + 1
		if j == i {
			j = len(p)
		}
		switch p[i+1 : j] {
		case "", ".", "..":
			return false
		}
		i = j
	}
	return true
}

// Walk calls fn for each entry in the order they were added.
func (t *MemTree) Walk(fn func(p string, typ uint8, data string) error) error {
	t.index()
	var walk func(dir *memNode) error
	walk = func(dir *memNode) error {
		for _, n := range dir.kids {
			if err := fn(n.path, n.typ, n.data); err != nil {
				return err
			}
			if n.typ == unix.DT_DIR {
				if err := walk(n); err != nil {
					return err
				}
			}
		}
		return nil
	}
	return walk(t.root)
}

// lookup resolves the host path p inside the tree as FS resolves it on
// disk (rootRel, then openat2 RESOLVE_IN_ROOT): cleaned as text, then
// walked name by name from the root. With dir (a Dir's reads, p relative
// to it) it resolves as Dir.openRel does: below dir first, as
// RESOLVE_BENEATH does, and when that would leave dir, from the root
// through dir's path. Symlinks on the way are followed, the last name's
// only when follow is set. It fails with ENOENT, ENOTDIR or ELOOP.
func (t *MemTree) lookup(dir *memNode, p string, follow bool) (*memNode, error) {
	t.index()
	if dir != nil {
		hops := 0
		n, err := t.walk(dir, dir, p, follow, &hops)
		if err != syscall.EXDEV {
			return n, err
		}
		p = dir.path + "/" + p
	}
	if !cleanAbs(p) {
		p = path.Clean("/" + p)
	}
	hops := 0
	return t.walk(t.root, nil, p, follow, &hops)
}

// walk resolves p name by name from dir, where p's "." and ".." are taken
// physically, as the kernel takes them: a name followed by a slash must
// be a directory (a symlink there is followed), and so must what "." or
// ".." is taken from. With beneath, it fails with EXDEV where the kernel's
// RESOLVE_BENEATH does: an absolute path or symlink, or ".." out of
// beneath; and an empty p is ENOENT, as for openat2.
func (t *MemTree) walk(dir, beneath *memNode, p string, follow bool, hops *int) (*memNode, error) {
	if beneath != nil {
		switch {
		case p == "":
			return nil, syscall.ENOENT
		case p[0] == '/':
			return nil, syscall.EXDEV
		}
	}
	n := dir
	for p != "" {
		name, rest, slash := strings.Cut(p, "/")
		p = rest
		last := strings.Trim(p, "/") == ""
		if name == "" {
			continue
		}
		if n.typ != unix.DT_DIR {
			return nil, syscall.ENOTDIR
		}
		switch name {
		case ".":
			continue
		case "..":
			if n == beneath {
				return nil, syscall.EXDEV
			}
			n = n.parent
			continue
		}
		next := n.child(name)
		if next == nil {
			return nil, syscall.ENOENT
		}
		if next.typ == unix.DT_LNK && (follow || !last || slash) {
			var err error
			if next, err = t.follow(n, beneath, next, hops); err != nil {
				return nil, err
			}
		}
		if slash && last && next.typ != unix.DT_DIR {
			return nil, syscall.ENOTDIR
		}
		n = next
	}
	return n, nil
}

// follow resolves the symlink link in the directory dir, counting the
// links it follows in hops, as walk does (beneath too).
func (t *MemTree) follow(dir, beneath, link *memNode, hops *int) (*memNode, error) {
	if *hops++; *hops > maxSymlinks {
		return nil, syscall.ELOOP
	}
	from := dir
	if beneath == nil && strings.HasPrefix(link.data, "/") {
		from = t.root
	}
	return t.walk(from, beneath, link.data, true, hops)
}

// memAt is where a read of w goes: the Dir's node (its rel from there), or
// the root.
func (w where) memAt() (*memNode, string) {
	if w.in && w.d.mem != nil {
		return w.d.mem, w.rel
	}
	if w.in {
		return nil, w.d.real + "/" + w.rel
	}
	return nil, w.rel
}

func (f FS) memLookup(w where) (*memNode, error) {
	dir, p := w.memAt()
	return f.mem().lookup(dir, p, true)
}

// memRead is readWith from a MemTree: the content appended to buf.
func (f FS) memRead(w where, buf []byte) ([]byte, error) {
	n, err := f.memLookup(w)
	if err == syscall.ENOENT {
		err = f.recordedErr(w, err)
	}
	if err == nil && n.typ != unix.DT_REG {
		err = notRegular("directory") // a symlink was followed
	}
	if err != nil {
		return nil, &os.PathError{Op: "open", Path: f.Path(w.asked()), Err: err}
	}
	return append(buf, n.data...), nil
}

// memList is listDir from a MemTree.
func (f FS) memList(w where, keep func(typ uint8) bool) ([]string, error) {
	n, err := f.memLookup(w)
	if err == nil && n.typ != unix.DT_DIR {
		err = syscall.ENOTDIR
	}
	if err != nil {
		return nil, &os.PathError{Op: "open", Path: f.Path(w.asked()), Err: err}
	}
	names := make([]string, 0, len(n.kids))
	for _, k := range n.kids {
		if keep == nil || keep(k.typ) {
			names = append(names, k.name)
		}
	}
	return names, nil
}

// memExists is exists from a MemTree.
func (f FS) memExists(w where) bool {
	_, err := f.memLookup(w)
	return err == nil || (err == syscall.ENOENT && f.recordedErr(w, err) != err)
}

// memReadlink is Readlink from a MemTree.
func (f FS) memReadlink(p string) (string, error) {
	clean := path.Clean("/" + p)
	var n *memNode
	var err error = syscall.EINVAL
	if clean != "/" {
		n, err = f.mem().lookup(nil, clean, false)
	}
	if err == nil && n.typ != unix.DT_LNK {
		err = syscall.EINVAL
	}
	if err != nil {
		return "", &os.PathError{Op: "readlink", Path: f.Path(p), Err: err}
	}
	return n.data, nil
}

// memResolve is the physical host path p leads to in a MemTree.
func (f FS) memResolve(p string) (string, error) {
	n, err := f.mem().lookup(nil, p, true)
	if err != nil {
		return "", err
	}
	return n.path, nil
}
