package nic_test

import (
	"log/slog"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/rocectl/rocectl/nic"
	"github.com/rocectl/rocectl/nic/snapshot"
)

// withRDMA is a fixture host's kernel with an RDMA netlink view recorded,
// as a capture on a host with ib_core makes.
func withRDMA(t *testing.T, host string, links []nic.RDMALink) (nic.FS, nic.Kernel) {
	t.Helper()
	s, err := snapshot.Open(filepath.Join("..", "testdata", "hosts", host))
	if err != nil {
		t.Fatal(err)
	}
	st := s.State()
	st.RDMA = &snapshot.RDMAState{Links: links}
	return s.FS(), snapshot.Replay(st)
}

// The fixture hosts were captured from sysfs: their discovery says so.
func TestDiscoverFixtureHostReadsSysfsAndSaysWhy(t *testing.T) {
	inv := discoverHost(t, "cx6dx-ofed-factory")
	if inv.RDMASource != nic.RDMASourceSysfs || !strings.Contains(inv.SysfsReason, "recorded the sysfs view") {
		t.Errorf("source %q reason %q", inv.RDMASource, inv.SysfsReason)
	}
}

// With an RDMA netlink view, discovery takes the device ports, their
// states and netdevs from it, not from sysfs: a port netlink calls DOWN is
// DOWN though sysfs says ACTIVE, a device netlink does not list is not
// discovered, and a port whose netdev netlink does not name is kept only
// if the netdev sysfs names is in this namespace (the kernel's Link knows
// it).
func TestDiscoverTakesPortsFromRDMANetlink(t *testing.T) {
	fs, k := withRDMA(t, "cx6dx-ofed-factory", []nic.RDMALink{
		{Device: "mlx5_0", DevIndex: 1, Port: 1, State: "DOWN", PhysState: "DISABLED", Netdev: "ens1f0np0", NetdevIndex: 2},
	})
	inv := nic.Discover(fs, k, slog.New(slog.DiscardHandler))
	if inv.RDMASource != nic.RDMASourceNetlink || inv.SysfsReason != "" {
		t.Fatalf("source %q reason %q", inv.RDMASource, inv.SysfsReason)
	}
	if len(inv.Ports) != 1 || inv.Ports[0].RDMADevice != "mlx5_0" || inv.Ports[0].State != "DOWN" || inv.Ports[0].Netdev != "ens1f0np0" {
		t.Fatalf("ports %+v, want mlx5_0 alone, DOWN on ens1f0np0", inv.Ports)
	}

	// No netdev named: sysfs's device/net, when rtnetlink knows it.
	fs, k = withRDMA(t, "cx6dx-ofed-factory", []nic.RDMALink{
		{Device: "mlx5_0", DevIndex: 1, Port: 1, State: "ACTIVE", PhysState: "LINK_UP"},
		{Device: "mlx5_1", DevIndex: 2, Port: 1, State: "ACTIVE", PhysState: "LINK_UP", Netdev: "ens1f1np1", NetdevIndex: 3},
	})
	inv = nic.Discover(fs, k, slog.New(slog.DiscardHandler))
	var got []string
	for _, p := range inv.Ports {
		got = append(got, p.RDMADevice+"/"+p.Netdev)
	}
	if !slices.Equal(got, []string{"mlx5_0/ens1f0np0", "mlx5_1/ens1f1np1"}) || len(inv.Skipped) != 0 {
		t.Fatalf("ports %v skipped %+v", got, inv.Skipped)
	}
}

// A port whose netdev netlink does not name and rtnetlink does not know
// here (it is in another namespace) is left out, with the reason.
func TestDiscoverSkipsPortWhoseNetdevIsElsewhere(t *testing.T) {
	s, err := snapshot.Open(filepath.Join("..", "testdata", "hosts", "cx6dx-ofed-factory"))
	if err != nil {
		t.Fatal(err)
	}
	st := s.State()
	delete(st.Links, "ens1f0np0") // not in this namespace: ENODEV
	st.RDMA = &snapshot.RDMAState{Links: []nic.RDMALink{{Device: "mlx5_0", DevIndex: 1, Port: 1, State: "ACTIVE", PhysState: "LINK_UP"}}}
	inv := nic.Discover(s.FS(), snapshot.Replay(st), slog.New(slog.DiscardHandler))
	if len(inv.Ports) != 0 || len(inv.Skipped) != 1 || !strings.Contains(inv.Skipped[0].Reason, "ens1f0np0 (sysfs) is not in this network namespace") {
		t.Fatalf("ports %+v skipped %+v", inv.Ports, inv.Skipped)
	}
}

// RoCE LAG from netlink: mlx5 names a slave as the LAG device's netdev
// (mlx5_ib_get_netdev → mlx5_lag_get_roce_netdev: the active slave of an
// active-backup bond, else PF0's), which may be the second slave, whose
// PCI function is not the one the LAG device sits on; discovery still
// finds the bond.
func TestDiscoverRoCELAGFromRDMANetlink(t *testing.T) {
	sysfs := discoverHost(t, "cx5-roce-lag")
	for _, slave := range []string{"ens1f0np0", "ens1f1np1"} {
		fs, k := withRDMA(t, "cx5-roce-lag", []nic.RDMALink{
			{Device: "mlx5_bond_0", DevIndex: 3, Port: 1, State: "ACTIVE", PhysState: "LINK_UP", Netdev: slave, NetdevIndex: 2},
		})
		inv := nic.Discover(fs, k, slog.New(slog.DiscardHandler))
		if inv.RDMASource != nic.RDMASourceNetlink || !reflect.DeepEqual(inv.Ports, sysfs.Ports) {
			t.Errorf("netlink naming %s:\nfrom netlink %+v\nfrom sysfs %+v", slave, inv.Ports, sysfs.Ports)
		}
	}
}

// A capture records the view its discovery used, and the snapshot answers
// with it.
func TestCaptureKeepsRDMANetlinkView(t *testing.T) {
	links := []nic.RDMALink{{Device: "mlx5_bond_0", DevIndex: 3, Port: 1, State: "ACTIVE", PhysState: "LINK_UP", Netdev: "ens1f0np0", NetdevIndex: 2}}
	fs, k := withRDMA(t, "cx5-roce-lag", links)
	dir := filepath.Join(t.TempDir(), "snap")
	if _, err := snapshot.Capture(fs, k, dir, snapshot.Meta{Source: "test"}, nil, nil, nil); err != nil {
		t.Fatal(err)
	}
	s, err := snapshot.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	got, err := s.Kernel().(nic.RDMALinker).RDMALinks(s.FS())
	if err != nil || !reflect.DeepEqual(got, links) {
		t.Fatalf("captured view %+v, %v", got, err)
	}
	if inv := nic.Discover(s.FS(), s.Kernel(), slog.New(slog.DiscardHandler)); inv.RDMASource != nic.RDMASourceNetlink || len(inv.Ports) != 1 {
		t.Fatalf("discovery of the capture: %+v", inv)
	}
	// A capture from sysfs records no view.
	s0, err := snapshot.Open(filepath.Join("..", "testdata", "hosts", "cx5-roce-lag"))
	if err != nil {
		t.Fatal(err)
	}
	dir0 := filepath.Join(t.TempDir(), "snap0")
	if _, err := snapshot.Capture(s0.FS(), s0.Kernel(), dir0, snapshot.Meta{Source: "test"}, nil, nil, nil); err != nil {
		t.Fatal(err)
	}
	if s1, err := snapshot.Open(dir0); err != nil || s1.State().RDMA != nil {
		t.Fatalf("sysfs capture: %v, rdma %+v", err, s1.State().RDMA)
	}
}

func TestValidateRefusesAnRDMALinkWithoutPort(t *testing.T) {
	st := &snapshot.KernelState{Links: map[string]*snapshot.LinkState{},
		RDMA: &snapshot.RDMAState{Links: []nic.RDMALink{{Device: "rxe0", State: "ACTIVE"}}}}
	if err := st.Validate(); err == nil || !strings.Contains(err.Error(), "rdma links[0]") {
		t.Fatalf("Validate = %v", err)
	}
}
