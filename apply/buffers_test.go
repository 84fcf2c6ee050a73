package apply

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"syscall"
	"testing"

	"github.com/rocectl/rocectl/host"
	"github.com/rocectl/rocectl/nic"
	"github.com/rocectl/rocectl/nic/dcb"
	"github.com/rocectl/rocectl/nic/nictest"
	"github.com/rocectl/rocectl/nic/snapshot"
	"github.com/rocectl/rocectl/policy"
)

// The mlx5 buffer rules (port_buffer.c) as the planner must respect them;
// the simulator plays the driver (nic/nictest/mlx5sim, buffer.go).

// manualLayout puts both cx6dx ports in manual buffer mode with PFC on
// priority 3 in buffer 1, and a small lossy buffer 0.
func manualLayout(t *testing.T) func(*nictest.Sim) {
	return func(s *nictest.Sim) {
		for _, nd := range []string{"ens1f0np0", "ens1f1np1"} {
			if err := s.ManualLossless(nd, 29952, 200064); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// Moving the lossless priority from 3 to 4 and priority 4 into buffer 1:
// written PFC first, the driver checks priority 4 against buffer 0 (too
// small, -ENOMEM, after a link flap); only buffers first passes.
func TestMovingLosslessPriorityWritesBuffersFirst(t *testing.T) {
	r := driverRig(t, "cx6dx-ofed-factory", "[match]\ndrivers = [\"mlx5_core\"]\n[qos]\npfc_priorities = [4]\nglobal_pause = false\n[buffers]\npriority_to_buffer = [0, 0, 0, 1, 1, 0, 0, 0]\n", manualLayout(t))
	if len(r.plan.Refused) != 0 {
		t.Fatalf("refused: %+v", r.plan.Refused)
	}
	var order []string
	for _, c := range r.plan.Changes {
		if c.Port.Netdev == "ens1f0np0" {
			order = append(order, c.Name)
		}
	}
	// The recomputes around PFC: its change toggles the link (planToggleRecomputes).
	if strings.Join(order, " ") != "buffers.priority_to_buffer qos.pfc_xoff_recompute_on_rollback qos.pfc qos.pfc_xoff_recompute" {
		t.Errorf("ens1f0np0 changes in order %v, want the buffer map before PFC", order)
	}
	before := r.sim.LinkToggles("ens1f0np0")
	if err := r.apply(t); err != nil {
		t.Fatal(err)
	}
	if n := r.sim.LinkToggles("ens1f0np0") - before; n != 1 {
		t.Errorf("%d link toggles, want 1", n)
	}
}

// A size that is not whole cells is the driver's to round down
// (port_set_buffer), not rocectl's to refuse: the plan says how it will
// be programmed, the apply writes it, and the port then holding the
// rounded size reads back in sync with the profile that asked for it.
func TestBufferSizeNotWholeCellsIsAppliedRounded(t *testing.T) {
	r := driverRig(t, "cx6dx-ofed-factory", "[match]\ndrivers = [\"mlx5_core\"]\n[link]\nmtu = 9000\n[qos]\npfc_priorities = [3]\nglobal_pause = false\n[buffers]\n"+
		"priority_to_buffer = [0, 0, 0, 1, 0, 0, 0, 0]\nbuffer_size = [130001, 131072, 0, 0, 0, 0, 0, 0]\n", nil)
	if len(r.plan.Refused) != 0 {
		t.Fatalf("refused: %+v", r.plan.Refused)
	}
	noted := false
	for _, c := range r.plan.Changes {
		noted = noted || (c.Port.Netdev == "ens1f0np0" && strings.Contains(c.Note, "130001 bytes is programmed as 129920"))
	}
	if !noted {
		t.Errorf("no change says how the driver rounds 130001: %+v", r.plan.Changes)
	}
	if err := r.apply(t); err != nil {
		t.Fatal(err)
	}
	if after := policy.Diff(r.d, r.h.Observe(r.d)); after.Changed() {
		t.Errorf("drift after the apply: %+v", after.Changes)
	}
}

func TestBufferSizesRefusedAtPlanTime(t *testing.T) {
	for _, tc := range []struct{ name, buffers, want string }{
		// MTU 9000, cable 7 m, 100 Gb/s, max_mtu 9978: 316 × 100 + 24480 +
		// 9978 + 128.
		{"lossless below the driver's minimum", "priority_to_buffer = [0, 0, 0, 1, 0, 0, 0, 0]\nbuffer_size = [131072, 32768, 0, 0, 0, 0, 0, 0]\n", "needs at least 66186"},
		// Enough for xoff + 9216 + 128 (65424), not for the max_mtu the
		// driver uses, max(9978, 9216): ENOMEM from the driver.
		{"between the 9216 and the max_mtu minimum", "priority_to_buffer = [0, 0, 0, 1, 0, 0, 0, 0]\nbuffer_size = [131072, 65536, 0, 0, 0, 0, 0, 0]\n", "needs at least 66186 (xoff for 7 m of cable at 100 Gb/s, MTU 9000, plus max_mtu 9978 + 128"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := driverRig(t, "cx6dx-ofed-factory", "[match]\ndrivers = [\"mlx5_core\"]\n[link]\nmtu = 9000\n[qos]\npfc_priorities = [3]\nglobal_pause = false\n[buffers]\n"+tc.buffers, nil)
			if len(r.plan.Refused) == 0 || !strings.Contains(r.plan.Refused[0].Error, tc.want) {
				t.Fatalf("refused: %+v, want %q", r.plan.Refused, tc.want)
			}
			before := r.sim.Config()
			pr := &Prepared{Profile: r.d.Profile, Host: r.h, Desired: r.d, Plan: r.plan}
			if _, err := Run(context.Background(), pr, RunOptions{Store: r.opts.Store}); err == nil {
				t.Fatal("a refused plan ran")
			}
			if r.sim.Config() != before {
				t.Fatal("a refused plan changed the host")
			}
		})
	}
}

// At most one link toggle per port when PFC, cable length and buffers all
// change (the fat-tree case study on a factory host); none when only ECN,
// TOS and NCCL change.
func TestLinkTogglesPerApply(t *testing.T) {
	r := newRig(t, "cx6dx-ofed-factory", "fat-tree-32gpu-100g.toml")
	if err := r.apply(t); err != nil {
		t.Fatal(err)
	}
	for _, nd := range []string{"ens1f0np0", "ens1f1np1"} {
		if n := r.sim.LinkToggles(nd); n != 1 {
			t.Errorf("%s: %d link toggles for PFC + cable length + buffers, want 1", nd, n)
		}
	}
	r = driverRig(t, "cx6dx-ofed-lossless", "[match]\ndrivers = [\"mlx5_core\"]\n[ecn]\nnp_priorities = [3, 4]\n[roce]\ndefault_tos = 104\n", nil)
	if len(r.plan.Changes) == 0 {
		t.Fatal("nothing to change")
	}
	if err := r.apply(t); err != nil {
		t.Fatal(err)
	}
	for _, nd := range []string{"ens1f0np0", "ens1f1np1"} {
		if n := r.sim.LinkToggles(nd); n != 0 {
			t.Errorf("%s: %d link toggles for ECN and TOS only, want 0", nd, n)
		}
	}
}

// The same move on a RoCE LAG in manual buffer mode, each slave's buffer 0
// too small to be lossless: planned per slave, the buffer map goes before
// PFC on both, and the simulated driver takes the apply with one link
// toggle per slave.
func TestLAGMovingLosslessPriorityWritesBuffersFirst(t *testing.T) {
	r := driverRig(t, "cx5-roce-lag", "[match]\ndrivers = [\"mlx5_core\"]\n[qos]\npfc_priorities = [4]\nglobal_pause = false\n[buffers]\npriority_to_buffer = [0, 0, 0, 1, 1, 0, 0, 0]\n",
		func(s *nictest.Sim) {
			for _, nd := range []string{"ens1f0np0", "ens1f1np1"} {
				if err := s.ManualLossless(nd, 16384, 200064); err != nil {
					t.Fatal(err)
				}
			}
		})
	if len(r.plan.Refused) != 0 {
		t.Fatalf("refused: %+v", r.plan.Refused)
	}
	before := map[string]int{}
	for _, nd := range []string{"ens1f0np0", "ens1f1np1"} {
		before[nd] = r.sim.LinkToggles(nd)
	}
	if err := r.apply(t); err != nil {
		t.Fatal(err)
	}
	for _, nd := range []string{"ens1f0np0", "ens1f1np1"} {
		if n := r.sim.LinkToggles(nd) - before[nd]; n != 1 {
			t.Errorf("%s: %d link toggles, want 1", nd, n)
		}
		if pfc := r.sim.State().Links[nd].DCB.PFC.Enable; pfc != 1<<4 {
			t.Errorf("%s: pfc_en %#x, want priority 4", nd, pfc)
		}
		// Each slave's PFC change toggled its link: its thresholds must
		// be the trained link's, which an identical PFC write once the
		// link has its speed would not change.
		got, _ := r.sim.Thresholds(nd)
		if err := r.sim.Train(nd); err != nil {
			t.Fatal(err)
		}
		if err := r.sim.SetPFC(nd, *r.sim.State().Links[nd].DCB.PFC); err != nil {
			t.Fatal(err)
		}
		if want, _ := r.sim.Thresholds(nd); got != want {
			t.Errorf("%s thresholds after the apply %+v, want the trained link's %+v", nd, got, want)
		}
	}
}

// wantThresholds is what mlx5's update_xoff_threshold programs on a
// 100 Gb/s port with 7 m of cable at mtu, buffer 1 lossless (PFC
// priority 3 maps to it) with size1 bytes and the others lossy, xon the
// fixture's max_mtu (9978) below xoff: worked out from the driver's
// formula here, not taken from the simulator.
func wantThresholds(mtu, size1 int) nictest.MLX5Thresholds {
	xoff := (301+216*7/100)*100000/1000 + 272*mtu/100
	th := nictest.MLX5Thresholds{Lossy: [8]bool{true, false, true, true, true, true, true, true}}
	th.Xoff[1] = uint32((size1 - xoff) / 128 * 128)
	th.Xon[1] = uint32((size1 - xoff - 9978) / 128 * 128)
	return th
}

var mlx5Ports = []string{"ens1f0np0", "ens1f1np1"}

// run applies the rig's plan and returns the transaction, to be rolled
// back by the test.
func (r *rig) run(t *testing.T) *Txn {
	t.Helper()
	txn, err := Begin(r.h, r.d, r.plan, "test", r.opts)
	if err != nil {
		t.Fatal(err)
	}
	if err := txn.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	return txn
}

func thresholdsOf(t *testing.T, sim *nictest.Sim) map[string]nictest.MLX5Thresholds {
	t.Helper()
	out := map[string]nictest.MLX5Thresholds{}
	for _, nd := range mlx5Ports {
		th, ok := sim.Thresholds(nd)
		if !ok {
			t.Fatalf("%s: the driver computed no thresholds", nd)
		}
		out[nd] = th
	}
	return out
}

// portChanges lists the names of nd's changes in plan order.
func portChanges(plan *policy.Plan, nd string) []string {
	var out []string
	for _, c := range plan.Changes {
		if c.Port != nil && c.Port.Netdev == nd {
			out = append(out, c.Name)
		}
	}
	return out
}

const manualLayoutProfile = "[match]\ndrivers = [\"mlx5_core\"]\n[qos]\npfc_priorities = [3]\nglobal_pause = false\n[buffers]\npriority_to_buffer = [0, 0, 0, 1, 0, 0, 0, 0]\n"

// An MTU change alone on a port in manual buffer mode: mlx5 keeps the
// thresholds it computed for the old MTU (the mainline recompute on MTU
// set was reverted), so the plan makes it recompute them after the MTU
// change, with an identical PFC write (no link toggle), and again when a
// rollback has restored the MTU.
func TestMTUChangeRecomputesMLX5Thresholds(t *testing.T) {
	r := driverRig(t, "cx6dx-ofed-factory", "[link]\nmtu = 9000\n"+manualLayoutProfile+"buffer_size = [29952, 200064, 0, 0, 0, 0, 0, 0]\n", manualLayout(t))
	if len(r.plan.Refused) != 0 {
		t.Fatalf("refused: %+v", r.plan.Refused)
	}
	for _, nd := range mlx5Ports {
		want := []string{"link.xoff_recompute_on_rollback", "link.mtu", "link.xoff_recompute"}
		if got := portChanges(r.plan, nd); !slices.Equal(got, want) {
			t.Errorf("%s: changes %v, want %v", nd, got, want)
		}
	}
	for _, c := range r.plan.Changes {
		if c.Kind == policy.KindXoffRecompute && !strings.Contains(c.Note, "6f5dacf88a32") {
			t.Errorf("%s: note %q does not say why (the reverted recompute on MTU set)", c.Key, c.Note)
		}
	}
	before, config := thresholdsOf(t, r.sim), r.sim.Config()
	for nd, th := range before {
		if th != wantThresholds(1500, 200064) {
			t.Fatalf("%s before: %+v, want those of MTU 1500", nd, th)
		}
	}
	txn := r.run(t)
	for nd, th := range thresholdsOf(t, r.sim) {
		if want := wantThresholds(9000, 200064); th != want {
			t.Errorf("%s after the apply: %+v, want those of MTU 9000 %+v", nd, th, want)
		}
	}
	if err := txn.RollbackNow(); err != nil {
		t.Fatalf("rollback: %v", err)
	}
	for nd, th := range thresholdsOf(t, r.sim) {
		if th != before[nd] {
			t.Errorf("%s after rollback: %+v, want %+v as before the apply", nd, th, before[nd])
		}
		if n := r.sim.LinkToggles(nd); n != 1 {
			t.Errorf("%s: %d link toggles (the layout's own one only), want 1", nd, n)
		}
	}
	if r.sim.Config() != config {
		t.Error("rollback did not restore the host")
	}
}

// MTU and buffer sizes in one plan: the MTU is written first, so the
// buffer write computes the thresholds for the final MTU and no extra
// recompute follows; rollback restores the buffers at the new MTU and
// the MTU last, and then makes the driver recompute for the old MTU.
func TestMTUAndBuffersChangeRecomputesMLX5ThresholdsInOrder(t *testing.T) {
	r := driverRig(t, "cx6dx-ofed-factory", "[link]\nmtu = 9000\n"+manualLayoutProfile+"buffer_size = [29952, 230016, 0, 0, 0, 0, 0, 0]\n", manualLayout(t))
	if len(r.plan.Refused) != 0 {
		t.Fatalf("refused: %+v", r.plan.Refused)
	}
	for _, nd := range mlx5Ports {
		want := []string{"link.xoff_recompute_on_rollback", "link.mtu", "buffers.buffer_size"}
		if got := portChanges(r.plan, nd); !slices.Equal(got, want) {
			t.Errorf("%s: changes %v, want %v", nd, got, want)
		}
	}
	before := thresholdsOf(t, r.sim)
	txn := r.run(t)
	for nd, th := range thresholdsOf(t, r.sim) {
		if want := wantThresholds(9000, 230016); th != want {
			t.Errorf("%s after the apply: %+v, want %+v", nd, th, want)
		}
	}
	if err := txn.RollbackNow(); err != nil {
		t.Fatalf("rollback: %v", err)
	}
	for nd, th := range thresholdsOf(t, r.sim) {
		if th != before[nd] {
			t.Errorf("%s after rollback: %+v, want %+v as before the apply", nd, th, before[nd])
		}
	}
}

// A lossless buffer that holds the MTU of today but not the new one: the
// recompute the MTU change needs would fail (-ENOMEM), so the plan
// refuses the MTU change, naming the minimum.
func TestMTUChangeRefusedWhenLosslessBufferTooSmall(t *testing.T) {
	r := driverRig(t, "cx6dx-ofed-factory", "[link]\nmtu = 9000\n"+manualLayoutProfile+"buffer_size = [29952, 49920, 0, 0, 0, 0, 0, 0]\n",
		func(s *nictest.Sim) {
			for _, nd := range mlx5Ports {
				if err := s.ManualLossless(nd, 29952, 49920); err != nil {
					t.Fatal(err)
				}
			}
		})
	var refused []string
	for _, e := range r.plan.Refused {
		refused = append(refused, e.Key)
		// MTU 9000, 7 m, 100 Gb/s: 31600 + 24480 + max_mtu 9978 + 128.
		if !strings.Contains(e.Error, "needs at least 66186") {
			t.Errorf("%s: %s, want the minimum at MTU 9000", e.Key, e.Error)
		}
	}
	if want := []string{"ens1f0np0.link.mtu", "ens1f1np1.link.mtu"}; !slices.Equal(refused, want) {
		t.Errorf("refused %v, want %v", refused, want)
	}
}

// No recompute step where there is nothing to recompute: an mlx5 port
// whose profile manages neither buffers nor cable length (the firmware
// sizes its buffers), and a port of another driver.
func TestNoXoffRecomputeOffManualMLX5(t *testing.T) {
	for _, tc := range []struct{ fixture, profile string }{
		{"cx6dx-ofed-factory", "[match]\ndrivers = [\"mlx5_core\"]\n[link]\nmtu = 9000\n"},
		{"bnxt-re-factory", "[match]\ndrivers = [\"bnxt_en\"]\n[link]\nmtu = 9000\n[qos]\ncable_length_m = 7\n"},
		{"ice-e810-factory", "[match]\ndrivers = [\"ice\"]\n[link]\nmtu = 9000\n[qos]\ncable_length_m = 7\n"},
	} {
		t.Run(tc.fixture, func(t *testing.T) {
			r := driverRig(t, tc.fixture, tc.profile, nil)
			for _, c := range r.plan.Changes {
				if c.Kind == policy.KindXoffRecompute {
					t.Errorf("plan has %s", c.Key)
				}
			}
			if err := r.apply(t); err != nil {
				t.Fatal(err)
			}
			for _, op := range r.sim.Ops() {
				if strings.HasPrefix(op, "set_pfc") {
					t.Errorf("an MTU-only apply wrote PFC: %s", op)
				}
			}
		})
	}
}

// On a factory host global pause is on. A profile that moves priority 3
// into buffer 1 and manages neither PFC nor global pause makes mlx5 take
// every buffer a priority maps to as lossless (fill_pfc_en), checked
// against buffer 1's size before the write (0): the write alone is
// -ENOMEM. The plan grows buffer 1 first with the old map, then moves
// the map: applied and rolled back on the simulator, whose checks pass
// at every write. With qos.global_pause = false, written before the
// buffers, the profile's own writes pass as they are.
func TestGlobalPauseMakesMappedBuffersLossless(t *testing.T) {
	const buffers = "[buffers]\npriority_to_buffer = [0, 0, 0, 1, 0, 0, 0, 0]\nbuffer_size = [262144, 131072, 0, 0, 0, 0, 0, 0]\n"
	r := driverRig(t, "cx6dx-ofed-factory", "[match]\ndrivers = [\"mlx5_core\"]\n"+buffers, nil)
	if len(r.plan.Refused) != 0 {
		t.Fatalf("refused: %+v", r.plan.Refused)
	}
	// What the profile's own write would do, the driver refuses.
	if err := r.sim.SetBuffer("ens1f0np0", dcb.Buffer{PrioBuffer: [8]uint8{0, 0, 0, 1}, Size: [8]uint32{262144, 131072}}); !errors.Is(err, syscall.ENOMEM) {
		t.Fatalf("the driver took the profile's write alone: %v", err)
	}
	// The sizes first, a step of their own (the profile's sizes are
	// room enough with the old map), then the map.
	for _, nd := range mlx5Ports {
		if got := portChanges(r.plan, nd); !slices.Equal(got, []string{"buffers.buffer_size", "buffers.priority_to_buffer"}) {
			t.Errorf("%s: changes %v, want the sizes written before the map", nd, got)
		}
	}
	steps, err := host.Steps(r.plan)
	if err != nil || len(steps) != 4 {
		t.Errorf("steps %+v, %v: want the sizes and the map as two steps on each port", steps, err)
	}
	config := r.sim.Config()
	r.applyAndRollBack(t)
	if r.sim.Config() != config {
		t.Error("rollback did not restore the host")
	}

	r = driverRig(t, "cx6dx-ofed-factory", "[match]\ndrivers = [\"mlx5_core\"]\n[qos]\nglobal_pause = false\n"+buffers, nil)
	if len(r.plan.Refused) != 0 {
		t.Fatalf("refused: %+v", r.plan.Refused)
	}
	for _, nd := range mlx5Ports {
		if got, want := portChanges(r.plan, nd), []string{"qos.global_pause", "buffers.priority_to_buffer", "buffers.buffer_size"}; !slices.Equal(got, want) {
			t.Errorf("%s: changes %v, want %v", nd, got, want)
		}
	}
	config = r.sim.Config()
	r.applyAndRollBack(t)
	if r.sim.Config() != config {
		t.Error("rollback did not restore the host")
	}
}

// mlx5 takes a new priority-to-buffer map before new sizes: on a host
// whose priority 3 is already lossless (PFC on, every priority in buffer
// 0), moving it into buffer 1 and sizing buffer 1 in one write is checked
// with buffer 1's size before the write, 0 (-ENOMEM), and operators had
// to size buffer 1 in an apply of its own first. The plan does it for
// them: buffer 1 grown with the old map, then the map, then the sizes.
func TestMapIntoEmptyLosslessBufferGoesThroughAGrowStep(t *testing.T) {
	r := driverRig(t, "cx6dx-ofed-lossless", "[match]\ndrivers = [\"mlx5_core\"]\n[qos]\npfc_priorities = [3]\n[buffers]\npriority_to_buffer = [0, 0, 0, 1, 0, 0, 0, 0]\nbuffer_size = [262144, 131072, 0, 0, 0, 0, 0, 0]\n", nil)
	if len(r.plan.Refused) != 0 {
		t.Fatalf("refused %+v", r.plan.Refused)
	}
	err := r.sim.SetBuffer("ens1f0np0", dcb.Buffer{PrioBuffer: [8]uint8{0, 0, 0, 1}, Size: [8]uint32{262144, 131072}})
	if !errors.Is(err, syscall.ENOMEM) {
		t.Fatalf("the driver took the profile's write alone: %v", err)
	}
	for _, nd := range mlx5Ports {
		if got := portChanges(r.plan, nd); len(got) == 0 || got[0] != "buffers.step1.buffer_size" {
			t.Errorf("%s: changes %v, want buffer 1 grown first", nd, got)
		}
	}
	config := r.sim.Config()
	r.applyAndRollBack(t)
	if r.sim.Config() != config {
		t.Error("rollback did not restore the host")
	}
}

// A port in manual buffer mode whose buffers the profile keeps as they
// are: moving PFC from priority 3 to 4 makes buffer 0 (29952 bytes, where
// priority 4 maps) lossless, too small at the link's 100 Gb/s. Refused at
// plan time. The driver takes the PFC write itself, checked while the link
// it toggled trains (40 Gb/s: 26826 bytes), and answers -ENOMEM to the
// recompute once the link is up.
func TestPFCChangeCheckedAgainstUnchangedBuffers(t *testing.T) {
	r := driverRig(t, "cx6dx-ofed-factory", "[match]\ndrivers = [\"mlx5_core\"]\n[qos]\npfc_priorities = [4]\nglobal_pause = false\n[buffers]\npriority_to_buffer = [0, 0, 0, 1, 0, 0, 0, 0]\nbuffer_size = [29952, 200064, 0, 0, 0, 0, 0, 0]\n", manualLayout(t))
	var refused []string
	for _, e := range r.plan.Refused {
		refused = append(refused, e.Key)
		if !strings.Contains(e.Error, "buffer 0 would be lossless with 29952 bytes") {
			t.Errorf("%s: %s", e.Key, e.Error)
		}
	}
	if want := []string{"ens1f0np0.qos.pfc", "ens1f1np1.qos.pfc"}; !slices.Equal(refused, want) {
		t.Fatalf("refused %v, want %v", refused, want)
	}
	if err := r.sim.SetPFC("ens1f0np0", dcb.PFC{Enable: 1 << 4, Delay: 7}); err != nil {
		t.Fatalf("the PFC write, link training: %v", err)
	}
	if err := r.sim.Train("ens1f0np0"); err != nil {
		t.Fatal(err)
	}
	if err := r.sim.SetPFC("ens1f0np0", dcb.PFC{Enable: 1 << 4, Delay: 7}); !errors.Is(err, syscall.ENOMEM) {
		t.Fatalf("the driver took the recompute at 100 Gb/s: %v", err)
	}
}

// The order is checked for the rollback too. Buffer 0 large, PFC off; the
// profile turns PFC on priority 3, moves it into buffer 1 and shrinks
// buffer 0. PFC first applies (priority 3 lossless in the large buffer 0,
// then the map moves it to buffer 1), but its rollback would put priority
// 3 back into buffer 0, now 29952 bytes, with PFC still on: -ENOMEM. The
// buffers go first, and the apply and its rollback both pass.
func TestMLX5OrderCheckedForRollback(t *testing.T) {
	r := driverRig(t, "cx6dx-ofed-factory", "[match]\ndrivers = [\"mlx5_core\"]\n[qos]\npfc_priorities = [3]\nglobal_pause = false\n[buffers]\npriority_to_buffer = [0, 0, 0, 1, 0, 0, 0, 0]\nbuffer_size = [29952, 200064, 0, 0, 0, 0, 0, 0]\n",
		func(s *nictest.Sim) {
			for _, nd := range mlx5Ports {
				if err := s.SetPause(nd, nic.Pause{}); err != nil {
					t.Fatal(err)
				}
				if err := s.SetBuffer(nd, dcb.Buffer{Size: [8]uint32{262144, 131072}}); err != nil {
					t.Fatal(err)
				}
			}
		})
	if len(r.plan.Refused) != 0 {
		t.Fatalf("refused: %+v", r.plan.Refused)
	}
	for _, nd := range mlx5Ports {
		if got, want := portChanges(r.plan, nd), []string{"buffers.priority_to_buffer", "buffers.buffer_size", "qos.pfc_xoff_recompute_on_rollback", "qos.pfc", "qos.pfc_xoff_recompute"}; !slices.Equal(got, want) {
			t.Errorf("%s: changes %v, want %v", nd, got, want)
		}
	}
	config := r.sim.Config()
	r.applyAndRollBack(t)
	if r.sim.Config() != config {
		t.Error("rollback did not restore the host")
	}
}

// An MTU write that fails on a port in manual buffer mode leaves nothing
// changed, and the rollback must say so: it used to read the recompute
// planned after the MTU change back against the new MTU, found the old
// one, and reported "ROLLBACK FAILED", keeping a journal that every later
// rollback failed on the same way.
//
// The second port's link goes down after the plan: its MTU recomputes,
// reached by the rollback for an MTU change never made, must not be
// written, or mlx5 would recompute its thresholds for a link without
// speed (40 Gb/s).
func TestFailedMTUWriteRollsBackCleanlyOnManualBuffers(t *testing.T) {
	r := driverRig(t, "cx6dx-ofed-factory", "[link]\nmtu = 9000\n"+manualLayoutProfile+"buffer_size = [29952, 200064, 0, 0, 0, 0, 0, 0]\n", manualLayout(t))
	before := thresholdsOf(t, r.sim)
	r.sim.SetOperState(mlx5Ports[1], "down")
	config := r.sim.Config()
	r.sim.Inject(func(op, ifname string) error {
		if op == snapshot.OpSetMTU && ifname == mlx5Ports[0] {
			return syscall.EIO
		}
		return nil
	})
	txn, err := Begin(r.h, r.d, r.plan, "test", r.opts)
	if err != nil {
		t.Fatal(err)
	}
	err = txn.Run(context.Background())
	if err == nil || strings.Contains(err.Error(), "ROLLBACK FAILED") || txn.J.State != StateRolledBack {
		t.Fatalf("apply with a failing MTU write: %v; journal %s %v, want rolled back", err, txn.J.State, txn.J.Failures)
	}
	// Nothing was changed, so nothing was put back: the recomputes of the
	// MTU changes never made are unchanged, not restored.
	if len(txn.J.Restored) != 0 || !strings.Contains(err.Error(), "host as it was") {
		t.Errorf("restored %v; error %q, want nothing restored and the host as it was", txn.J.Restored, err)
	}
	if r.sim.Config() != config {
		t.Error("host not as it was")
	}
	for nd, th := range thresholdsOf(t, r.sim) {
		if th != before[nd] {
			t.Errorf("%s thresholds %+v, want %+v as before", nd, th, before[nd])
		}
	}
}

// mlx5 toggles the link on a PFC change and computes the thresholds while
// it trains, for 40 Gb/s (calculate_xoff, when mlx5e_port_linkspeed finds
// no operational speed), and nothing recomputes them when the link comes
// up: a 100 Gb/s port kept too little headroom. The apply recomputes them
// once the link is up, after the port's buffer and PFC writes, and the
// rollback does the same once it has put PFC back.
func TestPFCChangeRecomputesThresholdsOnceTheLinkIsUp(t *testing.T) {
	for _, fromDisk := range []bool{false, true} {
		r := driverRig(t, "cx6dx-ofed-factory", "[match]\ndrivers = [\"mlx5_core\"]\n[qos]\npfc_priorities = [3, 5]\nglobal_pause = false\n"+
			"[buffers]\npriority_to_buffer = [0, 0, 0, 1, 0, 1, 0, 0]\nbuffer_size = [29952, 200064, 0, 0, 0, 0, 0, 0]\n", manualLayout(t))
		if len(r.plan.Refused) != 0 {
			t.Fatalf("refused: %+v", r.plan.Refused)
		}
		at100G := wantThresholds(1500, 200064)
		before, config := thresholdsOf(t, r.sim), r.sim.Config()
		toggles := map[string]int{}
		for nd, th := range before {
			if th != at100G {
				t.Fatalf("%s prepared with %+v, want the 100 Gb/s thresholds %+v", nd, th, at100G)
			}
			toggles[nd] = r.sim.LinkToggles(nd)
		}
		txn := r.run(t)
		for nd, th := range thresholdsOf(t, r.sim) {
			if th != at100G {
				t.Errorf("%s after the apply: %+v, want the 100 Gb/s thresholds %+v", nd, th, at100G)
			}
			if n := r.sim.LinkToggles(nd) - toggles[nd]; n != 1 {
				t.Errorf("%s: the apply toggled the link %d times, want 1 (the PFC change)", nd, n)
			}
		}
		if fromDisk {
			// rocectl rollback and the agent's recovery read the journal
			// back: the recompute must still wait for the link's speed.
			if err := r.rollBackFromDisk(t); err != nil {
				t.Fatalf("rollback from disk: %v", err)
			}
		} else if err := txn.RollbackNow(); err != nil {
			t.Fatalf("rollback: %v", err)
		}
		for nd, th := range thresholdsOf(t, r.sim) {
			if th != before[nd] {
				t.Errorf("from disk %v: %s after the rollback: %+v, want %+v as before", fromDisk, nd, th, before[nd])
			}
		}
		if r.sim.Config() != config {
			t.Errorf("from disk %v: host not as it was after the rollback", fromDisk)
		}
	}
}

// A rollback reaches the recompute planned for a PFC change it never made
// (here on ens1f1np1, whose link went down after the plan, when
// ens1f0np0's buffer write fails). Nothing toggled that link, so nothing
// is recomputed: a recompute on a link without speed would replace its
// thresholds with those of 40 Gb/s, and waiting for a speed that does not
// come failed the rollback of a host that was as it had been.
func TestRollbackRecomputesOnlyLinksItToggled(t *testing.T) {
	r := driverRig(t, "cx6dx-ofed-factory", "[match]\ndrivers = [\"mlx5_core\"]\n[qos]\npfc_priorities = [3, 5]\nglobal_pause = false\n"+
		"[buffers]\npriority_to_buffer = [0, 0, 0, 1, 0, 1, 0, 0]\nbuffer_size = [29952, 200064, 0, 0, 0, 0, 0, 0]\n", manualLayout(t))
	if len(r.plan.Refused) != 0 {
		t.Fatalf("refused: %+v", r.plan.Refused)
	}
	before, config := thresholdsOf(t, r.sim), r.sim.Config()
	r.sim.SetOperState("ens1f1np1", "down")
	r.sim.Inject(func(op, ifname string) error {
		if op == snapshot.OpSetBuffer && ifname == "ens1f0np0" {
			return syscall.EIO
		}
		return nil
	})
	txn, err := Begin(r.h, r.d, r.plan, "test", r.opts)
	if err != nil {
		t.Fatal(err)
	}
	if err := txn.Run(context.Background()); err == nil || txn.J.State != StateRolledBack {
		t.Fatalf("apply with a failing buffer write: %v; journal %s %v, want rolled back", err, txn.J.State, txn.J.Failures)
	}
	r.sim.SetOperState("ens1f1np1", "up")
	if thresholdsOf(t, r.sim)["ens1f1np1"] != before["ens1f1np1"] {
		t.Errorf("ens1f1np1 thresholds %+v, want %+v: recomputed on a link nothing toggled", thresholdsOf(t, r.sim)["ens1f1np1"], before["ens1f1np1"])
	}
	if r.sim.Config() != config {
		t.Error("host not as it was")
	}
}

// A port whose link is down when the plan is made gets no recompute (there
// is no speed to wait for) but a note on its PFC change saying that its
// thresholds will be those of 40 Gb/s until PFC is written again.
func TestPFCChangeOnALinkDownSaysItsThresholdsWaitForAWrite(t *testing.T) {
	r := driverRig(t, "cx6dx-ofed-factory", "[match]\ndrivers = [\"mlx5_core\"]\n[qos]\npfc_priorities = [3, 5]\nglobal_pause = false\n"+
		"[buffers]\npriority_to_buffer = [0, 0, 0, 1, 0, 1, 0, 0]\nbuffer_size = [29952, 200064, 0, 0, 0, 0, 0, 0]\n",
		func(s *nictest.Sim) {
			manualLayout(t)(s)
			s.SetOperState("ens1f1np1", "down")
		})
	for _, nd := range mlx5Ports {
		got := portChanges(r.plan, nd)
		recomputes := slices.Contains(got, "qos.pfc_xoff_recompute")
		if recomputes != (nd == "ens1f0np0") {
			t.Errorf("%s: changes %v; a recompute only where the link is up", nd, got)
		}
	}
	for _, c := range r.plan.Changes {
		if c.Key == "ens1f1np1.qos.pfc" && !strings.Contains(c.Note, "the link is down: mlx5 computes the buffer thresholds for 40 Gb/s") {
			t.Errorf("%s: note %q", c.Key, c.Note)
		}
	}
}

// A recompute that waits for the speed of a link its PFC change toggled
// stops waiting when the apply's context ends (SIGINT, SIGTERM), with the
// context's error, which Run turns into "interrupted" and a rollback. It
// used to wait out its 30 s first, whatever the signal said.
func TestRecomputeWaitEndsWithTheApplyContext(t *testing.T) {
	r := driverRig(t, "cx6dx-ofed-factory", "[match]\ndrivers = [\"mlx5_core\"]\n[qos]\npfc_priorities = [3, 5]\nglobal_pause = false\n"+
		"[buffers]\npriority_to_buffer = [0, 0, 0, 1, 0, 1, 0, 0]\nbuffer_size = [29952, 200064, 0, 0, 0, 0, 0, 0]\n", manualLayout(t))
	txn, err := Begin(r.h, r.d, r.plan, "test", r.opts)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	owed := &host.Owed{} // one transaction's: the PFC change's toggle is owed its recompute
	for _, st := range txn.J.Steps {
		c := st.Changes[0]
		if c.Key != "ens1f0np0.qos.pfc_xoff_recompute" {
			if err := r.h.WriteStep(context.Background(), owed, r.d, st, false); err != nil {
				t.Fatalf("%s: %v", c.Key, err)
			}
			continue
		}
		// The link the PFC change toggled does not come back.
		r.sim.SetOperState("ens1f0np0", "down")
		ops := len(r.sim.Ops())
		err := r.h.WriteStep(ctx, owed, r.d, st, false)
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("recompute with the apply's context ended: %v, want context.Canceled", err)
		}
		if got := r.sim.Ops()[ops:]; len(got) != 0 {
			t.Errorf("the recompute wrote %v after its wait ended", got)
		}
		return
	}
	t.Fatalf("no recompute step for ens1f0np0 in %d steps", len(txn.J.Steps))
}

// The fat-tree recipe on a host already lossless on buffer 0 (priority 3
// moves to a new buffer 1 while the buffers are resized): no order of
// the profile's own PFC and buffer writes passes mlx5's checks, and an
// operator used to need two applies. The plan goes through intermediate
// buffer states (grow buffer 1 with the old map, move the map, shrink
// buffer 0); the simulator's mlx5 checks pass at every write, the host
// reaches the profile in one apply with one link toggle at most per
// port, and the rollback restores it exactly.
func TestLosslessHostRetunedThroughIntermediateBuffers(t *testing.T) {
	r := newRig(t, "cx6dx-ofed-lossless", "fat-tree-32gpu-100g.toml")
	if len(r.plan.Refused) != 0 {
		t.Fatalf("refused: %+v", r.plan.Refused)
	}
	steps := 0
	for _, c := range r.plan.Changes {
		if c.Port != nil && c.Port.Netdev == "ens1f0np0" && strings.Contains(c.Note, "step 1 of 3: grow buffer 1") {
			steps++
		}
	}
	if steps == 0 {
		t.Fatalf("no intermediate buffer step planned: %+v", r.plan.Changes)
	}
	before := r.state(t)
	toggles := map[string]int{}
	for _, nd := range []string{"ens1f0np0", "ens1f1np1"} {
		toggles[nd] = r.sim.LinkToggles(nd)
	}
	txn := r.run(t)
	if after := policy.Diff(r.d, r.h.Observe(r.d)); after.Changed() {
		t.Fatalf("drift after the apply: %+v", after.Changes)
	}
	for nd, n := range toggles {
		if d := r.sim.LinkToggles(nd) - n; d > 1 {
			t.Errorf("%s: %d link toggles, want at most 1", nd, d)
		}
	}
	if err := txn.RollbackNow(); err != nil {
		t.Fatalf("rollback: %v", err)
	}
	r.assertRestored(t, before, "after the rollback")
}

// A path through intermediate buffer states that fails at any of its
// writes, in either port, is rolled back through the same states in
// reverse, and the host ends exactly as it was: the steps never written
// are left alone (the host is not where they start from), the others
// undone one by one.
func TestIntermediateBufferPathRollsBackFromEveryWrite(t *testing.T) {
	for fail := 1; fail <= 6; fail++ { // 3 buffer writes on each of 2 ports
		t.Run(fmt.Sprintf("buffer write %d fails", fail), func(t *testing.T) {
			r := newRig(t, "cx6dx-ofed-lossless", "fat-tree-32gpu-100g.toml")
			before := r.state(t)
			n := 0
			r.sim.Inject(func(op, ifname string) error {
				if op == snapshot.OpSetBuffer {
					if n++; n == fail {
						return syscall.EIO
					}
				}
				return nil
			})
			err := r.apply(t)
			if err == nil {
				t.Fatalf("the apply went through a failing write %d (%d buffer writes)", fail, n)
			}
			if strings.Contains(err.Error(), "ROLLBACK FAILED") {
				t.Fatalf("rollback failed: %v", err)
			}
			r.sim.Inject(nil)
			r.assertRestored(t, before, "after the failed apply's rollback")
		})
	}
}

// A crash after any number of a path's steps is recovered from the
// journal alone, through the intermediate buffer states in reverse.
func TestIntermediateBufferPathRecoversFromAnyCrash(t *testing.T) {
	r := newRig(t, "cx6dx-ofed-lossless", "fat-tree-32gpu-100g.toml")
	steps, err := host.Steps(r.plan)
	if err != nil {
		t.Fatal(err)
	}
	for k := 0; k <= len(steps); k++ {
		r := newRig(t, "cx6dx-ofed-lossless", "fat-tree-32gpu-100g.toml")
		before := r.state(t)
		txn, err := Begin(r.h, r.d, r.plan, "x", r.opts)
		if err != nil {
			t.Fatal(err)
		}
		owed := &host.Owed{}
		for i := 0; i < k; i++ {
			if err := r.h.WriteStep(context.Background(), owed, r.d, txn.J.Steps[i], false); err != nil {
				t.Fatalf("k=%d: step %d: %v", k, i, err)
			}
		}
		open, err := r.opts.Store.Open()
		if err != nil || len(open) != 1 {
			t.Fatalf("open journals: %v %v", open, err)
		}
		h2 := &host.Host{FS: nic.NewFS(r.root, false), K: r.sim}
		if err := Rollback(h2, open[0], Options{Store: r.opts.Store, Retries: 1}); err != nil {
			t.Fatalf("k=%d: %v", k, err)
		}
		r.assertRestored(t, before, fmt.Sprintf("k=%d", k))
	}
}
