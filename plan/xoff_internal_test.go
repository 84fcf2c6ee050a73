package plan

import (
	"slices"
	"strings"
	"testing"

	"github.com/rocectl/rocectl/policy"
	"github.com/rocectl/rocectl/port"
)

// mtuFirst puts an MTU change that something placed after a port's PFC
// or buffer change back before it, so the driver computes the thresholds
// with the final MTU; other ports' changes keep their place.
func TestMTUFirstMovesMTUBeforeBufferChanges(t *testing.T) {
	pt := &port.Port{Netdev: "ens1f0np0", Driver: "mlx5_core"}
	other := &port.Port{Netdev: "ens1f1np1", Driver: "mlx5_core"}
	mk := func(p *port.Port, k policy.Kind, name string) policy.Change {
		return policy.Change{Setting: policy.Setting{Key: p.Netdev + "." + name, Scope: p.Netdev, Name: name, Kind: k, Port: p}}
	}
	plan := &policy.Plan{Changes: []policy.Change{
		mk(other, policy.KindPFC, "qos.pfc"),
		mk(pt, policy.KindGlobalPause, "qos.global_pause"),
		mk(pt, policy.KindPrioBuffer, "buffers.priority_to_buffer"),
		mk(pt, policy.KindPFC, "qos.pfc"),
		mk(pt, policy.KindMTU, "link.mtu"),
	}}
	pl := &planning{plan: plan, at: indexChanges(plan.Changes)}
	if at := pl.mtuFirst(4, []string{"ens1f0np0"}); at != 2 {
		t.Errorf("MTU at %d, want 2", at)
	}
	var got []string
	for _, c := range plan.Changes {
		got = append(got, c.Key)
	}
	want := []string{"ens1f1np1.qos.pfc", "ens1f0np0.qos.global_pause", "ens1f0np0.link.mtu", "ens1f0np0.buffers.priority_to_buffer", "ens1f0np0.qos.pfc"}
	if !slices.Equal(got, want) {
		t.Errorf("order %v, want %v", got, want)
	}
	if !strings.Contains(plan.Changes[2].Note, "MTU of the moment") {
		t.Errorf("moved MTU change's note %q", plan.Changes[2].Note)
	}
	if !slices.Equal(pl.at["ens1f0np0"], []int{1, 2, 3, 4}) || !slices.Equal(pl.at["ens1f1np1"], []int{0}) {
		t.Errorf("index after the move %v", pl.at)
	}
}
