package apply

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"time"

	"github.com/rocectl/rocectl/host"
	"github.com/rocectl/rocectl/policy"
	"github.com/rocectl/rocectl/verify"
)

// The lifecycle of one change, as the CLI's apply and the enforcing daemon
// both run it: write every step with read-back (Txn), verify the whole host
// against the profile, watch the pause counters for the soak window, then
// commit or open a confirm window; verification, the guard or a failed
// deadline roll the host back. Run renders nothing: it returns a Result
// that the CLI prints (text or JSON) and the daemon logs and exports.

// RunOptions tune Run.
type RunOptions struct {
	Store   Store
	Command string // who holds the lock, for messages
	// NoVerify skips the read-back of every setting (and the verbs
	// loopback the profile asks for) after the writes.
	NoVerify bool
	// NoGuard skips the pause-storm soak; a non-nil Soak overrides the
	// profile's soak window (0: none).
	NoGuard bool
	Soak    *time.Duration
	// Confirm > 0 leaves the change confirm-pending until that long from
	// now. Arm, when set, arms the deadline outside this process (a
	// systemd timer, a watcher) and says how; the journal holds the
	// deadline either way.
	Confirm time.Duration
	Arm     func(ctx context.Context, j *Journal, deadline time.Time) (string, error)
	// Applied, when set, is called once every step is written and read
	// back, before verification and the soak (a person sees "applied"
	// before a minute of soak).
	Applied func(*Result)
	// Progress gets the guard's one-line status each poll (a terminal,
	// or nil).
	Progress io.Writer
	// SkipUnreadable applies a plan that has settings it could not read
	// (they are left alone, and verification does not count them);
	// without it such a plan is refused before the first write.
	SkipUnreadable bool
	// BeforeStep runs before each write (tests inject delays and faults).
	BeforeStep func(i int, st host.Step) error
	// Phase, when set, is called as each phase of the apply ends, with
	// its name (PhaseTrafficLock, PhaseBegin, …): bench/cmd/applybench
	// times them to show where an apply's time goes.
	Phase func(name string)
	Log   *slog.Logger
	// Now defaults to time.Now.
	Now func() time.Time
}

// The phases of Run, in order, as RunOptions.Phase names them.
const (
	PhaseTrafficLock = "traffic lock"
	PhaseBegin       = "journal: before-values, durable save"
	PhaseSteps       = "writes, each step read back"
	PhaseVerify      = "final read-back of every setting"
	PhaseCommit      = "journal: commit save"
)

func (o RunOptions) phase(name string) {
	if o.Phase != nil {
		o.Phase(name)
	}
}

func (o RunOptions) now() time.Time {
	if o.Now != nil {
		return o.Now()
	}
	return time.Now()
}

// Outcome is how a Run ended.
type Outcome string

const (
	// Committed: applied, verified, soaked, kept.
	Committed Outcome = "committed"
	// ConfirmPending: applied; reverted at Result.Deadline unless
	// `rocectl commit` comes first.
	ConfirmPending Outcome = "confirm_pending"
	// Failed: a write or its read-back failed, or the context was
	// cancelled (a signal) before the commit; the host was rolled back
	// (unless the *ApplyError in Failure says otherwise).
	Failed Outcome = "failed"
	// RolledBack: applied, then verification or the guard said no and
	// the host was rolled back (unless RollbackErr says otherwise).
	RolledBack Outcome = "rolled_back"
)

// Result is what one Run did.
type Result struct {
	Outcome   Outcome
	JournalID string
	Changes   int // settings the plan changed
	Steps     int // write steps they took
	// Restored lists the keys a rollback put back, Unchanged those it
	// read back already at their before-values; Skipped the steps it
	// could not restore because their device is gone.
	Restored  []string
	Unchanged []string
	Skipped   []Skipped
	// Failure is the failed write or the interruption (an *ApplyError;
	// Interrupted() for a signal) when Outcome is Failed.
	Failure error
	// Reason says why verification or the guard rolled back (RolledBack).
	Reason string
	// Mismatches are verification's findings (read-back, loopback).
	Mismatches []string
	// Storm is what tripped the guard, if it did.
	Storm *verify.Storm
	// RollbackErr is a rollback that could not restore everything: the
	// journal is kept for `rocectl rollback ID`.
	RollbackErr error
	// Soak is the guard's summary when the soak passed; SoakWindow its
	// length.
	Soak       *verify.GuardReport
	SoakWindow time.Duration
	// Deadline and ArmedBy describe a confirm window.
	Deadline time.Time
	ArmedBy  string
	Duration time.Duration
}

// Errors lists what went wrong, as the JSON document's errors[] does.
func (r *Result) Errors() []string {
	var out []string
	switch r.Outcome {
	case Failed:
		out = append(out, r.Failure.Error())
	case RolledBack:
		out = append(out, r.Reason)
		if r.RollbackErr != nil {
			out = append(out, "ROLLBACK FAILED: "+r.RollbackErr.Error())
		}
	}
	return out
}

// TrafficWait bounds how long an apply waits for the traffic lock
// (statedir.Store.Traffic): a probe holds it for seconds; a longer holder
// is a verify with traffic, and the apply says so instead of hanging.
const TrafficWait = time.Minute

// Run applies a prepared plan that has changes. It returns an error, with
// no Result worth reporting, only when it could not start (the journal
// cannot be written) or could not record a successful apply as committed;
// every other outcome is in the Result. The caller holds the store's lock
// and has run Recover first.
func Run(ctx context.Context, pr *Prepared, opts RunOptions) (*Result, error) {
	if err := Refusal(pr.Plan, opts.SkipUnreadable); err != nil {
		return nil, err
	}
	if opts.Store.Dir != "" {
		// No probe of the agent's runs while this apply writes and
		// verifies; one under way ends within its own deadline.
		wctx, cancel := context.WithTimeout(ctx, TrafficWait)
		tl, err := opts.Store.Traffic(wctx, "apply")
		cancel()
		if err != nil {
			return nil, fmt.Errorf("test traffic is running on this host: %w", err)
		}
		defer tl.Release()
	}
	opts.phase(PhaseTrafficLock)
	start := opts.now()
	res := &Result{Changes: len(pr.Plan.Changes)}
	defer func() { res.Duration = opts.now().Sub(start) }()
	txn, err := Begin(pr.Host, pr.Desired, pr.Plan, pr.Profile.Hash, Options{
		Store: opts.Store, Retries: pr.Profile.Verify.Retries, Interval: pr.Profile.Verify.RetryInterval,
		Command: opts.Command, BeforeStep: opts.BeforeStep})
	if err != nil {
		return nil, err
	}
	res.JournalID, res.Steps = txn.J.ID, len(txn.J.Steps)
	opts.phase(PhaseBegin)
	if err := txn.Run(ctx); err != nil {
		res.Outcome, res.Failure, res.Restored, res.Unchanged, res.Skipped = Failed, err, txn.J.Restored, txn.J.Unchanged, txn.J.Skipped
		return res, nil
	}
	opts.phase(PhaseSteps)
	if opts.Applied != nil {
		opts.Applied(res)
	}

	// A signal from here to the commit rolls back too (interrupted):
	// until committed, the change is the operator's to abandon.
	// Verification: everything the profile sets must read back as set.
	if !opts.NoVerify {
		res.Mismatches = verifyAfterApply(ctx, pr, opts.Log, opts.SkipUnreadable)
		if ctx.Err() != nil {
			return interrupted(ctx, txn, res), nil
		}
		if len(res.Mismatches) > 0 {
			return rollbackAfter(txn, res, "verification failed:\n  "+strings.Join(res.Mismatches, "\n  ")), nil
		}
		opts.phase(PhaseVerify)
	}
	// The guard: a bad PFC or buffer change shows up as a pause storm.
	g := guardSpec(pr.Profile.Guard, opts.Soak)
	if g.Enabled && g.Soak > 0 && !opts.NoGuard {
		storm, rep, err := verify.Guard(ctx, CounterSources(pr), verify.GuardConfig{
			Soak: g.Soak, Poll: g.Poll, DetectionTime: g.DetectionTime,
			MaxPauseOccupancy: g.MaxPauseOccupancy, MaxPauseFramesPerSecond: g.MaxPauseFramesPerSecond,
			Progress: opts.Progress, RDMA: RDMASampler(pr),
		})
		if ctx.Err() != nil {
			return interrupted(ctx, txn, res), nil
		}
		if err != nil {
			return rollbackAfter(txn, res, "soak interrupted: "+err.Error()), nil
		}
		if storm != nil {
			res.Storm = storm
			return rollbackAfter(txn, res, storm.String()), nil
		}
		res.Soak, res.SoakWindow = rep, g.Soak
	}

	if ctx.Err() != nil {
		return interrupted(ctx, txn, res), nil
	}
	if opts.Confirm <= 0 {
		if err := txn.Finish(time.Time{}); err != nil {
			return res, err
		}
		opts.phase(PhaseCommit)
		res.Outcome = Committed
		return res, nil
	}
	deadline := opts.now().Add(opts.Confirm)
	if err := txn.Finish(deadline); err != nil {
		return rollbackAfter(txn, res, "recording the confirm deadline: "+err.Error()), nil
	}
	if opts.Arm != nil {
		how, err := opts.Arm(ctx, txn.J, deadline)
		if err != nil {
			return rollbackAfter(txn, res, "arming the confirm deadline: "+err.Error()), nil
		}
		res.ArmedBy = how
	}
	res.Outcome, res.Deadline = ConfirmPending, deadline
	return res, nil
}

// guardSpec is the profile's guard with the soak window overridden when
// soak is set.
func guardSpec(g policy.GuardSpec, soak *time.Duration) policy.GuardSpec {
	if soak != nil {
		g.Soak = *soak
	}
	return g
}

// rollbackAfter undoes a successful apply that verification or the guard
// rejected.
func rollbackAfter(txn *Txn, res *Result, why string) *Result {
	res.RollbackErr = txn.RollbackNow()
	res.Outcome, res.Reason, res.Restored, res.Unchanged, res.Skipped = RolledBack, why, txn.J.Restored, txn.J.Unchanged, txn.J.Skipped
	return res
}

// interrupted rolls back an applied change whose context was cancelled (a
// signal) before it was committed: a Failed result whose Failure is an
// *ApplyError naming the cause, as an interruption during the writes gives.
func interrupted(ctx context.Context, txn *Txn, res *Result) *Result {
	rerr := txn.RollbackNow()
	res.Outcome, res.Restored, res.Unchanged, res.Skipped = Failed, txn.J.Restored, txn.J.Unchanged, txn.J.Skipped
	res.Failure = &ApplyError{Err: context.Cause(ctx), Restored: txn.J.Restored, Unchanged: txn.J.Unchanged, RestoreErr: rerr, Skipped: txn.J.Skipped, JournalID: txn.J.ID}
	return res
}

// verifyAfterApply re-reads every desired setting (and runs verbs traffic
// when the profile asks for it). Settings the plan could not read, and
// that the operator chose to skip, are not held against the apply.
func verifyAfterApply(ctx context.Context, pr *Prepared, log *slog.Logger, skipUnreadable bool) []string {
	skipped := map[string]bool{}
	if skipUnreadable {
		for _, e := range pr.Plan.Errors {
			skipped[e.Key] = true
		}
	}
	var out []string
	for _, m := range verify.Readback(pr.Desired, pr.Host.Observe(pr.Desired)) {
		if !skipped[m.Key] {
			out = append(out, m.String())
		}
	}
	if pr.Profile.Verify.Loopback {
		for _, r := range Loopbacks(ctx, pr, log) {
			if r.Err != nil {
				out = append(out, fmt.Sprintf("verify: %s loopback: %v", r.Port, r.Err))
			}
		}
	}
	return out
}

// Refusal says why a plan must not be applied at all, before anything is
// written: changes the planner refuses on this host, or settings it could
// not read (unless skipUnreadable). Writing the rest and then failing
// verification would cost needless link flaps on a real NIC.
func Refusal(plan *policy.Plan, skipUnreadable bool) error {
	var why []string
	for _, r := range plan.Refused {
		why = append(why, fmt.Sprintf("%s: %s", r.Key, r.Error))
	}
	if len(plan.Errors) > 0 && !skipUnreadable {
		for _, e := range plan.Errors {
			why = append(why, fmt.Sprintf("%s: cannot read: %s", e.Key, e.Error))
		}
		why = append(why, "(--skip-unreadable applies the rest and leaves the unreadable settings alone)")
	}
	if len(plan.Unchecked) > 0 && !skipUnreadable {
		for _, e := range plan.Unchecked {
			why = append(why, fmt.Sprintf("%s: the driver's checks cannot run: %s", e.Key, e.Error))
		}
		why = append(why, "(--skip-unreadable writes them unchecked: the driver's own check is then the only one, and a write it refuses rolls the apply back)")
	}
	if len(why) == 0 {
		return nil
	}
	return fmt.Errorf("nothing was changed: the plan cannot be applied as it is:\n  %s", strings.Join(why, "\n  "))
}
