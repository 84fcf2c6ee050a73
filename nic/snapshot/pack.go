package snapshot

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"unsafe"

	"github.com/rocectl/rocectl/nic"
	"golang.org/x/sys/unix"
)

// PackFile holds a snapshot's captured files in one file, in place of the
// tree of them (sys/, and the NCCL files at their host paths). A 64-port
// host's tree is 9,223 files: 44 MB on disk in 4 KB blocks, 11,285 inodes
// to copy off the host, and an audit of it opens thousands of them. Packed
// it is one file of about 1.2 MB that the audit reads in one go.
//
// The format (docs/snapshot-format.md, "files.pack"): a first line
// "rocectl-files 1", then one entry per directory, file or symlink, depth
// first, each directory's entries in name order right after it:
//
//	TYPE PATHLEN DATALEN\nPATH DATA\n
//
// TYPE is d (a directory), f (a regular file, DATA its content) or l (a
// symlink, DATA its target); PATH is the host path ("/sys/class/net"); the
// lengths are decimal byte counts; a directory's DATA is empty. It is text
// where the files are, and unambiguous whatever they hold. Nothing else
// can be in a pack: no FIFO or device, no owner or mode (a snapshot's
// files are all root's, 0644, as Write makes them in a tree).
const PackFile = "files.pack"

const packMagic = "rocectl-files 1\n"

var packTypes = map[byte]uint8{'d': unix.DT_DIR, 'f': unix.DT_REG, 'l': unix.DT_LNK}

// parsePack reads a pack (b, the content of p) into a tree. Errors name
// the byte offset of the entry at fault.
func parsePack(p string, b []byte) (*nic.MemTree, error) {
	if len(b) == 0 {
		b = []byte{0}[:0]
	}
	// Every path and content in the tree is a slice of the pack's text,
	// taken without a copy: b is the caller's to give up, and nothing
	// writes to it after.
	s := unsafe.String(unsafe.SliceData(b), len(b))
	if !strings.HasPrefix(s, packMagic) {
		return nil, fmt.Errorf("snapshot: %s: not a pack of format %q", p, strings.TrimSpace(packMagic))
	}
	// About one entry in 100 bytes: a guess for the nodes' array,
	// which Add outgrows one node at a time, if it must.
	t := nic.NewMemTree(len(s) / 100)
	off := len(packMagic)
	for off < len(s) {
		bad := func(why string, args ...any) error {
			return fmt.Errorf("snapshot: %s: entry at byte %d: %s", p, off, fmt.Sprintf(why, args...))
		}
		nl := strings.IndexByte(s[off:], '\n')
		if nl < 0 {
			return nil, bad("no end of line")
		}
		line := s[off : off+nl]
		typ, plen, dlen, ok := packHeader(line)
		if !ok {
			return nil, bad("%q is not TYPE PATHLEN DATALEN (TYPE one of d, f, l)", line)
		}
		start := off + nl + 1
		if plen > len(s)-start || dlen > len(s)-start-plen-1 {
			return nil, bad("lengths %d %d do not fit in the file", plen, dlen)
		}
		name, data := s[start:start+plen], s[start+plen:start+plen+dlen]
		end := start + plen + dlen
		if s[end] != '\n' {
			return nil, bad("%s: no newline after its data", name)
		}
		if typ == unix.DT_DIR && dlen != 0 {
			return nil, bad("%s: a directory with data", name)
		}
		if err := t.Add(name, typ, data); err != nil {
			return nil, bad("%s: %v", name, packAddErr(err))
		}
		off = end + 1
	}
	return t, nil
}

// packHeader parses an entry's first line, "TYPE PATHLEN DATALEN": by
// hand, as strings.Fields and strconv would cost each of 11,000 entries
// allocations.
func packHeader(line string) (typ uint8, plen, dlen int, ok bool) {
	if len(line) < 5 || line[1] != ' ' {
		return 0, 0, 0, false
	}
	if typ, ok = packTypes[line[0]]; !ok {
		return 0, 0, 0, false
	}
	rest := line[2:]
	if plen, rest, ok = packNumber(rest); !ok || plen == 0 || rest == "" || rest[0] != ' ' {
		return 0, 0, 0, false
	}
	if dlen, rest, ok = packNumber(rest[1:]); !ok || rest != "" {
		return 0, 0, 0, false
	}
	return typ, plen, dlen, true
}

// packNumber parses the decimal number at the start of s (no sign, no
// leading zero, at most 9 digits) and returns what follows it.
func packNumber(s string) (int, string, bool) {
	n, i := 0, 0
	for ; i < len(s) && i < 10 && s[i] >= '0' && s[i] <= '9'; i++ {
		n = n*10 + int(s[i]-'0')
	}
	if i == 0 || i == 10 || (i > 1 && s[0] == '0') {
		return 0, s, false
	}
	return n, s[i:], true
}

func packAddErr(err error) string {
	switch {
	case errors.Is(err, unix.EEXIST):
		return "listed twice, or not after its directory's other entries in name order"
	case errors.Is(err, unix.ENOENT):
		return "its directory is not listed before it, or other entries came between"
	case errors.Is(err, unix.ENOTDIR):
		return "its parent is not a directory"
	}
	return "not an absolute, clean host path"
}

// encodePack is t as a pack.
func encodePack(t *nic.MemTree) []byte {
	var buf bytes.Buffer
	buf.WriteString(packMagic)
	letters := map[uint8]byte{}
	for c, typ := range packTypes {
		letters[typ] = c
	}
	t.Walk(func(p string, typ uint8, data string) error {
		fmt.Fprintf(&buf, "%c %d %d\n%s%s\n", letters[typ], len(p), len(data), p, data)
		return nil
	})
	return buf.Bytes()
}

// writePack writes t as a pack, to a new file at name in root.
func writePack(root *os.Root, name string, t *nic.MemTree) error {
	return createFile(root, name, encodePack(t))
}

// snapshotFiles are the names in a snapshot directory that are not
// captured host files.
var snapshotFiles = map[string]bool{MetaFile: true, KernelFile: true, PackFile: true, "README.md": true}

// Pack replaces the tree of captured files in the snapshot dir with a
// pack (PackFile): every directory, regular file and symlink under it but
// the snapshot's own files. Anything else there (a FIFO, a device) is an
// error, and so is a snapshot already packed. The tree is removed only
// once the pack is written.
//
// The tree is read through an os.Root of dir: root packs a directory
// that someone else may be able to write, and what they put there must
// not copy a file of root's into the world-readable pack. os.Root refuses
// a symlink that leads out of dir; a file with another hard link (which
// may be anywhere on the file system) is refused, as FileIn.Read refuses
// it; files are opened O_NONBLOCK and must be regular, so that a FIFO
// cannot hang the capture, and none may be bigger than maxPackedFile.
func Pack(dir string) error {
	if _, ok, err := ReadMeta(dir); err != nil || !ok {
		if err == nil {
			err = fmt.Errorf("%s has no %s: %w", dir, MetaFile, ErrNotSnapshot)
		}
		return fmt.Errorf("snapshot: %w", err)
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		return fmt.Errorf("snapshot: %w", err)
	}
	defer root.Close()
	fsys := root.FS()
	ents, err := fs.ReadDir(fsys, ".")
	if err != nil {
		return fmt.Errorf("snapshot: %w", err)
	}
	t := nic.NewMemTree(0)
	var top []string
	for _, e := range ents {
		if e.Name() == PackFile {
			return fmt.Errorf("snapshot: %s is packed already", dir)
		}
		if snapshotFiles[e.Name()] {
			continue
		}
		top = append(top, e.Name())
		if e.Type()&fs.ModeSymlink != 0 {
			// A link at the top is a link: fs.WalkDir would follow it.
			if err := packEntry(root, t, e.Name(), e.Type()); err != nil {
				return fmt.Errorf("snapshot: packing %s: %s: %w", dir, e.Name(), err)
			}
			continue
		}
		err := fs.WalkDir(fsys, e.Name(), func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if err := packEntry(root, t, p, d.Type()); err != nil {
				return fmt.Errorf("%s: %w", filepath.Join(dir, p), err)
			}
			return nil
		})
		if err != nil {
			return fmt.Errorf("snapshot: packing %s: %w", dir, err)
		}
	}
	if err := writePack(root, PackFile, t); err != nil {
		return fmt.Errorf("snapshot: %w", err)
	}
	for _, name := range top {
		if err := root.RemoveAll(name); err != nil {
			return fmt.Errorf("snapshot: removing the packed tree: %w", err)
		}
	}
	return nil
}

// packEntry adds the entry p of root (of type typ, as listed) to t.
func packEntry(root *os.Root, t *nic.MemTree, p string, typ fs.FileMode) error {
	host := "/" + p
	switch {
	case typ.IsDir():
		return t.Add(host, unix.DT_DIR, "")
	case typ&fs.ModeSymlink != 0:
		target, err := root.Readlink(p)
		if err != nil {
			return err
		}
		return t.Add(host, unix.DT_LNK, target)
	case !typ.IsRegular():
		return fmt.Errorf("%w: it is a %v", nic.ErrNotRegular, typ)
	}
	f, err := root.OpenFile(p, os.O_RDONLY|unix.O_NONBLOCK, 0)
	if err != nil {
		return err
	}
	defer f.Close()
	var st unix.Stat_t
	if err := unix.Fstat(int(f.Fd()), &st); err != nil {
		return err
	}
	if err := nic.CheckRegular(st.Mode); err != nil {
		return err
	}
	switch {
	case st.Nlink > 1:
		return fmt.Errorf("%w (%d names): a capture makes each file once", nic.ErrHardLinked, st.Nlink)
	case st.Size > maxPackedFile:
		return fmt.Errorf("%d bytes, more than any file a capture holds (%d)", st.Size, maxPackedFile)
	}
	b, err := io.ReadAll(io.LimitReader(f, maxPackedFile+1))
	if err != nil {
		return err
	}
	if len(b) > maxPackedFile {
		return fmt.Errorf("more than %d bytes, more than any file a capture holds", maxPackedFile)
	}
	return t.Add(host, unix.DT_REG, string(b))
}

// maxPackedFile bounds a file Pack reads: sysfs attributes are a page at
// most and NCCL config files a few lines, and root must not read a file
// someone planted to exhaust its memory.
const maxPackedFile = 16 << 20
