package apply

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/rocectl/rocectl/host"
	"github.com/rocectl/rocectl/statedir"
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

// Store is the state dir's journals as Journals: statedir.Store keeps
// their files (where they lie, durable writes, pruning) and lends this type
// the lock, the state files and the trust checks; Store encodes and
// decodes what they hold (codec.go).
type Store struct {
	statedir.Store
}

// newID names a journal by its start time, the second and then the
// microsecond within it (20261130T122955Z-481203), so that names sort by
// age: pruning and LastCommitted rely on that. Two applies never start in
// the same microsecond, for each takes the state dir's lock first.
func newID(now time.Time) string {
	now = now.UTC()
	return fmt.Sprintf("%s-%06d", now.Format("20060102T150405Z"), now.Nanosecond()/1000)
}

// Save writes the journal atomically and durably (statedir's
// WriteJournal: temp file, fsync, rename, fsync of the directory; room
// reserved for the next save while the journal is open; a final one moved
// to done/). Only then may the host be touched. A final save then prunes
// the finished journals beyond Keep.
func (s Store) Save(j *Journal) error {
	if err := s.Check(); err != nil {
		return err
	}
	j.Updated = time.Now().UTC()
	data, err := encodeJournal(j)
	if err != nil {
		return err
	}
	if err := s.WriteJournal(j.ID, data, j.Final()); err != nil {
		return err
	}
	if !j.Final() {
		return nil
	}
	// Pruning is housekeeping: a journal it cannot delete now is
	// deleted by a later final Save, and is no reason to fail this one.
	_ = s.prune()
	return nil
}

// prune is statedir's Prune with what only a decoded journal tells: which
// of journal/ are final, and which finished one is the last committed.
func (s Store) prune() error {
	final := func(id string) bool {
		j, err := s.loadFile(s.JournalPath(id), id)
		return err == nil && j.Final()
	}
	spare := func(done []string) (string, error) {
		last, err := s.lastCommittedIn(done)
		if err != nil || last == nil {
			return "", err
		}
		return last.ID, nil
	}
	return s.Prune(final, spare)
}

// Load reads one journal, open or finished.
func (s Store) Load(id string) (*Journal, error) {
	if err := statedir.CheckID(id); err != nil {
		return nil, err
	}
	if err := s.Check(); err != nil {
		return nil, err
	}
	// journal/ first: while a journal is in both, that copy is newer.
	j, err := s.loadFile(s.JournalPath(id), id)
	if errors.Is(err, os.ErrNotExist) {
		j, err = s.loadFile(s.DonePath(id), id)
	}
	if errors.Is(err, os.ErrNotExist) {
		return nil, s.NoJournal(id)
	}
	return j, err
}

func (s Store) loadFile(path, id string) (*Journal, error) {
	data, err := statedir.ReadFile(path)
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
	if err := s.Check(); err != nil {
		return nil, err
	}
	open, err := s.OpenIDs()
	if err != nil {
		return nil, err
	}
	done, err := s.DoneIDs()
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
	if err := s.Check(); err != nil {
		return nil, err
	}
	ids, err := s.OpenIDs()
	if err != nil {
		return nil, err
	}
	var out []*Journal
	for _, id := range ids {
		j, err := s.loadFile(s.JournalPath(id), id)
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
	if err := s.Check(); err != nil {
		return nil, err
	}
	done, err := s.DoneIDs()
	if err != nil {
		return nil, err
	}
	last, err := s.lastCommittedIn(done)
	if err != nil {
		return nil, err
	}
	// A final journal a crash left in journal/ may be newer.
	open, err := s.OpenIDs()
	if err != nil {
		return nil, err
	}
	for _, id := range open {
		j, err := s.loadFile(s.JournalPath(id), id)
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
		j, err := s.loadFile(s.DonePath(id), id)
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
