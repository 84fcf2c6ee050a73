package plan_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/rocectl/rocectl/host"
	"github.com/rocectl/rocectl/internal/testkit/fixturehost"
	"github.com/rocectl/rocectl/nccl"
	"github.com/rocectl/rocectl/nic/snapshot"
	"github.com/rocectl/rocectl/policy"
)

// Every value a plan carries is its kind's canonical text (policy's
// codec for the kind reads it and writes it back the same): the desired
// values of every shipped profile, the values every shipped host reports,
// and the companions and driver actions the passes add. Code that acts on
// a value decodes it with the codec and can rely on it reading.
func TestEveryPlannedValueIsCanonical(t *testing.T) {
	profiles, _ := filepath.Glob(filepath.Join(fixturehost.RepoRoot(), "profiles", "*.toml"))
	hosts, _ := os.ReadDir(filepath.Join(fixturehost.RepoRoot(), "testdata", "hosts"))
	if len(profiles) < 5 || len(hosts) < 6 {
		t.Fatalf("%d profiles, %d hosts", len(profiles), len(hosts))
	}
	checked := 0
	for _, h := range hosts {
		s, err := snapshot.Open(fixturehost.Dir(h.Name()))
		if err != nil {
			t.Fatal(err)
		}
		hh := &host.Host{FS: s.FS(), K: s.Kernel(), NotCaptured: s.Meta.NotCaptured}
		for _, pf := range profiles {
			p, err := policy.Load(pf, policy.LoadOptions{AllowInsecure: true})
			if err != nil {
				t.Fatal(err)
			}
			d := policy.Resolve(p, hh.Ports(hh.Discover(), p.NeedsGID()))
			nccl.Resolve(d)
			pl := buildPlan(hh, d)
			for _, c := range pl.Changes {
				if err := policy.CheckValue(c.Kind, c.Value); err != nil {
					t.Errorf("%s on %s: %s: %v", filepath.Base(pf), h.Name(), c.Key, err)
				}
				if !c.Absent {
					if err := policy.CheckValue(c.Kind, c.Before); err != nil {
						t.Errorf("%s on %s: %s before: %v", filepath.Base(pf), h.Name(), c.Key, err)
					}
				}
				checked++
			}
		}
	}
	if checked < 200 {
		t.Fatalf("checked only %d changes", checked)
	}
}
