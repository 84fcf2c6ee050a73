package host

import (
	"testing"

	"github.com/rocectl/rocectl/policy"
	"github.com/rocectl/rocectl/port"
)

// Every setting kind policy can produce has exactly one registry entry, with
// a reader and an object to write it through.
func TestRegistryCoversEveryKind(t *testing.T) {
	for _, k := range policy.Kinds() {
		e, ok := kinds[k]
		switch {
		case !ok:
			t.Errorf("kind %s has no registry entry", k)
		case e.read == nil || e.obj == nil || e.obj.write == nil:
			t.Errorf("kind %s: entry without read, object or write", k)
		}
	}
	if len(kinds) != len(policy.Kinds()) {
		t.Errorf("registry has %d entries for %d kinds", len(kinds), len(policy.Kinds()))
	}
}

// Kinds written through one kernel object must be read from it too: an
// object that holds several settings is written in one step, GET → modify
// → SET, and a step's undo hooks apply to all of its settings.
func TestObjectsOfSeveralKindsAreGrouped(t *testing.T) {
	users := map[*object][]policy.Kind{}
	for k, e := range kinds {
		users[e.obj] = append(users[e.obj], k)
	}
	for obj, ks := range users {
		if len(ks) > 1 && obj.group == "" {
			t.Errorf("kinds %v share an object but it has no group name, so each would be its own step", ks)
		}
	}
}

// Steps keeps the journal's step names: a journal written by an older
// rocectl names its steps the same way (app, ets, pfc, buffer, rings, nccl,
// or the setting's own name).
func TestStepsNameGroupsAsTheJournalDoes(t *testing.T) {
	port := &port.Port{Netdev: "ens1f0np0", RDMADevice: "mlx5_0", PortNum: 1}
	mk := func(k policy.Kind, name string) policy.Change {
		return policy.Change{Setting: policy.Setting{Key: "ens1f0np0." + name, Scope: "ens1f0np0", Name: name, Kind: k, Port: port}}
	}
	plan := &policy.Plan{Changes: []policy.Change{
		mk(policy.KindMTU, "link.mtu"),
		mk(policy.KindTrust, "qos.trust"),
		mk(policy.KindDSCPMap, "qos.dscp2prio"),
		mk(policy.KindETSPrioTC, "qos.ets.priority_to_tc"),
		mk(policy.KindETSBandwidth, "qos.ets.tc_bandwidth"),
		mk(policy.KindPFC, "qos.pfc"),
		mk(policy.KindCableLength, "qos.cable_length"),
		mk(policy.KindECNEnable, "ecn.np.enable.3"),
	}}
	steps, err := Steps(plan)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, st := range steps {
		got = append(got, st.Group)
	}
	want := []string{"link.mtu", "app", "ets", "pfc", "ecn.np.enable.3"}
	if len(got) != len(want) {
		t.Fatalf("steps %v, want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("steps %v, want %v", got, want)
		}
	}
	if n := len(steps[1].Changes); n != 2 {
		t.Errorf("app step has %d changes, want trust and the DSCP map", n)
	}
}
