package apply

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"time"
)

// Lock is the one-change-at-a-time lock: an flock on <state-dir>/lock, with
// the holder's identity written inside so a refused caller can say who holds
// it. The kernel drops an flock when its holder dies, so a crashed rocectl
// never leaves a stale lock.
type Lock struct {
	f *os.File
}

// Holder describes who holds the lock.
type Holder struct {
	PID     int       `json:"pid"`
	Command string    `json:"command"`
	Since   time.Time `json:"since"`
}

// ErrLocked is returned (wrapped) when another rocectl holds the lock.
var ErrLocked = errors.New("another rocectl is changing this host")

// Acquire takes the lock without waiting.
func (s Store) Acquire(command string) (*Lock, error) {
	if err := os.MkdirAll(s.Dir, 0o700); err != nil {
		return nil, err
	}
	path := filepath.Join(s.Dir, "lock")
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, err
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		defer f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			var h Holder
			data, _ := os.ReadFile(path)
			if json.Unmarshal(data, &h) == nil && h.PID != 0 {
				return nil, fmt.Errorf("%w: pid %d (%s) since %s", ErrLocked, h.PID, h.Command, h.Since.Format(time.RFC3339))
			}
			return nil, ErrLocked
		}
		return nil, err
	}
	data, _ := json.Marshal(Holder{PID: os.Getpid(), Command: command, Since: time.Now().UTC()})
	if err := f.Truncate(0); err == nil {
		// Not fsynced: the holder only words the "locked" message, and
		// the flock, not the file, is the lock.
		_, _ = f.WriteAt(data, 0)
	}
	return &Lock{f: f}, nil
}

// Release drops the lock.
func (l *Lock) Release() error {
	if l == nil || l.f == nil {
		return nil
	}
	_ = l.f.Truncate(0)
	err := l.f.Close()
	l.f = nil
	return err
}
