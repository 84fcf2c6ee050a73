package verify

import (
	"testing"

	"github.com/rocectl/rocectl/internal/testkit/fixturehost"
	"github.com/rocectl/rocectl/nic"
)

func val(p *uint64) any {
	if p == nil {
		return nil
	}
	return *p
}

// The congestion counters by driver, read from the fixture hosts' real
// hw_counters layouts: mlx5's np_/rp_ names, bnxt_re's tx_/rx_ names.
func TestCongestionCountersByDriver(t *testing.T) {
	for _, tc := range []struct {
		host, dev string
		want      [3]any
	}{
		{"cx6dx-ofed-lossless", "mlx5_0", [3]any{uint64(0), uint64(0), uint64(0)}},
		{"bnxt-re-factory", "bnxt_re0", [3]any{uint64(0), uint64(0), uint64(0)}},
		{"cx7-upstream-factory", "nonexistent_0", [3]any{nil, nil, nil}},
	} {
		root, _ := fixturehost.Copy(t, tc.host)
		hw, err := ReadHWCounters(nic.NewFS(root, false), tc.dev, 1, nil)
		if err != nil {
			t.Fatalf("%s: %v", tc.host, err)
		}
		c := CongestionCounters(hw)
		if got := [3]any{val(c.CNPSent), val(c.CNPHandled), val(c.ECNMarked)}; got != tc.want {
			t.Errorf("%s %s: cnp sent/handled, ecn marked = %v, want %v", tc.host, tc.dev, got, tc.want)
		}
	}
	c := CongestionCounters(map[string]uint64{"tx_cnp_pkts": 5, "rx_cnp_pkts": 6, "rx_ecn_marked_pkts": 7})
	if got := [3]any{val(c.CNPSent), val(c.CNPHandled), val(c.ECNMarked)}; got != [3]any{uint64(5), uint64(6), uint64(7)} {
		t.Errorf("bnxt_re names: %v", got)
	}
}

func TestStormEventCounters(t *testing.T) {
	s := StormEventCounters(map[string]uint64{"tx_pause_storm_warning_events ": 3, "tx_pause_storm_error_events": 1})
	if val(s.Warning) != uint64(3) || val(s.Error) != uint64(1) {
		t.Errorf("trailing-space warning spelling: %v %v", val(s.Warning), val(s.Error))
	}
	s = StormEventCounters(map[string]uint64{"rx_pause_frames": 1})
	if s.Warning != nil || s.Error != nil {
		t.Error("a NIC without the watchdog has storm events")
	}
}

func TestDiscardCounters(t *testing.T) {
	d := DiscardCounters(map[string]uint64{"rx_discards_phy": 9, "tx_discards_phy": 2, "rx_prio3_discards": 4, "rx_prio3_buf_discard": 5})
	if val(d.RX) != uint64(9) || val(d.TX) != uint64(2) || val(d.Prio[3]) != uint64(4) || val(d.PrioBuffer[3]) != uint64(5) || d.Prio[2] != nil {
		t.Errorf("mlx5: %+v", d)
	}
	d = DiscardCounters(map[string]uint64{"rx_discard_packets_cos0": 1, "rx_discard_packets_cos5": 6})
	if val(d.RX) != uint64(7) || d.TX != nil {
		t.Errorf("bnxt_en: rx %v tx %v, want the CoS queues summed and no tx", val(d.RX), val(d.TX))
	}
}
