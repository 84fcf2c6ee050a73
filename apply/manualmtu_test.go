package apply

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/rocectl/rocectl/host"
	"github.com/rocectl/rocectl/internal/testkit/fixturehost"
	"github.com/rocectl/rocectl/nccl"
	"github.com/rocectl/rocectl/nic"
	"github.com/rocectl/rocectl/nic/dcb"
	"github.com/rocectl/rocectl/policy"
	"github.com/rocectl/rocectl/statedir"
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
			root, sim := fixturehost.Copy(t, tc.fixture)
			if err := os.MkdirAll(filepath.Join(root, "etc"), 0o755); err != nil {
				t.Fatal(err)
			}
			ports, mtuLinks := bufferPorts(root, sim)
			for _, nd := range mtuLinks {
				if err := sim.SetMTU(nd, 1500); err != nil {
					t.Fatal(err)
				}
			}
			pfc := dcb.PFC{Enable: 1<<3 | 1<<4, Delay: 7}
			for _, nd := range ports {
				for _, step := range []func() error{
					func() error { return sim.SetPause(nd, nic.Pause{}) },
					func() error { return sim.SetPFC(nd, dcb.PFC{Delay: 7}) },
					func() error { return sim.Train(nd) },
					func() error { return sim.SetBuffer(nd, tc.start[nd]) },
					func() error { return sim.SetPFC(nd, pfc) },
					func() error { return sim.Train(nd) },
					func() error { return sim.SetPFC(nd, pfc) },
				} {
					if err := step(); err != nil {
						t.Fatalf("%s: start state: %v", nd, err)
					}
				}
			}
			h := &host.Host{FS: nic.NewFS(root, false), K: sim}
			p, err := policy.Load(filepath.Join(fixturehost.RepoRoot(), "profiles", "lossy-ecn-only.toml"), policy.LoadOptions{AllowInsecure: true})
			if err != nil {
				t.Fatal(err)
			}
			d := policy.Resolve(p, h.Ports(h.Discover(), true))
			nccl.Resolve(d)
			d, pl := planOf(h, d)
			for _, rf := range pl.Refused {
				t.Fatalf("refused %s: %s", rf.Key, rf.Error)
			}
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
			r := &rig{root: root, sim: sim, h: h, d: d, plan: pl, opts: Options{Store: Store{Store: statedir.Store{Dir: t.TempDir()}}, Retries: 1}}
			before := r.state(t)
			txn, err := Begin(r.h, r.d, r.plan, "x", r.opts)
			if err != nil {
				t.Fatal(err)
			}
			if err := txn.Run(context.Background()); err != nil {
				t.Fatalf("apply: %v", err)
			}
			if after := policy.Diff(r.d, r.h.Observe(r.d)); after.Changed() {
				t.Errorf("drift after the apply: %v", after.Changes[0].Key)
			}
			if err := txn.RollbackNow(); err != nil {
				t.Fatalf("rollback: %v", err)
			}
			r.assertRestored(t, before, "the apply")
		})
	}
}
