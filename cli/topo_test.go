package cli

import (
	"testing"

	"github.com/rocectl/rocectl/port"
)

// The plan's section headers show the topology: a RoCE LAG with its bond,
// slaves and mode; a slave with its bond; a VF with its PF.
func TestPortHeaderShowsTopology(t *testing.T) {
	bond := &port.Port{Netdev: "bond0", RDMADevice: "mlx5_bond_0", PortNum: 1, Driver: "mlx5_core", Role: port.RoleBond,
		Bond: &port.Bond{Name: "bond0", Mode: "802.3ad", Slaves: []port.Slave{{Netdev: "ens1f0np0"}, {Netdev: "ens1f1np1"}}}}
	for _, c := range []struct {
		p    *port.Port
		want string
	}{
		{bond, "mlx5_bond_0 (bond0: ens1f0np0 + ens1f1np1, 802.3ad) port 1, mlx5_core"},
		{&port.Port{Netdev: "ens1f1np1", RDMADevice: "mlx5_bond_0", PortNum: 1, Driver: "mlx5_core", Master: "bond0"},
			"ens1f1np1 (slave of bond0, mlx5_bond_0 port 1, mlx5_core)"},
		{&port.Port{Netdev: "enp7s2f2", RDMADevice: "mlx5_4", PortNum: 1, Driver: "mlx5_core", Role: port.RoleVF, PF: "enp7s0f0np0"},
			"enp7s2f2 (mlx5_4 port 1, VF of enp7s0f0np0, mlx5_core)"},
		{&port.Port{Netdev: "ens1f0np0", RDMADevice: "mlx5_0", PortNum: 1, Driver: "mlx5_core", Role: port.RolePF},
			"ens1f0np0 (mlx5_0 port 1, mlx5_core)"},
	} {
		if got := portHeader(c.p); got != c.want {
			t.Errorf("portHeader = %q, want %q", got, c.want)
		}
	}
}
