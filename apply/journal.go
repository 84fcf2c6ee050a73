package apply

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"
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
// commit-confirmed work from, without the profile.
type Journal struct {
	Version     int        `json:"version"`
	ID          string     `json:"id"`
	Profile     string     `json:"profile"`
	ProfileHash string     `json:"profile_hash"`
	Root        string     `json:"root"`
	Started     time.Time  `json:"started"`
	Updated     time.Time  `json:"updated"`
	State       string     `json:"state"`
	Deadline    *time.Time `json:"confirm_deadline,omitempty"`
	Steps       []Step     `json:"steps"`
	// Done is how many steps were written and verified, as far as the
	// journal knows: it is saved before the first write and after the
	// last, so a killed apply leaves 0 here and recovery undoes every step.
	Done     int      `json:"done"`
	Restored []string `json:"restored,omitempty"`
	Failures []string `json:"failures,omitempty"`
	PID      int      `json:"pid"`
}

// Final reports whether the journal needs nothing more.
func (j *Journal) Final() bool {
	return j.State == StateCommitted || j.State == StateRolledBack
}

// Store keeps journals in a state directory (default /var/lib/rocectl).
type Store struct {
	Dir string
}

func (s Store) journalDir() string { return filepath.Join(s.Dir, "journal") }

func (s Store) path(id string) string { return filepath.Join(s.journalDir(), id+".json") }

func newID(now time.Time) string {
	var b [3]byte
	_, _ = rand.Read(b[:])
	return now.UTC().Format("20060102T150405Z") + "-" + hex.EncodeToString(b[:])
}

// Save writes the journal atomically and durably: temp file, fsync, rename,
// fsync of the directory. Only then may the host be touched.
func (s Store) Save(j *Journal) error {
	if err := os.MkdirAll(s.journalDir(), 0o700); err != nil {
		return err
	}
	j.Updated = time.Now().UTC()
	// Compact: indenting doubled the encoding time and the bytes to
	// fsync of a journal saved twice per apply; `jq .` reads it fine.
	data, err := json.Marshal(j)
	if err != nil {
		return err
	}
	data = append(data, '\n')
	return writeFileDurable(s.path(j.ID), data, 0o600)
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

// Load reads one journal.
func (s Store) Load(id string) (*Journal, error) {
	if strings.ContainsAny(id, "/\\") || id == "" {
		return nil, fmt.Errorf("%q is not a journal ID", id)
	}
	data, err := os.ReadFile(s.path(id))
	if errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("no apply with ID %s in %s", id, s.journalDir())
	}
	if err != nil {
		return nil, err
	}
	var j Journal
	if err := json.Unmarshal(data, &j); err != nil {
		return nil, fmt.Errorf("journal %s is damaged: %w", id, err)
	}
	return &j, nil
}

// List returns every journal, oldest first.
func (s Store) List() ([]*Journal, error) {
	names, err := os.ReadDir(s.journalDir())
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var out []*Journal
	for _, n := range names {
		if !strings.HasSuffix(n.Name(), ".json") || strings.HasPrefix(n.Name(), ".") {
			continue
		}
		j, err := s.Load(strings.TrimSuffix(n.Name(), ".json"))
		if err != nil {
			return nil, err
		}
		out = append(out, j)
	}
	// Oldest first by start time: IDs carry only the second.
	sort.Slice(out, func(a, b int) bool {
		if !out[a].Started.Equal(out[b].Started) {
			return out[a].Started.Before(out[b].Started)
		}
		return out[a].ID < out[b].ID
	})
	return out, nil
}

// Open returns the journals that are not final: unfinished applies (crash)
// and open confirm windows.
func (s Store) Open() ([]*Journal, error) {
	all, err := s.List()
	if err != nil {
		return nil, err
	}
	var out []*Journal
	for _, j := range all {
		if !j.Final() {
			out = append(out, j)
		}
	}
	return out, nil
}

// LastCommitted returns the newest committed journal, or nil.
func (s Store) LastCommitted() (*Journal, error) {
	all, err := s.List()
	if err != nil {
		return nil, err
	}
	for i := len(all) - 1; i >= 0; i-- {
		if all[i].State == StateCommitted {
			return all[i], nil
		}
	}
	return nil, nil
}
