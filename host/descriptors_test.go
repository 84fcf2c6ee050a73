package host_test

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/rocectl/rocectl/host"
	"github.com/rocectl/rocectl/internal/testkit/fdtest"
	"github.com/rocectl/rocectl/nic/snapshot"
	"github.com/rocectl/rocectl/plan"
	"github.com/rocectl/rocectl/policy"
)

// Observe holds each port's ECN directory open while it reads the port
// (ECN.Held) and closes it after: planning every fixture host leaves no
// descriptor open below its tree, however many ports it has (a process
// that outgrows its descriptor table waits for an RCU grace period).
func TestPlanLeavesNoDescriptorOpen(t *testing.T) {
	hosts, err := filepath.Glob(filepath.Join("..", "testdata", "hosts", "*"))
	if err != nil || len(hosts) < 3 {
		t.Fatalf("fixture hosts: %v %v", hosts, err)
	}
	p, err := policy.Load(filepath.Join("..", "profiles", "fat-tree-32gpu-100g.toml"), policy.LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	ecnRead := 0
	for _, dir := range hosts {
		s, err := snapshot.Open(dir)
		if err != nil {
			t.Fatal(err)
		}
		h := &host.Host{FS: s.FS(), K: s.Kernel(), NotCaptured: s.Meta.NotCaptured}
		sys := h.FS.Root() + "/sys"
		before := fdtest.Under(t, sys)
		d := host.Place(policy.Resolve(p, h.Ports(h.Discover(), false)))
		o := h.Observe(d)
		for k := range o.Values {
			if strings.Contains(k, ".ecn.") {
				ecnRead++
			}
		}
		plan.Build(d, o, h.ForPlan())
		if n := fdtest.Under(t, sys); n != before {
			t.Errorf("%s: %d descriptors open below sys after planning, %d before", filepath.Base(dir), n, before)
		}
	}
	if ecnRead == 0 {
		t.Fatal("no ECN value read on any fixture host: the test would prove nothing")
	}
}
