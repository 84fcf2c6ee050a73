package statedir

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
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
	f, err := s.flock("lock", command)
	if err != nil {
		return nil, err
	}
	// Holding the lock, no save is under way: what an interrupted one
	// left behind can go.
	s.cleanStale()
	return &Lock{f: f}, nil
}

// flock takes an exclusive flock on the state dir's file name without
// waiting, naming command as its holder inside; ErrLocked (naming the
// holder) when another process holds it.
func (s Store) flock(name, command string) (*os.File, error) {
	if err := os.MkdirAll(s.Dir, 0o700); err != nil {
		return nil, err
	}
	if err := s.Check(); err != nil {
		return nil, err
	}
	path := filepath.Join(s.Dir, name)
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0o600)
	if errors.Is(err, syscall.ELOOP) {
		return nil, &UnsafePathError{Path: path, Want: uint32(os.Geteuid()), Why: "is a symlink"}
	}
	if err != nil {
		return nil, err
	}
	if fi, err := f.Stat(); err != nil || checkOwner(path, fi) != nil || !fi.Mode().IsRegular() {
		f.Close()
		if err == nil {
			if err = checkOwner(path, fi); err == nil {
				err = &UnsafePathError{Path: path, Want: uint32(os.Geteuid()), Why: "is not a regular file"}
			}
		}
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
	return f, nil
}

// cleanStale removes the temp files of journal saves a crash interrupted
// (.ID.json.tmp*, a journal's size each; they piled up) and the reserved
// room of journals no longer open. The caller holds the lock. Errors are
// left for the next start: this is housekeeping.
func (s Store) cleanStale() {
	for _, dir := range []string{s.JournalDir(), s.DoneDir()} {
		ents, err := os.ReadDir(dir)
		if err != nil {
			continue
		}
		for _, e := range ents {
			n := e.Name()
			if !e.Type().IsRegular() || !strings.HasPrefix(n, ".") {
				continue
			}
			stale := strings.Contains(n, ".json.tmp")
			if id, ok := strings.CutSuffix(strings.TrimPrefix(n, "."), ".reserve"); ok && dir == s.JournalDir() {
				_, err := os.Lstat(s.JournalPath(id))
				stale = errors.Is(err, os.ErrNotExist)
			}
			if stale {
				_ = os.Remove(filepath.Join(dir, n))
			}
		}
	}
}

// AcquireWaiting takes the state lock, waiting while another rocectl holds
// it: a deadline or a storm must act once the current change is done.
func (s Store) AcquireWaiting(ctx context.Context, who string) (*Lock, error) {
	lock, _, err := waitLock(ctx, 100*time.Millisecond, func() (*Lock, error) { return s.Acquire(who) })
	return lock, err
}

// waitLock calls try every period while it answers ErrLocked. When ctx
// ends first it returns ctx's error, with held the last ErrLocked (which
// names the holder); otherwise try's answer.
func waitLock(ctx context.Context, period time.Duration, try func() (*Lock, error)) (lock *Lock, held, err error) {
	for {
		l, e := try()
		if !errors.Is(e, ErrLocked) {
			return l, nil, e
		}
		select {
		case <-ctx.Done():
			return nil, e, ctx.Err()
		case <-time.After(period):
		}
	}
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

// The traffic lock keeps rocectl's own test traffic apart from changes:
// apply and verify hold it while they write or measure, and the agent's
// continuous probes run only when they can take it at once, so a probe
// never runs while an apply or a verify does (and an apply that starts
// during a probe waits for it: probes are short and bounded). It is a
// lock of its own, not the change lock, so that a probe never makes an
// operator's apply fail with "another rocectl is changing this host".
const trafficLock = "traffic"

// TryTraffic takes the traffic lock without waiting: ErrLocked (naming
// the holder) while an apply or a verify holds it.
func (s Store) TryTraffic(who string) (*Lock, error) {
	f, err := s.flock(trafficLock, who)
	if err != nil {
		return nil, err
	}
	return &Lock{f: f}, nil
}

// Traffic takes the traffic lock, waiting while another holder (a probe)
// has it, until ctx ends.
func (s Store) Traffic(ctx context.Context, who string) (*Lock, error) {
	lock, held, err := waitLock(ctx, 50*time.Millisecond, func() (*Lock, error) { return s.TryTraffic(who) })
	if held != nil {
		return nil, fmt.Errorf("waiting for the traffic lock (%v): %w", held, err)
	}
	return lock, err
}
