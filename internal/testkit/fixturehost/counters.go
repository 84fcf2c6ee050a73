package fixturehost

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/rocectl/rocectl/nic/nictest"
)

// AddHWCounter adds delta to an RDMA port counter of a copied fixture
// host, as the driver's sysfs file shows it
// (/sys/class/infiniband/DEV/ports/1/hw_counters/NAME).
func AddHWCounter(t testing.TB, root, dev, name string, delta uint64) {
	t.Helper()
	p := filepath.Join(root, "sys/class/infiniband", dev, "ports/1/hw_counters", name)
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	v, err := strconv.ParseUint(strings.TrimSpace(string(b)), 10, 64)
	if err != nil {
		t.Fatalf("%s: %v", p, err)
	}
	if err := os.WriteFile(p, fmt.Appendf(nil, "%d\n", v+delta), 0o644); err != nil {
		t.Fatal(err)
	}
}

// CongestPort0 is the counters of half a second of a congested first port
// on a two-port ConnectX fixture (ens1f0np0/mlx5_0, ens1f1np1): the
// partner paused priority 3 for 250 ms (50 %), the port paused the
// partner longer than the interval (a counter ahead of its sample: capped
// at 100 %), and CNPs, ECN marks, discards and one storm error came in.
// The second port's priority 3 rx pause frames went backwards: a driver
// reload, counted from 0. The watch tests of cli and verify read the same
// interval; the clock is theirs to move.
func CongestPort0(t testing.TB, root string, sim *nictest.Sim) {
	t.Helper()
	const p0, p1 = "ens1f0np0", "ens1f1np1"
	sim.AddStat(p0, "rx_prio3_pause", 2000)
	sim.AddStat(p0, "rx_prio3_pause_duration", 250_000)
	sim.AddStat(p0, "tx_prio3_pause", 10)
	sim.AddStat(p0, "tx_prio3_pause_duration", 600_000)
	sim.AddStat(p0, "tx_pause_ctrl_phy", 3)
	sim.AddStat(p0, "rx_discards_phy", 5)
	sim.AddStat(p0, "rx_prio3_discards", 1)
	sim.AddStat(p0, "tx_pause_storm_error_events", 1)
	AddHWCounter(t, root, "mlx5_0", "np_cnp_sent", 1500)
	AddHWCounter(t, root, "mlx5_0", "rp_cnp_handled", 12_000_000)
	AddHWCounter(t, root, "mlx5_0", "np_ecn_marked_roce_packets", 1600)
	sim.SetStat(p1, "rx_prio3_pause", 7)
}
