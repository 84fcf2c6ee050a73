package apply

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/rocectl/rocectl/statedir"
)

// WaitConfirm and commit say how a confirm window ended, from its journal:
// an operator's rollback before the deadline is not "not committed in
// time"; a revert after it is, with when; a commit past the deadline that
// nothing reverted yet says so, and how to revert it.
func TestConfirmWindowEndsAsItHappened(t *testing.T) {
	noSoak := time.Duration(0)
	// start runs a --confirm apply whose deadline is clock + 1 min.
	start := func(t *testing.T, clock time.Time) (*Prepared, Store, *Journal) {
		pr, _ := prepared(t, nil)
		store := Store{Store: statedir.Store{Dir: t.TempDir()}}
		res, err := Run(context.Background(), pr, RunOptions{Store: store, Soak: &noSoak, Confirm: time.Minute, Now: func() time.Time { return clock }})
		if err != nil || res.Outcome != ConfirmPending {
			t.Fatalf("Run: %v, %+v", err, res)
		}
		j, err := store.Load(res.JournalID)
		if err != nil {
			t.Fatal(err)
		}
		if err := CheckCommit(j, clock); err != nil {
			t.Fatalf("commit within the window refused: %v", err)
		}
		return pr, store, j
	}
	wait := func(t *testing.T, pr *Prepared, store Store, id string) *WaitResult {
		t.Helper()
		w, err := WaitConfirm(context.Background(), pr, id, WaitOptions{Store: store})
		if err != nil {
			t.Fatal(err)
		}
		return w
	}

	t.Run("operator's rollback before the deadline", func(t *testing.T) {
		pr, store, j := start(t, time.Now())
		if err := Rollback(pr.Host, j, recoveryOptions(store)); err != nil {
			t.Fatal(err)
		}
		w := wait(t, pr, store, j.ID)
		if w.Outcome != WaitRolledBack {
			t.Errorf("outcome %s, want %s", w.Outcome, WaitRolledBack)
		}
		msg := Settled(w.Journal)
		if !strings.Contains(msg, "was rolled back at ") || !strings.Contains(msg, "before its confirm deadline") ||
			!strings.Contains(msg, "by `rocectl rollback`") || strings.Contains(msg, "not committed") {
			t.Errorf("Settled: %q", msg)
		}
		if err := CheckCommit(w.Journal, time.Now()); !errors.Is(err, ErrNotPending) || errors.Is(err, ErrDeadlinePassed) {
			t.Errorf("commit after an operator's rollback: %v, want ErrNotPending only", err)
		}
	})

	t.Run("reverted after the deadline", func(t *testing.T) {
		clock := time.Now().Add(-10 * time.Minute).UTC().Truncate(time.Second)
		pr, store, j := start(t, clock)
		// Past the deadline, nothing reverted it: commit says so, and how.
		err := CheckCommit(j, time.Now())
		if !errors.Is(err, ErrDeadlinePassed) || !strings.Contains(err.Error(), "nothing has reverted it yet: run `rocectl rollback "+j.ID+"`") {
			t.Errorf("commit past the deadline: %v", err)
		}
		if _, reverted, err := RevertExpired(pr.Host, store, j.ID, time.Now()); err != nil || !reverted {
			t.Fatalf("revert: %v %v", reverted, err)
		}
		w := wait(t, pr, store, j.ID)
		if w.Outcome != WaitExpired {
			t.Errorf("outcome %s, want %s", w.Outcome, WaitExpired)
		}
		msg := Settled(w.Journal)
		want := "apply " + j.ID + " was not committed by its confirm deadline (" + clock.Add(time.Minute).Format(time.RFC3339) + ") and was reverted at "
		if !strings.HasPrefix(msg, want) {
			t.Errorf("Settled: %q, want it to start %q", msg, want)
		}
		if err := CheckCommit(w.Journal, time.Now()); !errors.Is(err, ErrDeadlinePassed) || !strings.Contains(err.Error(), want) {
			t.Errorf("commit after the revert: %v", err)
		}
	})

	t.Run("lock held past the deadline", func(t *testing.T) {
		clock := time.Now().Add(-10 * time.Minute)
		_, _, j := start(t, clock)
		err := CommitLocked(j, time.Now(), statedir.ErrLocked)
		if !errors.Is(err, ErrDeadlinePassed) || !errors.Is(err, statedir.ErrLocked) || !strings.Contains(err.Error(), "is not reverted yet") {
			t.Errorf("CommitLocked past the deadline: %v", err)
		}
		if err := CommitLocked(j, clock, statedir.ErrLocked); err != statedir.ErrLocked {
			t.Errorf("CommitLocked within the window: %v, want the lock's error", err)
		}
	})

	t.Run("committed", func(t *testing.T) {
		pr, store, j := start(t, time.Now())
		j.State = StateCommitted
		if err := store.Save(j); err != nil {
			t.Fatal(err)
		}
		if w := wait(t, pr, store, j.ID); w.Outcome != WaitCommitted {
			t.Errorf("outcome %s, want %s", w.Outcome, WaitCommitted)
		}
		if err := CheckCommit(j, time.Now()); !errors.Is(err, ErrNotPending) {
			t.Errorf("second commit: %v", err)
		}
	})
}

// Settled and CheckCommit on every end of a confirm window, the journal
// as each leaves it.
func TestSettledAndCheckCommitTable(t *testing.T) {
	deadline := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	before, after := deadline.Add(-time.Minute), deadline.Add(time.Minute)
	dl := func() *time.Time { d := deadline; return &d }
	for _, c := range []struct {
		name   string
		j      Journal
		now    time.Time
		settle string // Settled, for a rolled-back journal
		is     error  // CheckCommit's error, nil: may commit
		says   string
	}{
		{name: "pending within the window", j: Journal{ID: "A", State: StateConfirmPending, Deadline: dl()}, now: before},
		{name: "pending past the deadline, nothing reverted it", j: Journal{ID: "A", State: StateConfirmPending, Deadline: dl()}, now: after,
			is: ErrDeadlinePassed, says: "apply A's confirm deadline passed at 2026-01-02T03:04:05Z and nothing has reverted it yet: run `rocectl rollback A`"},
		{name: "reverted after the deadline", j: Journal{ID: "A", State: StateRolledBack, Deadline: dl(), Updated: after}, now: after,
			settle: "apply A was not committed by its confirm deadline (2026-01-02T03:04:05Z) and was reverted at 2026-01-02T03:05:05Z",
			is:     ErrDeadlinePassed, says: "was reverted at 2026-01-02T03:05:05Z"},
		{name: "revert after the deadline failed", j: Journal{ID: "A", State: StateRollbackFailed, Deadline: dl(), Updated: after, Failures: []string{"mtu: EBUSY"}}, now: after,
			settle: "apply A was not committed by its confirm deadline (2026-01-02T03:04:05Z); reverting it at 2026-01-02T03:05:05Z FAILED: mtu: EBUSY",
			is:     ErrDeadlinePassed, says: "FAILED: mtu: EBUSY"},
		{name: "operator's rollback before the deadline", j: Journal{ID: "A", State: StateRolledBack, Deadline: dl(), Updated: before}, now: after,
			settle: "apply A was rolled back at 2026-01-02T03:03:05Z, before its confirm deadline (2026-01-02T03:04:05Z): by `rocectl rollback`",
			is:     ErrNotPending, says: "before its confirm deadline"},
		{name: "operator's rollback before the deadline failed", j: Journal{ID: "A", State: StateRollbackFailed, Deadline: dl(), Updated: before, Failures: []string{"x"}}, now: before,
			settle: "apply A's rollback at 2026-01-02T03:03:05Z, before its confirm deadline (2026-01-02T03:04:05Z), by `rocectl rollback`",
			is:     ErrNotPending, says: "not by the deadline, FAILED: x"},
		{name: "committed", j: Journal{ID: "A", State: StateCommitted, Deadline: dl()}, now: before, is: ErrNotPending, says: "apply A is committed"},
	} {
		t.Run(c.name, func(t *testing.T) {
			if c.settle != "" {
				if got := Settled(&c.j); !strings.HasPrefix(got, c.settle) {
					t.Errorf("Settled = %q, want it to start %q", got, c.settle)
				}
			}
			err := CheckCommit(&c.j, c.now)
			if c.is == nil {
				if err != nil {
					t.Errorf("CheckCommit: %v, want nil", err)
				}
				return
			}
			if !errors.Is(err, c.is) || !strings.Contains(err.Error(), c.says) {
				t.Errorf("CheckCommit: %v, want %v saying %q", err, c.is, c.says)
			}
			if c.is == ErrNotPending && errors.Is(err, ErrDeadlinePassed) {
				t.Errorf("CheckCommit: %v also says the deadline was missed", err)
			}
		})
	}
}
