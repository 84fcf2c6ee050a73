package apply

import (
	"slices"
	"strings"
	"testing"

	"github.com/rocectl/rocectl/nic/dcb"
	"github.com/rocectl/rocectl/policy"
)

// A profile without [buffers] (lossy-ecn-only: PFC off, MTU 9000) on
// ports that an earlier buffer write left in manual buffer mode, which
// rocectl cannot read, with a 32 KiB lossless buffer under PFC [3,4] at
// MTU 1500. In the plan's usual order (MTU first) the apply passes, but
// its rollback writes PFC [3,4] back at MTU 9000, which mlx5 refuses
// (update_xoff_threshold: -ENOMEM), and the rollback failed half done.
// The planner writes the MTU after the PFC changes instead, so that a
// rollback puts the MTU back first; in automatic buffer mode neither
// order is checked. Both on a single port and on a RoCE LAG, whose MTU is
// its bond's (found by TestEveryProfileFromGeneratedStartStates with
// another random sequence); both fail their rollback on the previous
// planner.
func TestMTUAfterPFCSoThatAManualModeRollbackPasses(t *testing.T) {
	// Buffer 0 lossless (priority 4), large enough at MTU 1500 and too
	// small at 9000 on these 25 Gb/s ports, and at the 40 Gb/s mlx5
	// computes for while a toggled link trains.
	small := func(size uint32) dcb.Buffer {
		return dcb.Buffer{PrioBuffer: [8]uint8{1, 2, 2, 1, 0, 2, 0, 2}, Size: [8]uint32{size, 131072, 65536}}
	}
	fine := dcb.Buffer{Size: [8]uint32{196608}} // every priority in buffer 0
	for _, tc := range []struct {
		fixture, mtuOn string
		reached        []string // the ports whose MTU it is
		start          map[string]dcb.Buffer
	}{
		{"cx4lx-sriov", "enp7s0f0np0", []string{"enp7s0f0np0"}, map[string]dcb.Buffer{"enp7s0f0np0": small(32768)}},
		{"cx5-roce-lag", "bond0", []string{"ens1f0np0", "ens1f1np1"}, map[string]dcb.Buffer{"ens1f0np0": fine, "ens1f1np1": small(32768)}},
	} {
		t.Run(tc.fixture, func(t *testing.T) {
			ports := map[string]portStart{}
			for nd, b := range tc.start {
				ports[nd] = portStart{buf: b, pfc: 1<<3 | 1<<4}
			}
			r := planFromStart(t, tc.fixture, "lossy-ecn-only.toml", 1500, ports)
			pl := r.plan
			mtu := slices.IndexFunc(pl.Changes, func(c policy.Change) bool { return c.Key == tc.mtuOn+".link.mtu" })
			if mtu < 0 {
				t.Fatalf("no MTU change on %s", tc.mtuOn)
			}
			for i, c := range pl.Changes {
				if c.Kind == policy.KindPFC && slices.Contains(tc.reached, c.Port.Netdev) && i > mtu {
					t.Errorf("%s at %d, after the MTU change at %d", c.Key, i, mtu)
				}
			}
			if !strings.Contains(pl.Changes[mtu].Note, "written after the PFC changes") {
				t.Errorf("the MTU change says nothing of its place: %q", pl.Changes[mtu].Note)
			}
			r.reachAndRollBack(t)
		})
	}
}
