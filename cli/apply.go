package cli

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/rocectl/rocectl/apply"
	"github.com/rocectl/rocectl/doc"
	"github.com/rocectl/rocectl/host"
	"github.com/rocectl/rocectl/policy"
	"github.com/rocectl/rocectl/statedir"
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
	soakSet  bool // --soak given: it overrides the profile's [guard] soak
	wait     bool
	require  bool
	// skipUnreadable applies a plan with unreadable settings anyway.
	skipUnreadable bool
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
			if f.soakSet = cmd.Flags().Changed("soak"); f.soakSet && f.soak < 0 {
				return fmt.Errorf("--soak must not be negative, not %s", f.soak)
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
	// Default 0 only so that the help shows no misleading "(default ...)":
	// without --soak, the profile's [guard] soak applies (soakSet).
	fl.DurationVar(&f.soak, "soak", 0, "watch the pause counters this long after apply, instead of the profile's [guard] soak (60s if the profile sets none); 0 does not watch")
	fl.BoolVar(&f.skipUnreadable, "skip-unreadable", false, "apply even when some settings cannot be read, leaving those alone (without it such a plan changes nothing, exit 1)")
	fl.BoolVar(&f.require, "require-match", false, requireMatchUsage)
	fl.BoolVar(&f.wait, "wait", false, "with --confirm: stay until commit or the deadline, watching pause counters (default on a terminal)")
	_ = cmd.MarkFlagRequired("profile")
	return cmd
}

func (env *Env) runApply(ctx context.Context, f applyFlags) error {
	h, done, err := env.Host(ctx)
	if err != nil {
		return err
	}
	defer done()
	store := env.Store()
	var lock *statedir.Lock
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
	env.phase(PhaseOpen)
	pl, err := env.makePlan(f.profile, h, false)
	if err != nil {
		return err
	}
	if why := pl.NoPortsReason(); f.require && why != "" {
		return requireMatchError(why)
	}
	rep := newReport(pl)
	text := f.output == "text"
	soak := pl.Profile.Guard.Soak
	if f.soak >= 0 {
		soak = f.soak
	}
	if pl.Profile.Guard.Enabled && !f.noGuard && soak > 0 && pl.Plan.Changed() {
		rep.NotWatched = guardNotWatched(pl)
	}
	if text {
		renderPlanText(env.Stdout, pl, "change")
		renderNotWatched(env.Stdout, rep.NotWatched)
	}
	if f.dryRun || !pl.Plan.Changed() {
		// Nothing to write, or nothing to be written: the verdict is
		// still the one a real apply of this plan would give, so a plan
		// with unreadable or refused settings exits 1 here too.
		refusal := apply.Refusal(pl.Plan, f.skipUnreadable)
		if !text {
			if err := writeJSON(env.Stdout, rep); err != nil {
				return err
			}
			if refusal != nil {
				return silent(ExitError)
			}
			return nil
		}
		return refusal
	}

	beforeStep, err := testBeforeStep()
	if err != nil {
		return err
	}
	env.phase(PhaseRender)
	opts := apply.RunOptions{Store: store, Command: "apply", NoVerify: f.noVerify, NoGuard: f.noGuard, SkipUnreadable: f.skipUnreadable,
		Confirm: f.confirm, Progress: env.progressWriter(text), BeforeStep: beforeStep, Log: env.Log,
		Arm: env.armConfirm, Phase: env.Phase}
	if f.soakSet {
		opts.Soak = &f.soak
	}
	if text {
		opts.Applied = func(r *apply.Result) {
			fmt.Fprintf(env.Stdout, "Applied %d change(s) in %d step(s) (journal %s).\n", r.Changes, r.Steps, r.JournalID)
		}
	}
	res, err := apply.Run(ctx, pl, opts)
	if err != nil {
		return err
	}
	if code, done := env.renderResult(rep, res, text, f.confirm); done {
		return silent(code)
	}
	env.renderFirmwarePending(rep, pl, text)
	if res.Outcome == apply.ConfirmPending && f.wait {
		// The commit comes from another rocectl, which needs the lock.
		lock.Release()
		return env.waitConfirm(ctx, pl, res, text)
	}
	if !text {
		return writeJSON(env.Stdout, rep)
	}
	return nil
}

// renderFirmwarePending says, after an apply that kept its changes, which
// firmware settings it wrote for the next boot: pending until a firmware
// reset or reboot, which rocectl never does (JSON pending[], with the
// settings that already were).
func (env *Env) renderFirmwarePending(rep *doc.Plan, pl *apply.Prepared, text bool) {
	for _, c := range pl.Plan.Changes {
		if c.Kind != policy.KindFirmware {
			continue
		}
		p := policy.Pending{Key: c.Key, Scope: c.Scope, Want: c.Value, Current: c.Before, Port: c.Port}
		rep.Pending = append(rep.Pending, pendingDocs([]policy.Pending{p})...)
		if text {
			fmt.Fprintf(env.Stdout, "pending: %s = %s: %s\n", c.Key, c.Value, pendingAction(p))
		}
	}
}

// renderResult prints what apply.Run did. A failed or rolled-back apply is
// reported in full here (done, with its exit code); a committed or
// confirm-pending one leaves the JSON document to the caller.
func (env *Env) renderResult(rep *doc.Plan, res *apply.Result, text bool, confirm time.Duration) (code int, done bool) {
	rep.JournalID = res.JournalID
	switch res.Outcome {
	case apply.Failed:
		rep.Errors = append(rep.Errors, res.Errors()...)
		rep.RolledBack, rep.Restored, rep.Unchanged = true, res.Restored, res.Unchanged
		if text && errors.Is(res.Failure, context.Canceled) {
			// "interrupted by signal SIGTERM; host restored: ..."
			fmt.Fprintf(env.Stderr, "%v (journal %s)\n", res.Failure, res.JournalID)
		} else if text {
			fmt.Fprintf(env.Stderr, "apply failed: %v\n", res.Failure)
		} else {
			_ = writeJSON(env.Stdout, rep)
		}
		return ExitError, true
	case apply.RolledBack:
		rep.Applied = true
		setSoak(rep, res)
		if text && res.Soak != nil {
			env.renderSoak(res)
		}
		rep.Errors = append(rep.Errors, res.Errors()...)
		rep.RolledBack, rep.Restored, rep.Unchanged = true, res.Restored, res.Unchanged
		if text {
			fmt.Fprintf(env.Stderr, "rolling back: %s\n", res.Reason)
			if res.RollbackErr != nil {
				fmt.Fprintf(env.Stderr, "ROLLBACK FAILED: %v\nthe journal is kept: run `rocectl rollback %s` once the cause is fixed\n", res.RollbackErr, res.JournalID)
			} else {
				fmt.Fprintf(env.Stderr, "%s (journal %s)\n", apply.RestoreSummary(res.Restored, res.Unchanged, res.Skipped), res.JournalID)
			}
		} else {
			_ = writeJSON(env.Stdout, rep)
		}
		if res.RollbackErr != nil {
			return ExitError, true
		}
		return ExitRolledBack, true
	}
	rep.Applied = true
	setSoak(rep, res)
	if text && res.Soak != nil {
		env.renderSoak(res)
	}
	if res.Outcome == apply.ConfirmPending {
		rep.Confirm = res.Deadline.UTC().Format(time.RFC3339)
		if text {
			fmt.Fprintf(env.Stdout, "Confirm within %v (by %s, %s): rocectl commit %s — otherwise the change is reverted.\n",
				confirm, res.Deadline.Format(time.RFC3339), res.ArmedBy, res.JournalID)
		}
	}
	return ExitOK, false
}

// setSoak puts the soak's report in the JSON document; what the soak saw
// replaces the plan's guess at which ports it cannot watch.
func setSoak(rep *doc.Plan, res *apply.Result) {
	if res.Soak != nil {
		rep.Guard, rep.NotWatched = guardDoc(res.Soak), res.Soak.NotWatched
	}
}

// guardDoc is the soak's report as the plan document carries it.
func guardDoc(g *verify.GuardReport) *doc.Guard {
	d := &doc.Guard{Polls: g.Polls, WorstOccupied: g.WorstOccupied, WorstWhere: g.WorstWhere, Discards: g.Discards,
		ReadErrors: g.ReadErrors, BadSamples: g.BadSamples, NotWatched: g.NotWatched, RDMA: g.RDMA}
	if g.Ports != nil {
		d.Ports = make(map[string]*doc.GuardPort, len(g.Ports))
		for name, p := range g.Ports {
			if p == nil {
				d.Ports[name] = nil
				continue
			}
			gp := &doc.GuardPort{Watched: p.Watched, WorstOccupancy: p.WorstOccupancy, WorstWhere: p.WorstWhere,
				Counters: pauseCounterDocs(p.Counters), BadSamples: p.BadSamples,
				WindowNs: int64(p.Window), DiscardGrowth: p.DiscardGrowth, DiscardsKnown: p.DiscardsKnown,
				ThrottledNoDrops: p.Throttled}
			for _, s := range p.Pause {
				gp.Pause = append(gp.Pause, doc.PauseShare(s))
			}
			for _, w := range p.ThrottledNoDrops {
				gp.ThrottledWhere = append(gp.ThrottledWhere, doc.Throttled(w))
			}
			if st, ok := g.States[name]; ok {
				gp.Storm = portStormDoc(st)
			}
			d.Ports[name] = gp
		}
	}
	return d
}

// portStormDoc is a port's storm state as documents carry it.
func portStormDoc(st verify.PortStorm) *doc.PortStorm {
	return &doc.PortStorm{State: st.State.String(), Detected: st.Detected, Restored: st.Restored,
		DetectedAt: st.DetectedAt, RestoredAt: st.RestoredAt, DetectionNs: int64(st.DetectionTime), RestorationNs: int64(st.RestorationTime),
		Reading: string(st.Reading), ReadingNote: st.ReadingNote, BadReadings: st.BadReadings}
}

// pauseCounterDocs converts verify's pause counters; nil stays nil.
func pauseCounterDocs(cs []verify.PauseCounter) []doc.PauseCounter {
	if cs == nil {
		return nil
	}
	out := make([]doc.PauseCounter, len(cs))
	for i, c := range cs {
		out[i] = doc.PauseCounter{Priority: c.Priority, Direction: c.Direction, Frames: c.Frames, FramesName: c.FramesName,
			DurationUs: c.DurationUs, DurationName: c.DurationName, HasDuration: c.HasDuration}
	}
	return out
}

// renderSoak prints a passed soak. A port the guard could not watch is
// named, and when it watched none, no "no pause storm" is claimed.
func (env *Env) renderSoak(res *apply.Result) {
	s := res.Soak
	switch {
	case len(s.NotWatched) == 0:
		fmt.Fprintf(env.Stdout, "Soak: %d polls over %v, no pause storm (worst occupancy %.2f %s).\n", s.Polls, res.SoakWindow, s.WorstOccupied, s.WorstWhere)
	case len(s.NotWatched) < len(s.Ports):
		fmt.Fprintf(env.Stdout, "Soak: %d polls over %v, no pause storm on the watched ports (worst occupancy %.2f %s).\n", s.Polls, res.SoakWindow, s.WorstOccupied, s.WorstWhere)
	default:
		fmt.Fprintf(env.Stdout, "Soak: %d polls over %v: no port watched.\n", s.Polls, res.SoakWindow)
	}
	for _, why := range s.NotWatched {
		fmt.Fprintf(env.Stdout, "  not watched: %s\n", why)
	}
	for k, v := range s.Discards {
		fmt.Fprintf(env.Stdout, "  note: %s grew by %d during the soak\n", k, v)
	}
	if s.BadSamples > 0 {
		fmt.Fprintf(env.Stdout, "  note: %d bad pause counter sample(s) skipped (a counter that fell for one poll, or more pause than time), not a storm\n", s.BadSamples)
	}
	for _, name := range slices.Sorted(maps.Keys(s.Ports)) {
		for _, w := range s.Ports[name].ThrottledNoDrops {
			fmt.Fprintf(env.Stdout, "  note: %s throttled with no drops: %s\n", name, w)
		}
	}
	for _, name := range slices.Sorted(maps.Keys(s.RDMA)) {
		for _, k := range verify.RDMALossKeys {
			if n := s.RDMA[name][k]; n > 0 {
				fmt.Fprintf(env.Stdout, "  note: %s %s grew by %d during the soak (loss on the RDMA transport)\n", name, k, n)
			}
		}
	}
}

// recoverOpen finishes what an earlier rocectl left open (apply.Recover)
// and says so on stderr.
func (env *Env) recoverOpen(h *host.Host, store apply.Store, allowPending bool) error {
	done, err := apply.Recover(h, store, allowPending, time.Now())
	for _, r := range done {
		j := r.Journal
		if r.Expired {
			fmt.Fprintf(env.Stderr, "apply %s was not committed before its deadline: reverting it\n", j.ID)
		} else {
			fmt.Fprintf(env.Stderr, "found an unfinished apply %s (profile %q, state %s, pid %d): restoring the values it journalled\n", j.ID, j.Profile, r.State, j.PID)
		}
		if r.Err == nil {
			fmt.Fprintf(env.Stderr, "apply %s: %s\n", j.ID, apply.RestoreSummary(j.Restored, j.Unchanged, j.Skipped))
		}
	}
	return err
}

func newCommitCmd(env *Env) *cobra.Command {
	return &cobra.Command{
		Use:   "commit [ID]",
		Short: "Keep a change applied with --confirm",
		Args:  cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			store := env.Store()
			lock, err := store.Acquire("commit")
			if err != nil {
				if errors.Is(err, statedir.ErrLocked) {
					// Read without the lock (saves are atomic): a
					// window past its deadline may be being reverted.
					if j, _ := commitTarget(store, args); j != nil {
						return apply.CommitLocked(j, time.Now(), err)
					}
				}
				return err
			}
			defer lock.Release()
			j, err := commitTarget(store, args)
			if err != nil {
				return err
			}
			if err := apply.CheckCommit(j, time.Now()); err != nil {
				return err
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

// commitTarget is the apply a commit is about: the named one, else the
// open confirm window, else the newest apply if it was a confirm window
// that ended without a commit (so that commit says how it ended).
func commitTarget(store apply.Store, args []string) (*apply.Journal, error) {
	if len(args) == 1 {
		return store.Load(args[0])
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
	all, err := store.List()
	if err != nil {
		return nil, err
	}
	if n := len(all); n > 0 {
		if j := all[n-1]; j.Deadline != nil && (j.State == apply.StateRolledBack || j.State == apply.StateRollbackFailed) {
			return j, nil
		}
	}
	return nil, fmt.Errorf("%w: no apply is waiting for a commit", apply.ErrNotPending)
}

func newRollbackCmd(env *Env) *cobra.Command {
	var ifPending, abandon bool
	cmd := &cobra.Command{
		Use:   "rollback [ID] [--abandon ID]",
		Short: "Undo the last (or a named) apply, or an unfinished one; or give up a journal that cannot be used",
		Long: `rollback restores the before-values an apply journalled: the named apply, or
the newest unfinished or confirm-pending one, or the last commit.

--abandon ID gives up a journal rocectl cannot or should not act on (damaged,
of an unknown format version, naming a device that is gone for good): it
shows what the journal held, which of its settings hold their before-values
now and which do not, writes nothing to the host, and moves the journal to
journal/abandoned/ in the state dir, after which applies, rollbacks and the
agent are no longer blocked by it.`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			h, done, err := env.Host(cmd.Context())
			if err != nil {
				return err
			}
			defer done()
			store := env.Store()
			lock, err := store.Acquire("rollback")
			if err != nil {
				return err
			}
			defer lock.Release()
			if ifPending {
				return env.rollbackIfExpired(h, store, args)
			}
			if abandon {
				if len(args) != 1 {
					return errors.New("--abandon needs the apply ID")
				}
				return env.abandon(h, store, args[0])
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
			fmt.Fprintf(env.Stdout, "Rolled back apply %s (profile %q): %s.\n", j.ID, j.Profile, apply.RestoreSummary(j.Restored, j.Unchanged, j.Skipped))
			for _, k := range j.Restored {
				fmt.Fprintf(env.Stdout, "  - %s\n", k)
			}
			// Older unfinished journals (a crash before this one) too.
			return env.recoverOpen(h, store, true)
		},
	}
	cmd.Flags().BoolVar(&abandon, "abandon", false, "give up the named journal: report the host against it, write nothing, move it to journal/abandoned/")
	cmd.Flags().BoolVar(&ifPending, "if-pending", false, "only revert the named apply if it is still waiting for a commit past its deadline (used by the confirm timer)")
	return cmd
}

// abandon is `rollback --abandon ID` (apply.Abandon).
func (env *Env) abandon(h *host.Host, store apply.Store, id string) error {
	a, err := apply.Abandon(h, store, id)
	if err != nil {
		return err
	}
	out := env.Stdout
	if j := a.Journal; j != nil {
		fmt.Fprintf(out, "Journal %s: apply of profile %q started %s, state %s, %d step(s).\n", j.ID, j.Profile, j.Started.Format(time.RFC3339), j.State, len(j.Steps))
		fmt.Fprintf(out, "At their journalled before-values (%d):\n", len(a.AtBefore))
		for _, k := range a.AtBefore {
			fmt.Fprintf(out, "  = %s\n", k)
		}
		fmt.Fprintf(out, "NOT at their before-values (%d):\n", len(a.NotRestored))
		for _, m := range a.NotRestored {
			fmt.Fprintf(out, "  ! %s\n", m)
		}
	} else {
		fmt.Fprintf(out, "Journal %s cannot be read (%v): what it held, and so what the host held before it, is unknown.\n", id, a.ReadErr)
	}
	fmt.Fprintf(out, "Moved to %s; it no longer blocks apply, rollback or the agent. Nothing on the host was changed: run audit to see where it stands.\n", a.MovedTo)
	return nil
}

// rollbackIfExpired is the confirm timer's action: revert the apply if, and
// only if, it is still uncommitted at its deadline.
func (env *Env) rollbackIfExpired(h *host.Host, store apply.Store, args []string) error {
	if len(args) != 1 {
		return errors.New("--if-pending needs the apply ID")
	}
	j, reverted, err := apply.RevertExpired(h, store, args[0], time.Now())
	if err != nil {
		return err
	}
	if !reverted {
		fmt.Fprintf(env.Stdout, "apply %s is %s: nothing to revert\n", j.ID, j.State)
		return nil
	}
	fmt.Fprintf(env.Stdout, "Reverted apply %s: not committed before %s; %s.\n", j.ID, j.Deadline.Format(time.RFC3339), apply.RestoreSummary(j.Restored, j.Unchanged, j.Skipped))
	return nil
}

// waitConfirm stays in the foreground during a confirm window
// (apply.WaitConfirm): a progress line (time left, worst pause occupancy),
// the pause-storm guard still running (a storm reverts at once, exit 3),
// until `rocectl commit` (exit 0) or the deadline, when the armed timer
// reverts the change (exit 3). Leaving early (Ctrl-C) keeps the deadline
// armed.
func (env *Env) waitConfirm(ctx context.Context, pl *apply.Prepared, res *apply.Result, text bool) error {
	id := res.JournalID
	w, err := apply.WaitConfirm(ctx, pl, id, apply.WaitOptions{Store: env.Store(), Deadline: res.Deadline, Progress: env.progressWriter(text)})
	if err != nil {
		return err
	}
	switch w.Outcome {
	case apply.WaitCommitted:
		fmt.Fprintf(env.Stdout, "Committed: apply %s stays.\n", id)
	case apply.WaitExpired, apply.WaitRolledBack:
		// What happened, from the journal: reverted after the deadline,
		// or rolled back before it by someone else.
		if w.Journal.State == apply.StateRollbackFailed {
			fmt.Fprintf(env.Stderr, "%s\nthe journal is kept: run `rocectl rollback %s` once the cause is fixed\n", apply.Settled(w.Journal), id)
			return silent(ExitError)
		}
		fmt.Fprintf(env.Stderr, "%s: %s\n", apply.Settled(w.Journal), apply.RestoreSummary(w.Journal.Restored, w.Journal.Unchanged, w.Journal.Skipped))
		return silent(ExitRolledBack)
	case apply.WaitStorm:
		fmt.Fprintf(env.Stderr, "rolling back: %s\n", w.Storm)
		if w.RollbackErr != nil {
			fmt.Fprintf(env.Stderr, "ROLLBACK FAILED: %v\nthe journal is kept: run `rocectl rollback %s`\n", w.RollbackErr, id)
			return silent(ExitError)
		}
		fmt.Fprintf(env.Stderr, "%s (journal %s)\n", apply.RestoreSummary(w.Journal.Restored, w.Journal.Unchanged, w.Journal.Skipped), id)
		return silent(ExitRolledBack)
	case apply.WaitLeft:
		fmt.Fprintf(env.Stderr, "\nleft the confirm window; the deadline stays armed: rocectl commit %s before %s\n", id, res.Deadline.Format(time.RFC3339))
	}
	return nil
}
