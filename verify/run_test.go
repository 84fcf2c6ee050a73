package verify

import (
	"context"
	"strings"
	"testing"

	"github.com/rocectl/rocectl/policy"
	"github.com/rocectl/rocectl/port"
)

// runDesired is one port wanting an MTU and a PFC priority, with no RoCE
// v2 GID (no IPv4 address): traffic cannot run on it.
func runDesired() *policy.Desired {
	p := port.Port{Netdev: "ens1f0np0", RDMADevice: "mlx5_0", PortNum: 1, RoCEv2GID: -1}
	set := func(name string, k policy.Kind, v string) policy.Setting {
		return policy.Setting{Key: p.Netdev + "." + name, Scope: p.Netdev, Name: name, Kind: k, Value: v, Port: &p}
	}
	return &policy.Desired{Ports: []policy.DesiredPort{{Port: p, Settings: []policy.Setting{
		set("link.mtu", policy.KindMTU, "9000"), set("qos.pfc", policy.KindPFC, "3")}}}}
}

// Run reads back through Observe, keeps what it could not read as
// unknown, and words each traffic failure with its port (loopback) or
// none (two-host).
func TestRunReadbackAndTraffic(t *testing.T) {
	d := runDesired()
	observe := func(got *policy.Desired) *policy.Observed {
		if got != d {
			t.Fatal("Observe got other settings")
		}
		o := policy.NewObserved()
		o.Values["ens1f0np0.link.mtu"] = "1500"
		o.Unknown["ens1f0np0.qos.pfc"] = "not_captured"
		return o
	}
	res := Run(context.Background(), RunConfig{Desired: d, Observe: observe})
	if len(res.Mismatches) != 1 || res.Mismatches[0].Key != "ens1f0np0.link.mtu" || len(res.Unknown) != 1 || res.OK() {
		t.Fatalf("readback: %+v", res)
	}
	if res.Traffic != nil || res.Errors != nil {
		t.Fatalf("traffic nobody asked for: %+v", res)
	}

	res = Run(context.Background(), RunConfig{Desired: d, Observe: observe, Loopback: true})
	if len(res.Errors) != 1 || res.Errors[0].Port != "ens1f0np0 (mlx5_0 port 1)" || !strings.Contains(res.Errors[0].Err.Error(), "no RoCE v2 IPv4 GID on mlx5_0 port 1") {
		t.Errorf("loopback without a GID: %+v", res.Errors)
	}
	res = Run(context.Background(), RunConfig{Desired: d, Observe: observe, Peer: "h:1", Listen: ":1"})
	if len(res.Errors) != 1 || res.Errors[0].Port != "" || res.Errors[0].Err.Error() != "--peer and --listen exclude each other" {
		t.Errorf("two-host with both ends: %+v", res.Errors)
	}
	res = Run(context.Background(), RunConfig{Desired: &policy.Desired{}, Observe: func(*policy.Desired) *policy.Observed { return policy.NewObserved() }, Peer: "h:1"})
	if len(res.Errors) != 1 || res.Errors[0].Err.Error() != "no RoCE port matches the profile" {
		t.Errorf("two-host without a port: %+v", res.Errors)
	}
}
