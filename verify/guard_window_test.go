package verify

import (
	"maps"
	"math/rand/v2"
	"strings"
	"testing"
	"time"
)

// stormFrom pauses without end from onset on, the counter running at rate
// × real time and read stale by stale(poll) (the Soft-RoCE lab's jitter).
func stormFrom(onset time.Duration, rate float64, stale func(i int) time.Duration) func(i int, t time.Duration) uint64 {
	return func(i int, t time.Duration) uint64 {
		t -= stale(i)
		if t <= onset {
			return 0
		}
		return uint64(rate * float64((t - onset).Microseconds()))
	}
}

// bursts pauses on for `on` out of every `period`, from start.
func bursts(start, on, period time.Duration, n int) func(i int, t time.Duration) uint64 {
	return func(_ int, t time.Duration) uint64 {
		var paused time.Duration
		for k := 0; k < n; k++ {
			b := start + time.Duration(k)*period
			if t > b {
				paused += min(t-b, on)
			}
		}
		return uint64(paused.Microseconds())
	}
}

func noStale(int) time.Duration { return 0 }

// TestDetectorWindowTable drives the Detector poll by poll with an
// injected clock (100 ms polls, detection_time 200 ms, 99 %): every storm
// is called within detection_time + one poll of its onset, nothing else
// is.
func TestDetectorWindowTable(t *testing.T) {
	const (
		poll   = 100 * time.Millisecond
		window = 200 * time.Millisecond
	)
	onset := 2*time.Second + 37*time.Millisecond // mid-poll
	// Lab jitter: the counter read up to 2 ms stale, running at 1.01 ×
	// wall time: per-poll occupancy 0.99-1.03 as measured in the lab.
	rng := rand.New(rand.NewPCG(1, 2))
	labStale := make([]time.Duration, 100)
	for i := range labStale {
		labStale[i] = time.Duration(rng.IntN(2000)) * time.Microsecond
	}
	// Alternating 0 / 1.5 ms staleness: every other poll reads 0.985.
	// The per-poll rule reset its count on each and never called it.
	alternating := func(i int) time.Duration { return time.Duration(i%2) * 1500 * time.Microsecond }

	for _, tc := range []struct {
		name string
		// counters returns the port's counters read at poll i, time t
		// from the start.
		counters  func(i int, t time.Duration) map[string]uint64
		frameRate float64
		want      string // "" = no storm; else a substring of Storm.String()
		global    bool
		from      time.Duration // when the storm is visible, if not at onset
	}{
		{name: "100% storm, lab jitter",
			counters: dur("rx_prio3_pause_duration", stormFrom(onset, 1.01, func(i int) time.Duration { return labStale[i] })),
			want:     "priority 3 (rx)"},
		{name: "100% storm, every other poll reads 0.985",
			counters: dur("rx_prio3_pause_duration", stormFrom(onset, 1, alternating)),
			want:     "priority 3 (rx)"},
		{name: "global 802.3x pause, mlx5 (tx_global_pause_duration)",
			counters: func(i int, t time.Duration) map[string]uint64 {
				d := stormFrom(onset, 1, noStale)(i, t)
				return map[string]uint64{"tx_global_pause_duration": d, "tx_global_pause": d / 10, "tx_pause_ctrl_phy": d / 10}
			},
			want: "global pause (tx)", global: true},
		{name: "bnxt_en pfc_pri3_rx_duration_us",
			counters: dur("pfc_pri3_rx_duration_us", stormFrom(onset, 1, noStale)),
			want:     "priority 3 (rx)"},
		{name: "ice: xoff frames only, above the frame-rate limit",
			counters: func(_ int, t time.Duration) map[string]uint64 {
				if t <= onset {
					return map[string]uint64{"rx_priority_3_xoff.nic": 0}
				}
				return map[string]uint64{"rx_priority_3_xoff.nic": uint64((t - onset).Milliseconds()) * 150} // 150k/s
			},
			frameRate: 100_000, want: "priority 3 (rx)"},
		{name: "storm continues across a counter reset",
			counters: func(i int, t time.Duration) map[string]uint64 {
				if t < onset+150*time.Millisecond {
					return map[string]uint64{"rx_prio3_pause_duration": 5_000_000 + stormFrom(onset, 1, noStale)(i, t)}
				}
				return map[string]uint64{"rx_prio3_pause_duration": stormFrom(onset+150*time.Millisecond, 1, noStale)(i, t)}
			},
			want: "priority 3 (rx)", from: onset + 150*time.Millisecond},

		{name: "50% occupancy, both directions",
			counters: func(_ int, t time.Duration) map[string]uint64 {
				h := uint64(t.Microseconds() / 2)
				return map[string]uint64{"rx_prio3_pause_duration": h, "tx_prio3_pause_duration": h}
			}},
		{name: "one 150 ms burst",
			counters: dur("rx_prio3_pause_duration", bursts(onset, 150*time.Millisecond, time.Hour, 1))},
		{name: "150 ms bursts every 300 ms",
			counters: dur("rx_prio3_pause_duration", bursts(onset, 150*time.Millisecond, 300*time.Millisecond, 10))},
		{name: "driver reload: 5,000,000 -> 0",
			counters: func(_ int, t time.Duration) map[string]uint64 {
				if t < onset {
					return map[string]uint64{"rx_prio3_pause_duration": 5_000_000, "rx_prio3_pause": 40_000}
				}
				return map[string]uint64{"rx_prio3_pause_duration": 0, "rx_prio3_pause": 0}
			},
			frameRate: 1000},
		{name: "firmware recovery: counters vanish, come back at 0",
			counters: func(_ int, t time.Duration) map[string]uint64 {
				switch {
				case t < onset:
					return map[string]uint64{"tx_global_pause_duration": 7_000_000_000}
				case t < onset+300*time.Millisecond:
					return map[string]uint64{}
				}
				return map[string]uint64{"tx_global_pause_duration": uint64((t - onset).Microseconds() / 10)}
			}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := NewDetector(GuardConfig{DetectionTime: window, MaxPauseOccupancy: 0.99, MaxPauseFramesPerSecond: tc.frameRate})
			t0 := time.Unix(1_700_000_000, 0)
			var storm *Storm
			for i := 0; i < 50 && storm == nil; i++ {
				at := time.Duration(i) * poll
				storm = d.Observe("p", t0.Add(at), tc.counters(i, at))
			}
			if tc.want == "" {
				if storm != nil {
					t.Fatalf("false storm: %v", storm)
				}
				return
			}
			if storm == nil {
				t.Fatalf("no storm (worst occupancy %.3f at %s)", d.Worst, d.WorstAt)
			}
			if !strings.Contains(storm.String(), tc.want) || storm.Global != tc.global {
				t.Errorf("storm %q (global %v), want %q", storm, storm.Global, tc.want)
			}
			// The window must start after the onset: detection_time after
			// the first poll past it at the latest.
			from := onset
			if tc.from != 0 {
				from = tc.from
			}
			if lag := storm.At.Sub(t0.Add(from)); lag < window-poll || lag > window+poll {
				t.Errorf("storm called %v after onset, want within %v-%v", lag, window-poll, window+poll)
			}
		})
	}
}

// dur is a port whose one duration counter follows p.
func dur(name string, p func(i int, t time.Duration) uint64) func(i int, t time.Duration) map[string]uint64 {
	return func(i int, t time.Duration) map[string]uint64 { return map[string]uint64{name: p(i, t)} }
}

// The detector keeps the samples it was given: a caller that reuses its
// map must not change them (Guard's sources return a fresh map).
func TestDetectorWindowIsBounded(t *testing.T) {
	d := NewDetector(GuardConfig{DetectionTime: 200 * time.Millisecond, MaxPauseOccupancy: 0.99})
	t0 := time.Unix(0, 0)
	st := map[string]uint64{"rx_prio3_pause_duration": 0}
	for i := 0; i < 1000; i++ {
		st["rx_prio3_pause_duration"] += 10_000
		d.Observe("p", t0.Add(time.Duration(i)*10*time.Millisecond), maps.Clone(st))
	}
	for k, s := range d.series {
		if len(s.samples) > 21 {
			t.Errorf("%v keeps %d samples for a 200 ms window at 10 ms polls", k, len(s.samples))
		}
	}
}

// SplitPort undoes SlavePort, and leaves a port under no bond as it is.
func TestSplitPort(t *testing.T) {
	for _, c := range []struct{ port, bond, netdev string }{
		{SlavePort("bond0", "ens1f0np0"), "bond0", "ens1f0np0"},
		{"ens1f0np0", "", "ens1f0np0"},
	} {
		if b, nd := SplitPort(c.port); b != c.bond || nd != c.netdev {
			t.Errorf("SplitPort(%q) = %q, %q; want %q, %q", c.port, b, nd, c.bond, c.netdev)
		}
	}
}
