package verify

import (
	"context"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/rocectl/rocectl/internal/testkit/fixturehost"
)

// fixtureStats is one port's `ethtool -S` of a fixture host (copied from
// the captures in /work/shared/fixtures, see each host's README).
func fixtureStats(t *testing.T, host, port string) map[string]uint64 {
	t.Helper()
	_, sim := fixturehost.Copy(t, host)
	st, err := sim.Stats(port)
	if err != nil {
		t.Fatal(err)
	}
	return st
}

func TestPauseCountersByDriver(t *testing.T) {
	type got struct {
		prio             int
		dir, frames, dur string
	}
	flatten := func(cs []PauseCounter) []got {
		var out []got
		for _, c := range cs {
			out = append(out, got{c.Priority, c.Direction, c.FramesName, c.DurationName})
		}
		return out
	}
	t.Run("bnxt_en: pfc_pri<p>_<dir>_duration_us for all eight, 802.3x frames only", func(t *testing.T) {
		cs := flatten(PauseCounters(fixtureStats(t, "bnxt-re-factory", "enp202s0f1np1")))
		if len(cs) != 18 {
			t.Fatalf("%d pause counters, want 8 priorities × 2 + global × 2: %v", len(cs), cs)
		}
		if cs[7] != (got{3, "tx", "tx_pfc_ena_frames_pri3", "pfc_pri3_tx_duration_us"}) {
			t.Errorf("priority 3 tx = %+v", cs[7])
		}
		if cs[16] != (got{GlobalPause, "rx", "rx_pause_frames", ""}) || cs[17] != (got{GlobalPause, "tx", "tx_pause_frames", ""}) {
			t.Errorf("global = %+v %+v", cs[16], cs[17])
		}
	})
	t.Run("mlx5 with global pause on: the global duration counters, not the 802.3 frames", func(t *testing.T) {
		cs := flatten(PauseCounters(fixtureStats(t, "cx6dx-ofed-factory", "ens1f0np0")))
		want := []got{{GlobalPause, "rx", "rx_global_pause", "rx_global_pause_duration"}, {GlobalPause, "tx", "tx_global_pause", "tx_global_pause_duration"}}
		if !slices.Equal(cs, want) {
			t.Errorf("got %+v, want %+v", cs, want)
		}
	})
	t.Run("mlx5 with PFC on 3: its counters and the 802.3 pause frames", func(t *testing.T) {
		cs := flatten(PauseCounters(fixtureStats(t, "cx6dx-ofed-lossless", "ens1f0np0")))
		want := []got{{3, "rx", "rx_prio3_pause", "rx_prio3_pause_duration"}, {3, "tx", "tx_prio3_pause", "tx_prio3_pause_duration"},
			{GlobalPause, "rx", "rx_pause_ctrl_phy", ""}, {GlobalPause, "tx", "tx_pause_ctrl_phy", ""}}
		if !slices.Equal(cs, want) {
			t.Errorf("got %+v, want %+v", cs, want)
		}
	})
	t.Run("ice: xoff frames (ice-e810-ethtool-S-grep-prio-intel-doc.txt)", func(t *testing.T) {
		cs := PauseCounters(map[string]uint64{"tx_priority_2_xon.nic": 2, "tx_priority_2_xoff.nic": 14864})
		if len(cs) != 1 || cs[0].Priority != 2 || cs[0].Direction != "tx" || cs[0].Frames != 14864 || cs[0].HasDuration {
			t.Errorf("got %+v", cs)
		}
	})
}

func TestCoverage(t *testing.T) {
	for _, tc := range []struct {
		name       string
		stats      map[string]uint64
		frameLimit bool
		why        string // "" = watched
	}{
		{"mlx5 before PFC is on: its durations come with it", fixtureStats(t, "cx6dx-ofed-factory", "ens1f0np0"), false, ""},
		{"bnxt_en", fixtureStats(t, "bnxt-re-factory", "enp202s0f1np1"), false, ""},
		{"veth: nothing", map[string]uint64{"peer_ifindex": 7, "rx_queue_0_xdp_packets": 0}, false, "no pause counters on p0"},
		{"ice without a frame limit", map[string]uint64{"rx_priority_3_xoff.nic": 0}, false, "no pause duration counters on p0"},
		{"ice with a frame limit", map[string]uint64{"rx_priority_3_xoff.nic": 0}, true, ""},
		{"storm events alone", map[string]uint64{"tx_pause_storm_warning_events ": 0}, false, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ok, why := CoverageOf(tc.stats).Watched("p0", tc.frameLimit)
			if ok != (tc.why == "") || !strings.HasPrefix(why, tc.why) {
				t.Errorf("watched %v %q, want %q", ok, why, tc.why)
			}
		})
	}
}

// A port sending 100 % global pause used to read "worst occupancy 0.00".
func TestGuardGlobalPauseStorm(t *testing.T) {
	_, sim := fixturehost.Copy(t, "cx6dx-ofed-factory")
	c := &fakeClock{now: time.Unix(1_700_000_000, 0)}
	onset := c.now.Add(time.Second)
	c.onTick = func(now time.Time, dt time.Duration) {
		if now.After(onset) {
			sim.AddStat("ens1f1np1", "tx_global_pause_duration", uint64(dt.Microseconds()))
			sim.AddStat("ens1f1np1", "tx_global_pause", 100)
			sim.AddStat("ens1f1np1", "tx_pause_ctrl_phy", 100)
		}
	}
	storm, _, err := Guard(context.Background(), sources(sim, "ens1f0np0", "ens1f1np1"), guardCfg(c))
	if err != nil || storm == nil {
		t.Fatalf("storm %v, err %v", storm, err)
	}
	if !storm.Global || storm.Port != "ens1f1np1" || !strings.Contains(storm.String(), "pause storm on ens1f1np1 global pause (tx)") {
		t.Errorf("storm = %q %+v", storm, storm)
	}
}

// A port the guard cannot watch says so, and the report carries every
// port's pause counters, global pause included, for metrics.
func TestGuardReportsUnwatchedPortsAndCounters(t *testing.T) {
	_, sim := fixturehost.Copy(t, "cx6dx-ofed-factory")
	c := &fakeClock{now: time.Unix(1_700_000_000, 0)}
	c.onTick = func(now time.Time, dt time.Duration) {
		sim.AddStat("ens1f0np0", "rx_global_pause_duration", uint64(dt.Microseconds()/4))
	}
	veth := CounterSource{Port: "veth0", Read: func() (map[string]uint64, error) { return map[string]uint64{"peer_ifindex": 3}, nil }}
	cfg := guardCfg(c)
	cfg.Soak = time.Second
	storm, rep, err := Guard(context.Background(), append(sources(sim, "ens1f0np0"), veth), cfg)
	if err != nil || storm != nil {
		t.Fatalf("storm %v err %v", storm, err)
	}
	if !slices.Equal(rep.NotWatched, []string{"no pause counters on veth0"}) {
		t.Errorf("not watched = %q", rep.NotWatched)
	}
	p := rep.Ports["ens1f0np0"]
	if p == nil || !p.Watched || p.WorstWhere != "global pause (rx)" || p.WorstOccupancy < 0.24 || p.WorstOccupancy > 0.26 {
		t.Fatalf("ens1f0np0 = %+v", p)
	}
	var rx *PauseCounter
	for i := range p.Counters {
		if c := &p.Counters[i]; c.Priority == GlobalPause && c.Direction == "rx" {
			rx = c
		}
	}
	if rx == nil || rx.DurationName != "rx_global_pause_duration" || rx.DurationUs < 250_000 {
		t.Errorf("rx global pause counter = %+v", rx)
	}
	if v := rep.Ports["veth0"]; v == nil || v.Watched || len(v.Counters) != 0 {
		t.Errorf("veth0 = %+v", v)
	}
}

// A counter reset during a test, or one that appeared during it (PFC
// turned on), has no known change: it is left out, never guessed.
func TestPauseDeltasLeaveOutResetAndNewCounters(t *testing.T) {
	before := map[string]uint64{"rx_prio3_pause": 100, "rx_prio3_pause_duration": 5000, "tx_prio3_pause": 7, "tx_prio3_pause_duration": 90}
	after := map[string]uint64{"rx_prio3_pause": 130, "rx_prio3_pause_duration": 6000, "tx_prio3_pause": 2, "tx_prio3_pause_duration": 10,
		"rx_prio4_pause": 5, "rx_prio4_pause_duration": 50}
	got := pauseDeltas("eth1", before, after)
	want := []PauseDelta{{Netdev: "eth1", PauseCounter: PauseCounter{Priority: 3, Direction: "rx", Frames: 30, DurationUs: 1000,
		FramesName: "rx_prio3_pause", DurationName: "rx_prio3_pause_duration", HasDuration: true}}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got %+v\nwant %+v", got, want)
	}
}

// Monotonic never takes a delta across a dip: a dip and return counts the
// true increase once (a bad read), a reset counts from zero once the next
// reading shows it, and a reading below the dip as well is held again.
func TestMonotonic(t *testing.T) {
	type step struct {
		v     uint64
		delta uint64
		kind  StepKind
	}
	for _, c := range []struct {
		name  string
		steps []step
	}{
		{"rise", []step{{100, 0, Rise}, {150, 50, Rise}, {150, 0, Rise}}},
		{"dip and return", []step{{1000, 0, Rise}, {10, 0, Dip}, {1010, 10, BadRead}, {1020, 10, Rise}}},
		{"dip and return to the same value", []step{{1000, 0, Rise}, {0, 0, Dip}, {1000, 0, BadRead}}},
		{"reset", []step{{5_000_000, 0, Rise}, {0, 0, Dip}, {300, 300, Reset}, {400, 100, Rise}}},
		{"reset with counts before the next poll", []step{{5_000_000, 0, Rise}, {200, 0, Dip}, {300, 300, Reset}}},
		{"below the dip too: held again, then a reset", []step{{5_000_000, 0, Rise}, {200, 0, Dip}, {50, 0, Dip}, {260, 260, Reset}}},
		{"two dips in a row, then back", []step{{1000, 0, Rise}, {10, 0, Dip}, {5, 0, Dip}, {1030, 30, BadRead}}},
	} {
		t.Run(c.name, func(t *testing.T) {
			var m Monotonic
			var total, want uint64
			for i, s := range c.steps {
				d, k := m.Next(s.v)
				if d != s.delta || k != s.kind {
					t.Errorf("reading %d (%d): delta %d kind %d, want %d kind %d", i, s.v, d, k, s.delta, s.kind)
				}
				total += d
				want += s.delta
			}
			if total != want {
				t.Errorf("total %d, want %d", total, want)
			}
		})
	}
}

// A 32-bit q counter (mlx5 out_of_sequence) just below 2^32 that reads
// just above 0 wrapped: counted across at once. A fall from anywhere else
// is still a reset (held, then counted from zero), and a counter not
// marked Wrap32 never wraps.
func TestMonotonicWrap32(t *testing.T) {
	const top = 1 << 32
	type step struct {
		v     uint64
		delta uint64
		kind  StepKind
	}
	for _, c := range []struct {
		name   string
		wrap32 bool
		steps  []step
	}{
		{"wrap", true, []step{{top - 6, 0, Rise}, {5, 11, Wrap}, {9, 4, Rise}}},
		{"reset from low", true, []step{{1000, 0, Rise}, {5, 0, Dip}, {7, 7, Reset}}},
		{"reset from above 2^32 (not a 32-bit value)", true, []step{{top + 10, 0, Rise}, {5, 0, Dip}, {7, 7, Reset}}},
		{"not wrap32: a reset", false, []step{{top - 6, 0, Rise}, {5, 0, Dip}, {9, 9, Reset}}},
		{"far past 0: a reset", true, []step{{top - 6, 0, Rise}, {1 << 25, 0, Dip}, {1<<25 + 1, 1<<25 + 1, Reset}}},
	} {
		t.Run(c.name, func(t *testing.T) {
			m := Monotonic{Wrap32: c.wrap32}
			for i, s := range c.steps {
				if d, k := m.Next(s.v); d != s.delta || k != s.kind {
					t.Errorf("reading %d (%d): delta %d kind %d, want %d kind %d", i, s.v, d, k, s.delta, s.kind)
				}
			}
		})
	}
	if !Wraps32("out_of_sequence") || Wraps32("np_cnp_sent") || Wraps32("oos_drop_count") {
		t.Error("Wraps32: mlx5 q counters only")
	}
}
