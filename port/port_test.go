package port

import (
	"encoding/json"
	"testing"
)

// The discovery document (`rocectl topo -o json`, the "ports" of audit and
// apply documents) is these JSON names: the facts filled after discovery
// (RoCEv2GID, Master) never appear in it, and empty optional facts are left
// out. Pinned byte for byte: docs/schema/topo.json and report.json describe it.
func TestPortJSONIsTheDiscoveryDocument(t *testing.T) {
	for _, c := range []struct {
		p    Port
		want string
	}{
		{Port{RDMADevice: "mlx5_bond_0", PortNum: 1, Netdev: "bond0", PCI: "0000:3b:00.0", Driver: "mlx5_core",
			Firmware: "16.35.2000", NUMANode: 0, HCAType: "MT4119", BoardID: "MT_0000000080", State: "ACTIVE",
			Rate: "25 Gb/sec (1X EDR)", OperState: "up", SpeedMbps: 50000, Role: RoleBond,
			Bond:      &Bond{Name: "bond0", Mode: "802.3ad", Slaves: []Slave{{Netdev: "ens1f0np0", PCI: "0000:3b:00.0", Driver: "mlx5_core"}, {Netdev: "ens1f1np1"}}},
			RoCEv2GID: 3, Master: "ignored"},
			`{"rdma_device":"mlx5_bond_0","port":1,"netdev":"bond0","pci":"0000:3b:00.0","driver":"mlx5_core",` +
				`"firmware":"16.35.2000","numa_node":0,"hca_type":"MT4119","board_id":"MT_0000000080","state":"ACTIVE",` +
				`"rate":"25 Gb/sec (1X EDR)","operstate":"up","speed_mbps":50000,"role":"bond",` +
				`"bond":{"name":"bond0","mode":"802.3ad","slaves":[{"netdev":"ens1f0np0","pci":"0000:3b:00.0","driver":"mlx5_core"},{"netdev":"ens1f1np1"}]}}`},
		{Port{RDMADevice: "mlx5_4", PortNum: 1, Netdev: "enp7s2f2", Driver: "mlx5_core", NUMANode: -1, State: "DOWN",
			Role: RoleVF, PF: "enp7s0f0np0", RoCEv2GID: -1},
			`{"rdma_device":"mlx5_4","port":1,"netdev":"enp7s2f2","driver":"mlx5_core","numa_node":-1,"state":"DOWN","role":"vf","pf":"enp7s0f0np0"}`},
		{Port{Netdev: "eth2", NUMANode: -1, State: "unknown", Role: RoleNetdevOnly, RoCEv2GID: -1},
			`{"rdma_device":"","port":0,"netdev":"eth2","driver":"","numa_node":-1,"state":"unknown","role":"netdev-only"}`},
	} {
		b, err := json.Marshal(c.p)
		if err != nil {
			t.Fatal(err)
		}
		if string(b) != c.want {
			t.Errorf("json of %s:\n got %s\nwant %s", c.p.Netdev, b, c.want)
		}
	}
}

// A bond master's slaves and mode come from its Bond; any other port has
// none, and a slave knows its bond only by Master.
func TestSlavesAndBondMode(t *testing.T) {
	bond := Port{Netdev: "bond0", Role: RoleBond, Bond: &Bond{Name: "bond0", Mode: "active-backup",
		Slaves: []Slave{{Netdev: "ens1f0np0"}, {Netdev: "ens1f1np1"}}}}
	if s := bond.Slaves(); len(s) != 2 || s[1].Netdev != "ens1f1np1" || bond.BondMode() != "active-backup" {
		t.Errorf("bond: Slaves() = %+v, BondMode() = %q", s, bond.BondMode())
	}
	slave := Port{Netdev: "ens1f1np1", Role: RolePF, Master: "bond0"}
	if s := slave.Slaves(); s != nil || slave.BondMode() != "" {
		t.Errorf("slave: Slaves() = %+v, BondMode() = %q", s, slave.BondMode())
	}
}

func TestRDMAScope(t *testing.T) {
	for _, c := range []struct {
		p    Port
		want string
	}{
		{Port{Netdev: "ens1f0np0", RDMADevice: "mlx5_0", PortNum: 1}, "mlx5_0"},
		{Port{Netdev: "ens2f1", RDMADevice: "mlx4_0", PortNum: 2}, "mlx4_0:2"},
		{Port{Netdev: "eth2", Role: RoleNetdevOnly}, "eth2"},
	} {
		if got := c.p.RDMAScope(); got != c.want {
			t.Errorf("%+v.RDMAScope() = %q, want %q", c.p, got, c.want)
		}
	}
}
