package cli

import (
	"context"
	"fmt"
	"io"
	"path/filepath"
	"testing"

	"github.com/rocectl/rocectl/internal/testkit/hosts"
	"github.com/rocectl/rocectl/nccl"
	"github.com/rocectl/rocectl/nic/snapshot"
	"github.com/rocectl/rocectl/policy"
)

// BenchmarkAuditPipeline measures what `rocectl audit --snapshot` does for a
// full profile: load and validate it, open the snapshot, discover the
// ports, resolve, read every setting back, diff. The 5 ms target (issue
// "Declarative core") is set for the policy part alone
// (BenchmarkPolicyPipeline); this one adds reading the snapshot and is
// printed beside it.
func BenchmarkAuditPipeline(b *testing.B) {
	for _, c := range []struct {
		ports  int
		packed bool
	}{{8, false}, {64, false}, {8, true}, {64, true}} {
		name := fmt.Sprintf("ports=%d", c.ports)
		if c.packed {
			name += "/packed"
		}
		b.Run(name, func(b *testing.B) {
			ports := c.ports
			env := snapshotEnv(b, ports)
			if c.packed {
				if err := snapshot.Pack(env.Snapshot); err != nil {
					b.Fatal(err)
				}
			}
			prof := repo("profiles/fat-tree-32gpu-100g.toml")
			b.ReportAllocs()
			for b.Loop() {
				h, done, err := env.Host(context.Background())
				if err != nil {
					b.Fatal(err)
				}
				pl, err := env.makePlan(prof, h, false)
				if err != nil {
					b.Fatal(err)
				}
				if len(pl.Desired.Ports) != ports || !pl.Plan.Changed() {
					b.Fatalf("matched %d ports, changed %v", len(pl.Desired.Ports), pl.Plan.Changed())
				}
				done()
			}
		})
	}
}

// BenchmarkPolicyPipeline is the issue's "load + validate + resolve + diff
// of a full profile against a 64-port snapshot": the host is read once (the
// snapshot's values, as Observe returns them), then each iteration loads
// and validates the profile from disk, resolves it for every port and
// diffs. Target: under 5 ms for 64 ports.
func BenchmarkPolicyPipeline(b *testing.B) {
	for _, ports := range []int{8, 64} {
		b.Run(fmt.Sprintf("ports=%d", ports), func(b *testing.B) {
			env := snapshotEnv(b, ports)
			h, done, err := env.Host(context.Background())
			if err != nil {
				b.Fatal(err)
			}
			defer done()
			prof := repo("profiles/fat-tree-32gpu-100g.toml")
			pl, err := env.makePlan(prof, h, false)
			if err != nil {
				b.Fatal(err)
			}
			ports := h.Ports(pl.Inventory, pl.Profile.NeedsGID())
			observed := h.Observe(pl.Desired)
			b.ReportAllocs()
			for b.Loop() {
				p, err := policy.Load(prof, policy.LoadOptions{})
				if err != nil {
					b.Fatal(err)
				}
				d := policy.Resolve(p, ports)
				nccl.Resolve(d)
				if plan := policy.Diff(d, observed); !plan.Changed() {
					b.Fatal("no changes")
				}
			}
		})
	}
}

// snapshotEnv writes an n-port ConnectX-6 Dx factory host and returns an
// Env that reads it as a snapshot.
func snapshotEnv(b *testing.B, ports int) *Env {
	b.Helper()
	dir := filepath.Join(b.TempDir(), "host")
	if err := hosts.WriteCX6DxFactoryN(hosts.DefaultCapturesDir(), dir, ports); err != nil {
		b.Fatal(err)
	}
	env := NewEnv(io.Discard, io.Discard)
	env.Snapshot = dir
	env.setupLog()
	return env
}
