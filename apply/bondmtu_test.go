package apply

import (
	"slices"
	"strings"
	"testing"

	"github.com/rocectl/rocectl/nic/dcb"
	"github.com/rocectl/rocectl/policy"
)

// A RoCE LAG whose bond MTU goes 1500 → 9000 while a slave's lossless
// buffer is too small for the new MTU and cable: with the bond's MTU
// written first, undoing the slave's map would meet its old buffer at
// MTU 9000, which mlx5 refuses, so no path has the MTU first. The bond's
// MTU is every slave's (bond_change_mtu): the planner writes it after
// every slave's first buffer step (map moved, sizes unchanged) and before
// their PFC writes, and the plan reaches the profile and rolls back
// exactly on the simulated driver. Before, the bond's pinned MTU left the
// search no path: "cannot be reached", a refusal nothing confirms
// (found by TestEveryProfileFromGeneratedStartStates).
func TestBondMTUAfterEverySlavesFirstBufferStep(t *testing.T) {
	lagMTUCase(t, map[string]dcb.Buffer{
		"ens1f0np0": {PrioBuffer: [8]uint8{1, 2, 0, 1, 2, 0, 0, 1}, Size: [8]uint32{65536, 98304, 32768}},
		"ens1f1np1": {PrioBuffer: [8]uint8{2, 0, 2, 2, 2, 2, 1, 0}, Size: [8]uint32{65536, 65536, 262144}},
	})
}

// The same LAG with one slave's buffers already as the profile sets them
// (a partial earlier apply, or mlnx_qos run on one port): that slave has
// a PFC and cable change but no buffer write, and meets the bond's MTU
// before its PFC write. Whichever slave it is, the plan reaches the
// profile and rolls back exactly. Before, the slave's path search tried
// no order at all and the planner crashed (a nil shortfall in
// mlx5.refusal) when it was the second slave, and refused the MTU change
// ("this plan's order has no such place") when it was the first, whose
// PFC change the plan's kind-by-kind order puts before the other slave's
// first buffer write.
func TestBondMTUWithASlaveAlreadyAtItsBuffers(t *testing.T) {
	drifted := dcb.Buffer{PrioBuffer: [8]uint8{1, 2, 0, 1, 2, 0, 0, 1}, Size: [8]uint32{65536, 98304, 32768}}
	atTarget := dcb.Buffer{PrioBuffer: [8]uint8{0, 0, 0, 1, 0, 0, 0, 0}, Size: [8]uint32{63 << 10, 192 << 10}}
	for _, at := range []string{"ens1f0np0", "ens1f1np1"} {
		t.Run(at+" at its buffers", func(t *testing.T) {
			start := map[string]dcb.Buffer{"ens1f0np0": drifted, "ens1f1np1": drifted}
			start[at] = atTarget
			pl := lagMTUCase(t, start)
			if slices.ContainsFunc(pl.Changes, func(c policy.Change) bool {
				return c.Key == at+".buffers.buffer_size" || c.Key == at+".buffers.priority_to_buffer"
			}) {
				t.Fatalf("%s has a buffer change: the case no longer tests a slave without one", at)
			}
		})
	}
}

// lagMTUCase plans the fat-tree profile on the cx5-roce-lag fixture from
// MTU 1500 and each slave's start buffers (PFC on 3 and 4, 7 m cable),
// and checks what must hold: nothing refused; the bond's MTU change after
// every slave's first buffer write and before every slave's PFC and cable
// writes, saying so; the apply reaching the profile on the simulated
// driver and its rollback restoring the start exactly.
func lagMTUCase(t *testing.T, start map[string]dcb.Buffer) *policy.Plan {
	t.Helper()
	ports := map[string]portStart{}
	for nd, b := range start {
		ports[nd] = portStart{buf: b, pfc: 1<<3 | 1<<4}
	}
	r := planFromStart(t, "cx5-roce-lag", "fat-tree-32gpu-100g.toml", 1500, ports)
	pl := r.plan
	first := func(nd string, kinds ...policy.Kind) int {
		return slices.IndexFunc(pl.Changes, func(c policy.Change) bool {
			return c.Port != nil && c.Port.Netdev == nd && slices.Contains(kinds, c.Kind)
		})
	}
	mtu := slices.IndexFunc(pl.Changes, func(c policy.Change) bool { return c.Key == "bond0.link.mtu" })
	if mtu < 0 {
		t.Fatal("no MTU change on bond0")
	}
	for nd := range start {
		buf, pfcAt := first(nd, policy.KindPrioBuffer, policy.KindBufferSize), first(nd, policy.KindPFC, policy.KindCableLength)
		if buf > mtu || pfcAt < mtu {
			t.Errorf("%s: first buffer write at %d, bond MTU at %d, first PFC or cable write at %d", nd, buf, mtu, pfcAt)
		}
	}
	if c := pl.Changes[mtu]; !strings.Contains(c.Note, "after each slave's first buffer step") {
		t.Errorf("the MTU change says nothing of its place: %q", c.Note)
	}
	r.reachAndRollBack(t)
	return pl
}
