package host_test

import (
	"path/filepath"
	"reflect"
	"testing"

	"github.com/rocectl/rocectl/host"
	"github.com/rocectl/rocectl/internal/testkit/fixturehost"
	"github.com/rocectl/rocectl/nic"
	"github.com/rocectl/rocectl/policy"
)

// Place and Observe change nothing they are given: Place returns the
// placed settings (a bond's on its slaves) and leaves d as it was, and
// Observe reads a placed or unplaced d alike without touching it.
func TestPlaceAndObserveLeaveTheirInputAlone(t *testing.T) {
	root, sim := fixturehost.Copy(t, "cx5-roce-lag")
	h := &host.Host{FS: nic.NewFS(root, false), K: sim}
	p, err := policy.Load(filepath.Join(fixturehost.RepoRoot(), "profiles", "connectx-lossless.toml"), policy.LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	d := policy.Resolve(p, h.Ports(h.Discover(), false))
	snapshot := func(d *policy.Desired) policy.Desired {
		c := *d
		c.Ports = nil
		for _, dp := range d.Ports {
			dp.Settings = append([]policy.Setting(nil), dp.Settings...)
			c.Ports = append(c.Ports, dp)
		}
		c.Unresolved = append([]policy.Unsupported(nil), d.Unresolved...)
		return c
	}
	before := snapshot(d)
	placed := host.Place(d)
	if !reflect.DeepEqual(snapshot(d), before) || d.Placed {
		t.Fatal("Place changed its input")
	}
	if !placed.Placed || host.Place(placed) != placed {
		t.Fatal("a placed Desired is placed once")
	}
	slaves := 0
	for _, s := range placed.Ports[0].Settings {
		if s.Port != nil && s.Port.Master == "bond0" {
			slaves++
		}
	}
	if slaves == 0 {
		t.Fatal("the bond's settings are not on its slaves")
	}
	placedBefore := snapshot(placed)
	o := h.Observe(d)
	if !reflect.DeepEqual(snapshot(d), before) {
		t.Error("Observe changed an unplaced input")
	}
	if !reflect.DeepEqual(o, h.Observe(placed)) || !reflect.DeepEqual(snapshot(placed), placedBefore) {
		t.Error("Observe of the unplaced and placed settings differ, or it changed its input")
	}
}
