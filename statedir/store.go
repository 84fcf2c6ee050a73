package statedir

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
)

// Store is the state directory (default /var/lib/rocectl): the lock, the
// state files, and the journals of applies as files, journal/<id>.json
// while an apply is open (applying, applied, confirm-pending,
// rollback-failed), journal/done/<id>.json once it is final (committed,
// rolled back), journal/abandoned/<id>.json once set aside. What a journal
// holds and whether it is final is its codec's business (package apply);
// the store keeps its bytes.
//
// Every apply, rollback and agent start looks for open journals; keeping
// the finished ones apart means that look parses none of the host's
// history, which would otherwise grow by one journal per apply (with 200
// finished journals an 8-port apply took 320 ms instead of 15). Of the
// finished journals the newest Keep stay, and the newest committed one
// (what `rocectl rollback` undoes) always; older ones are deleted when a
// journal is finished (Prune).
type Store struct {
	Dir string
	// Keep is how many finished journals to keep; 0 means DefaultKeep.
	Keep int
}

// DefaultKeep is how many finished journals a Store keeps by default: weeks
// of history for a host applied daily, a few MB for eight ports.
const DefaultKeep = 50

// JournalDir is journal/, where open journals lie.
func (s Store) JournalDir() string { return filepath.Join(s.Dir, "journal") }

// DoneDir is journal/done/, where final journals lie.
func (s Store) DoneDir() string { return filepath.Join(s.JournalDir(), "done") }

// AbandonedDir is journal/abandoned/, where SetAside moves journals.
func (s Store) AbandonedDir() string { return filepath.Join(s.JournalDir(), "abandoned") }

// JournalPath is the file of journal id while it is open.
func (s Store) JournalPath(id string) string { return filepath.Join(s.JournalDir(), id+".json") }

// DonePath is the file of journal id once it is final.
func (s Store) DonePath(id string) string { return filepath.Join(s.DoneDir(), id+".json") }

// ReservePath is the room kept for a journal's final save (see
// WriteJournal).
func (s Store) ReservePath(id string) string {
	return filepath.Join(s.JournalDir(), "."+id+".reserve")
}

// WatcherLog is where the detached process that keeps an apply's confirm
// deadline (when systemd cannot) writes its output; it goes when the
// apply's journal is pruned.
func (s Store) WatcherLog(id string) string { return filepath.Join(s.Dir, "confirm-"+id+".log") }

// CheckID refuses what cannot be a journal ID: a path, or a name the store
// keeps for itself (a leading dot).
func CheckID(id string) error {
	if strings.ContainsAny(id, "/\\") || id == "" || strings.HasPrefix(id, ".") {
		return fmt.Errorf("%q is not a journal ID", id)
	}
	return nil
}

// NoJournal is the error for an ID the store has no journal of.
func (s Store) NoJournal(id string) error {
	return fmt.Errorf("no apply with ID %s in %s", id, s.JournalDir())
}

// WriteJournal stores data as journal id atomically and durably: temp
// file, fsync, rename, fsync of the directory, once the state dir is
// trusted. Only then may the host be touched.
//
// A final journal is then moved to done/ with one rename, which needs no
// fsync: should the move be lost in a crash, the file left in journal/
// holds the final state, and the next Prune moves it. A journal that
// leaves the final states (a rollback of a committed apply that fails) is
// written to journal/ again, and its done/ copy removed; while both
// exist, the one in journal/ is the newer.
//
// The final save must not fail for want of space: the host would hold a
// change the journal does not admit to. So every write of an open journal
// also allocates room for the next one (journal/.ID.reserve, twice the
// journal's size), and each write frees that room just before it writes.
// A write that cannot reserve the room fails, which at an apply's first
// save is before anything on the host changed.
func (s Store) WriteJournal(id string, data []byte, final bool) error {
	if err := s.Check(); err != nil {
		return err
	}
	if err := os.MkdirAll(s.JournalDir(), 0o700); err != nil {
		return err
	}
	if err := os.Remove(s.ReservePath(id)); err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	if err := writeFileDurable(s.JournalPath(id), data, 0o600); err != nil {
		return err
	}
	if !final {
		if err := os.Remove(s.DonePath(id)); err != nil && !errors.Is(err, os.ErrNotExist) {
			return err
		}
		if err := reserve(s.ReservePath(id), 2*int64(len(data))+16<<10); err != nil {
			return fmt.Errorf("reserving room for the journal's next save: %w", err)
		}
		return nil
	}
	return s.MoveDone(id)
}

// fallocate is syscall.Fallocate; tests replace it.
var fallocate = syscall.Fallocate

// reserve allocates size bytes of disk to path (fallocate, or zeros where
// the filesystem has no fallocate), durably.
func reserve(path string, size int64) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return err
	}
	// tmpfs gives up with EINTR whenever a signal is pending
	// (shmem_fallocate), and the Go runtime signals its threads to
	// preempt them: a state dir on tmpfs failed applies that way. Calling
	// again is safe: what is already allocated stays so.
	for {
		err = fallocate(int(f.Fd()), 0, 0, size)
		if !errors.Is(err, syscall.EINTR) {
			break
		}
	}
	if errors.Is(err, syscall.EOPNOTSUPP) {
		_, err = f.Write(make([]byte, size))
	}
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(path)
	}
	return err
}

// Discard removes an open journal that never reached the host (its
// apply failed after its first save, or before), and its reserved room.
func (s Store) Discard(id string) {
	_ = os.Remove(s.JournalPath(id))
	_ = os.Remove(s.ReservePath(id))
}

// MoveDone moves a final journal from journal/ to done/. Another rocectl
// may have moved it already (Prune), which is as good.
func (s Store) MoveDone(id string) error {
	if err := os.MkdirAll(s.DoneDir(), 0o700); err != nil {
		return err
	}
	err := os.Rename(s.JournalPath(id), s.DonePath(id))
	if errors.Is(err, os.ErrNotExist) {
		if _, serr := os.Stat(s.DonePath(id)); serr == nil {
			return nil
		}
	}
	return err
}

// Prune moves the journals of journal/ that final reports final (left
// there by a crash) to done/, then deletes the oldest finished journals
// beyond Keep, with their watcher logs, sparing the one spare names (the
// newest committed; "" for none). spare is called only when there is
// something to delete, with done/'s IDs oldest first. IDs begin with
// their start time, so names sort by age.
func (s Store) Prune(final func(id string) bool, spare func(done []string) (string, error)) error {
	open, err := s.OpenIDs()
	if err != nil {
		return err
	}
	for _, id := range open {
		if final(id) {
			_ = s.MoveDone(id)
		}
	}
	done, err := s.DoneIDs()
	if err != nil {
		return err
	}
	keep := s.Keep
	if keep <= 0 {
		keep = DefaultKeep
	}
	if len(done) <= keep {
		return nil
	}
	last, err := spare(done)
	if err != nil {
		return err
	}
	var errs []error
	for _, id := range done[:len(done)-keep] {
		if last != "" && id == last {
			continue
		}
		for _, p := range []string{s.DonePath(id), s.WatcherLog(id)} {
			if err := os.Remove(p); err != nil && !errors.Is(err, os.ErrNotExist) {
				errs = append(errs, err)
			}
		}
	}
	return errors.Join(errs...)
}

// OpenIDs returns the IDs of the journals in journal/, oldest first. It
// does not Check the tree; the caller has.
func (s Store) OpenIDs() ([]string, error) { return readDir(s.JournalDir()) }

// DoneIDs returns the IDs of the journals in done/, oldest first. It does
// not Check the tree; the caller has.
func (s Store) DoneIDs() ([]string, error) { return readDir(s.DoneDir()) }

// readDir returns the journal IDs in dir, sorted by name (oldest first).
func readDir(dir string) ([]string, error) {
	ents, err := os.ReadDir(dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var ids []string
	for _, e := range ents {
		n := e.Name()
		if !strings.HasSuffix(n, ".json") || strings.HasPrefix(n, ".") || e.IsDir() {
			continue
		}
		if !e.Type().IsRegular() {
			// A symlink or FIFO where a journal belongs is nobody's
			// mistake: refuse rather than pass over it.
			return nil, &UnsafePathError{Path: filepath.Join(dir, n), Want: uint32(os.Geteuid()), Why: "is not a regular file"}
		}
		ids = append(ids, strings.TrimSuffix(n, ".json"))
	}
	return ids, nil // ReadDir sorts by name
}

// Find returns the file of journal id, open or finished: journal/ first,
// for while a journal is in both that copy is newer.
func (s Store) Find(id string) (string, error) {
	if err := CheckID(id); err != nil {
		return "", err
	}
	if err := s.Check(); err != nil {
		return "", err
	}
	src := s.JournalPath(id)
	if _, err := os.Lstat(src); errors.Is(err, os.ErrNotExist) {
		src = s.DonePath(id)
	}
	if _, err := os.Lstat(src); err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return "", s.NoJournal(id)
		}
		return "", err
	}
	return src, nil
}

// SetAside moves journal id's file src (from Find) to journal/abandoned/,
// where nothing looks for journals, and returns where it now lies; its
// reserved room and any copy in done/ go too.
func (s Store) SetAside(id, src string) (string, error) {
	if err := os.MkdirAll(s.AbandonedDir(), 0o700); err != nil {
		return "", err
	}
	dst := filepath.Join(s.AbandonedDir(), id+".json")
	if err := os.Rename(src, dst); err != nil {
		return "", err
	}
	_ = os.Remove(s.ReservePath(id))
	// A copy in done/ (a journal reopened by a failed rollback) goes too,
	// or a later load would find it.
	_ = os.Remove(s.DonePath(id))
	if d, err := os.Open(filepath.Dir(src)); err == nil {
		_ = d.Sync()
		d.Close()
	}
	return dst, nil
}

// writeFileDurable writes data to path atomically and durably: a temp
// file beside it, fsynced, renamed over path, and the directory fsynced.
func writeFileDurable(path string, data []byte, mode os.FileMode) error {
	dir := filepath.Dir(path)
	f, err := os.CreateTemp(dir, "."+filepath.Base(path)+".tmp*")
	if err != nil {
		return err
	}
	tmp := f.Name()
	defer os.Remove(tmp)
	if _, err := f.Write(data); err != nil {
		f.Close()
		return err
	}
	if err := f.Chmod(mode); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	if err := os.Rename(tmp, path); err != nil {
		return err
	}
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}
