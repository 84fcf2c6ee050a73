package apply

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/rocectl/rocectl/host"
	"github.com/rocectl/rocectl/internal/testkit/fixturehost"
	"github.com/rocectl/rocectl/nic"
	"github.com/rocectl/rocectl/nic/dcb"
	"github.com/rocectl/rocectl/nic/nictest"
	"github.com/rocectl/rocectl/policy"
	"github.com/rocectl/rocectl/statedir"
)

// mtuResetKernel is a driver that silently puts the MTU back when PFC
// changes (as a firmware reset of the port would): every step reads back
// on its own, but the host as a whole does not hold the profile.
type mtuResetKernel struct{ *nictest.Sim }

func (k mtuResetKernel) SetPFC(ifname string, p dcb.PFC) error {
	if err := k.Sim.SetPFC(ifname, p); err != nil {
		return err
	}
	return k.Sim.SetMTU(ifname, 1500)
}

// prepared is the ConnectX recipe prepared on a writable copy of the
// cx6dx-ofed-factory host, with kernel k over its simulated kernel (nil:
// the simulation itself).
func prepared(t *testing.T, wrap func(*nictest.Sim) nic.Kernel) (*Prepared, *nictest.Sim) {
	t.Helper()
	root, sim := fixturehost.Copy(t, "cx6dx-ofed-factory")
	var k nic.Kernel = sim
	if wrap != nil {
		k = wrap(sim)
	}
	p, err := policy.Load(profilePath("connectx-lossless.toml"), policy.LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	pr := Prepare(&host.Host{FS: nic.NewFS(root, false), K: k}, p, false)
	if !pr.Plan.Changed() {
		t.Fatal("the factory host already matches the recipe")
	}
	return pr, sim
}

func TestRunOutcomes(t *testing.T) {
	clock := time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)
	noSoak := time.Duration(0)
	for _, tc := range []struct {
		name    string
		kernel  func(*nictest.Sim) nic.Kernel
		opts    RunOptions
		outcome Outcome
		state   string // the journal's state afterwards
		reason  string // in Result.Reason or Failure
		applied bool   // the Applied hook ran
	}{
		{name: "committed", outcome: Committed, state: StateCommitted, applied: true},
		{name: "verification rolls back", kernel: func(s *nictest.Sim) nic.Kernel { return mtuResetKernel{s} },
			outcome: RolledBack, state: StateRolledBack, reason: "verification failed:\n  verify: ens1f0np0.link.mtu: want 9000, have 1500", applied: true},
		{name: "no verify keeps what the driver did", kernel: func(s *nictest.Sim) nic.Kernel { return mtuResetKernel{s} },
			opts: RunOptions{NoVerify: true}, outcome: Committed, state: StateCommitted, applied: true},
		{name: "failed write", opts: RunOptions{BeforeStep: func(i int, _ host.Step) error {
			if i == 2 {
				return errors.New("injected")
			}
			return nil
		}}, outcome: Failed, state: StateRolledBack, reason: "injected"},
		{name: "confirm window", opts: RunOptions{Confirm: time.Hour,
			Arm: func(context.Context, *Journal, time.Time) (string, error) { return "test timer", nil }},
			outcome: ConfirmPending, state: StateConfirmPending, applied: true},
		{name: "confirm deadline not armed", opts: RunOptions{Confirm: time.Hour,
			Arm: func(context.Context, *Journal, time.Time) (string, error) { return "", errors.New("no timer") }},
			outcome: RolledBack, state: StateRolledBack, reason: "arming the confirm deadline: no timer", applied: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pr, sim := prepared(t, tc.kernel)
			before := sim.Config()
			store := Store{Store: statedir.Store{Dir: t.TempDir()}}
			opts := tc.opts
			opts.Store, opts.Soak, opts.Now = store, &noSoak, func() time.Time { return clock }
			hooked := 0
			opts.Applied = func(r *Result) {
				hooked++
				if r.JournalID == "" || r.Steps == 0 {
					t.Errorf("Applied hook got %+v", r)
				}
			}
			res, err := Run(context.Background(), pr, opts)
			if err != nil {
				t.Fatal(err)
			}
			if res.Outcome != tc.outcome || (hooked == 1) != tc.applied || hooked > 1 {
				t.Fatalf("outcome %s (hook ran %d times), want %s; errors %v", res.Outcome, hooked, tc.outcome, res.Errors())
			}
			if res.Changes != len(pr.Plan.Changes) || res.Changes != 46 {
				t.Errorf("Changes = %d, want the plan's 46", res.Changes)
			}
			j, err := store.Load(res.JournalID)
			if err != nil || j.State != tc.state {
				t.Fatalf("journal %s: %v, state %v, want %s", res.JournalID, err, j, tc.state)
			}
			var why string
			switch tc.outcome {
			case Failed:
				var ae *ApplyError
				if !errors.As(res.Failure, &ae) {
					t.Errorf("Failure %v is not an *ApplyError", res.Failure)
				}
				why = res.Failure.Error()
			case RolledBack:
				why = res.Reason
			}
			if !strings.Contains(why, tc.reason) || (tc.reason == "") != (why == "") {
				t.Errorf("reason %q, want %q", why, tc.reason)
			}
			rolledBack := tc.outcome == Failed || tc.outcome == RolledBack
			if rolledBack {
				if res.RollbackErr != nil || len(res.Restored) == 0 {
					t.Errorf("rollback: %v, restored %d", res.RollbackErr, len(res.Restored))
				}
				if sim.Config() != before {
					t.Error("the host is not as it was")
				}
			}
			if tc.outcome == ConfirmPending {
				if want := clock.Add(time.Hour); !res.Deadline.Equal(want) || !j.Deadline.Equal(want) || res.ArmedBy != "test timer" {
					t.Errorf("deadline %v (journal %v) by %q, want %v", res.Deadline, j.Deadline, res.ArmedBy, want)
				}
			}
		})
	}
}

// A confirm window: Recover refuses a new change while it is open, and
// RevertExpired acts only once its deadline has passed, then leaves the
// host as it was.
func TestConfirmDeadlineIsHonouredOnlyWhenPassed(t *testing.T) {
	clock := time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)
	pr, sim := prepared(t, nil)
	before := sim.Config()
	store := Store{Store: statedir.Store{Dir: t.TempDir()}}
	noSoak := time.Duration(0)
	res, err := Run(context.Background(), pr, RunOptions{Store: store, Soak: &noSoak, Confirm: time.Minute, Now: func() time.Time { return clock }})
	if err != nil || res.Outcome != ConfirmPending {
		t.Fatalf("Run: %v, %+v", err, res)
	}
	if _, err := Recover(pr.Host, store, false, clock); !errors.Is(err, ErrConfirmPending) {
		t.Errorf("Recover during the window: %v, want ErrConfirmPending", err)
	}
	if got, err := Recover(pr.Host, store, true, clock); err != nil || len(got) != 0 {
		t.Errorf("Recover allowing the pending window: %v, %d recovered", err, len(got))
	}
	if js, _ := Expired(store, clock); len(js) != 0 {
		t.Errorf("Expired before the deadline: %d", len(js))
	}
	if _, reverted, err := RevertExpired(pr.Host, store, res.JournalID, clock.Add(30*time.Second)); reverted || !errors.Is(err, ErrInConfirmWindow) {
		t.Fatalf("revert inside the window: reverted %v, %v", reverted, err)
	}
	late := clock.Add(2 * time.Minute)
	if js, _ := Expired(store, late); len(js) != 1 || js[0].ID != res.JournalID {
		t.Errorf("Expired after the deadline: %v", js)
	}
	j, reverted, err := RevertExpired(pr.Host, store, res.JournalID, late)
	if err != nil || !reverted || j.State != StateRolledBack {
		t.Fatalf("revert after the deadline: reverted %v, %v, %v", reverted, err, j)
	}
	if sim.Config() != before {
		t.Error("the host is not as it was after the revert")
	}
	// Settled: a second revert (the timer and the agent both fire) does
	// nothing.
	if _, reverted, err := RevertExpired(pr.Host, store, res.JournalID, late); reverted || err != nil {
		t.Errorf("second revert: %v, %v", reverted, err)
	}
}

// An apply that died before it was finished (its journal still "applying") is rolled
// back by the next Recover, and reported as not expired.
func TestRecoverRestoresAnUnfinishedApply(t *testing.T) {
	pr, sim := prepared(t, nil)
	before := sim.Config()
	store := Store{Store: statedir.Store{Dir: t.TempDir()}}
	txn, err := Begin(pr.Host, pr.Desired, pr.Plan, pr.Profile.Hash, Options{Store: store, Retries: 1})
	if err != nil {
		t.Fatal(err)
	}
	// Every write done, the journal as saved before the first one: a
	// process killed before Finish.
	if err := txn.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	if sim.Config() == before {
		t.Fatal("the partial apply changed nothing")
	}
	got, err := Recover(pr.Host, store, false, time.Now())
	if err != nil || len(got) != 1 || got[0].Expired || got[0].Journal.ID != txn.J.ID || got[0].Journal.State != StateRolledBack {
		t.Fatalf("Recover: %v, %+v", err, got)
	}
	if sim.Config() != before {
		t.Error("the host is not as it was")
	}
}

// sigterm stands for cmd/rocectl's cause of a signal's cancellation.
type sigterm struct{}

func (sigterm) Error() string        { return "interrupted by signal SIGTERM" }
func (sigterm) Is(target error) bool { return target == context.Canceled }

// TestRunInterrupted: a cancelled context (SIGTERM) anywhere before the
// commit rolls the host back and fails with the signal named, in one line:
// during the writes, after them, and during the soak.
func TestRunInterrupted(t *testing.T) {
	noSoak, longSoak := time.Duration(0), time.Hour
	for _, tc := range []struct {
		name     string
		soak     *time.Duration
		atStep   int // cancel before this step; -1: once applied
		noVerify bool
	}{
		{name: "during the writes", soak: &noSoak, atStep: 2},
		{name: "after the writes", soak: &noSoak, atStep: -1, noVerify: true},
		{name: "during verification", soak: &noSoak, atStep: -1},
		{name: "during the soak", soak: &longSoak, atStep: -1, noVerify: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pr, sim := prepared(t, nil)
			before := sim.Config()
			store := Store{Store: statedir.Store{Dir: t.TempDir()}}
			ctx, cancel := context.WithCancelCause(context.Background())
			defer cancel(nil)
			opts := RunOptions{Store: store, Soak: tc.soak, NoVerify: tc.noVerify}
			if tc.atStep >= 0 {
				opts.BeforeStep = func(i int, _ host.Step) error {
					if i == tc.atStep {
						cancel(sigterm{})
					}
					return nil
				}
			} else {
				opts.Applied = func(*Result) { cancel(sigterm{}) }
			}
			res, err := Run(ctx, pr, opts)
			if err != nil {
				t.Fatal(err)
			}
			var ae *ApplyError
			if res.Outcome != Failed || !errors.As(res.Failure, &ae) || !ae.Interrupted() || !errors.Is(res.Failure, sigterm{}) {
				t.Fatalf("outcome %s, failure %v; want Failed by the signal", res.Outcome, res.Failure)
			}
			if msg := res.Failure.Error(); !strings.HasPrefix(msg, "interrupted by signal SIGTERM; host restored: ") || strings.Contains(msg, "\n") {
				t.Errorf("message %q", msg)
			}
			if sim.Config() != before {
				t.Error("kernel state not restored")
			}
			if j, err := store.Load(res.JournalID); err != nil || j.State != StateRolledBack {
				t.Errorf("journal: %v %v", j, err)
			}
		})
	}
}

// An agent probe holds the traffic lock: an apply waits for it and, when
// the probe does not end in time, writes nothing and names the holder;
// once the probe ends, the apply runs.
func TestRunWaitsForTestTrafficToEnd(t *testing.T) {
	pr, sim := prepared(t, nil)
	before := sim.Config()
	store := Store{Store: statedir.Store{Dir: t.TempDir()}}
	noSoak := time.Duration(0)
	probe, err := store.TryTraffic("agent probe 10.0.0.2:18516")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err = Run(ctx, pr, RunOptions{Store: store, Soak: &noSoak})
	if err == nil || !strings.Contains(err.Error(), "test traffic is running on this host") || !strings.Contains(err.Error(), "agent probe 10.0.0.2:18516") {
		t.Fatalf("apply during a probe: %v", err)
	}
	if sim.Config() != before {
		t.Fatal("the apply wrote while a probe held the traffic lock")
	}
	if ids, _ := store.OpenIDs(); len(ids) != 0 {
		t.Fatalf("journals opened: %v", ids)
	}
	probe.Release()
	res, err := Run(context.Background(), pr, RunOptions{Store: store, Soak: &noSoak})
	if err != nil || res.Outcome != Committed {
		t.Fatalf("apply after the probe: %v, %+v", err, res)
	}
	if _, err := store.TryTraffic("next probe"); err != nil {
		t.Fatalf("the apply kept the traffic lock: %v", err)
	}
}
