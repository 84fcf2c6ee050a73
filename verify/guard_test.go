package verify

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/rocectl/rocectl/internal/testkit/fixturehost"
	"github.com/rocectl/rocectl/nic/nictest"
)

// fakeClock drives Guard without sleeping: each Sleep advances time and
// runs the test's script, which moves the counters like a NIC would.
type fakeClock struct {
	now    time.Time
	onTick func(now time.Time, dt time.Duration)
}

func (c *fakeClock) Now() time.Time { return c.now }
func (c *fakeClock) Sleep(_ context.Context, d time.Duration) error {
	c.now = c.now.Add(d)
	if c.onTick != nil {
		c.onTick(c.now, d)
	}
	return nil
}

// lossless is a ConnectX-6 Dx fixture host after the recipe: its simulated
// kernel carries mlx5's per-priority pause counters for priority 3.
func lossless(t testing.TB) *nictest.Sim {
	t.Helper()
	_, sim := fixturehost.Copy(t, "cx6dx-ofed-lossless")
	st := sim.State().Links["ens1f0np0"].Stats
	for _, name := range nictest.MLX5PrioPauseCounters(3) {
		if _, ok := st[name]; !ok {
			t.Fatalf("fixture has no %s: the guard would have nothing to watch", name)
		}
	}
	return sim
}

func guardCfg(c *fakeClock) GuardConfig {
	return GuardConfig{Soak: 10 * time.Second, Poll: 100 * time.Millisecond, DetectionTime: 200 * time.Millisecond,
		MaxPauseOccupancy: 0.99, Now: c.Now, Sleep: c.Sleep}
}

func sources(sim *nictest.Sim, ports ...string) []CounterSource {
	var out []CounterSource
	for _, p := range ports {
		p := p
		out = append(out, CounterSource{Port: p, Read: func() (map[string]uint64, error) { return sim.Stats(p) }})
	}
	return out
}

func TestGuardDetectsStormAfterDetectionTime(t *testing.T) {
	sim := lossless(t)
	c := &fakeClock{now: time.Unix(1_700_000_000, 0)}
	onset := c.now.Add(2 * time.Second)
	c.onTick = func(now time.Time, dt time.Duration) {
		if now.After(onset) {
			// Priority 3 paused the whole poll: the peer keeps sending
			// XOFF, as in a PFC storm (duration is µs).
			sim.AddStat("ens1f0np0", "rx_prio3_pause_duration", uint64(dt.Microseconds()))
			sim.AddStat("ens1f0np0", "rx_prio3_pause", uint64(dt.Milliseconds())*150)
		}
	}
	storm, _, err := Guard(context.Background(), sources(sim, "ens1f0np0", "ens1f1np1"), guardCfg(c))
	if err != nil {
		t.Fatal(err)
	}
	if storm == nil {
		t.Fatal("no storm detected")
	}
	if storm.Port != "ens1f0np0" || storm.Priority != 3 || storm.Direction != "rx" || storm.Occupancy < 0.99 {
		t.Fatalf("storm = %+v", storm)
	}
	// SONiC's rule: declared once paused polls add up to the detection
	// time, not at the first paused poll.
	if lag := storm.At.Sub(onset); lag < 200*time.Millisecond || lag > 400*time.Millisecond {
		t.Errorf("storm declared %v after onset, want 200-400ms", lag)
	}
	if !strings.Contains(storm.String(), "priority 3 (rx)") {
		t.Errorf("report %q does not name priority and direction", storm)
	}
}

func TestGuardBusyButHealthyLinkIsNotAStorm(t *testing.T) {
	sim := lossless(t)
	c := &fakeClock{now: time.Unix(1_700_000_000, 0)}
	c.onTick = func(now time.Time, dt time.Duration) {
		// Paused half of every poll, in both directions: congested, alive.
		sim.AddStat("ens1f0np0", "rx_prio3_pause_duration", uint64(dt.Microseconds()/2))
		sim.AddStat("ens1f0np0", "tx_prio3_pause_duration", uint64(dt.Microseconds()/2))
		sim.AddStat("ens1f0np0", "rx_prio3_pause", 1000)
	}
	storm, rep, err := Guard(context.Background(), sources(sim, "ens1f0np0"), guardCfg(c))
	if err != nil || storm != nil {
		t.Fatalf("storm %v err %v on a healthy link", storm, err)
	}
	if rep.Polls < 100 || rep.WorstOccupied < 0.49 || rep.WorstOccupied > 0.51 {
		t.Errorf("report %+v: want ~100 polls and worst occupancy 0.5", rep)
	}
}

func TestGuardIgnoresCountersThatAppearOrVanish(t *testing.T) {
	sim := lossless(t)
	c := &fakeClock{now: time.Unix(1_700_000_000, 0)}
	polls := 0
	c.onTick = func(now time.Time, dt time.Duration) {
		polls++
		switch polls {
		case 5:
			// PFC turned off on 3: mlx5 removes its counters...
			for _, n := range nictest.MLX5PrioPauseCounters(3) {
				sim.DelStat("ens1f0np0", n)
			}
		case 6:
			// ...and on again: they come back with large fresh values.
			sim.SetStat("ens1f0np0", "rx_prio3_pause_duration", 9_000_000_000)
			sim.SetStat("ens1f0np0", "rx_prio3_pause", 1)
		}
	}
	// One poll is enough to trip here, so a counter that reappears with a
	// large value would be a storm if it were read as a jump.
	cfg := guardCfg(c)
	cfg.DetectionTime = cfg.Poll
	storm, _, err := Guard(context.Background(), sources(sim, "ens1f0np0"), cfg)
	if err != nil || storm != nil {
		t.Fatalf("false alarm on a counter set change: %v %v", storm, err)
	}
}

// The counters are 64-bit: a value below the last one is a reset (driver
// reload, firmware recovery), not a 32-bit wrap, and the window starts over.
func TestGuardCounterDecreaseIsAResetNotAWrap(t *testing.T) {
	for _, tc := range []struct {
		name       string
		before, at uint64
	}{
		{"below 2^32", 0xffff_ff00, 0xff},
		{"driver reload during a soak", 5_000_000, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := NewDetector(GuardConfig{DetectionTime: 100 * time.Millisecond, MaxPauseOccupancy: 0.99})
			t0 := time.Unix(0, 0)
			d.Observe("p", t0, map[string]uint64{"rx_prio3_pause_duration": tc.before})
			// Read as a 32-bit wrap, 5,000,000 -> 0 was 4,289,967,296 µs in
			// 100 ms: "occupancy 21210" and a rollback of a healthy apply.
			if s := d.Observe("p", t0.Add(100*time.Millisecond), map[string]uint64{"rx_prio3_pause_duration": tc.at}); s != nil {
				t.Fatalf("reset read as a storm: %v", s)
			}
			if d.Worst != 0 {
				t.Errorf("occupancy across the reset = %v, want none measured", d.Worst)
			}
			// From the new baseline the counter is measured again: 10 ms
			// of pause in the next 100 ms.
			if s := d.Observe("p", t0.Add(200*time.Millisecond), map[string]uint64{"rx_prio3_pause_duration": tc.at + 10_000}); s != nil {
				t.Fatal(s)
			}
			if d.Worst < 0.099 || d.Worst > 0.101 {
				t.Errorf("occupancy after the reset = %v, want 0.10", d.Worst)
			}
		})
	}
}

func TestGuardNICStormEventTrips(t *testing.T) {
	sim := lossless(t)
	if _, ok := sim.State().Links["ens1f0np0"].Stats["tx_pause_storm_error_events"]; !ok {
		t.Skip("fixture lacks tx_pause_storm_error_events")
	}
	c := &fakeClock{now: time.Unix(1_700_000_000, 0)}
	n := 0
	c.onTick = func(time.Time, time.Duration) {
		if n++; n == 3 {
			sim.AddStat("ens1f1np1", "tx_pause_storm_error_events", 1)
		}
	}
	storm, _, _ := Guard(context.Background(), sources(sim, "ens1f0np0", "ens1f1np1"), guardCfg(c))
	if storm == nil || storm.Port != "ens1f1np1" || storm.Priority != -1 || !strings.Contains(storm.Reason, "tx_pause_storm_error_events") {
		t.Fatalf("storm = %+v", storm)
	}
}

func TestGuardFrameRateLimit(t *testing.T) {
	sim := lossless(t)
	c := &fakeClock{now: time.Unix(1_700_000_000, 0)}
	c.onTick = func(now time.Time, dt time.Duration) {
		sim.AddStat("ens1f0np0", "tx_prio3_pause", 50_000) // 500k frames/s, little pause time
		sim.AddStat("ens1f0np0", "tx_prio3_pause_duration", 100)
	}
	cfg := guardCfg(c)
	cfg.MaxPauseFramesPerSecond = 100_000
	storm, _, _ := Guard(context.Background(), sources(sim, "ens1f0np0"), cfg)
	if storm == nil || storm.Direction != "tx" || storm.FrameRate < 400_000 {
		t.Fatalf("storm = %+v", storm)
	}
}

// Benchmark: one poll of the detector over a 64-port host's worth of mlx5
// counter sets (the work done every 100-200 ms during a soak).
func BenchmarkDetectorPoll64Ports(b *testing.B) {
	sim := lossless(b)
	base, _ := sim.Stats("ens1f0np0")
	d := NewDetector(GuardConfig{DetectionTime: 200 * time.Millisecond, MaxPauseOccupancy: 0.99})
	t0 := time.Unix(0, 0)
	ports := make([]string, 64)
	for i := range ports {
		ports[i] = "p" + string(rune('a'+i%26)) + string(rune('a'+i/26))
	}
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		now := t0.Add(time.Duration(i) * 100 * time.Millisecond)
		base["rx_prio3_pause_duration"] += 1000
		for _, p := range ports {
			d.Observe(p, now, base)
		}
	}
}

// A pause counter that dips for one poll and comes back is one bad read:
// no delta is taken across it (from the dip back up it read as
// "occupancy 24.6" and rolled back a healthy apply), no storm, and the
// bad sample is counted in the report.
func TestGuardDipAndReturnIsABadSampleNotAStorm(t *testing.T) {
	c := &fakeClock{now: time.Unix(1_700_000_000, 0)}
	var v uint64 = 5_000_000
	i := 0
	read := func() (map[string]uint64, error) {
		i++
		// 10 % paused; poll 20 reads 0 once.
		v += 10_000
		if i == 20 {
			return map[string]uint64{"rx_prio3_pause_duration": 0, "rx_prio3_pause": 0}, nil
		}
		return map[string]uint64{"rx_prio3_pause_duration": v, "rx_prio3_pause": v / 10}, nil
	}
	cfg := guardCfg(c)
	cfg.MaxPauseFramesPerSecond = 100_000
	storm, rep, err := Guard(context.Background(), []CounterSource{{Port: "p0", Read: read}}, cfg)
	if err != nil || storm != nil {
		t.Fatalf("dip and return: storm %v, err %v", storm, err)
	}
	if rep.WorstOccupied > 0.11 {
		t.Errorf("worst occupancy %.2f, want 0.10: the dip leaked into a window", rep.WorstOccupied)
	}
	if rep.BadSamples != 1 || rep.Ports["p0"].BadSamples != 1 {
		t.Errorf("bad samples %d (port %d), want 1", rep.BadSamples, rep.Ports["p0"].BadSamples)
	}
}

// A dip in the middle of a real storm does not hide it: the window goes
// on from before the dip, and the storm is called.
func TestGuardStormDetectedAcrossADip(t *testing.T) {
	d := NewDetector(GuardConfig{DetectionTime: 200 * time.Millisecond, MaxPauseOccupancy: 0.99})
	t0 := time.Unix(0, 0)
	var storm *Storm
	for i := 0; i < 10 && storm == nil; i++ {
		v := uint64(1_000_000 + i*100_000) // 100 % paused
		if i == 2 {
			v = 7
		}
		storm = d.Observe("p", t0.Add(time.Duration(i)*100*time.Millisecond), map[string]uint64{"rx_prio3_pause_duration": v})
	}
	if storm == nil {
		t.Fatal("storm hidden by a dip")
	}
	// Windows from poll 0 to 2 would need poll 2; skipping the dip, the
	// window 1..3 is whole at poll 3.
	if want := t0.Add(300 * time.Millisecond); !storm.At.Equal(want) {
		t.Errorf("storm at %v, want %v", storm.At.Sub(t0), want.Sub(t0))
	}
}

// Occupancy well above 1 (more pause than time) is a bad sample, never a
// storm, whatever the threshold: counted, and the window starts over.
func TestDetectorImpossibleOccupancyIsABadSample(t *testing.T) {
	d := NewDetector(GuardConfig{DetectionTime: 100 * time.Millisecond, MaxPauseOccupancy: 0.99})
	t0 := time.Unix(0, 0)
	for i, v := range []uint64{0, 10_000, 2_470_000, 2_480_000, 2_490_000} {
		if s := d.Observe("p", t0.Add(time.Duration(i)*100*time.Millisecond), map[string]uint64{"rx_prio3_pause_duration": v}); s != nil {
			t.Fatalf("poll %d: %v", i, s)
		}
	}
	rep := &GuardReport{Discards: map[string]uint64{}}
	d.report(rep)
	if rep.BadSamples != 1 {
		t.Errorf("bad samples %d, want 1", rep.BadSamples)
	}
	if rep.WorstOccupied > 0.11 {
		t.Errorf("worst occupancy %.2f, want 0.10: the bad sample counted", rep.WorstOccupied)
	}
}

// A storm-event counter that dips and comes back is no new event.
func TestGuardStormEventDipIsNoEvent(t *testing.T) {
	d := NewDetector(GuardConfig{DetectionTime: 100 * time.Millisecond, MaxPauseOccupancy: 0.99})
	t0 := time.Unix(0, 0)
	for i, v := range []uint64{5, 5, 0, 5, 5} {
		if s := d.Observe("p", t0.Add(time.Duration(i)*100*time.Millisecond), map[string]uint64{"tx_pause_storm_error_events": v, "rx_discards_phy": v * 10}); s != nil {
			t.Fatalf("poll %d: %v", i, s)
		}
	}
	rep := &GuardReport{Discards: map[string]uint64{}}
	d.report(rep)
	if len(rep.Discards) != 0 {
		t.Errorf("discards %v after a dip and return, want none", rep.Discards)
	}
}
