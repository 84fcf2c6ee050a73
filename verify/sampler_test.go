package verify

import (
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/rocectl/rocectl/internal/testkit/fixturehost"
	"github.com/rocectl/rocectl/nic"
	"github.com/rocectl/rocectl/port"
)

// lagPort is the RoCE LAG of testdata/hosts/cx5-roce-lag as discovery
// finds it: bond0 on mlx5_bond_0, two slaves.
var lagPort = port.Port{Netdev: "bond0", RDMADevice: "mlx5_bond_0", PortNum: 1,
	Bond: &port.Bond{Slaves: []port.Slave{{Netdev: "ens1f0np0"}, {Netdev: "ens1f1np1"}}}}

// A bond expands to itself (link, RDMA counters) and its slaves (NIC
// counters); a port under no bond is itself.
func TestSourcesExpandABond(t *testing.T) {
	got := Sources([]port.Port{{Netdev: "ens2np0", RDMADevice: "mlx5_2", PortNum: 1}, lagPort})
	want := []Source{
		{Netdev: "ens2np0", RDMADevice: "mlx5_2", PortNum: 1},
		{Netdev: "bond0", RDMADevice: "mlx5_bond_0", PortNum: 1, Slaves: []string{"ens1f0np0", "ens1f1np1"}},
		{Netdev: "ens1f0np0", Bond: "bond0"},
		{Netdev: "ens1f1np1", Bond: "bond0"},
	}
	if !slices.EqualFunc(got, want, Source.Equal) {
		t.Fatalf("sources\n got %+v\nwant %+v", got, want)
	}
	var names []string
	for _, s := range got {
		names = append(names, s.Name())
	}
	if want := []string{"ens2np0", "bond0", "bond0/ens1f0np0", "bond0/ens1f1np1"}; !slices.Equal(names, want) {
		t.Errorf("names %q, want %q", names, want)
	}
}

// failingStats fails ethtool -S on one netdev.
type failingStats struct {
	nic.Kernel
	bad string
}

func (k failingStats) Stats(nd string) (map[string]uint64, error) {
	if nd == k.bad {
		return nil, errors.New("no such device")
	}
	return k.Kernel.Stats(nd)
}

// One sample of the LAG: the bond has its link and the LAG device's
// congestion counters and no ethtool -S; each slave has its stats; a
// failed read is the port's error. The guard's sources are the slaves.
func TestSampleReadsEachSourceOnce(t *testing.T) {
	root, sim := fixturehost.Copy(t, "cx5-roce-lag")
	fs := nic.NewFS(root, true)
	at := time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)
	s := &Sampler{K: failingStats{sim, "ens1f1np1"}, FS: &fs, Sources: Sources([]port.Port{lagPort}), Link: true,
		Now: func() time.Time { return at }}
	sim.SetStat("ens1f0np0", "rx_prio3_pause", 42)
	smp := s.Sample()
	if !smp.At.Equal(at) || len(smp.Ports) != 3 {
		t.Fatalf("sample: %+v", smp)
	}
	bond, s0, s1 := &smp.Ports[0], &smp.Ports[1], &smp.Ports[2]
	if bond.Stats != nil || bond.Err != nil || bond.Link == "" || bond.Link == "?" {
		t.Errorf("bond: %+v", bond)
	}
	if v, ok := bond.Cong(CNPSent); !ok || bond.Congestion().CNPSent == nil || *bond.Congestion().CNPSent != v {
		t.Errorf("bond's CNPs sent: %d %v", v, ok)
	}
	if _, ok := bond.Cong(CNPHandled); ok != (bond.Congestion().CNPHandled != nil) {
		t.Errorf("Cong and Congestion disagree")
	}
	if s0.Stats["rx_prio3_pause"] != 42 || s0.Err != nil || s0.Congestion() != (Congestion{}) {
		t.Errorf("slave 0: %+v", s0)
	}
	if s1.Err == nil || s1.Stats != nil {
		t.Errorf("slave 1 unreadable: %+v", s1)
	}

	var names []string
	for _, src := range s.CounterSources(Source.Name) {
		names = append(names, src.Port)
	}
	if want := []string{"bond0/ens1f0np0", "bond0/ens1f1np1"}; !slices.Equal(names, want) {
		t.Errorf("guard sources %q, want %q", names, want)
	}
	src := s.CounterSources(func(s Source) string { return s.Netdev })[0]
	if st, err := src.Read(); src.Port != "ens1f0np0" || err != nil || st["rx_prio3_pause"] != 42 {
		t.Errorf("source %s: %v %v", src.Port, st, err)
	}

	// Without Link and FS, only ethtool -S is read; the sample reuses its rows.
	s.Link, s.FS = false, nil
	s.SampleInto(smp)
	if smp.Ports[0].Link != "" || smp.Ports[0].Congestion() != (Congestion{}) || len(smp.Ports) != 3 {
		t.Errorf("stats-only sample: %+v", smp.Ports[0])
	}
}
