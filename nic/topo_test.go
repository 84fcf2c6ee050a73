package nic_test

import (
	"log/slog"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/rocectl/rocectl/internal/testkit/fdtest"
	"github.com/rocectl/rocectl/nic"
	"github.com/rocectl/rocectl/nic/snapshot"
	"github.com/rocectl/rocectl/port"
)

func discoverHost(t *testing.T, name string) *nic.Inventory {
	t.Helper()
	s, err := snapshot.Open(filepath.Join("..", "testdata", "hosts", name))
	if err != nil {
		t.Fatal(err)
	}
	return nic.Discover(s.FS(), s.Kernel(), slog.New(slog.DiscardHandler))
}

// A RoCE LAG host has one RDMA device on PF0's PCI function: its port's
// netdev is the bond (where its GIDs live), not the PF netdev under
// device/net, and its driver is the slaves' (the bond's is "bonding").
func TestDiscoverRoCELAG(t *testing.T) {
	inv := discoverHost(t, "cx5-roce-lag")
	if len(inv.Ports) != 1 || len(inv.Skipped) != 0 {
		t.Fatalf("ports %+v skipped %+v", inv.Ports, inv.Skipped)
	}
	p := inv.Ports[0]
	if p.RDMADevice != "mlx5_bond_0" || p.Netdev != "bond0" || p.Role != port.RoleBond || p.Driver != "mlx5_core" || p.PCI != "0000:3b:00.0" {
		t.Fatalf("port %+v", p)
	}
	want := &port.Bond{Name: "bond0", Mode: "802.3ad", Slaves: []port.Slave{
		{Netdev: "ens1f0np0", PCI: "0000:3b:00.0", Driver: "mlx5_core"},
		{Netdev: "ens1f1np1", PCI: "0000:3b:00.1", Driver: "mlx5_core"},
	}}
	if !reflect.DeepEqual(p.Bond, want) {
		t.Errorf("bond %+v, want %+v", p.Bond, want)
	}
	if got := p.Describe(); got != "mlx5_bond_0 (bond0: ens1f0np0 + ens1f1np1, 802.3ad)" {
		t.Errorf("Describe() = %q", got)
	}
}

// An SR-IOV host: the PF and each VF are RoCE ports of their own; a VF
// names the PF that owns its port's QoS (device/physfn), the PF counts
// its VFs (virtfn*).
func TestDiscoverSRIOV(t *testing.T) {
	inv := discoverHost(t, "cx4lx-sriov")
	type row struct{ dev, netdev, role, pf string }
	var got []row
	for _, p := range inv.Ports {
		got = append(got, row{p.RDMADevice, p.Netdev, p.Role, p.PF})
	}
	want := []row{
		{"mlx5_0", "enp7s0f0np0", port.RolePF, ""},
		{"mlx5_4", "enp7s2f2", port.RoleVF, "enp7s0f0np0"},
		{"mlx5_5", "enp7s2f3", port.RoleVF, "enp7s0f0np0"},
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("ports %+v, want %+v", got, want)
	}
	if inv.Ports[0].VFs != 2 {
		t.Errorf("PF has %d VFs, want 2", inv.Ports[0].VFs)
	}
	s, _ := snapshot.Open(filepath.Join("..", "testdata", "hosts", "cx4lx-sriov"))
	if vfs := nic.VFsOf(s.FS(), "enp7s0f0np0"); !reflect.DeepEqual(vfs, []string{"enp7s2f2", "enp7s2f3"}) {
		t.Errorf("VFsOf = %v", vfs)
	}
	if d := inv.Ports[1].Describe(); d != "mlx5_4 (VF of enp7s0f0np0)" {
		t.Errorf("Describe() = %q", d)
	}
}

// Plain two-port hosts keep their shape: one PF port per PCI function.
func TestDiscoverPlainPortsArePFs(t *testing.T) {
	for _, p := range discoverHost(t, "cx7-upstream-factory").Ports {
		if p.Role != port.RolePF || p.Bond != nil || p.PF != "" {
			t.Errorf("%s: role %q bond %v pf %q", p.Netdev, p.Role, p.Bond, p.PF)
		}
	}
}

// Discovery, the GID search and ECN's reads close every directory they
// open: a process that holds more descriptors than its table has room
// for (64 at first) waits for an RCU grace period each time the kernel
// grows it (nic.Dir.Close).
func TestPassesLeaveNoDescriptorOpen(t *testing.T) {
	hosts, err := filepath.Glob(filepath.Join("..", "testdata", "hosts", "*"))
	if err != nil || len(hosts) < 3 {
		t.Fatalf("fixture hosts: %v %v", hosts, err)
	}
	ports := 0
	for _, h := range hosts {
		s, err := snapshot.Open(h)
		if err != nil {
			t.Fatal(err)
		}
		fs := s.FS()
		sys := fs.Root() + "/sys"
		before := fdtest.Under(t, sys)
		inv := nic.Discover(fs, s.Kernel(), slog.New(slog.DiscardHandler))
		for _, p := range inv.Ports {
			ports++
			if p.RDMADevice != "" {
				nic.SelectGIDOn(fs, p.RDMADevice, p.PortNum, nic.GIDQuery{})
				nic.ReadGIDs(fs, p.RDMADevice, p.PortNum)
			}
			if e, err := nic.OpenECN(fs, p); err == nil {
				e.Enabled("rp", 3)
			}
		}
		if n := fdtest.Under(t, sys); n != before {
			t.Errorf("%s: %d descriptors open after the passes, %d before", h, n, before)
		}
	}
	if ports < 10 {
		t.Fatalf("only %d ports discovered", ports)
	}
}
