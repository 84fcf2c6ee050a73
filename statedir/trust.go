package statedir

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
)

// The state dir steers what root does: rollback writes every before-value
// a journal names, files included. Like sshd's StrictModes for ~/.ssh,
// rocectl reads nothing from it that another user could have written: the
// state dir, its journal directories and every file read from them must
// be owned by root or the user rocectl runs as, and not writable by group
// or others. A forged journal in a world-writable state dir was a root
// file write for any local user. A root-owned state dir is trusted by any
// user: a read-only audit run by another user reads it as it is.

// ErrUnsafe is a state path another user could have written; it is
// refused (the error is an *UnsafePathError).
var ErrUnsafe = errors.New("unsafe ownership or mode")

// UnsafePathError names the refused path, what is wrong and the fix.
type UnsafePathError struct {
	Path string
	UID  uint32
	Mode fs.FileMode
	Want uint32 // the owner it must have
	Why  string // "is a symlink", ... when not ownership or mode
}

func (e *UnsafePathError) Error() string {
	if e.Why != "" {
		return fmt.Sprintf("refusing %s: it %s; rocectl reads only regular files and directories from its state dir (remove it, and check what changed it)", e.Path, e.Why)
	}
	owner := "root"
	if e.Want != 0 {
		owner = fmt.Sprintf("root or uid %d (the user running rocectl)", e.Want)
	}
	return fmt.Sprintf("refusing %s: owned by uid %d with mode %04o, but it must be owned by %s and not writable by group or others (fix: chown 0 %s && chmod go-w %s, after checking nobody else changed what it holds)",
		e.Path, e.UID, e.Mode.Perm(), owner, e.Path, e.Path)
}

func (e *UnsafePathError) Unwrap() error { return ErrUnsafe }

// checkOwner checks a state path's owner and mode from its FileInfo
// (Lstat, or Stat of an open file).
func checkOwner(path string, fi fs.FileInfo) error {
	return checkOwnerFor(path, fi, uint32(os.Geteuid()))
}

// checkOwnerFor is checkOwner for a process running as euid want.
func checkOwnerFor(path string, fi fs.FileInfo, want uint32) error {
	if fi.Mode()&fs.ModeSymlink != 0 {
		return &UnsafePathError{Path: path, Want: want, Why: "is a symlink"}
	}
	if !fi.Mode().IsRegular() && !fi.IsDir() {
		return &UnsafePathError{Path: path, Want: want, Why: "is neither a regular file nor a directory"}
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return &UnsafePathError{Path: path, Want: want, Why: "has no owner information"}
	}
	if (st.Uid != 0 && st.Uid != want) || fi.Mode().Perm()&0o022 != 0 {
		return &UnsafePathError{Path: path, UID: st.Uid, Mode: fi.Mode(), Want: want}
	}
	return nil
}

// checkDir checks a directory of the state dir; one that does not exist
// is fine (nothing is read from it). follow: the state dir itself may be
// a symlink an administrator made; nothing under it may.
func checkDir(path string, follow bool) error {
	stat := os.Lstat
	if follow {
		stat = os.Stat
	}
	fi, err := stat(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	if err := checkOwner(path, fi); err != nil {
		return err
	}
	if !fi.IsDir() {
		return &UnsafePathError{Path: path, Want: uint32(os.Geteuid()), Why: "is not a directory"}
	}
	return nil
}

// Check checks the state dir and the journal directories in it: each
// that exists is owned by root or the user and not writable by group or
// others, and none under the state dir is a symlink. Every read and write
// of the store checks first; a caller that works on the state dir's paths
// itself checks too.
func (s Store) Check() error {
	if err := checkDir(s.Dir, true); err != nil {
		return err
	}
	for _, d := range []string{s.JournalDir(), s.DoneDir(), s.AbandonedDir()} {
		if err := checkDir(d, false); err != nil {
			return err
		}
	}
	return nil
}

// ReadFile reads a file of the state dir (a journal, a state file): no
// symlink followed, and the checks made on the file opened, so it cannot
// be swapped in between: a regular file, owned by root or the user, not
// writable by group or others, and of at most MaxFile bytes. It checks
// the file only; the caller has checked the directories (Check).
func ReadFile(path string) ([]byte, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
	if errors.Is(err, syscall.ELOOP) {
		return nil, &UnsafePathError{Path: path, Want: uint32(os.Geteuid()), Why: "is a symlink"}
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if err := checkOwner(path, fi); err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		return nil, &UnsafePathError{Path: path, Want: uint32(os.Geteuid()), Why: "is not a regular file"}
	}
	if fi.Size() > MaxFile {
		return nil, fmt.Errorf("%s: %d bytes is not a journal", path, fi.Size())
	}
	buf := make([]byte, fi.Size())
	n, err := f.ReadAt(buf, 0)
	if err != nil && n != len(buf) {
		return nil, err
	}
	return buf[:n], nil
}

// MaxFile is the most ReadFile reads: far beyond any journal, a bound on
// what a file of the state dir can make rocectl allocate.
const MaxFile = 64 << 20

// ReadStateFile reads name, a file directly in the state dir (the last
// switch-peer result), with the checks a journal gets: the state dir is
// trusted (Check), and the file is no symlink, owned by root or the
// user, not writable by others. A missing file is an error matching
// os.ErrNotExist.
func (s Store) ReadStateFile(name string) ([]byte, error) {
	if err := s.Check(); err != nil {
		return nil, err
	}
	return ReadFile(filepath.Join(s.Dir, name))
}

// WriteStateFile stores data as name in the state dir, atomically and
// durably (a new file renamed over the old), once the state dir is
// trusted: a file root writes there is one a later root run reads. The
// file is 0600, as journals are, and a state dir it creates 0700.
func (s Store) WriteStateFile(name string, data []byte) error {
	if err := s.Check(); err != nil {
		return err
	}
	if err := os.MkdirAll(s.Dir, 0o700); err != nil {
		return err
	}
	return writeFileDurable(filepath.Join(s.Dir, name), data, 0o600)
}
