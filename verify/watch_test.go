package verify

import (
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/rocectl/rocectl/internal/testkit/fixturehost"
	"github.com/rocectl/rocectl/nic"
	"github.com/rocectl/rocectl/nic/nictest"
	"github.com/rocectl/rocectl/port"
)

// watchT0 is the scripted clock's start; UTC, so that the head line's
// clock time does not depend on the machine's zone.
var watchT0 = time.Date(2025, 3, 4, 5, 6, 7, 0, time.UTC)

// watchSim is a fixture host on a simulated kernel, its tree in a
// temporary root, with a sampler of ports whose clock the test sets.
type watchSim struct {
	t    *testing.T
	sim  *nictest.Sim
	root string
	s    *Sampler
	now  time.Time
}

func newSim(t *testing.T, fixture string, ports ...port.Port) *watchSim {
	root, sim := fixturehost.Copy(t, fixture)
	fs := nic.NewFS(root, false)
	w := &watchSim{t: t, sim: sim, root: root, now: watchT0}
	w.s = &Sampler{K: sim, FS: &fs, Sources: Sources(ports), Link: true, Now: func() time.Time { return w.now }}
	return w
}

// newWatchSim is the configured ConnectX-6 Dx host (PFC on priority 3).
func newWatchSim(t *testing.T) *watchSim {
	return newSim(t, "cx6dx-ofed-lossless", port.Port{Netdev: "ens1f0np0", RDMADevice: "mlx5_0", PortNum: 1},
		port.Port{Netdev: "ens1f1np1", RDMADevice: "mlx5_1", PortNum: 1})
}

// hw adds to an RDMA port counter as the driver's sysfs file shows it.
func (w *watchSim) hw(dev, name string, delta uint64) {
	w.t.Helper()
	fixturehost.AddHWCounter(w.t, w.root, dev, name, delta)
}

// busyInterval is half a second of a congested port 0
// (fixturehost.CongestPort0).
func (w *watchSim) busyInterval() {
	w.now = w.now.Add(500 * time.Millisecond)
	fixturehost.CongestPort0(w.t, w.root, w.sim)
}

func fv(p *float64) any {
	if p == nil {
		return nil
	}
	return *p
}

// The rates of one interval, checked value by value against what the
// script put in: occupancy = duration delta / elapsed, frames/s, the
// reset, the cap, and "absent" where a counter is missing.
func TestRates(t *testing.T) {
	w := newWatchSim(t)
	w.sim.SetStat("ens1f1np1", "rx_prio3_pause", 100)
	prev := w.s.Sample()
	w.busyInterval()
	rep := Rates(prev, w.s.Sample())

	if rep.IntervalS != 0.5 || !rep.Time.Equal(watchT0.Add(500*time.Millisecond)) || rep.SchemaVersion != 1 {
		t.Fatalf("report head: %+v", rep)
	}
	p0, p1 := rep.Ports[0], rep.Ports[1]
	if p0.Netdev != "ens1f0np0" || p0.Link != "up" || p0.RDMADevice != "mlx5_0" || p0.Port != 1 {
		t.Fatalf("port 0: %+v", p0)
	}
	if len(p0.Priorities) != 1 || p0.Priorities[0].Priority != 3 {
		t.Fatalf("priorities: mlx5 has counters for its PFC priority 3 only: %+v", p0.Priorities)
	}
	pr := p0.Priorities[0]
	for _, c := range []struct {
		name      string
		got, want any
	}{
		{"rx pause %", fv(pr.RX.PausePct), 50.0},
		{"rx pause frames/s", fv(pr.RX.FramesPerS), 4000.0},
		{"rx pause frames", pr.RX.Frames, uint64(2000)},
		{"tx pause % (1.2 s in 0.5 s: capped)", fv(pr.TX.PausePct), 100.0},
		{"tx pause frames/s", fv(pr.TX.FramesPerS), 20.0},
		{"prio 3 rx discards/s", fv(pr.RXDiscardsPerS), 2.0},
		{"prio 3 buffer discards/s (no such counter here)", fv(pr.RXBufferDiscardsPerS), nil},
		{"global tx: 802.3 frames only, no %", fv(p0.GlobalPause.TX.PausePct), nil},
		{"global tx frames/s", fv(p0.GlobalPause.TX.FramesPerS), 6.0},
		{"cnp sent/s", fv(p0.CNPSentPerS), 3000.0},
		{"cnp handled/s", fv(p0.CNPHandledPerS), 24e6},
		{"ecn marked/s", fv(p0.ECNMarkedPerS), 3200.0},
		{"rx discards/s", fv(p0.RXDiscardsPerS), 10.0},
		{"tx discards/s", fv(p0.TXDiscardsPerS), 0.0},
		{"storm events new", *p0.StormEventsNew, uint64(1)},
		{"storm error total", *p0.StormErrorEvents, uint64(1)},
		{"port 1: reset counts what came since (7 in 0.5 s)", fv(p1.Priorities[0].RX.FramesPerS), 14.0},
		{"port 1 rx pause %", fv(p1.Priorities[0].RX.PausePct), 0.0},
	} {
		if c.got != c.want {
			t.Errorf("%s = %v, want %v", c.name, c.got, c.want)
		}
	}

	// A counter only the second sample has (mlx5 creates priority 4's
	// when PFC goes on there) shows its total, without a rate yet.
	prev = w.s.Sample()
	w.now = w.now.Add(time.Second)
	w.sim.SetStat("ens1f0np0", "rx_prio4_pause", 9)
	rep = Rates(prev, w.s.Sample())
	pr4 := rep.Ports[0].Priorities[1]
	if pr4.Priority != 4 || pr4.RX.Frames != 9 || pr4.RX.FramesPerS != nil || pr4.RX.PausePct != nil || pr4.TX != nil {
		t.Errorf("new priority 4: %+v rx %+v", pr4, pr4.RX)
	}
}

// statsFailing is a kernel whose ethtool -S fails on one netdev.
type statsFailing struct {
	nic.Kernel
	bad string
}

func (k statsFailing) Stats(ifname string) (map[string]uint64, error) {
	if ifname == k.bad {
		return nil, errors.New("ethtool -S: no such device")
	}
	return k.Kernel.Stats(ifname)
}

// A port whose counters cannot be read says why, with no rates; the
// next interval has totals only, its previous sample being no sample.
func TestRatesUnreadablePort(t *testing.T) {
	w := newWatchSim(t)
	prev := w.s.Sample()
	w.s.K = statsFailing{w.sim, "ens1f1np1"}
	w.now = w.now.Add(time.Second)
	cur := w.s.Sample()
	rep := Rates(prev, cur)
	if p := rep.Ports[1]; p.Error != "ethtool -S: no such device" || len(p.Priorities) != 0 || p.CNPSentPerS != nil {
		t.Fatalf("unreadable port: %+v", p)
	}
	w.s.K = w.sim
	w.now = w.now.Add(time.Second)
	rep = Rates(cur, w.s.Sample())
	if p := rep.Ports[1]; p.Error != "" || len(p.Priorities) != 1 || p.Priorities[0].RX.FramesPerS != nil || p.CNPSentPerS != nil {
		t.Fatalf("after an unreadable sample: %+v", p)
	}
}

// On a RoCE LAG the report has the bond's row (its link and the LAG device's
// CNP/ECN counters; a bond has no ethtool -S) and one row per slave with
// its pause, discards and storm events, named as the guard names it.
func TestRatesLAGShowsSlaves(t *testing.T) {
	w := newSim(t, "cx5-roce-lag", lagPort)
	sim := w.sim
	for _, nd := range []string{"ens1f0np0", "ens1f1np1"} {
		sim.SetStat(nd, "rx_prio3_pause", 0)
		sim.SetStat(nd, "rx_prio3_pause_duration", 0)
	}
	prev := w.s.Sample()
	w.now = w.now.Add(time.Second)
	sim.AddStat("ens1f1np1", "rx_prio3_pause", 3000)
	sim.AddStat("ens1f1np1", "rx_prio3_pause_duration", 400_000)
	sim.AddStat("ens1f0np0", "rx_discards_phy", 7)
	w.hw("mlx5_bond_0", "np_cnp_sent", 250)
	rep := Rates(prev, w.s.Sample())

	var names []string
	for _, p := range rep.Ports {
		names = append(names, p.Netdev)
	}
	if want := []string{"bond0", "ens1f0np0", "ens1f1np1"}; !slices.Equal(names, want) {
		t.Fatalf("rows %q, want %q", names, want)
	}
	bond, s0, s1 := rep.Ports[0], rep.Ports[1], rep.Ports[2]
	if bond.Error != "" || len(bond.Priorities) != 0 || fv(bond.CNPSentPerS) != 250.0 ||
		!slices.Equal(bond.Slaves, []string{"ens1f0np0", "ens1f1np1"}) || bond.RDMADevice != "mlx5_bond_0" {
		t.Errorf("bond row: %+v", bond)
	}
	if s0.Bond != "bond0" || s0.Error != "" || fv(s0.RXDiscardsPerS) != 7.0 || s0.CNPSentPerS != nil {
		t.Errorf("ens1f0np0 row: %+v", s0)
	}
	if len(s1.Priorities) != 1 || s1.Priorities[0].Priority != 3 || fv(s1.Priorities[0].RX.PausePct) != 40.0 ||
		fv(s1.Priorities[0].RX.FramesPerS) != 3000.0 {
		t.Errorf("ens1f1np1 row: %+v", s1)
	}

	b, err := json.Marshal(rep)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`"netdev":"bond0","slaves":["ens1f0np0","ens1f1np1"]`, `"netdev":"ens1f1np1","bond":"bond0"`} {
		if !strings.Contains(string(b), want) {
			t.Errorf("JSON lacks %s: %s", want, b)
		}
	}
}
