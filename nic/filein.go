package nic

import (
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"sort"
	"strings"

	"golang.org/x/sys/unix"
)

// FileIn is a file that root replaces whole (the NCCL config file), reached
// through its directory held open. The directory is resolved inside the
// root once, by the kernel (openat2 RESOLVE_IN_ROOT, as every FS open is);
// the file is then inspected, read, replaced and removed by name relative
// to that descriptor, never following a symlink at the name.
//
// Why: the file may live where another user can write (NCCL also reads
// ~/.nccl.conf). Going by path, that user could swap a directory on the way
// for a symlink between the checks and the write, and send root's write
// anywhere; or put a symlink or a hard link to a secret at the name, so
// that root copies the secret's lines into a new file of their own.
type FileIn struct {
	dir  *os.File // the directory, O_DIRECTORY: *at calls and fsync
	name string
	path string // the host path, for errors
	fs   FS     // for the reads a capture recorded as failed
	// memDir is, when fs holds its files in memory (dir is nil then),
	// the directory in the tree.
	memDir *memNode
}

// The errors (in an *os.PathError) for a name FileIn.Read refuses: a
// symlink, or a file that other names share (a hard link).
var (
	ErrSymlink    = errors.New("is a symlink")
	ErrHardLinked = errors.New("has other hard links")
)

// OpenFileIn opens the directory of the host path p (absolute) and
// returns p reached through it. Close it when done.
func (f FS) OpenFileIn(p string) (*FileIn, error) {
	if !path.IsAbs(p) {
		return nil, &os.PathError{Op: "open", Path: p, Err: errors.New("path must be absolute")}
	}
	dir, name := path.Split(path.Clean(p))
	if name == "" {
		return nil, &os.PathError{Op: "open", Path: p, Err: errors.New("names a directory, not a file")}
	}
	if f.mem() != nil {
		return f.memFileIn(dir, name, path.Clean(p))
	}
	fd, err := f.dir.open(dir, unix.O_RDONLY|unix.O_DIRECTORY)
	if err != nil {
		// A snapshot without the directory may still know that the
		// file was there and could not be read.
		if rerr := f.recordedPathErr("open", path.Clean(p), err); rerr != nil {
			return nil, rerr
		}
		return nil, &os.PathError{Op: "open", Path: f.Path(dir), Err: err}
	}
	return &FileIn{dir: os.NewFile(uintptr(fd), f.Path(dir)), name: name, path: path.Clean(p), fs: f}, nil
}

// DirID is a directory's identity: its device and inode numbers. A
// directory swapped for another (renamed away, a symlink put on the way)
// does not keep them. The zero DirID stands for no directory at all.
type DirID struct {
	Dev uint64 `json:"dev"`
	Ino uint64 `json:"ino"`
}

// DirID is the identity of the directory d was opened through. A tree in
// memory has no device or inode numbers: its directories are all the zero
// DirID, and its FS refuses every write that would check one.
func (d *FileIn) DirID() (DirID, error) {
	if d.dir == nil {
		return DirID{}, nil
	}
	var st unix.Stat_t
	if err := unix.Fstat(d.fd(), &st); err != nil {
		return DirID{}, &os.PathError{Op: "stat", Path: d.dir.Name(), Err: err}
	}
	return DirID{Dev: uint64(st.Dev), Ino: st.Ino}, nil
}

// Close releases the directory.
func (d *FileIn) Close() error {
	if d.dir == nil {
		return nil
	}
	return d.dir.Close()
}

// Path is the file's host path.
func (d *FileIn) Path() string { return d.path }

func (d *FileIn) fd() int { return int(d.dir.Fd()) }

func (d *FileIn) err(op string, err error) error {
	return &os.PathError{Op: op, Path: d.path, Err: err}
}

// Stat is lstat of the name: what is there now, a symlink as a symlink.
// A missing file is an error that matches os.ErrNotExist.
func (d *FileIn) Stat() (unix.Stat_t, error) {
	if d.dir == nil {
		st, _, err := d.memStat()
		return st, err
	}
	var st unix.Stat_t
	err := unix.Fstatat(d.fd(), d.name, &st, unix.AT_SYMLINK_NOFOLLOW)
	if err != nil {
		return st, d.err("stat", err)
	}
	return st, nil
}

// Read returns the file's content and its stat, read from the one file it
// opened: a regular file with no other hard link. A symlink is refused
// with ErrSymlink, a second link with ErrHardLinked, anything else not
// regular with ErrNotRegular. A missing file matches os.ErrNotExist.
func (d *FileIn) Read() ([]byte, unix.Stat_t, error) {
	if d.dir == nil {
		return d.memRead()
	}
	var st unix.Stat_t
	fd, err := retryEINTR(func() (int, error) {
		return unix.Openat(d.fd(), d.name, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
	})
	if err == unix.ELOOP { // O_NOFOLLOW met a symlink at the name
		return nil, st, d.err("open", ErrSymlink)
	}
	if err == unix.ENOENT {
		err = d.fs.recordedErr(where{rel: d.path}, err)
	}
	if err != nil {
		return nil, st, d.err("open", err)
	}
	file := os.NewFile(uintptr(fd), d.path)
	defer file.Close()
	if err := unix.Fstat(fd, &st); err != nil {
		return nil, st, d.err("stat", err)
	}
	if err := CheckRegular(st.Mode); err != nil {
		return nil, st, d.err("open", err)
	}
	if st.Nlink > 1 {
		return nil, st, d.err("open", fmt.Errorf("%w (%d names)", ErrHardLinked, st.Nlink))
	}
	if st.Size > MaxFileIn {
		return nil, st, d.err("read", fmt.Errorf("%w: %d bytes, larger than the %d MiB cap for a file rocectl edits", ErrTooLarge, st.Size, MaxFileIn>>20))
	}
	data, err := io.ReadAll(io.LimitReader(file, MaxFileIn+1))
	if err != nil {
		return nil, st, d.err("read", err)
	}
	if len(data) > MaxFileIn {
		return nil, st, d.err("read", fmt.Errorf("%w: it grew past the %d MiB cap for a file rocectl edits while read", ErrTooLarge, MaxFileIn>>20))
	}
	return data, st, nil
}

// MaxFileIn bounds what FileIn.Read reads: the files rocectl edits in
// place (an NCCL config file) are a few KiB.
const MaxFileIn = 16 << 20

// ErrTooLarge is the refusal of a file above its cap.
var ErrTooLarge = errors.New("file too large")

// TempName is the name of the file Replace writes before renaming it over
// name: fixed, not random, so that a rocectl killed before the rename
// leaves a file that the next one knows is its own (a journal that records
// the file's path records it too), and removes (RemoveTemps). rocectl holds
// its state dir's lock while it writes, so no two of them share it.
func TempName(name string) string { return "." + name + ".rocectl-tmp" }

// legacyTemp says whether n is the random temp name of a rocectl before
// TempName ("."+name+".rocectl-" and 16 hex digits), which a kill left
// for good.
func legacyTemp(name, n string) bool {
	rest, ok := strings.CutPrefix(n, "."+name+".rocectl-")
	if !ok || len(rest) != 16 {
		return false
	}
	_, err := hex.DecodeString(rest)
	return err == nil
}

// Temps lists the temp files of the name that are left in its directory:
// TempName's, and those of older rocectl versions.
func (d *FileIn) Temps() ([]string, error) {
	if d.dir == nil {
		return nil, nil // a tree in memory is never written
	}
	dup, err := unix.Dup(d.fd())
	if err != nil {
		return nil, d.err("list the directory of", err)
	}
	dir := os.NewFile(uintptr(dup), d.dir.Name())
	defer dir.Close()
	if _, err := dir.Seek(0, io.SeekStart); err != nil {
		return nil, d.err("list the directory of", err)
	}
	names, err := dir.Readdirnames(-1)
	if err != nil {
		return nil, d.err("list the directory of", err)
	}
	var out []string
	for _, n := range names {
		if n == TempName(d.name) || legacyTemp(d.name, n) {
			out = append(out, n)
		}
	}
	sort.Strings(out)
	return out, nil
}

// RemoveTemps removes the temp files a killed Replace left (Temps): the
// names only, a symlink as the link.
func (d *FileIn) RemoveTemps() error {
	temps, err := d.Temps()
	if err != nil {
		return err
	}
	for _, n := range temps {
		if err := unix.Unlinkat(d.fd(), n, 0); err != nil && err != unix.ENOENT {
			return &os.PathError{Op: "remove", Path: path.Join(path.Dir(d.path), n), Err: err}
		}
	}
	if len(temps) > 0 {
		if err := d.dir.Sync(); err != nil {
			return d.err("fsync directory of", err)
		}
	}
	return nil
}

// Replace puts data at the name atomically: a new file in the same
// directory (TempName, after any temp file a killed rocectl left is
// removed) is written, given mode (and owner uid:gid unless owner is
// nil), fsynced and renamed over the name; then the directory is fsynced.
// Readers see the old file or the new one, never a mix, even across a
// crash. Whatever was at the name (a symlink included) is replaced, not
// written through.
func (d *FileIn) Replace(data []byte, mode os.FileMode, owner *[2]int) error {
	if d.dir == nil {
		return d.err("write", ErrReadOnly)
	}
	if err := d.RemoveTemps(); err != nil {
		return err
	}
	tmp := TempName(d.name)
	fd, err := retryEINTR(func() (int, error) {
		return unix.Openat(d.fd(), tmp, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o600)
	})
	if err != nil {
		return d.err("create", err)
	}
	killPoint("filein-created")
	file := os.NewFile(uintptr(fd), tmp)
	renamed := false
	defer func() {
		file.Close()
		if !renamed {
			unix.Unlinkat(d.fd(), tmp, 0)
		}
	}()
	if _, err := file.Write(data); err != nil {
		return d.err("write", err)
	}
	killPoint("filein-written")
	if err := file.Chmod(mode.Perm()); err != nil {
		return d.err("chmod", err)
	}
	if owner != nil {
		if err := file.Chown(owner[0], owner[1]); err != nil {
			return d.err("chown", fmt.Errorf("keep owner %d:%d: %w", owner[0], owner[1], err))
		}
	}
	if err := file.Sync(); err != nil {
		return d.err("fsync", err)
	}
	killPoint("filein-synced")
	if err := unix.Renameat(d.fd(), tmp, d.fd(), d.name); err != nil {
		return d.err("rename", err)
	}
	renamed = true
	killPoint("filein-renamed")
	if err := d.dir.Sync(); err != nil {
		return d.err("fsync directory of", err)
	}
	return nil
}

// Remove removes the name (not what a symlink there points to). A missing
// file is an error that matches os.ErrNotExist.
func (d *FileIn) Remove() error {
	if d.dir == nil {
		return d.err("remove", ErrReadOnly)
	}
	if err := unix.Unlinkat(d.fd(), d.name, 0); err != nil {
		return d.err("remove", err)
	}
	return nil
}

// memFileIn is OpenFileIn of an FS whose files are in memory.
func (f FS) memFileIn(dir, name, p string) (*FileIn, error) {
	n, err := f.mem().lookup(nil, dir, true)
	if err == nil && n.typ != unix.DT_DIR {
		err = unix.ENOTDIR
	}
	if err != nil {
		if rerr := f.recordedPathErr("open", p, err); rerr != nil {
			return nil, rerr
		}
		return nil, &os.PathError{Op: "open", Path: f.Path(dir), Err: err}
	}
	return &FileIn{name: name, path: p, fs: f, memDir: n}, nil
}

// memStat is Stat from memory: what a snapshot on disk would hold there,
// a file of mode 0644 (snapshot.Write's) owned by root with one name.
func (d *FileIn) memStat() (unix.Stat_t, *memNode, error) {
	var st unix.Stat_t
	n := d.memDir.child(d.name)
	if n == nil {
		return st, nil, d.err("stat", unix.ENOENT) // as fstatat: the capture's record is Read's to give
	}
	st.Nlink = 1
	switch n.typ {
	case unix.DT_REG:
		st.Mode, st.Size = unix.S_IFREG|0o644, int64(len(n.data))
	case unix.DT_DIR:
		st.Mode, st.Nlink = unix.S_IFDIR|0o755, 2
	case unix.DT_LNK:
		st.Mode, st.Size = unix.S_IFLNK|0o777, int64(len(n.data))
	}
	return st, n, nil
}

// memRead is Read from memory, with Read's refusals.
func (d *FileIn) memRead() ([]byte, unix.Stat_t, error) {
	st, n, err := d.memStat()
	switch {
	case err != nil:
		return nil, st, d.err("open", d.fs.recordedErr(where{rel: d.path}, errors.Unwrap(err)))
	case n.typ == unix.DT_LNK:
		return nil, unix.Stat_t{}, d.err("open", ErrSymlink) // as O_NOFOLLOW's refusal, before any fstat
	}
	if err := CheckRegular(st.Mode); err != nil {
		return nil, st, d.err("open", err)
	}
	return []byte(n.data), st, nil
}
