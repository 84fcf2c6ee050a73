package statedir

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestLockNamesHolder(t *testing.T) {
	s := Store{Dir: t.TempDir()}
	l, err := s.Acquire("apply -p a.toml")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Release()
	_, err = s.Acquire("apply -p b.toml")
	if !errors.Is(err, ErrLocked) || !strings.Contains(err.Error(), "apply -p a.toml") || !strings.Contains(err.Error(), "pid ") {
		t.Fatalf("second acquire: %v", err)
	}
	l.Release()
	l2, err := s.Acquire("again")
	if err != nil {
		t.Fatalf("after release: %v", err)
	}
	l2.Release()
}

// Defect 8: temp files of interrupted saves piled up. Taking the lock
// clears them, and the reserve of journals no longer open.
func TestStaleTempFilesCleanedAtStart(t *testing.T) {
	s := Store{Dir: t.TempDir()}
	open, done := "20261130T120000Z-000000", "20261130T120001Z-000001"
	writeJournal(t, s, open, false)
	writeJournal(t, s, done, true)
	stale := []string{
		filepath.Join(s.JournalDir(), "."+open+".json.tmp123"),
		filepath.Join(s.DoneDir(), ".x.json.tmp9"),
		s.ReservePath("20261130T110000Z-000000"),
	}
	for _, p := range stale {
		if err := os.WriteFile(p, make([]byte, 96<<10), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	l, err := s.Acquire("test")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Release()
	for _, p := range stale {
		if _, err := os.Stat(p); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s survived (%v)", p, err)
		}
	}
	if _, err := os.Stat(s.ReservePath(open)); err != nil {
		t.Errorf("the open journal's reserve went: %v", err)
	}
}

// The traffic lock is its own: a probe holding it never makes an apply's
// change lock fail, and apply/verify waiting for it get it once the probe
// ends; a waiter whose context ends says who held it.
func TestTrafficLockIsApartFromTheChangeLock(t *testing.T) {
	s := Store{Dir: t.TempDir()}
	probe, err := s.TryTraffic("agent probe 10.0.0.2:18516")
	if err != nil {
		t.Fatal(err)
	}
	change, err := s.Acquire("apply -p a.toml")
	if err != nil {
		t.Fatalf("the change lock while a probe runs: %v", err)
	}
	defer change.Release()
	if _, err := s.TryTraffic("another probe"); !errors.Is(err, ErrLocked) || !strings.Contains(err.Error(), "agent probe 10.0.0.2:18516") {
		t.Fatalf("second TryTraffic: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := s.Traffic(ctx, "apply"); !errors.Is(err, context.Canceled) || !strings.Contains(err.Error(), "agent probe") {
		t.Fatalf("Traffic with an ended context: %v", err)
	}
	got := make(chan error, 1)
	go func() {
		l, err := s.Traffic(context.Background(), "apply -p a.toml")
		if err == nil {
			err = l.Release()
		}
		got <- err
	}()
	if err := probe.Release(); err != nil {
		t.Fatal(err)
	}
	if err := <-got; err != nil {
		t.Fatalf("Traffic after the probe ended: %v", err)
	}
}
