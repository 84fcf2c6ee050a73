package cli

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/rocectl/rocectl/verify"
)

// On a RoCE LAG watch shows the bond's row (its link and the LAG device's
// CNP/ECN counters; a bond has no ethtool -S) and one row per slave with
// its pause, discards and storm events, named as the guard names it. The
// rates are verify's TestRatesLAGShowsSlaves; here the rows and the text.
func TestWatchLAGShowsSlaves(t *testing.T) {
	w := newSim(t, "cx5-roce-lag", 1)
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
	rep := verify.Rates(prev, w.s.Sample())

	var names []string
	for _, p := range rep.Ports {
		names = append(names, rowName(p))
	}
	if want := []string{"bond0", "bond0/ens1f0np0", "bond0/ens1f1np1"}; !slices.Equal(names, want) {
		t.Fatalf("rows %q, want %q", names, want)
	}
	text := strings.Join(watchLines(watchHead{interval: time.Second, scope: "all RoCE ports"}, rep, 0), "\n")
	for _, want := range []string{"\nbond0           up    port ", "\nbond0/ens1f1np1 up    port ", "\n                      3           40.0       3.0k"} {
		if !strings.Contains(text, want) {
			t.Errorf("table lacks %q:\n%s", want, text)
		}
	}
}
