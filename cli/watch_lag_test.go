package cli

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/rocectl/rocectl/host"
	"github.com/rocectl/rocectl/internal/testkit/fixturehost"
	"github.com/rocectl/rocectl/nic"
)

// On a RoCE LAG watch shows the bond's row (its link and the LAG device's
// CNP/ECN counters; a bond has no ethtool -S) and one row per slave with
// its pause, discards and storm events, named as the guard names it.
func TestWatchLAGShowsSlaves(t *testing.T) {
	root, sim := fixturehost.Copy(t, "cx5-roce-lag")
	h := &host.Host{FS: nic.NewFS(root, false), K: sim}
	w := &watchSim{t: t, sim: sim, root: root, now: watchT0}
	w.s = &watchSampler{h: h, ports: h.Discover().Ports, now: func() time.Time { return w.now }}
	if len(w.s.ports) != 1 || w.s.ports[0].Netdev != "bond0" {
		t.Fatalf("fixture ports: %+v", w.s.ports)
	}
	for _, nd := range []string{"ens1f0np0", "ens1f1np1"} {
		sim.SetStat(nd, "rx_prio3_pause", 0)
		sim.SetStat(nd, "rx_prio3_pause_duration", 0)
	}
	prev := w.s.sample()
	w.now = w.now.Add(time.Second)
	sim.AddStat("ens1f1np1", "rx_prio3_pause", 3000)
	sim.AddStat("ens1f1np1", "rx_prio3_pause_duration", 400_000)
	sim.AddStat("ens1f0np0", "rx_discards_phy", 7)
	w.hw("mlx5_bond_0", "np_cnp_sent", 250)
	rep := watchRates(prev, w.s.sample())

	var names []string
	for _, p := range rep.Ports {
		names = append(names, portName(p))
	}
	if want := []string{"bond0", "bond0/ens1f0np0", "bond0/ens1f1np1"}; !slices.Equal(names, want) {
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

	text := strings.Join(watchLines(watchHead{interval: time.Second, scope: "all RoCE ports"}, rep, 0), "\n")
	for _, want := range []string{"\nbond0           up    port ", "\nbond0/ens1f1np1 up    port ", "\n                      3           40.0       3.0k"} {
		if !strings.Contains(text, want) {
			t.Errorf("table lacks %q:\n%s", want, text)
		}
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
