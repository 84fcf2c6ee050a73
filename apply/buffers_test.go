package apply

import (
	"context"
	"strings"
	"testing"

	"github.com/rocectl/rocectl/nic/dcb"
	"github.com/rocectl/rocectl/nic/nictest"
)

// The mlx5 buffer rules (port_buffer.c) as the planner must respect them;
// the simulator plays the driver (nictest/sim_mlx5_buffer.go).

// manualLayout puts both cx6dx ports in manual buffer mode with PFC on
// priority 3 in buffer 1, and a small lossy buffer 0.
func manualLayout(t *testing.T) func(*nictest.Sim) {
	return func(s *nictest.Sim) {
		for _, nd := range []string{"ens1f0np0", "ens1f1np1"} {
			if err := s.SetBuffer(nd, dcb.Buffer{PrioBuffer: [8]uint8{0, 0, 0, 1}, Size: [8]uint32{29952, 200064}}); err != nil {
				t.Fatal(err)
			}
			if err := s.SetPFC(nd, dcb.PFC{Enable: 1 << 3, Delay: 7}); err != nil {
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
	if strings.Join(order, " ") != "qos.global_pause buffers.priority_to_buffer qos.pfc" && strings.Join(order, " ") != "buffers.priority_to_buffer qos.pfc" {
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

func TestBufferSizesRefusedAtPlanTime(t *testing.T) {
	for _, tc := range []struct{ name, buffers, want string }{
		{"not whole cells", "priority_to_buffer = [0, 0, 0, 1, 0, 0, 0, 0]\nbuffer_size = [130001, 131072, 0, 0, 0, 0, 0, 0]\n", "use 129920 or 130048"},
		// MTU 9000, cable 7 m, 100 Gb/s: 316 × 100 + 24480 + 9216 + 128.
		{"lossless below the driver's minimum", "priority_to_buffer = [0, 0, 0, 1, 0, 0, 0, 0]\nbuffer_size = [131072, 32768, 0, 0, 0, 0, 0, 0]\n", "needs at least 65424"},
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
				if err := s.SetBuffer(nd, dcb.Buffer{PrioBuffer: [8]uint8{0, 0, 0, 1}, Size: [8]uint32{16384, 200064}}); err != nil {
					t.Fatal(err)
				}
				if err := s.SetPFC(nd, dcb.PFC{Enable: 1 << 3, Delay: 7}); err != nil {
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
	}
}
