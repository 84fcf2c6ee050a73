package apply

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/rocectl/rocectl/verify"
)

// On a RoCE LAG the guard reads each slave's counters (the bond has none)
// and calls a storm on one slave a storm, named "bond0/<slave>".
func TestLAGGuardWatchesEachSlave(t *testing.T) {
	r := topoRig(t, "cx5-roce-lag", lagProfile)
	for _, nd := range []string{"ens1f0np0", "ens1f1np1"} {
		// PFC on priority 3, as after the apply: mlx5 creates the
		// priority's pause counters.
		if err := r.sim.SetPFC(nd, pfcWith(t, r.sim, nd, 1<<3)); err != nil {
			t.Fatal(err)
		}
	}
	pr := &Prepared{Host: r.h, Desired: r.d}
	src := CounterSources(pr)
	var names []string
	for _, s := range src {
		names = append(names, s.Port)
	}
	if want := []string{"bond0/ens1f0np0", "bond0/ens1f1np1"}; !slices.Equal(names, want) {
		t.Fatalf("counter sources %q, want %q", names, want)
	}

	now := time.Unix(1_700_000_000, 0)
	stormOn := ""
	cfg := verify.GuardConfig{Soak: 2 * time.Second, Poll: 100 * time.Millisecond, DetectionTime: 300 * time.Millisecond,
		MaxPauseOccupancy: 0.99, Now: func() time.Time { return now },
		Sleep: func(_ context.Context, d time.Duration) error {
			now = now.Add(d)
			if stormOn != "" {
				// The switch keeps one slave's priority 3 paused.
				r.sim.AddStat(stormOn, "rx_prio3_pause_duration", uint64(d.Microseconds()))
				r.sim.AddStat(stormOn, "rx_prio3_pause", 100)
			}
			return nil
		}}

	storm, rep, err := verify.Guard(context.Background(), src, cfg)
	if err != nil || storm != nil {
		t.Fatalf("quiet LAG: storm %v, err %v", storm, err)
	}
	for _, n := range names {
		if w := rep.Ports[n]; w == nil || !w.Watched {
			t.Errorf("quiet LAG: %s not watched (report %+v, not watched %q)", n, rep.Ports, rep.NotWatched)
		}
	}
	if len(rep.ReadErrors) != 0 {
		t.Errorf("read errors %v: the bond's own (absent) counters were read", rep.ReadErrors)
	}

	stormOn = "ens1f1np1"
	storm, _, err = verify.Guard(context.Background(), src, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if storm == nil || storm.Port != "bond0/ens1f1np1" || storm.Priority != 3 || storm.Direction != "rx" {
		t.Fatalf("storm on one slave: %+v, want priority 3 rx on bond0/ens1f1np1", storm)
	}
	if b, nd := verify.SplitPort(storm.Port); b != "bond0" || nd != "ens1f1np1" {
		t.Errorf("SplitPort(%q) = %q, %q", storm.Port, b, nd)
	}
}
