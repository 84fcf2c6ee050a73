package apply

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"syscall"
	"time"

	"github.com/rocectl/rocectl/host"
)

// Journal states.
const (
	StateApplying       = "applying"        // steps being written
	StateApplied        = "applied"         // all steps written, being verified / soaked
	StateConfirmPending = "confirm-pending" // waiting for `rocectl commit` until Deadline
	StateCommitted      = "committed"       // final; `rocectl rollback` can still undo it
	StateRolledBack     = "rolled-back"     // final: before-values restored
	StateRollbackFailed = "rollback-failed" // some before-values could not be restored
)

// Journal is the durable record of one apply: every step with its
// before-values, written and fsynced before the first change to the host,
// and updated when the apply ends. It is what rollback, crash recovery and
// commit-confirmed work from, without the profile. Its file format is not
// this struct but codec.go's (docs/journal-format.md).
type Journal struct {
	// Version is the format version the journal was read in (a version
	// 1 journal is migrated on read); Save writes version 2, or 3 when a
	// step spans the slaves of a bond (codec.go).
	Version     int
	ID          string
	Profile     string
	ProfileHash string
	Root        string
	Started     time.Time
	Updated     time.Time
	State       string
	Deadline    *time.Time
	Steps       []host.Step
	// Done is how many steps were written and verified, as far as the
	// journal knows: it is saved before the first write and after the
	// last, so a killed apply leaves 0 here and recovery undoes every step.
	Done int
	// Restored are the keys a rollback wrote back to their before-values;
	// Unchanged those it found already there (never written, or a write
	// the driver refused without effect), read back, not written.
	Restored  []string
	Unchanged []string
	Failures  []string
	// Skipped are the steps a rollback could not restore because their
	// device is gone (ENODEV): reported, not retried.
	Skipped []Skipped
	PID     int
}

// Skipped is a step a rollback left alone because its device vanished.
type Skipped struct {
	Scope  string   `json:"scope"`
	Keys   []string `json:"keys"`
	Reason string   `json:"reason"`
}

// Final reports whether the journal needs nothing more.
func (j *Journal) Final() bool {
	return j.State == StateCommitted || j.State == StateRolledBack
}

// Store keeps journals in a state directory (default /var/lib/rocectl):
// journal/<id>.json while an apply is open (applying, applied,
// confirm-pending, rollback-failed), journal/done/<id>.json once it is
// final (committed, rolled back).
//
// Every apply, rollback and agent start looks for open journals; keeping
// the finished ones apart means that look parses none of the host's
// history, which would otherwise grow by one journal per apply (with 200
// finished journals an 8-port apply took 320 ms instead of 15). Of the
// finished journals the newest Keep stay, and the newest committed one
// (what `rocectl rollback` undoes) always; older ones are deleted when a
// journal is finished.
type Store struct {
	Dir string
	// Keep is how many finished journals to keep; 0 means DefaultKeep.
	Keep int
}

// DefaultKeep is how many finished journals a Store keeps by default: weeks
// of history for a host applied daily, a few MB for eight ports.
const DefaultKeep = 50

func (s Store) journalDir() string { return filepath.Join(s.Dir, "journal") }

func (s Store) doneDir() string { return filepath.Join(s.journalDir(), "done") }

func (s Store) path(id string) string { return filepath.Join(s.journalDir(), id+".json") }

func (s Store) donePath(id string) string { return filepath.Join(s.doneDir(), id+".json") }

func (s Store) abandonedDir() string { return filepath.Join(s.journalDir(), "abandoned") }

// reservePath is the room kept for a journal's final save (see Save).
func (s Store) reservePath(id string) string {
	return filepath.Join(s.journalDir(), "."+id+".reserve")
}

// WatcherLog is where the detached process that keeps an apply's confirm
// deadline (when systemd cannot) writes its output; it goes when the
// apply's journal is pruned.
func (s Store) WatcherLog(id string) string { return filepath.Join(s.Dir, "confirm-"+id+".log") }

// newID names a journal by its start time, the second and then the
// microsecond within it (20261130T122955Z-481203), so that names sort by
// age: pruning and LastCommitted rely on that. Two applies never start in
// the same microsecond, for each takes the state dir's lock first.
func newID(now time.Time) string {
	now = now.UTC()
	return fmt.Sprintf("%s-%06d", now.Format("20060102T150405Z"), now.Nanosecond()/1000)
}

// Save writes the journal atomically and durably: temp file, fsync, rename,
// fsync of the directory. Only then may the host be touched.
//
// A final journal is then moved to done/ with one rename, which needs no
// fsync: should the move be lost in a crash, the file left in journal/
// holds the final state, and Open skips it and the next final Save moves
// it. A journal that leaves the final states (a rollback of a committed
// apply that fails) is written to journal/ again, and its done/ copy
// removed; while both exist, the one in journal/ is the newer.
//
// The final save must not fail for want of space: the host would hold a
// change the journal does not admit to. So every save of an open journal
// also allocates room for the next one (journal/.ID.reserve, twice the
// journal's size), and each save frees that room just before it writes.
// A save that cannot reserve the room fails, which at Begin is before
// anything on the host changed.
func (s Store) Save(j *Journal) error {
	if err := s.checkTree(); err != nil {
		return err
	}
	if err := os.MkdirAll(s.journalDir(), 0o700); err != nil {
		return err
	}
	j.Updated = time.Now().UTC()
	data, err := encodeJournal(j)
	if err != nil {
		return err
	}
	if err := os.Remove(s.reservePath(j.ID)); err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	if err := writeFileDurable(s.path(j.ID), data, 0o600); err != nil {
		return err
	}
	if !j.Final() {
		if err := os.Remove(s.donePath(j.ID)); err != nil && !errors.Is(err, os.ErrNotExist) {
			return err
		}
		if err := reserve(s.reservePath(j.ID), 2*int64(len(data))+16<<10); err != nil {
			return fmt.Errorf("reserving room for the journal's next save: %w", err)
		}
		return nil
	}
	if err := s.moveDone(j.ID); err != nil {
		return err
	}
	// Pruning is housekeeping: a journal it cannot delete now is
	// deleted by a later final Save, and is no reason to fail this one.
	_ = s.prune()
	return nil
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

// discard removes a journal that never reached the host (Begin failed
// after its first save, or before).
func (s Store) discard(id string) {
	_ = os.Remove(s.path(id))
	_ = os.Remove(s.reservePath(id))
}

// moveDone moves a final journal from journal/ to done/. Another rocectl
// may have moved it already (prune), which is as good.
func (s Store) moveDone(id string) error {
	if err := os.MkdirAll(s.doneDir(), 0o700); err != nil {
		return err
	}
	err := os.Rename(s.path(id), s.donePath(id))
	if errors.Is(err, os.ErrNotExist) {
		if _, serr := os.Stat(s.donePath(id)); serr == nil {
			return nil
		}
	}
	return err
}

// prune moves final journals a crash left in journal/ to done/, then
// deletes the oldest finished journals beyond Keep, sparing the newest
// committed one. IDs begin with their start time, so names sort by age.
func (s Store) prune() error {
	open, err := s.readDir(s.journalDir())
	if err != nil {
		return err
	}
	for _, id := range open {
		if j, err := s.loadFile(s.path(id), id); err == nil && j.Final() {
			_ = s.moveDone(id)
		}
	}
	done, err := s.readDir(s.doneDir())
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
	last, err := s.lastCommittedIn(done)
	if err != nil {
		return err
	}
	var errs []error
	for _, id := range done[:len(done)-keep] {
		if last != nil && id == last.ID {
			continue
		}
		for _, p := range []string{s.donePath(id), s.WatcherLog(id)} {
			if err := os.Remove(p); err != nil && !errors.Is(err, os.ErrNotExist) {
				errs = append(errs, err)
			}
		}
	}
	return errors.Join(errs...)
}

// readDir returns the journal IDs in dir, sorted by name (oldest first).
func (s Store) readDir(dir string) ([]string, error) {
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

func checkID(id string) error {
	if strings.ContainsAny(id, "/\\") || id == "" || strings.HasPrefix(id, ".") {
		return fmt.Errorf("%q is not a journal ID", id)
	}
	return nil
}

// Load reads one journal, open or finished.
func (s Store) Load(id string) (*Journal, error) {
	if err := checkID(id); err != nil {
		return nil, err
	}
	if err := s.checkTree(); err != nil {
		return nil, err
	}
	// journal/ first: while a journal is in both, that copy is newer.
	j, err := s.loadFile(s.path(id), id)
	if errors.Is(err, os.ErrNotExist) {
		j, err = s.loadFile(s.donePath(id), id)
	}
	if errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("no apply with ID %s in %s", id, s.journalDir())
	}
	return j, err
}

func (s Store) loadFile(path, id string) (*Journal, error) {
	data, err := readSafe(path)
	if err != nil {
		return nil, err
	}
	j, err := DecodeJournal(data)
	if err == nil && j.ID != id {
		err = fmt.Errorf("%w: file %s holds journal %q", ErrJournalDamaged, filepath.Base(path), j.ID)
	}
	if err != nil {
		return nil, &JournalError{ID: id, Path: path, Err: err}
	}
	return j, nil
}

// JournalError is a journal that cannot be used: damaged, or of a format
// version this rocectl does not know. It blocks applies and rollbacks
// (rocectl cannot know what the host held) until it is set aside with
// `rocectl rollback --abandon ID`.
type JournalError struct {
	ID   string
	Path string
	Err  error
}

func (e *JournalError) Error() string {
	return fmt.Sprintf("journal %s (%s): %v; rocectl will not act on it: if it is not yours to fix, `rocectl rollback --abandon %s` reports what the host holds and moves it aside", e.ID, e.Path, e.Err, e.ID)
}

func (e *JournalError) Unwrap() error { return e.Err }

// List returns every journal, open and finished, oldest first.
func (s Store) List() ([]*Journal, error) {
	if err := s.checkTree(); err != nil {
		return nil, err
	}
	open, err := s.readDir(s.journalDir())
	if err != nil {
		return nil, err
	}
	done, err := s.readDir(s.doneDir())
	if err != nil {
		return nil, err
	}
	ids := slices.Compact(slices.Sorted(slices.Values(append(open, done...))))
	out := make([]*Journal, 0, len(ids))
	for _, id := range ids {
		j, err := s.Load(id)
		if err != nil {
			return nil, err
		}
		out = append(out, j)
	}
	sortByStart(out)
	return out, nil
}

// sortByStart orders journals oldest first by start time: the IDs of older
// rocectl versions carry only the second.
func sortByStart(js []*Journal) {
	sort.Slice(js, func(a, b int) bool {
		if !js[a].Started.Equal(js[b].Started) {
			return js[a].Started.Before(js[b].Started)
		}
		return js[a].ID < js[b].ID
	})
}

// Open returns the journals that are not final, oldest first: unfinished
// applies (crash) and open confirm windows. It reads journal/ only, where
// there are none at all but while an apply runs.
func (s Store) Open() ([]*Journal, error) {
	if err := s.checkTree(); err != nil {
		return nil, err
	}
	ids, err := s.readDir(s.journalDir())
	if err != nil {
		return nil, err
	}
	var out []*Journal
	for _, id := range ids {
		j, err := s.loadFile(s.path(id), id)
		if errors.Is(err, os.ErrNotExist) { // finished meanwhile
			continue
		}
		if err != nil {
			return nil, err
		}
		if !j.Final() {
			out = append(out, j)
		}
	}
	sortByStart(out)
	return out, nil
}

// LastCommitted returns the newest committed journal, or nil.
func (s Store) LastCommitted() (*Journal, error) {
	if err := s.checkTree(); err != nil {
		return nil, err
	}
	done, err := s.readDir(s.doneDir())
	if err != nil {
		return nil, err
	}
	last, err := s.lastCommittedIn(done)
	if err != nil {
		return nil, err
	}
	// A final journal a crash left in journal/ may be newer.
	open, err := s.readDir(s.journalDir())
	if err != nil {
		return nil, err
	}
	for _, id := range open {
		j, err := s.loadFile(s.path(id), id)
		if err == nil && j.State == StateCommitted && (last == nil || newer(j, last)) {
			last = j
		}
	}
	return last, nil
}

// lastCommittedIn finds the newest committed journal among done/'s IDs
// (sorted by name, so by start time), reading from the newest back: all of
// the newest committed one's second, since IDs of older rocectl versions
// ordered within a second at random.
func (s Store) lastCommittedIn(done []string) (*Journal, error) {
	var last *Journal
	for i := len(done) - 1; i >= 0; i-- {
		id := done[i]
		if last != nil && !strings.HasPrefix(id, secondOf(last.ID)) {
			break
		}
		j, err := s.loadFile(s.donePath(id), id)
		if errors.Is(err, os.ErrNotExist) { // pruned meanwhile
			continue
		}
		if err != nil {
			return nil, err
		}
		if j.State == StateCommitted && (last == nil || newer(j, last)) {
			last = j
		}
	}
	return last, nil
}

// secondOf is the start-time part of an ID, "20261130T122955Z".
func secondOf(id string) string {
	t, _, _ := strings.Cut(id, "-")
	return t
}

func newer(a, b *Journal) bool {
	return a.Started.After(b.Started) || (a.Started.Equal(b.Started) && a.ID > b.ID)
}
