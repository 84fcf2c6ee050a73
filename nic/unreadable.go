package nic

import (
	"os"
	"path"
	"strings"
	"sync"
	"syscall"
)

// Unreadable is what a capture could not read: the host paths whose read
// failed, each with its errno (a snapshot's unreadable list). An FS given
// one (WithUnreadable) answers a read of such a path with that errno, as
// the host did, instead of the ENOENT of a file the snapshot does not
// hold: a value that could not be read is unknown, and must not pass for
// a driver without the attribute ("unsupported") or an absent file.
//
// The list is parsed at the first lookup, which only a read that found no
// file makes: most snapshots' reads never get there.
type Unreadable struct {
	list  []string // "PATH: ERRNO"
	parse func(string) (syscall.Errno, error)

	once   sync.Once
	byPath map[string]syscall.Errno
	bases  map[string]bool // the paths' last names: most misses stop here
}

// NewUnreadable returns the lookup of list, whose entries are "PATH:
// ERRNO" with ERRNO a name parse understands. An entry that does not
// parse is taken as EIO: the read failed, how is not known.
func NewUnreadable(list []string, parse func(string) (syscall.Errno, error)) *Unreadable {
	if len(list) == 0 {
		return nil
	}
	return &Unreadable{list: list, parse: parse}
}

// Load parses the list now, where a caller has time to spare (it is
// otherwise parsed at the first lookup, while readers wait for it).
func (u *Unreadable) Load() {
	if u != nil {
		u.once.Do(u.load)
	}
}

func (u *Unreadable) load() {
	u.byPath = make(map[string]syscall.Errno, len(u.list))
	u.bases = make(map[string]bool, len(u.list))
	parsed := map[string]syscall.Errno{} // a list has few distinct errnos
	for _, e := range u.list {
		p, name, ok := strings.Cut(e, ": ")
		errno := syscall.EIO
		if n, seen := parsed[name]; ok && seen {
			errno = n
		} else if ok {
			if n, err := u.parse(name); err == nil {
				errno = n
			}
			parsed[name] = errno
		}
		if !cleanAbs(p) { // path.Clean scans every byte: 0.6 ms for a 64-port capture's 1,500
			p = path.Clean(p)
		}
		u.byPath[p] = errno
		u.bases[path.Base(p)] = true
	}
}

// lookup is the errno recorded for the host path p, whose directory's
// symlinks dir resolves (called only when p's last name is listed at all).
func (u *Unreadable) lookup(p string, dir func() (string, bool)) (syscall.Errno, bool) {
	if u == nil {
		return 0, false
	}
	u.once.Do(u.load)
	if !cleanAbs(p) {
		p = path.Clean(p)
	}
	if !u.bases[path.Base(p)] {
		return 0, false
	}
	if e, ok := u.byPath[p]; ok {
		return e, true
	}
	// A capture lists a file by its resolved path
	// (/sys/devices/…/infiniband/mlx5_0/tc/1/traffic_class), read
	// through a class link (/sys/class/infiniband/mlx5_0/…).
	if real, ok := dir(); ok {
		if e, ok := u.byPath[path.Join(real, path.Base(p))]; ok {
			return e, true
		}
	}
	return 0, false
}

// WithUnreadable returns f answering the reads of u's paths with their
// recorded errors (a snapshot's FS).
func (f FS) WithUnreadable(u *Unreadable) FS {
	f.unreadable = u
	return f
}

// recordedErr turns err, the ENOENT of opening w, into the error the
// capture recorded for w's file, when it recorded one.
func (f FS) recordedErr(w where, err error) error {
	if f.unreadable == nil || err != syscall.ENOENT {
		return err
	}
	p := w.asked()
	dir := func() (string, bool) {
		d := path.Dir(p)
		if w.in {
			real, ok := w.d.Resolved()
			if !ok {
				return "", false
			}
			d = path.Dir(path.Join(real, w.rel))
		}
		real, rerr := f.resolve(d)
		return real, rerr == nil
	}
	if e, ok := f.unreadable.lookup(p, dir); ok {
		return recordedErrno{e}
	}
	return err
}

// recordedErrno is the error a capture recorded for a file: the errno
// (errors.Is matches it), and a message that says it was the host's read
// that failed, not the snapshot's.
type recordedErrno struct{ errno syscall.Errno }

func (e recordedErrno) Error() string {
	return e.errno.Error() + " (as the capture read it on the host)"
}
func (e recordedErrno) Unwrap() error { return e.errno }

// recordedPathErr is recordedErr for a host path outside a Dir, wrapped
// as op's error on it.
func (f FS) recordedPathErr(op, p string, err error) error {
	if e := f.recordedErr(where{rel: p}, err); e != err {
		return &os.PathError{Op: op, Path: f.Path(p), Err: e}
	}
	return nil
}
