package verify

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/rocectl/rocectl/internal/testkit/fixturehost"
)

// The soak attributes pause per port, priority and direction, and names a
// port "throttled with no drops": the txpause case (a ConnectX-6 Dx
// sending 802.3x global pause, shared/fixtures/mlx5-cx6dx-ethtool-S-k5.15-
// txpause.txt) at a fifth of the time, every discard counter flat. The
// other port of the NIC receives PFC pause at 5 %: attributed, not
// throttled. With discards growing the condition is "no"; a port without
// a discard counter is "unknown", never "no".
func TestSoakPauseAttributionAndThrottled(t *testing.T) {
	for _, tc := range []struct {
		name      string
		drops     bool
		want      string
		wantWhere string
	}{
		{"flat discards", false, "yes", "[global pause (tx) paused 20% with every discard counter flat]"},
		{"discards grow", true, "no", "[]"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, sim := fixturehost.Copy(t, "cx6dx-ofed-factory")
			c := &fakeClock{now: time.Unix(1_700_000_000, 0)}
			// A fifth of every poll: 20 ms of each 100 ms; PFC rx on the
			// other port, 5 %.
			sim.SetStat("ens1f1np1", "rx_prio3_pause", 0)
			sim.SetStat("ens1f1np1", "rx_prio3_pause_duration", 0)
			c.onTick = func(_ time.Time, dt time.Duration) {
				sim.AddStat("ens1f0np0", "tx_global_pause_duration", uint64(dt.Microseconds()/5))
				sim.AddStat("ens1f0np0", "tx_global_pause", 40)
				sim.AddStat("ens1f1np1", "rx_prio3_pause_duration", uint64(dt.Microseconds()/20))
				sim.AddStat("ens1f1np1", "rx_prio3_pause", 10)
				if tc.drops {
					sim.AddStat("ens1f0np0", "rx_discards_phy", 1)
				}
			}
			sim.SetStat("ens1f0np0", "tx_global_pause_duration", 771103810)
			sim.SetStat("ens1f0np0", "tx_global_pause", 5745055)
			veth := CounterSource{Port: "veth0", Read: func() (map[string]uint64, error) {
				return map[string]uint64{"rx_prio3_pause": 1, "rx_prio3_pause_duration": 0}, nil
			}}
			cfg := guardCfg(c)
			cfg.Soak = 2 * time.Second
			storm, rep, err := Guard(context.Background(), append(sources(sim, "ens1f0np0", "ens1f1np1"), veth), cfg)
			if err != nil || storm != nil {
				t.Fatalf("storm %v err %v", storm, err)
			}
			p := rep.Ports["ens1f0np0"]
			if p.Window != 2*time.Second || p.Throttled != tc.want || fmt.Sprint(p.ThrottledNoDrops) != tc.wantWhere {
				t.Errorf("ens1f0np0: window %v throttled %q %v, want %q %s", p.Window, p.Throttled, p.ThrottledNoDrops, tc.want, tc.wantWhere)
			}
			g := share(p.Pause, GlobalPause, "tx")
			if g == nil || g.Frames != 20*40 || g.DurationUs != 400_000 || g.Occupancy != 0.2 {
				t.Errorf("global tx share %+v, want 800 frames, 400 ms, 0.2", g)
			}
			if rx := share(p.Pause, GlobalPause, "rx"); rx == nil || rx.Frames != 0 || rx.DurationUs != 0 {
				t.Errorf("global rx share %+v, want present and 0", rx)
			}
			q := rep.Ports["ens1f1np1"]
			if s := share(q.Pause, 3, "rx"); s == nil || s.DurationUs != 100_000 || s.Frames != 200 || q.Throttled != "no" {
				t.Errorf("ens1f1np1 priority 3 rx %+v throttled %q, want 100 ms, 200 frames, no", s, q.Throttled)
			}
			if v := rep.Ports["veth0"]; v.Throttled != "unknown" || v.DiscardsKnown {
				t.Errorf("veth0: throttled %q, discards known %v; want unknown", v.Throttled, v.DiscardsKnown)
			}
		})
	}
}

func share(ss []PauseShare, prio int, dir string) *PauseShare {
	for i := range ss {
		if ss[i].Priority == prio && ss[i].Direction == dir {
			return &ss[i]
		}
	}
	return nil
}

// A reset and a bad read inside the window count what was paused, once.
func TestPauseAccResetAndBadRead(t *testing.T) {
	var a pauseAcc
	c := PauseCounter{Priority: 3, Direction: "rx", FramesName: "rx_prio3_pause", DurationName: "rx_prio3_pause_duration", HasDuration: true}
	for _, v := range []uint64{1000, 1100, 50, 1200, 10, 20, 60} {
		c.Frames, c.DurationUs = v, v
		a.add(c)
	}
	// 1000→1100 (+100), dip to 50 and back to 1200 (+100), reset to 10,
	// then 20 (+20 since the reset at 10… counted from 0: 20), 60 (+40).
	if a.d != 260 || a.f != 260 {
		t.Errorf("accumulated %d µs, %d frames; want 260, 260", a.d, a.f)
	}
}

// The soak's RDMA movement: a 32-bit q counter across a wrap counts, a
// 64-bit one that fell (a reset) and one the driver renamed are left out,
// zeros stay.
func TestRDMADeltas(t *testing.T) {
	src := Source{Netdev: "ens1f0np0", RDMADevice: "mlx5_0", PortNum: 1}
	ps := func(vals map[CongCounter]uint64, names map[CongCounter]string) PortSample {
		p := PortSample{Source: src}
		for c, v := range vals {
			p.cong[c], p.has[c], p.hwNames[c] = v, true, congNames[c][0]
			if n, ok := names[c]; ok {
				p.hwNames[c] = n
			}
		}
		return p
	}
	before := &Sample{Ports: []PortSample{ps(map[CongCounter]uint64{OutOfSequence: 1<<32 - 2, CNPSent: 100, PacketSeqErr: 7, OutOfBuffer: 3}, nil)}}
	after := &Sample{Ports: []PortSample{ps(map[CongCounter]uint64{OutOfSequence: 3, CNPSent: 10, PacketSeqErr: 7, OutOfBuffer: 4},
		map[CongCounter]string{OutOfBuffer: "rx_out_of_buffer"})}}
	got := RDMADeltas(before, after)
	if fmt.Sprint(got) != "map[ens1f0np0:map[out_of_sequence:5 packet_seq_err:0]]" {
		t.Errorf("deltas %v", got)
	}
}
