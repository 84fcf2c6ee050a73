package plan_test

import (
	"fmt"
	"path/filepath"
	"testing"

	"github.com/rocectl/rocectl/host"
	"github.com/rocectl/rocectl/internal/testkit/fixturehost"
	"github.com/rocectl/rocectl/internal/testkit/hosts"
	"github.com/rocectl/rocectl/nccl"
	"github.com/rocectl/rocectl/nic/nictest"
	"github.com/rocectl/rocectl/nic/snapshot"
	"github.com/rocectl/rocectl/plan"
	"github.com/rocectl/rocectl/policy"
)

// BenchmarkPlanAfterObserve measures what Build does once Observe has read
// the host: the diff, companions, driver ordering, DCBX and xoff planning
// on the n-port ConnectX-6 Dx factory snapshot that cli's
// BenchmarkAuditPipeline reads, with the full fat-tree profile. That part
// runs after every port has been read, on one core, so it is all wall
// time of an audit.
func BenchmarkPlanAfterObserve(b *testing.B) {
	for _, ports := range []int{8, 64} {
		b.Run(fmt.Sprintf("ports=%d", ports), func(b *testing.B) {
			dir := filepath.Join(b.TempDir(), "host")
			if err := hosts.WriteCX6DxFactoryN(hosts.DefaultCapturesDir(), dir, ports); err != nil {
				b.Fatal(err)
			}
			s, err := snapshot.Open(dir)
			if err != nil {
				b.Fatal(err)
			}
			h := &host.Host{FS: s.FS(), K: s.Kernel(), NotCaptured: s.Meta.NotCaptured}
			p, err := policy.Load(filepath.Join(fixturehost.RepoRoot(), "profiles", "fat-tree-32gpu-100g.toml"), policy.LoadOptions{})
			if err != nil {
				b.Fatal(err)
			}
			d := policy.Resolve(p, h.Ports(h.Discover(), p.NeedsGID()))
			nccl.Resolve(d)
			d = host.Place(d)
			o := h.Observe(d)
			if len(d.Ports) != ports {
				b.Fatalf("matched %d ports", len(d.Ports))
			}
			b.ReportAllocs()
			for b.Loop() {
				if pl := plan.Build(d, o, h.ForPlan()); !pl.Changed() {
					b.Fatal("no changes")
				}
			}
		})
	}
}

// BenchmarkPlanWorstStart plans the fat-tree recipe on 64 ports that all
// start where the path search tries every candidate and finds none, the
// worst case of its bound (issue "Reach any reachable target…": ≤ 50 ms
// on 64 ports): priority 4 lossless on a 16 KiB buffer 2, which mlx5
// refuses at the port's own speed, so that no candidate's rollback can
// write the start back. Every pass runs: the MTU first, then last, and
// both with the PFC write whole and split in two (the cable length
// changes too). (It used to start from a 64 KiB buffer 2 that the MTU
// change makes too small; writing the MTU last reaches that one now.)
func BenchmarkPlanWorstStart(b *testing.B) {
	dir := filepath.Join(b.TempDir(), "host")
	if err := hosts.WriteCX6DxFactoryN(hosts.DefaultCapturesDir(), dir, 64); err != nil {
		b.Fatal(err)
	}
	s, err := snapshot.Open(dir)
	if err != nil {
		b.Fatal(err)
	}
	st := s.State()
	for _, ls := range st.Links {
		if ls.DCB == nil || ls.DCB.Buffer == nil || ls.DCB.PFC == nil {
			continue
		}
		ls.DCB.Buffer.PrioBuffer = [8]uint8{1, 0, 1, 2, 1, 0, 0, 0}
		ls.DCB.Buffer.Size = [8]uint32{32768, 262144, 16384}
		ls.DCB.PFC.Enable = 1 << 4
	}
	h := &host.Host{FS: s.FS(), K: nictest.NewSim(st), NotCaptured: s.Meta.NotCaptured}
	p, err := policy.Load(filepath.Join(fixturehost.RepoRoot(), "profiles", "fat-tree-32gpu-100g.toml"), policy.LoadOptions{})
	if err != nil {
		b.Fatal(err)
	}
	d := policy.Resolve(p, h.Ports(h.Discover(), p.NeedsGID()))
	nccl.Resolve(d)
	d = host.Place(d)
	o := h.Observe(d)
	if len(d.Ports) != 64 {
		b.Fatalf("matched %d ports", len(d.Ports))
	}
	if pl := plan.Build(d, o, h.ForPlan()); len(pl.Refused) != 64 {
		b.Fatalf("%d refusals, want every port's (no path: every candidate tried)", len(pl.Refused))
	}
	b.ReportAllocs()
	for b.Loop() {
		plan.Build(d, o, h.ForPlan())
	}
	b.ReportMetric(50, "budget-ms")
}
