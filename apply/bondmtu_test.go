package apply

import (
	"context"
	"os"
	"path/filepath"
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
	root, sim := fixturehost.Copy(t, "cx5-roce-lag")
	if err := os.MkdirAll(filepath.Join(root, "etc"), 0o755); err != nil {
		t.Fatal(err)
	}
	ports, mtuLinks := bufferPorts(root, sim)
	for _, nd := range mtuLinks {
		if err := sim.SetMTU(nd, 1500); err != nil {
			t.Fatal(err)
		}
	}
	start := map[string]dcb.Buffer{
		"ens1f0np0": {PrioBuffer: [8]uint8{1, 2, 0, 1, 2, 0, 0, 1}, Size: [8]uint32{65536, 98304, 32768}},
		"ens1f1np1": {PrioBuffer: [8]uint8{2, 0, 2, 2, 2, 2, 1, 0}, Size: [8]uint32{65536, 65536, 262144}},
	}
	pfc := dcb.PFC{Enable: 1<<3 | 1<<4, Delay: 7}
	for _, nd := range ports {
		for _, step := range []func() error{
			func() error { return sim.SetPause(nd, nic.Pause{}) },
			func() error { return sim.SetPFC(nd, dcb.PFC{Delay: 7}) },
			func() error { return sim.Train(nd) },
			func() error { return sim.SetBuffer(nd, start[nd]) },
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
	p, err := policy.Load(filepath.Join(fixturehost.RepoRoot(), "profiles", "fat-tree-32gpu-100g.toml"), policy.LoadOptions{AllowInsecure: true})
	if err != nil {
		t.Fatal(err)
	}
	d := policy.Resolve(p, h.Ports(h.Discover(), true))
	nccl.Resolve(d)
	d, pl := planOf(h, d)
	for _, rf := range pl.Refused {
		t.Fatalf("refused %s: %s", rf.Key, rf.Error)
	}
	// The bond's MTU change comes after both slaves' first buffer step
	// and before both PFC writes.
	pos := map[string]int{}
	for i, c := range pl.Changes {
		if _, seen := pos[c.Key]; !seen {
			pos[c.Key] = i
		}
	}
	mtu := pos["bond0.link.mtu"]
	for _, nd := range ports {
		if first, pfcAt := pos[nd+".buffers.priority_to_buffer"], pos[nd+".qos.pfc"]; !(first < mtu && mtu < pfcAt) {
			t.Errorf("%s: first buffer step at %d, bond MTU at %d, PFC at %d", nd, first, mtu, pfcAt)
		}
	}
	if c := pl.Changes[mtu]; !strings.Contains(c.Note, "after each slave's first buffer step") {
		t.Errorf("the MTU change says nothing of its place: %q", c.Note)
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
	r.assertRestored(t, before, "the bond's apply")
}
