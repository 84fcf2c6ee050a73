package apply

import (
	"context"
	"fmt"
	"io"
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
	// WaitExpired: not committed in time; the armed deadline reverted it
	// (Journal.State says whether completely).
	WaitExpired WaitOutcome = "expired"
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
