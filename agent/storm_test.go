package agent

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/rocectl/rocectl/apply"
	"github.com/rocectl/rocectl/host"
	"github.com/rocectl/rocectl/internal/testkit/fixturehost"
	"github.com/rocectl/rocectl/nic"
	"github.com/rocectl/rocectl/policy"
	"github.com/rocectl/rocectl/statedir"
	"github.com/rocectl/rocectl/verify"
)

// The agent's storm states from its counter poll, on a fake clock (the
// polls' times are given): the simulated mlx5 port pauses priority 3 for
// every whole poll, is stormed at the first whole window, and is restored
// once its counter has been quiet for the restoration time. The metrics
// say so, per port, with counts and times.
func TestAgentStormStatesFromPoll(t *testing.T) {
	h, sim, _ := simHost(t)
	g := policy.GuardSpec{Poll: 200 * time.Millisecond, DetectionTime: 200 * time.Millisecond, MaxPauseOccupancy: 0.99}
	st := &state{applies: map[string]int{}, storms: map[string]int{}, ports: simPorts, storm: newStorms(g)}
	ctrs := newCounters(h, discardLog())
	ctrs.storm = st.storm
	c := newCollector(st, ctrs, "dev", "")
	dev := map[string]string{"device": "ens1f0np0"}
	stateOf := func(s string) map[string]string { return map[string]string{"device": "ens1f0np0", "state": s} }

	t0 := time.Date(2026, 12, 4, 4, 0, 0, 0, time.UTC)
	var dur uint64 = 771103810
	sim.SetStat("ens1f0np0", "rx_prio3_pause_duration", dur)
	poll := func(i int, paused time.Duration) {
		dur += uint64(paused.Microseconds())
		sim.SetStat("ens1f0np0", "rx_prio3_pause_duration", dur)
		ctrs.poll(simPorts, t0.Add(time.Duration(i)*200*time.Millisecond))
	}
	poll(0, 0)
	if got := value(t, c, "rocectl_storm_state", stateOf("operational")); got != 1 {
		t.Fatalf("before the storm: operational = %v", got)
	}
	poll(1, 200*time.Millisecond)
	if got := value(t, c, "rocectl_storm_state", stateOf("stormed")); got != 1 {
		t.Fatalf("after a whole window paused: stormed = %v", got)
	}
	if got := value(t, c, "rocectl_storm_last_detected_timestamp_seconds", dev); got != unixSeconds(t0.Add(200*time.Millisecond)) {
		t.Errorf("detected at %v", got)
	}
	// Quiet from poll 2; restored one restoration time after the last
	// hot poll (1), not before.
	last := 1 + int(verify.DefaultRestorationTime/(200*time.Millisecond))
	for i := 2; i < last; i++ {
		poll(i, 0)
		if got := value(t, c, "rocectl_storm_state", stateOf("stormed")); got != 1 {
			t.Fatalf("poll %d: restored %v early", i, time.Duration(i-1)*200*time.Millisecond)
		}
	}
	poll(last, 0)
	for name, want := range map[string]float64{
		"rocectl_storms_detected_total":                 1,
		"rocectl_storms_restored_total":                 1,
		"rocectl_storm_restoration_seconds":             verify.DefaultRestorationTime.Seconds(),
		"rocectl_storm_detection_window_seconds":        0.2,
		"rocectl_storm_last_restored_timestamp_seconds": unixSeconds(t0.Add(time.Duration(last) * 200 * time.Millisecond)),
	} {
		if got := value(t, c, name, dev); got != want {
			t.Errorf("%s = %v, want %v", name, got, want)
		}
	}
	if got := value(t, c, "rocectl_storm_state", stateOf("restored")); got != 1 {
		t.Errorf("restored = %v", got)
	}
	// The other port never stormed.
	if got := value(t, c, "rocectl_storms_detected_total", map[string]string{"device": simPorts[1].Netdev}); got != 0 {
		t.Errorf("%s storms = %v", simPorts[1].Netdev, got)
	}
}

// After the guard rolled an apply back, the port is stormed and the loop
// applies nothing until the clock restores it: the rollback stopped the
// PFC counters, so they are not what decides.
func TestAgentHoldsAppliesWhileStormed(t *testing.T) {
	s := newStorms(policy.GuardSpec{Poll: 200 * time.Millisecond, DetectionTime: 200 * time.Millisecond, MaxPauseOccupancy: 0.99})
	at := time.Date(2026, 12, 4, 4, 0, 0, 0, time.UTC)
	s.trip(&verify.Storm{Port: "ens1f0np0", Priority: 3, Direction: "rx", Paused: 200 * time.Millisecond, At: at}, true)
	// The frozen counter reads quiet: not a restore.
	for i := range 10 {
		s.observe("ens1f0np0", at.Add(time.Duration(i+1)*time.Second), map[string]uint64{"rx_prio3_pause_duration": 5}, nil)
	}
	if ports, until := s.held(at.Add(59 * time.Second)); len(ports) != 1 || !until.Equal(at.Add(time.Minute)) {
		t.Fatalf("held %v until %v, want ens1f0np0 until +1m", ports, until)
	}
	if ports, _ := s.held(at.Add(time.Minute)); len(ports) != 0 {
		t.Fatalf("still held at +1m: %v", ports)
	}
	if st := s.state("ens1f0np0"); st.State != verify.Restored || st.RestorationTime != time.Minute {
		t.Errorf("state %+v", st)
	}
}

// Pause over the daemon's interval and "throttled with no drops": 802.3x
// global pause sent a fifth of each second (the txpause case), every
// discard counter flat: throttled. A discard in the next interval: not.
// The ratio is the pause-time delta over the poll's interval.
func TestAgentThrottledNoDrops(t *testing.T) {
	h, sim, _ := simHost(t)
	st := &state{applies: map[string]int{}, storms: map[string]int{}, ports: simPorts}
	ctrs := newCounters(h, discardLog())
	c := newCollector(st, ctrs, "dev", "")
	sim.SetStat("ens1f0np0", "tx_global_pause_duration", 771103810)
	t0 := time.Date(2026, 12, 4, 4, 0, 0, 0, time.UTC)
	ctrs.poll(simPorts, t0)
	if got := value(t, c, "rocectl_throttled_no_drops", map[string]string{"device": "ens1f0np0"}); got != -1 {
		t.Errorf("first poll: throttled %v, want no series (no interval yet)", got)
	}
	sim.AddStat("ens1f0np0", "tx_global_pause_duration", 200_000)
	ctrs.poll(simPorts, t0.Add(time.Second))
	ratio := map[string]string{"device": "ens1f0np0", "priority": "global", "direction": "tx"}
	if got := value(t, c, "rocectl_pause_time_ratio", ratio); got != 0.2 {
		t.Errorf("pause ratio %v, want 0.2", got)
	}
	for dev, want := range map[string]float64{"ens1f0np0": 1, "ens1f1np1": 0} {
		if got := value(t, c, "rocectl_throttled_no_drops", map[string]string{"device": dev}); got != want {
			t.Errorf("%s throttled %v, want %v", dev, got, want)
		}
	}
	sim.AddStat("ens1f0np0", "tx_global_pause_duration", 200_000)
	sim.AddStat("ens1f0np0", "rx_discards_phy", 3)
	ctrs.poll(simPorts, t0.Add(2*time.Second))
	if got := value(t, c, "rocectl_throttled_no_drops", map[string]string{"device": "ens1f0np0"}); got != 0 {
		t.Errorf("with discards: throttled %v, want 0", got)
	}
}

// The loop holds an enforce-mode apply while a port is stormed after the
// guard rolled back (the drift is real: the rollback restored it), says
// so once per check, and applies again once the port is restored.
func TestEnforceHeldWhileStormed(t *testing.T) {
	t.Setenv("NOTIFY_SOCKET", "")
	root, sim := fixturehost.Copy(t, "cx6dx-ofed-factory")
	prof := filepath.Join(t.TempDir(), "p.toml")
	// The guard on (a profile with it off asks for no storm reactions),
	// no soak (the test's apply would wait a minute).
	body := fmt.Sprintf("include = [%q]\n[guard]\nsoak = \"0s\"\n", profile("connectx-lossless.toml"))
	if err := os.WriteFile(prof, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	var logs logBuffer
	h := &host.Host{FS: nic.NewFS(root, false), K: sim}
	cfg := Config{Profile: prof, Enforce: true, Once: true, Host: h, Store: apply.Store{Store: statedir.Store{Dir: t.TempDir()}}, Log: logs.logger()}
	l := newLoop(cfg)
	l.st.storm = newStorms(policy.GuardSpec{Poll: 200 * time.Millisecond, DetectionTime: 200 * time.Millisecond, MaxPauseOccupancy: 0.99})
	// A storm the guard rolled back, detected now: restored a minute on.
	l.st.storm.trip(&verify.Storm{Port: "ens1f0np0", Priority: 3, Direction: "rx", At: time.Now()}, true)
	if err := l.check(context.Background(), "interval"); err != nil {
		t.Fatal(err)
	}
	if n := len(logs.records(t, "apply")); n != 0 || l.st.applies["applied"] != 0 {
		t.Fatalf("applied while stormed: %d apply lines, %v", n, l.st.applies)
	}
	held := logs.records(t, "drift: apply held while a port is stormed")
	if len(held) != 1 || held[0]["ports"] != "ens1f0np0" {
		t.Fatalf("held lines %v", held)
	}
	// Restored (the clock moved past the restoration time): the next
	// check applies.
	l.st.storm.tick(time.Now().Add(verify.DefaultRestorationTime))
	if err := l.check(context.Background(), "interval"); err != nil {
		t.Fatal(err)
	}
	if l.st.applies["applied"] != 1 {
		t.Errorf("after the restore: applies %v, want one applied", l.st.applies)
	}

	// With the guard off in the profile, a stormed port holds nothing.
	if err := os.WriteFile(prof, []byte(fmt.Sprintf("include = [%q]\n[guard]\nenabled = false\n", profile("connectx-lossless.toml"))), 0o600); err != nil {
		t.Fatal(err)
	}
	root2, sim2 := fixturehost.Copy(t, "cx6dx-ofed-factory")
	l.cfg.Host = &host.Host{FS: nic.NewFS(root2, false), K: sim2}
	l.lastApply = time.Time{}
	l.st.storm.trip(&verify.Storm{Port: "ens1f0np0", Priority: 3, Direction: "rx", At: time.Now()}, true)
	if err := l.check(context.Background(), "interval"); err != nil {
		t.Fatal(err)
	}
	if l.st.applies["applied"] != 2 {
		t.Errorf("guard off: applies %v, want the second applied", l.st.applies)
	}
}

// mlx5's q counters are 32-bit in firmware: out_of_sequence wrapping past
// 2^32 adds what was counted across the wrap; np_cnp_sent (64-bit) falling
// the same way is a reset, held a poll and counted from zero.
func TestRDMATotalsAcrossA32BitWrap(t *testing.T) {
	h, _, root := simHost(t)
	ctrs := newCounters(h, discardLog())
	c := newCollector(&state{applies: map[string]int{}, storms: map[string]int{}}, ctrs, "dev", "")
	lbl := map[string]string{"device": "ens1f0np0", "rdma_device": "mlx5_0", "port": "1"}
	at := time.Date(2026, 12, 4, 4, 0, 0, 0, time.UTC)
	for i, s := range []struct {
		oos, cnp       uint64
		wantOOS, wantC float64
	}{
		{1<<32 - 6, 1<<32 - 6, 1<<32 - 6, 1<<32 - 6},
		{5, 5, 1<<32 + 5, 1<<32 - 6}, // oos wrapped (+11); cnp fell: held
		{9, 9, 1<<32 + 9, 1<<32 + 3}, // cnp: a reset, 9 since
	} {
		setHWCounter(t, root, "mlx5_0", "out_of_sequence", s.oos)
		setHWCounter(t, root, "mlx5_0", "np_cnp_sent", s.cnp)
		ctrs.poll(simPorts, at.Add(time.Duration(i)*time.Second))
		if got := value(t, c, "rocectl_rdma_out_of_sequence_packets_total", lbl); got != s.wantOOS {
			t.Errorf("poll %d: out of sequence %v, want %v", i, got, s.wantOOS)
		}
		if got := value(t, c, "rocectl_cnp_sent_total", lbl); got != s.wantC {
			t.Errorf("poll %d: CNPs sent %v, want %v", i, got, s.wantC)
		}
	}
}
