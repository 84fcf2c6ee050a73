package apply

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/rocectl/rocectl/host"
	"github.com/rocectl/rocectl/policy"
)

// Options tune a transaction.
type Options struct {
	Store Store
	// Verification: after each step its settings are read back, up to
	// Retries times, Interval apart (nmstate's 5 × 1 s), before the step
	// counts as failed. Some drivers apply asynchronously (mlx5 flaps the
	// link on a PFC change).
	Retries  int
	Interval time.Duration
	// BeforeStep, if set, runs before each step: tests use it to inject
	// delays (kill -9 at any point) and failures.
	BeforeStep func(i int, st host.Step) error
	Command    string // who holds the lock, for messages
	// Owed is what this process's writes owe mlx5's buffer thresholds
	// (host.Owed): Begin makes one for the apply, and its rollback uses
	// the same; nil for a rollback from a journal on disk, whose
	// process wrote nothing before it (Rollback then makes its own).
	Owed *host.Owed
}

func (o Options) retries() (int, time.Duration) {
	n, d := o.Retries, o.Interval
	if n <= 0 {
		n = 5
	}
	if d < 0 {
		d = 0
	}
	return n, d
}

// Txn is one apply in progress.
type Txn struct {
	h    *host.Host
	d    *policy.Desired
	opts Options
	J    *Journal
}

// Begin records the plan and every before-value in a new journal, durably,
// before anything on the host changes.
func Begin(h *host.Host, d *policy.Desired, plan *policy.Plan, profileHash string, opts Options) (*Txn, error) {
	steps, err := host.Steps(plan)
	if err != nil {
		return nil, err
	}
	now := time.Now().UTC()
	j := &Journal{Version: JournalVersion, ID: newID(now), Profile: d.Profile.Name, ProfileHash: profileHash,
		Root: h.FS.Root(), Started: now, State: StateApplying, Steps: steps, PID: os.Getpid()}
	for i := range j.Steps {
		if err := h.CaptureUndo(d, &j.Steps[i]); err != nil {
			return nil, fmt.Errorf("recording the state before apply: %w", err)
		}
	}
	if err := opts.Store.Save(j); err != nil {
		opts.Store.Discard(j.ID)
		return nil, fmt.Errorf("writing the journal before apply (nothing was changed): %w", err)
	}
	if opts.Owed == nil {
		opts.Owed = &host.Owed{} // this apply's, shared with its rollback
	}
	return &Txn{h: h, d: d, opts: opts, J: j}, nil
}

// ApplyError is a failed apply: what failed, and what rollback did.
type ApplyError struct {
	Err        error    // the write or verification that failed
	Restored   []string // keys written back to their before-values
	Unchanged  []string // keys rollback found at their before-values
	RestoreErr error    // non-nil when rollback itself failed
	Skipped    []Skipped
	JournalID  string
}

func (e *ApplyError) Error() string {
	var b strings.Builder
	b.WriteString(e.Err.Error())
	// An interruption (a signal) is one line: "interrupted by signal
	// SIGTERM; host restored: ...".
	sep := "\n"
	if e.Interrupted() {
		sep = "; "
	}
	if e.RestoreErr != nil {
		fmt.Fprintf(&b, "%sROLLBACK FAILED: %v\nthe host is NOT as it was; the journal is kept: run `rocectl rollback %s` once the cause is fixed", sep, e.RestoreErr, e.JournalID)
	} else {
		b.WriteString(sep + RestoreSummary(e.Restored, e.Unchanged, e.Skipped))
	}
	return b.String()
}

// RestoreSummary words what a rollback that did not fail did, for
// messages: how many settings it wrote back, how many it read back
// already at their before-values (never written, or a write the driver
// refused without effect), and the vanished devices it skipped. It says
// "restored" only when something was put back.
func RestoreSummary(restored, unchanged []string, skipped []Skipped) string {
	var s string
	switch {
	case len(restored) == 0 && len(skipped) == 0:
		return fmt.Sprintf("host as it was: all %d setting(s) read back at their previous values, nothing needed putting back", len(unchanged))
	case len(restored) == 0:
		s = "host as it was except for vanished devices: nothing needed putting back"
	case len(skipped) > 0:
		s = fmt.Sprintf("host restored except for vanished devices: %d setting(s) put back", len(restored))
	default:
		s = fmt.Sprintf("host restored: %d setting(s) put back to their previous values", len(restored))
	}
	if len(unchanged) > 0 {
		s += fmt.Sprintf(", %d already at them", len(unchanged))
	}
	if len(skipped) > 0 {
		s += "; " + SkippedSummary(skipped)
	}
	return s
}

// Interrupted says whether the apply stopped because its context was
// cancelled (a signal: the error is the context's cause) rather than
// because a write failed.
func (e *ApplyError) Interrupted() bool {
	return errors.Is(e.Err, context.Canceled) || errors.Is(e.Err, context.DeadlineExceeded)
}

func (e *ApplyError) Unwrap() error { return e.Err }

// Run writes every step in order, reading each back. On the first failure,
// or when ctx is cancelled (SIGTERM), it rolls back what was written and
// returns an *ApplyError; an interruption's Err is the context's cause
// ("interrupted by signal SIGTERM" from cmd/rocectl).
func (t *Txn) Run(ctx context.Context) error {
	for i, st := range t.J.Steps {
		err := ctx.Err()
		if err == nil && t.opts.BeforeStep != nil {
			if err = t.opts.BeforeStep(i, st); err == nil {
				err = ctx.Err() // a signal during the hook's delay
			}
		}
		if err == nil {
			err = t.writeStep(ctx, st)
		}
		if err != nil {
			t.J.Done = i
			if ctx.Err() != nil && errors.Is(err, ctx.Err()) {
				err = context.Cause(ctx)
			} else {
				err = fmt.Errorf("%s: %w", scopeLabel(st), err)
			}
			// The rollback runs whatever ctx says: it must not be cut
			// short by the signal that asked for it.
			rerr := Rollback(t.h, t.J, t.opts)
			return &ApplyError{Err: err, Restored: t.J.Restored, Unchanged: t.J.Unchanged, RestoreErr: rerr, Skipped: t.J.Skipped, JournalID: t.J.ID}
		}
		// No journal write per step: recovery undoes every step of an
		// unfinished journal and skips those still at their before-values,
		// so the one fsync before the first write is all crash safety needs.
		t.J.Done = i + 1
	}
	// Not saved here: an "applied" journal is as unfinished as an
	// "applying" one for recovery, and Finish or a rollback saves next.
	t.J.State = StateApplied
	return nil
}

// writeStep writes one step and reads it back. A LAG step (one setting,
// or one kernel object, on every slave of a RoCE LAG bond) is written to
// each slave, then read back on each; when any slave fails, the slaves
// the step changed are put back before Run rolls back the steps before
// it, and the error says which: mlx5 keeps RoCE LAG only while the slaves
// agree, so a step is never left half done on a bond.
func (t *Txn) writeStep(ctx context.Context, st host.Step) error {
	if len(st.Slaves) == 0 {
		if err := t.h.WriteStep(ctx, t.opts.Owed, t.d, st, false); err != nil {
			return err
		}
		return verifyStep(ctx, t.h, st, false, t.opts)
	}
	parts := st.Parts()
	for _, p := range parts {
		if err := t.h.WriteStep(ctx, t.opts.Owed, t.d, p, false); err != nil {
			return undoSlaves(t.h, st, p.Scope, err, t.opts)
		}
	}
	for _, p := range parts {
		if err := verifyStep(ctx, t.h, p, false, t.opts); err != nil {
			return undoSlaves(t.h, st, p.Scope, err, t.opts)
		}
	}
	return nil
}

// undoSlaves puts back, last written first, the slaves of a LAG step
// that no longer hold their values from before it, after err on slave
// failed.
func undoSlaves(h *host.Host, st host.Step, failed string, err error, opts Options) *LAGStepError {
	e := &LAGStepError{Bond: st.Scope, Slave: failed, Err: err}
	parts := st.Parts()
	for i := len(parts) - 1; i >= 0; i-- {
		p := parts[i]
		if h.CheckStep(p, true) == nil {
			e.Unchanged = append(e.Unchanged, p.Scope)
			continue
		}
		uerr := h.WriteStep(context.Background(), opts.Owed, nil, p, true)
		if uerr == nil {
			uerr = verifyStep(context.Background(), h, p, true, opts)
		}
		if uerr != nil {
			e.UndoErr = errors.Join(e.UndoErr, fmt.Errorf("%s: %w", p.Scope, uerr))
			continue
		}
		e.PutBack = append(e.PutBack, p.Scope)
	}
	slices.Reverse(e.PutBack)
	slices.Reverse(e.Unchanged)
	return e
}

// LAGStepError is a step on the slaves of a RoCE LAG bond that failed on
// one slave, and what became of the others before the transaction's
// rollback went on.
type LAGStepError struct {
	Bond  string
	Slave string // the slave whose write or read-back failed
	Err   error
	// PutBack are the slaves the step had changed and that were put
	// back; Unchanged those that still held their values (never written,
	// or the failed write had no effect).
	PutBack   []string
	Unchanged []string
	// UndoErr is why a slave could not be put back; nil when every
	// slave holds what it held before the step.
	UndoErr error
}

func (e *LAGStepError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%v; LAG %s: ", e.Err, e.Bond)
	var parts []string
	if len(e.PutBack) > 0 {
		parts = append(parts, strings.Join(e.PutBack, ", ")+" put back")
	}
	if len(e.Unchanged) > 0 {
		parts = append(parts, strings.Join(e.Unchanged, ", ")+" unchanged")
	}
	b.WriteString(strings.Join(parts, ", "))
	if e.UndoErr != nil {
		fmt.Fprintf(&b, "; NOT put back: %v (the slaves may differ)", e.UndoErr)
	} else {
		b.WriteString(": every slave holds what it held before this step")
	}
	return b.String()
}

func (e *LAGStepError) Unwrap() error { return e.Err }

// SkippedSummary words the steps a rollback skipped, for messages.
func SkippedSummary(sk []Skipped) string {
	var parts []string
	n := 0
	for _, s := range sk {
		n += len(s.Keys)
		parts = append(parts, fmt.Sprintf("%s (%s)", strings.Join(s.Keys, ", "), s.Reason))
	}
	return fmt.Sprintf("%d setting(s) NOT restored, their device is gone: %s", n, strings.Join(parts, "; "))
}

func scopeLabel(st host.Step) string {
	if len(st.Slaves) > 0 {
		return st.Scope + " (" + strings.Join(st.Netdevs(), " + ") + ")"
	}
	if c := st.Changes[0]; c.Port != nil {
		return c.Port.Netdev
	}
	return st.Scope
}

// Finish marks an applied journal committed, or confirm-pending until
// deadline when deadline is non-zero.
func (t *Txn) Finish(deadline time.Time) error {
	if deadline.IsZero() {
		t.J.State = StateCommitted
	} else {
		d := deadline.UTC()
		t.J.State, t.J.Deadline = StateConfirmPending, &d
	}
	if err := t.opts.Store.Save(t.J); err != nil {
		return &SaveError{ID: t.J.ID, OnDisk: StateApplying, Err: err,
			Host: fmt.Sprintf("all %d step(s) are applied and hold the profile", len(t.J.Steps)),
			Next: "the next apply, rollback or agent start will roll this apply back (free space in the state dir, then apply again)"}
	}
	return nil
}

// RollbackNow undoes the whole transaction (guard or verification said no).
func (t *Txn) RollbackNow() error {
	if t.J.State == StateApplied || t.J.State == StateApplying {
		t.J.Done = len(t.J.Steps)
	}
	return Rollback(t.h, t.J, t.opts)
}

// Rollback undoes a journal's steps in reverse order, reading each undo back.
// It carries on past a failing step, so as much as possible is restored,
// records what was restored, and leaves the journal as rollback-failed
// (kept for `rocectl rollback ID`) when something could not be. A step
// whose device is gone (ENODEV, the netdev no longer in sysfs) is skipped
// and listed in Journal.Skipped: there is nothing left to restore, and
// retrying it would block every later apply until the link returned.
func Rollback(h *host.Host, j *Journal, opts Options) error {
	if !sameRoot(j.Root, h.FS.Root()) {
		return fmt.Errorf("journal %s was written for root %s, not %s", j.ID, j.Root, h.FS.Root())
	}
	// Every step, whatever Done says: a journal on disk does not know how
	// far a killed apply got, and steps still at their before-values are
	// skipped below.
	j.Restored, j.Unchanged, j.Failures, j.Skipped = nil, nil, nil, nil
	if opts.Owed == nil {
		// A rollback from disk: its process wrote nothing before, and
		// what its own writes leave owed (a PFC write that toggles the
		// link) its recomputes make up.
		opts.Owed = &host.Owed{}
	}
	var errs []error
	// A LAG step is undone slave by slave, each slave on its own: one
	// that is gone or refuses does not keep the others from being put
	// back. The order is the apply's reversed, but where a driver reads
	// one object through another (host.UndoOrder).
	for _, st := range host.UndoOrder(j.Steps) {
		// A step that already holds its before-values (never
		// written, or the write that failed had no effect) is left
		// alone: no needless write, no link flap, and no failure on
		// a device that refused it. A driver action has no value of
		// its own to find restored: it is written when it has
		// something to act on (host.UndoNeeded).
		if !h.UndoNeeded(opts.Owed, st) {
			j.Unchanged = append(j.Unchanged, stepKeys(st)...)
			continue
		}
		err := h.WriteStep(context.Background(), opts.Owed, nil, st, true)
		// A driver action is not read back on undo: its read-back checks
		// the state it acted in (the MTU of a recompute), and a rollback
		// reaches it in whatever state the apply stopped at. The
		// recompute after an MTU change that never happened found the
		// old MTU, not the new one it checks for, and reported a
		// rollback failure of a host that was as it had been.
		if err == nil && !st.AlwaysUndo() {
			err = verifyStep(context.Background(), h, st, true, opts)
		}
		if err != nil {
			if why := vanished(h, st, err); why != "" {
				j.Skipped = append(j.Skipped, Skipped{Scope: scopeLabel(st), Keys: stepKeys(st), Reason: why})
				continue
			}
			errs = append(errs, fmt.Errorf("%s: %w", scopeLabel(st), err))
			j.Failures = append(j.Failures, err.Error())
			continue
		}
		j.Restored = append(j.Restored, stepKeys(st)...)
	}
	prev := j.State
	j.State = StateRolledBack
	if len(errs) > 0 {
		j.State = StateRollbackFailed
	}
	if err := opts.Store.Save(j); err != nil {
		errs = append(errs, &SaveError{ID: j.ID, OnDisk: prev, Err: err,
			Host: "the host holds the before-values listed as restored", Next: "the next apply, rollback or agent start finds the journal open and rolls it back again, which changes nothing that is already restored"})
	}
	return errors.Join(errs...)
}

// sameRoot says whether a journal written for root journal applies to an
// FS whose (canonical) root is fsRoot. Journals record the canonical root
// (nic.FS.Root), so --root ./tree and --root /abs/tree match; journals
// written before that hold the root as typed, which is made canonical
// here (relative to this process's directory, the best there is to go on).
func sameRoot(journal, fsRoot string) bool {
	if journal == "" || journal == fsRoot {
		return true
	}
	real, err := filepath.EvalSymlinks(journal)
	if err != nil {
		return false
	}
	abs, err := filepath.Abs(real)
	return err == nil && abs == fsRoot
}

func stepKeys(st host.Step) []string {
	keys := make([]string, 0, len(st.Changes))
	for _, c := range st.Changes {
		keys = append(keys, c.Key)
	}
	return keys
}

// vanished says why a step's failure means its device is gone, or "".
func vanished(h *host.Host, st host.Step, err error) string {
	p := st.Changes[0].Port
	if p == nil {
		return ""
	}
	if errors.Is(err, syscall.ENODEV) {
		return fmt.Sprintf("device %s is gone (ENODEV)", p.Netdev)
	}
	if !h.FS.Exists("/sys/class/net/" + p.Netdev) {
		return fmt.Sprintf("netdev %s no longer exists", p.Netdev)
	}
	return ""
}

// SaveError is a journal save that failed after the host changed: it says
// what the host holds, what the journal on disk still says, and what the
// next rocectl will do about it.
type SaveError struct {
	ID     string
	OnDisk string // the state the journal on disk still records
	Host   string
	Next   string
	Err    error
}

func (e *SaveError) Error() string {
	return fmt.Sprintf("could not update journal %s (%v): %s; the journal on disk still says %q, so %s", e.ID, e.Err, e.Host, e.OnDisk, e.Next)
}

func (e *SaveError) Unwrap() error { return e.Err }

// verifyStep reads a step's settings back until they hold the expected
// values (after-values, or before-values when undoing), retrying: some
// drivers apply asynchronously (mlx5 flaps the link on a PFC change). This
// is the one read-back layer; the nic setters only write.
func verifyStep(ctx context.Context, h *host.Host, st host.Step, undo bool, opts Options) error {
	tries, every := opts.retries()
	var last error
	for try := 0; try < tries; try++ {
		if try > 0 {
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-time.After(every):
			}
		}
		last = h.CheckStep(st, undo)
		if last == nil {
			return nil
		}
		var mm *policy.Mismatch
		if !errors.As(last, &mm) {
			return last // a read error will not go away by waiting
		}
	}
	return last
}
