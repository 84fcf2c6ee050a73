package apply

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/rocectl/rocectl/host"
	"github.com/rocectl/rocectl/verify"
)

// WaitOptions tune WaitConfirm.
type WaitOptions struct {
	Store    Store
	Deadline time.Time
	// Progress, when non-nil, gets a one-line status each poll ("\r"
	// rewritten, cleared at the end): give it a terminal.
	Progress io.Writer
	// Now defaults to time.Now.
	Now func() time.Time
}

// WaitOutcome is how a confirm window ended for the one who waited.
type WaitOutcome string

const (
	// WaitCommitted: `rocectl commit` kept the change.
	WaitCommitted WaitOutcome = "committed"
	// WaitExpired: not committed in time; the armed deadline (or a
	// later apply, rollback or agent check) reverted it after the deadline
	// (Journal.State says whether completely).
	WaitExpired WaitOutcome = "expired"
	// WaitRolledBack: rolled back before its deadline by someone else (a
	// `rocectl rollback`, or the storm guard of another rocectl waiting
	// on it), not by the deadline (Journal.State says whether completely).
	WaitRolledBack WaitOutcome = "rolled-back"
	// WaitStorm: a pause storm during the window; WaitConfirm rolled back.
	WaitStorm WaitOutcome = "storm"
	// WaitLeft: the context ended first; the deadline stays armed.
	WaitLeft WaitOutcome = "left"
)

// WaitResult is how WaitConfirm ended.
type WaitResult struct {
	Outcome     WaitOutcome
	Journal     *Journal
	Storm       *verify.Storm
	RollbackErr error // WaitStorm: the rollback could not restore everything
}

// WaitConfirm stays with a confirm-pending apply until `rocectl commit`
// or its deadline, polling its journal and the pause counters with the
// profile's guard: a storm rolls it back at once. The caller does not hold
// the lock (the commit comes from another rocectl, which needs it).
func WaitConfirm(ctx context.Context, pr *Prepared, id string, opts WaitOptions) (*WaitResult, error) {
	now := time.Now
	if opts.Now != nil {
		now = opts.Now
	}
	g := pr.Profile.Guard
	det := verify.NewDetector(verify.GuardConfig{DetectionTime: g.DetectionTime, MaxPauseOccupancy: g.MaxPauseOccupancy, MaxPauseFramesPerSecond: g.MaxPauseFramesPerSecond})
	sources := CounterSources(pr)
	tick := time.NewTicker(g.Poll)
	defer tick.Stop()
	if opts.Progress != nil {
		defer fmt.Fprint(opts.Progress, "\r\033[K")
	}
	for {
		j, err := opts.Store.Load(id)
		if err != nil {
			return nil, err
		}
		switch j.State {
		case StateCommitted:
			return &WaitResult{Outcome: WaitCommitted, Journal: j}, nil
		case StateRolledBack, StateRollbackFailed:
			if RolledBackBeforeDeadline(j) {
				return &WaitResult{Outcome: WaitRolledBack, Journal: j}, nil
			}
			return &WaitResult{Outcome: WaitExpired, Journal: j}, nil
		}
		if g.Enabled {
			for _, s := range sources {
				c, err := s.Read()
				if err != nil {
					continue
				}
				if storm := det.Observe(s.Port, now(), c); storm != nil {
					return revertPending(ctx, pr.Host, opts.Store, id, storm)
				}
			}
		}
		if opts.Progress != nil {
			fmt.Fprintf(opts.Progress, "\rconfirm: %v left, worst pause occupancy %.2f %s — rocectl commit %s   ",
				opts.Deadline.Sub(now()).Round(time.Second), det.Worst, det.WorstAt, id)
		}
		select {
		case <-ctx.Done():
			return &WaitResult{Outcome: WaitLeft, Journal: j}, nil
		case <-tick.C:
		}
	}
}

// revertPending rolls back a confirm-pending apply now (a storm during its
// window), unless it was settled meanwhile.
func revertPending(ctx context.Context, h *host.Host, store Store, id string, storm *verify.Storm) (*WaitResult, error) {
	lock, err := store.AcquireWaiting(ctx, "apply (storm in confirm window)")
	if err != nil {
		return nil, err
	}
	defer lock.Release()
	j, err := store.Load(id)
	if err != nil {
		return nil, err
	}
	if j.State != StateConfirmPending {
		return nil, fmt.Errorf("pause storm (%s), but apply %s is already %s", storm, id, j.State)
	}
	rerr := Rollback(h, j, recoveryOptions(store))
	return &WaitResult{Outcome: WaitStorm, Journal: j, Storm: storm, RollbackErr: rerr}, nil
}

// RolledBackBeforeDeadline says a rolled-back (or rollback-failed)
// confirm journal was settled before its deadline: not by the deadline's
// revert but by an operator's rollback (or another rocectl's storm guard).
// The journal's last save is when its rollback ended.
func RolledBackBeforeDeadline(j *Journal) bool {
	return (j.State == StateRolledBack || j.State == StateRollbackFailed) && j.Deadline != nil && j.Updated.Before(*j.Deadline)
}

// Settled words how a confirm journal that was not committed ended, as it
// happened: rolled back before its deadline (by whom, as far as the
// journal tells), or reverted after it; and whether completely.
func Settled(j *Journal) string {
	at := j.Updated.UTC().Format(time.RFC3339)
	failed := j.State == StateRollbackFailed
	why := ""
	if failed {
		why = ": " + strings.Join(j.Failures, "; ")
	}
	switch {
	case j.Deadline == nil && failed:
		return fmt.Sprintf("rolling back apply %s at %s FAILED%s", j.ID, at, why)
	case j.Deadline == nil:
		return fmt.Sprintf("apply %s was rolled back at %s", j.ID, at)
	}
	deadline := j.Deadline.UTC().Format(time.RFC3339)
	switch {
	case RolledBackBeforeDeadline(j) && failed:
		return fmt.Sprintf("apply %s's rollback at %s, before its confirm deadline (%s), by `rocectl rollback` (or the pause-storm guard of another rocectl waiting on it), not by the deadline, FAILED%s",
			j.ID, at, deadline, why)
	case RolledBackBeforeDeadline(j):
		return fmt.Sprintf("apply %s was rolled back at %s, before its confirm deadline (%s): by `rocectl rollback` (or the pause-storm guard of another rocectl waiting on it), not by the deadline",
			j.ID, at, deadline)
	case failed:
		return fmt.Sprintf("apply %s was not committed by its confirm deadline (%s); reverting it at %s FAILED%s", j.ID, deadline, at, why)
	}
	return fmt.Sprintf("apply %s was not committed by its confirm deadline (%s) and was reverted at %s", j.ID, deadline, at)
}

// ErrDeadlinePassed is a commit refused because the confirm deadline
// passed: the change is reverted, or due to be.
var ErrDeadlinePassed = errors.New("the confirm deadline passed")

// ErrNotPending is a commit of an apply that is not waiting for one.
var ErrNotPending = errors.New("not waiting for a commit")

// CheckCommit says whether `rocectl commit` may keep j at now, and if not
// why, as it is: nil for a confirm-pending apply within its deadline. The
// caller holds the lock, so nothing is reverting j while it looks: a
// pending journal past its deadline is one nothing has reverted yet.
func CheckCommit(j *Journal, now time.Time) error {
	switch j.State {
	case StateConfirmPending:
		if j.Deadline != nil && now.After(*j.Deadline) {
			return fmt.Errorf("%w: apply %s's confirm deadline passed at %s and nothing has reverted it yet: run `rocectl rollback %s` (the next apply or agent check would revert it too)",
				ErrDeadlinePassed, j.ID, j.Deadline.UTC().Format(time.RFC3339), j.ID)
		}
		return nil
	case StateRolledBack, StateRollbackFailed:
		err := ErrNotPending
		if j.Deadline != nil && !RolledBackBeforeDeadline(j) {
			err = ErrDeadlinePassed
		}
		return fmt.Errorf("%w: %s", err, Settled(j))
	}
	return fmt.Errorf("%w: apply %s is %s", ErrNotPending, j.ID, j.State)
}

// CommitLocked words a commit that found the lock held (lockErr) while j,
// read without the lock, is pending past its deadline: another rocectl
// holds the lock, which may be the deadline's revert at work (the timer's
// `rollback --if-pending`, the watcher) or an apply or rollback that
// reverts the expired window first. Otherwise lockErr as it is.
func CommitLocked(j *Journal, now time.Time, lockErr error) error {
	if j == nil || j.State != StateConfirmPending || j.Deadline == nil || !now.After(*j.Deadline) {
		return lockErr
	}
	return fmt.Errorf("%w: apply %s's confirm deadline passed at %s and it is not reverted yet; %w: the deadline's revert (or an apply or rollback, which revert it first) may be at work: run `rocectl audit` after it",
		ErrDeadlinePassed, j.ID, j.Deadline.UTC().Format(time.RFC3339), lockErr)
}
