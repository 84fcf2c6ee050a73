package agent

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/rocectl/rocectl/apply"
	"github.com/rocectl/rocectl/host"
	"github.com/rocectl/rocectl/policy"
	"github.com/rocectl/rocectl/verify"
)

type applyFlags struct {
	profile  string
	output   string
	dryRun   bool
	confirm  time.Duration
	noVerify bool
	noGuard  bool
	soak     time.Duration
	wait     bool
	require  bool
}

func newApplyCmd(env *Env) *cobra.Command {
	var f applyFlags
	cmd := &cobra.Command{
		Use:   "apply -p PROFILE",
		Short: "Change the host to match a profile, with journal, read-back, guard and rollback",
		Long: `apply changes only what differs from the profile, in the mlx5 order (MTU, global
pause, DCBX, trust/APP, ETS, PFC, buffers, storm prevention, ECN, TOS, NCCL file).
Before the first write it journals every before-value in --state-dir; each step is
read back; any failure restores the host. After a successful apply it verifies
every setting and watches the pause counters for the profile's [guard] soak
window, rolling back on a storm.

Exit codes: 0 applied (or nothing to do), 1 error (host restored),
3 applied then rolled back by the guard or verification.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := checkOutput(f.output); err != nil {
				return err
			}
			if env.Snapshot != "" && !f.dryRun {
				return errors.New("a snapshot is read-only: use audit, or apply --dry-run")
			}
			if !cmd.Flags().Changed("wait") {
				// On a terminal, stay for the confirm window by default.
				f.wait = f.output == "text" && env.progressWriter(true) != nil
			}
			return env.jsonOnError(f.output, env.runApply(cmd.Context(), f))
		},
	}
	fl := cmd.Flags()
	fl.StringVarP(&f.profile, "profile", "p", "", "profile file (required)")
	fl.StringVarP(&f.output, "output", "o", "text", "output format: text or json")
	fl.BoolVar(&f.dryRun, "dry-run", false, "print the plan and change nothing")
	fl.DurationVar(&f.confirm, "confirm", 0, "revert automatically unless rocectl commit arrives within this `DURATION` (e.g. 120s)")
	fl.BoolVar(&f.noVerify, "no-verify", false, "skip the verification after apply (read-back of every setting, verbs loopback)")
	fl.BoolVar(&f.noGuard, "no-guard", false, "skip the pause-storm soak after apply")
	fl.DurationVar(&f.soak, "soak", -1, "override the profile's guard soak window")
	fl.BoolVar(&f.require, "require-match", false, "fail (exit 1) when no RoCE port matches the profile, instead of reporting nothing to do")
	fl.BoolVar(&f.wait, "wait", false, "with --confirm: stay until commit or the deadline, watching pause counters (default on a terminal)")
	_ = cmd.MarkFlagRequired("profile")
	return cmd
}

func (env *Env) runApply(ctx context.Context, f applyFlags) error {
	h, done, err := env.host(ctx)
	if err != nil {
		return err
	}
	defer done()
	store := env.store()
	var lock *apply.Lock
	if !f.dryRun {
		lock, err = store.Acquire("apply -p " + f.profile)
		if err != nil {
			return err
		}
		defer lock.Release()
		if err := env.recoverOpen(h, store, false); err != nil {
			return err
		}
	}
	pl, err := env.makePlan(ctx, f.profile, h, false)
	if err != nil {
		return err
	}
	if f.require {
		if msg := pl.noPortsMessage(); msg != "" {
			return errors.New(msg)
		}
	}
	rep := newReport(pl)
	text := f.output == "text"
	if text {
		renderPlanText(env.Stdout, pl, "change")
	}
	if f.dryRun || !pl.plan.Changed() {
		if !text {
			return writeJSON(env.Stdout, rep)
		}
		return nil
	}

	opts := apply.Options{Store: store, Retries: pl.profile.Verify.Retries, Interval: pl.profile.Verify.RetryInterval, Command: "apply"}
	if env.stepDelay != "" {
		d, err := time.ParseDuration(env.stepDelay)
		if err != nil {
			return fmt.Errorf("--test-step-delay: %w", err)
		}
		opts.BeforeStep = func(int, host.Step) error { time.Sleep(d); return nil }
	}
	txn, err := apply.Begin(h, pl.desired, pl.plan, pl.hash, opts)
	if err != nil {
		return err
	}
	rep.JournalID = txn.J.ID
	if err := txn.Run(ctx); err != nil {
		rep.Errors = append(rep.Errors, err.Error())
		rep.RolledBack = true
		rep.Restored = txn.J.Restored
		if text {
			fmt.Fprintf(env.Stderr, "apply failed: %v\n", err)
		} else {
			_ = writeJSON(env.Stdout, rep)
		}
		return silent(ExitError)
	}
	rep.Applied = true
	if text {
		fmt.Fprintf(env.Stdout, "Applied %d change(s) in %d step(s) (journal %s).\n", len(pl.plan.Changes), len(txn.J.Steps), txn.J.ID)
	}

	// Verification: everything the profile sets must read back as set.
	if !f.noVerify {
		if problems := env.verifyAfterApply(ctx, pl); len(problems) > 0 {
			return env.rollbackAfter(txn, rep, text, "verification failed:\n  "+strings.Join(problems, "\n  "))
		}
	}
	// The guard: a bad PFC or buffer change shows up as a pause storm.
	g := pl.profile.Guard
	if f.soak >= 0 {
		g.Soak = f.soak
	}
	if g.Enabled && g.Soak > 0 && !f.noGuard {
		storm, grep, err := verify.Guard(ctx, env.counterSources(h, pl), verify.GuardConfig{
			Soak: g.Soak, Poll: g.Poll, DetectionTime: g.DetectionTime,
			MaxPauseOccupancy: g.MaxPauseOccupancy, MaxPauseFramesPerSecond: g.MaxPauseFramesPerSecond,
			Progress: env.progressWriter(text),
		})
		if err != nil {
			return env.rollbackAfter(txn, rep, text, "soak interrupted: "+err.Error())
		}
		if storm != nil {
			return env.rollbackAfter(txn, rep, text, storm.String())
		}
		if text {
			fmt.Fprintf(env.Stdout, "Soak: %d polls over %v, no pause storm (worst occupancy %.2f %s).\n", grep.Polls, g.Soak, grep.WorstOccupied, grep.WorstWhere)
			for k, v := range grep.Discards {
				fmt.Fprintf(env.Stdout, "  note: %s grew by %d during the soak\n", k, v)
			}
		}
	}

	if f.confirm > 0 {
		deadline := time.Now().Add(f.confirm)
		if err := txn.Finish(deadline); err != nil {
			return env.rollbackAfter(txn, rep, text, "recording the confirm deadline: "+err.Error())
		}
		how, err := env.armConfirm(ctx, txn.J, deadline)
		if err != nil {
			return env.rollbackAfter(txn, rep, text, "arming the confirm deadline: "+err.Error())
		}
		rep.Confirm = deadline.UTC().Format(time.RFC3339)
		if text {
			fmt.Fprintf(env.Stdout, "Confirm within %v (by %s, %s): rocectl commit %s — otherwise the change is reverted.\n",
				f.confirm, deadline.Format(time.RFC3339), how, txn.J.ID)
		}
		if f.wait {
			// The commit comes from another rocectl, which needs the lock.
			lock.Release()
			return env.waitConfirm(ctx, h, pl, txn.J.ID, deadline, g, text)
		}
	} else if err := txn.Finish(time.Time{}); err != nil {
		return err
	}
	if !text {
		return writeJSON(env.Stdout, rep)
	}
	return nil
}

// rollbackAfter undoes a successful apply that verification or the guard
// rejected; exit code 3.
func (env *Env) rollbackAfter(txn *apply.Txn, rep *Report, text bool, why string) error {
	rerr := txn.RollbackNow()
	rep.RolledBack = true
	rep.Restored = txn.J.Restored
	rep.Errors = append(rep.Errors, why)
	if rerr != nil {
		rep.Errors = append(rep.Errors, "ROLLBACK FAILED: "+rerr.Error())
	}
	if text {
		fmt.Fprintf(env.Stderr, "rolling back: %s\n", why)
		if rerr != nil {
			fmt.Fprintf(env.Stderr, "ROLLBACK FAILED: %v\nthe journal is kept: run `rocectl rollback %s` once the cause is fixed\n", rerr, txn.J.ID)
		} else {
			fmt.Fprintf(env.Stderr, "host restored: %d setting(s) put back (journal %s)\n", len(txn.J.Restored), txn.J.ID)
		}
	} else {
		_ = writeJSON(env.Stdout, rep)
	}
	if rerr != nil {
		return silent(ExitError)
	}
	return silent(ExitRolledBack)
}

// verifyAfterApply re-reads every desired setting (and runs verbs traffic
// when the profile asks for it).
func (env *Env) verifyAfterApply(ctx context.Context, pl *planned) []string {
	var out []string
	for _, m := range verify.Readback(pl.desired, pl.host.Observe(pl.desired)) {
		out = append(out, m.String())
	}
	if pl.profile.Verify.Loopback {
		for _, r := range env.loopbacks(ctx, pl) {
			if r.err != nil {
				out = append(out, fmt.Sprintf("verify: %s loopback: %v", r.port, r.err))
			}
		}
	}
	return out
}

func (env *Env) counterSources(h *host.Host, pl *planned) []verify.CounterSource {
	var out []verify.CounterSource
	for _, dp := range pl.desired.Ports {
		nd := dp.Port.Netdev
		out = append(out, verify.CounterSource{Port: nd, Read: func() (map[string]uint64, error) { return h.K.Stats(nd) }})
	}
	return out
}

// recoverOpen finishes what an earlier rocectl left open: an apply that died
// half-way is rolled back; a confirm window whose deadline passed is
// reverted; an open confirm window blocks a new change unless allowPending.
func (env *Env) recoverOpen(h *host.Host, store apply.Store, allowPending bool) error {
	open, err := store.Open()
	if err != nil {
		return err
	}
	for _, j := range open {
		switch {
		case j.State == apply.StateConfirmPending && j.Deadline != nil && time.Now().Before(*j.Deadline):
			if allowPending {
				continue
			}
			return fmt.Errorf("a confirm window is open: apply %s of profile %q waits for `rocectl commit %s` (or rollback) until %s",
				j.ID, j.Profile, j.ID, j.Deadline.Format(time.RFC3339))
		case j.State == apply.StateConfirmPending:
			fmt.Fprintf(env.Stderr, "apply %s was not committed before its deadline: reverting it\n", j.ID)
		default:
			fmt.Fprintf(env.Stderr, "found an unfinished apply %s (profile %q, state %s, pid %d): restoring the values it journalled\n", j.ID, j.Profile, j.State, j.PID)
		}
		if err := apply.Rollback(h, j, apply.Options{Store: store, Retries: 5, Interval: time.Second}); err != nil {
			return fmt.Errorf("restoring apply %s: %w (journal kept: `rocectl rollback %s` retries)", j.ID, err, j.ID)
		}
		fmt.Fprintf(env.Stderr, "restored %d setting(s) of apply %s\n", len(j.Restored), j.ID)
	}
	return nil
}

func newCommitCmd(env *Env) *cobra.Command {
	return &cobra.Command{
		Use:   "commit [ID]",
		Short: "Keep a change applied with --confirm",
		Args:  cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			store := env.store()
			lock, err := store.Acquire("commit")
			if err != nil {
				return err
			}
			defer lock.Release()
			j, err := pendingJournal(store, args)
			if err != nil {
				return err
			}
			if j.Deadline != nil && time.Now().After(*j.Deadline) {
				return fmt.Errorf("apply %s missed its confirm deadline (%s); it is being reverted", j.ID, j.Deadline.Format(time.RFC3339))
			}
			j.State = apply.StateCommitted
			if err := store.Save(j); err != nil {
				return err
			}
			disarmConfirm(cmd.Context(), j)
			fmt.Fprintf(env.Stdout, "Committed apply %s (profile %q).\n", j.ID, j.Profile)
			return nil
		},
	}
}

func pendingJournal(store apply.Store, args []string) (*apply.Journal, error) {
	if len(args) == 1 {
		j, err := store.Load(args[0])
		if err != nil {
			return nil, err
		}
		if j.State != apply.StateConfirmPending {
			return nil, fmt.Errorf("apply %s is %s, not waiting for a commit", j.ID, j.State)
		}
		return j, nil
	}
	open, err := store.Open()
	if err != nil {
		return nil, err
	}
	for _, j := range open {
		if j.State == apply.StateConfirmPending {
			return j, nil
		}
	}
	return nil, errors.New("no apply is waiting for a commit")
}

func newRollbackCmd(env *Env) *cobra.Command {
	var ifPending bool
	cmd := &cobra.Command{
		Use:   "rollback [ID]",
		Short: "Undo the last (or a named) apply, or an unfinished one",
		Args:  cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			h, done, err := env.host(cmd.Context())
			if err != nil {
				return err
			}
			defer done()
			store := env.store()
			lock, err := store.Acquire("rollback")
			if err != nil {
				return err
			}
			defer lock.Release()
			if ifPending {
				return env.rollbackIfExpired(h, store, args)
			}
			var j *apply.Journal
			if len(args) == 1 {
				if j, err = store.Load(args[0]); err != nil {
					return err
				}
			} else {
				// Unfinished and pending applies first, then the last commit.
				open, err := store.Open()
				if err != nil {
					return err
				}
				if len(open) > 0 {
					j = open[len(open)-1]
				} else if j, err = store.LastCommitted(); err != nil {
					return err
				}
				if j == nil {
					fmt.Fprintln(env.Stdout, "Nothing to roll back.")
					return nil
				}
			}
			if j.State == apply.StateRolledBack {
				return fmt.Errorf("apply %s was already rolled back", j.ID)
			}
			if err := apply.Rollback(h, j, apply.Options{Store: store, Retries: 5, Interval: time.Second}); err != nil {
				fmt.Fprintf(env.Stderr, "ROLLBACK FAILED for apply %s: %v\nrestored: %s\n", j.ID, err, strings.Join(j.Restored, ", "))
				return silent(ExitError)
			}
			disarmConfirm(cmd.Context(), j)
			fmt.Fprintf(env.Stdout, "Rolled back apply %s (profile %q): %d setting(s) restored.\n", j.ID, j.Profile, len(j.Restored))
			for _, k := range j.Restored {
				fmt.Fprintf(env.Stdout, "  - %s\n", k)
			}
			// Older unfinished journals (a crash before this one) too.
			return env.recoverOpen(h, store, true)
		},
	}
	cmd.Flags().BoolVar(&ifPending, "if-pending", false, "only revert the named apply if it is still waiting for a commit past its deadline (used by the confirm timer)")
	return cmd
}

// rollbackIfExpired is the confirm timer's action: revert the apply if, and
// only if, it is still uncommitted at its deadline.
func (env *Env) rollbackIfExpired(h *host.Host, store apply.Store, args []string) error {
	if len(args) != 1 {
		return errors.New("--if-pending needs the apply ID")
	}
	j, err := store.Load(args[0])
	if err != nil {
		return err
	}
	if j.State != apply.StateConfirmPending {
		fmt.Fprintf(env.Stdout, "apply %s is %s: nothing to revert\n", j.ID, j.State)
		return nil
	}
	if j.Deadline != nil && time.Now().Before(*j.Deadline) {
		return fmt.Errorf("apply %s is still within its confirm window (until %s)", j.ID, j.Deadline.Format(time.RFC3339))
	}
	if err := apply.Rollback(h, j, apply.Options{Store: store, Retries: 5, Interval: time.Second}); err != nil {
		return fmt.Errorf("reverting unconfirmed apply %s: %w", j.ID, err)
	}
	fmt.Fprintf(env.Stdout, "Reverted apply %s: not committed before %s (%d setting(s) restored).\n", j.ID, j.Deadline.Format(time.RFC3339), len(j.Restored))
	return nil
}

// waitConfirm stays in the foreground during a confirm window: a progress
// line (time left, worst pause occupancy), the pause-storm guard still
// running (a storm reverts at once, exit 3), until `rocectl commit` (exit
// 0) or the deadline, when the armed timer reverts the change (exit 3).
// Leaving early (Ctrl-C) keeps the deadline armed.
func (env *Env) waitConfirm(ctx context.Context, h *host.Host, pl *planned, id string, deadline time.Time, g policy.GuardSpec, text bool) error {
	store := env.store()
	det := verify.NewDetector(verify.GuardConfig{DetectionTime: g.DetectionTime, MaxPauseOccupancy: g.MaxPauseOccupancy, MaxPauseFramesPerSecond: g.MaxPauseFramesPerSecond})
	sources := env.counterSources(h, pl)
	progress := env.progressWriter(text)
	tick := time.NewTicker(g.Poll)
	defer tick.Stop()
	defer func() {
		if progress != nil {
			fmt.Fprint(progress, "\r\033[K")
		}
	}()
	for {
		j, err := store.Load(id)
		if err != nil {
			return err
		}
		switch j.State {
		case apply.StateCommitted:
			fmt.Fprintf(env.Stdout, "Committed: apply %s stays.\n", id)
			return nil
		case apply.StateRolledBack, apply.StateRollbackFailed:
			fmt.Fprintf(env.Stderr, "apply %s was not committed in time and has been reverted (%d setting(s) restored)\n", id, len(j.Restored))
			if j.State == apply.StateRollbackFailed {
				return silent(ExitError)
			}
			return silent(ExitRolledBack)
		}
		if g.Enabled {
			for _, s := range sources {
				c, err := s.Read()
				if err != nil {
					continue
				}
				if storm := det.Observe(s.Port, time.Now(), c); storm != nil {
					return env.revertPending(ctx, h, store, id, storm.String())
				}
			}
		}
		if progress != nil {
			fmt.Fprintf(progress, "\rconfirm: %v left, worst pause occupancy %.2f %s — rocectl commit %s   ",
				time.Until(deadline).Round(time.Second), det.Worst, det.WorstAt, id)
		}
		select {
		case <-ctx.Done():
			fmt.Fprintf(env.Stderr, "\nleft the confirm window; the deadline stays armed: rocectl commit %s before %s\n", id, deadline.Format(time.RFC3339))
			return nil
		case <-tick.C:
		}
	}
}

// revertPending rolls back a confirm-pending apply now (a storm during its
// window), unless it was settled meanwhile.
func (env *Env) revertPending(ctx context.Context, h *host.Host, store apply.Store, id, why string) error {
	lock, err := acquireWaiting(ctx, store, "apply (storm in confirm window)")
	if err != nil {
		return err
	}
	defer lock.Release()
	j, err := store.Load(id)
	if err != nil {
		return err
	}
	if j.State != apply.StateConfirmPending {
		return fmt.Errorf("pause storm (%s), but apply %s is already %s", why, id, j.State)
	}
	fmt.Fprintf(env.Stderr, "rolling back: %s\n", why)
	if err := apply.Rollback(h, j, apply.Options{Store: store, Retries: 5, Interval: time.Second}); err != nil {
		fmt.Fprintf(env.Stderr, "ROLLBACK FAILED: %v\nthe journal is kept: run `rocectl rollback %s`\n", err, id)
		return silent(ExitError)
	}
	fmt.Fprintf(env.Stderr, "host restored: %d setting(s) put back (journal %s)\n", len(j.Restored), id)
	return silent(ExitRolledBack)
}
