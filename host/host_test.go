package host

import (
	"testing"

	"github.com/rocectl/rocectl/nic"
	"github.com/rocectl/rocectl/port"
)

// Ports finds the RoCE v2 IPv4 GID the way NCCL does: any entry of
// the port's GID table, so an address on a VLAN above the port counts
// (NCCL never reads gid_attrs/ndevs). The fixture has ens1f0's IPv4
// address on ens1f0.100 only, at index 7, and mlx5_1 no IPv4 at all.
func TestPortsCountsVLANGIDs(t *testing.T) {
	h := &Host{FS: nic.NewFS("../nic/testdata/gid/derived-vlan-ipv6", true)}
	inv := &nic.Inventory{Ports: []port.Port{
		{RDMADevice: "mlx5_0", PortNum: 1, Netdev: "ens1f0"},
		{RDMADevice: "mlx5_1", PortNum: 1, Netdev: "ens4f1"},
	}}
	ports := h.Ports(inv, true)
	if len(ports) != 2 || ports[0].RoCEv2GID != 7 || ports[1].RoCEv2GID != -1 {
		t.Fatalf("Ports = %+v, want GID 7 on mlx5_0 (its VLAN's) and none on mlx5_1", ports)
	}
	for _, p := range h.Ports(inv, false) {
		if p.RoCEv2GID != -1 {
			t.Errorf("without withGID: %+v", p)
		}
	}
}
