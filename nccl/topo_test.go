package nccl

import (
	"encoding/json"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/rocectl/rocectl/nic"
)

func mustTopology(t *testing.T, host string) *Topology {
	t.Helper()
	topo, err := ReadTopology(pciFS(host))
	if err != nil {
		t.Fatal(err)
	}
	return topo
}

func topoAddrs(devs []nic.PCIDevice) []string {
	var out []string
	for _, d := range devs {
		out = append(out, d.Addr)
	}
	return out
}

// checkMatrix compares the GPU×NIC paths with rows of space-separated
// path names, one row per GPU, columns in NIC order.
func checkMatrix(t *testing.T, topo *Topology, rows []string) {
	t.Helper()
	if len(topo.Pairs) != len(topo.GPUs)*len(topo.NICs) {
		t.Fatalf("%d pairs for %d GPUs × %d NICs", len(topo.Pairs), len(topo.GPUs), len(topo.NICs))
	}
	for g, row := range rows {
		want := strings.Fields(row)
		for n := range topo.NICs {
			p := topo.Pairs[g*len(topo.NICs)+n]
			if p.GPU != g || p.NIC != n || p.GPUAddr != topo.GPUs[g].Addr || p.NICAddr != topo.NICs[n].Addr {
				t.Fatalf("pair %d/%d is %+v", g, n, p)
			}
			if p.Path.String() != want[n] {
				t.Errorf("GPU%d (%s) – %s (%s): %s, want %s", g, p.GPUAddr, topo.NICs[n].RDMADevs[0], p.NICAddr, p.Path, want[n])
			}
		}
	}
}

func checkAffinity(t *testing.T, topo *Topology, want []string) {
	t.Helper()
	var got []string
	for _, a := range topo.Affinity {
		got = append(got, topo.GPUs[a.GPU].Addr+">"+strings.Join(a.RDMADevs, "+")+":"+a.Path.String())
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("affinity\n got %q\nwant %q", got, want)
	}
}

func TestTopologyHGX(t *testing.T) {
	topo := mustTopology(t, "hgx-h100-8gpu")
	wantGPUs := []string{"0000:19:00.0", "0000:1a:00.0", "0000:3b:00.0", "0000:3c:00.0",
		"0000:9b:00.0", "0000:9c:00.0", "0000:bb:00.0", "0000:bc:00.0"}
	if got := topoAddrs(topo.GPUs); !reflect.DeepEqual(got, wantGPUs) {
		t.Fatalf("GPUs %v", got)
	}
	var nics []string
	for _, n := range topo.NICs {
		nics = append(nics, n.RDMADevs[0])
	}
	wantNICs := []string{"mlx5_0", "mlx5_1", "mlx5_2", "mlx5_3", "mlx5_4", "mlx5_5",
		"mlx5_6", "mlx5_7", "mlx5_8", "mlx5_9", "mlx5_10", "mlx5_11"}
	if !reflect.DeepEqual(nics, wantNICs) {
		t.Fatalf("NICs %v", nics)
	}
	//                         0   1   2   3   4   5   6   7   8   9   10  11
	checkMatrix(t, topo, []string{
		"PIX PIX PHB PHB PHB PHB SYS SYS SYS SYS SYS SYS", // GPU0
		"PIX PIX PHB PHB PHB PHB SYS SYS SYS SYS SYS SYS", // GPU1
		"PHB PHB PHB PHB PIX PIX SYS SYS SYS SYS SYS SYS", // GPU2
		"PHB PHB PHB PHB PIX PIX SYS SYS SYS SYS SYS SYS", // GPU3
		"SYS SYS SYS SYS SYS SYS PIX PIX PHB PHB PHB PHB", // GPU4
		"SYS SYS SYS SYS SYS SYS PIX PIX PHB PHB PHB PHB", // GPU5
		"SYS SYS SYS SYS SYS SYS PHB PHB PHB PHB PIX PIX", // GPU6
		"SYS SYS SYS SYS SYS SYS PHB PHB PHB PHB PIX PIX", // GPU7
	})

	if len(topo.Degraded) != 1 {
		t.Fatalf("degraded %+v", topo.Degraded)
	}
	d := topo.Degraded[0]
	if d.Addr != "0000:9d:00.0" || d.Role != "nic" || d.Name != "mlx5_7" || !d.WidthLow || d.SpeedLow ||
		d.CurWidth != 8 || d.MaxWidth != 16 || d.PortMaxWidth != 16 || d.CappedByPort ||
		!strings.Contains(d.Reason, "x8") || !strings.Contains(d.Reason, "reseat") {
		t.Errorf("degraded %+v", d)
	}

	// Each GPU gets a NIC of its own switch; the storage NICs stay out.
	checkAffinity(t, topo, []string{
		"0000:19:00.0>mlx5_0:PIX", "0000:1a:00.0>mlx5_1:PIX",
		"0000:3b:00.0>mlx5_4:PIX", "0000:3c:00.0>mlx5_5:PIX",
		"0000:9b:00.0>mlx5_6:PIX", "0000:9c:00.0>mlx5_7:PIX",
		"0000:bb:00.0>mlx5_10:PIX", "0000:bc:00.0>mlx5_11:PIX",
	})
	if want := "=mlx5_0:1,mlx5_1:1,mlx5_4:1,mlx5_5:1,mlx5_6:1,mlx5_7:1,mlx5_10:1,mlx5_11:1"; topo.HCAOrder != want {
		t.Errorf("HCAOrder %q, want %q", topo.HCAOrder, want)
	}
}

func TestTopologyPCIeOnly(t *testing.T) {
	topo := mustTopology(t, "pcie-4gpu")
	if got := topoAddrs(topo.NICs); !reflect.DeepEqual(got, []string{"0000:41:00.0", "0000:c1:00.0"}) {
		t.Fatalf("NICs %v", got)
	}
	// Every GPU and NIC has a root complex of its own: no PIX/PXB; the
	// same socket is PHB (nvidia-smi would say NODE), the other SYS.
	checkMatrix(t, topo, []string{
		"PHB SYS",
		"PHB SYS",
		"SYS PHB",
		"SYS PHB",
	})
	checkAffinity(t, topo, []string{
		"0000:01:00.0>mlx5_0:PHB", "0000:21:00.0>mlx5_0:PHB",
		"0000:81:00.0>mlx5_1:PHB", "0000:a1:00.0>mlx5_1:PHB",
	})
	if topo.HCAOrder != "=mlx5_0:1,mlx5_1:1" {
		t.Errorf("HCAOrder %q", topo.HCAOrder)
	}

	if len(topo.Degraded) != 3 {
		t.Fatalf("degraded %+v", topo.Degraded)
	}
	idle, slot, nic := topo.Degraded[0], topo.Degraded[1], topo.Degraded[2]
	if idle.Addr != "0000:21:00.0" || idle.Name != "GPU1" || !idle.SpeedLow || idle.WidthLow || idle.CappedByPort ||
		idle.CurSpeed != "2.5 GT/s PCIe" || !strings.Contains(idle.Reason, "idle") {
		t.Errorf("idle GPU: %+v", idle)
	}
	if slot.Addr != "0000:a1:00.0" || slot.Name != "GPU3" || !slot.WidthLow || slot.SpeedLow || !slot.CappedByPort ||
		slot.PortMaxWidth != 8 || !strings.Contains(slot.Reason, "upstream port supports only x8") {
		t.Errorf("x8 slot: %+v", slot)
	}
	if nic.Addr != "0000:c1:00.0" || nic.Role != "nic" || nic.Name != "mlx5_1" || !nic.SpeedLow || nic.CappedByPort ||
		nic.CurSpeed != "8.0 GT/s PCIe" || nic.PortMaxSpeed != "16.0 GT/s PCIe" || strings.Contains(nic.Reason, "idle") {
		t.Errorf("slow NIC: %+v", nic)
	}
}

func TestTopologyNestedSwitches(t *testing.T) {
	topo := mustTopology(t, "nested-switches")
	if got := topoAddrs(topo.GPUs); !reflect.DeepEqual(got, []string{"0000:06:00.0", "0000:07:00.0", "0000:0f:00.0"}) {
		t.Fatalf("GPUs %v", got)
	}
	checkMatrix(t, topo, []string{
		"PXB PHB", // under the second PLX level, NIC under the first
		"PXB PHB",
		"PHB PIX", // two-level PEX88000, flattened as NCCL does
	})
	if len(topo.Degraded) != 0 {
		t.Errorf("degraded %+v", topo.Degraded)
	}
	// ceil(3/2) = 2 GPUs per NIC: the PIX GPU goes first.
	checkAffinity(t, topo, []string{
		"0000:06:00.0>mlx5_0:PXB", "0000:07:00.0>mlx5_0:PXB", "0000:0f:00.0>mlx5_1:PIX",
	})
	if topo.HCAOrder != "=mlx5_0:1,mlx5_1:1" {
		t.Errorf("HCAOrder %q", topo.HCAOrder)
	}
}

func TestTopologyBCMFlattening(t *testing.T) {
	devs, err := nic.ReadPCIDevices(pciFS("nested-switches"))
	if err != nil {
		t.Fatal(err)
	}
	set := func(addr, dev, subDev string) []nic.PCIDevice {
		out := append([]nic.PCIDevice(nil), devs...)
		for i := range out {
			if out[i].Addr == addr {
				out[i].Device, out[i].SubsystemDevice = dev, subDev
			}
		}
		return out
	}
	const gpu, nic = 2, 1 // 0000:0f:00.0, mlx5_1
	cases := []struct {
		name     string
		top, sub [2]string // device, subsystem device of 0a:00.0 and 0d:00.0
		want     PathType
	}{
		{"PEX88000 both levels a096", [2]string{"0xc010", "0xa096"}, [2]string{"0xc010", "0xa096"}, PathPIX},
		{"sub-switch not a PEX88000 subsystem", [2]string{"0xc010", "0xa096"}, [2]string{"0xc010", "0x0000"}, PathPXB},
		{"PEX89000 level 0 over level 1", [2]string{"0xc030", "0x000b"}, [2]string{"0xc030", "0x100b"}, PathPIX},
		{"PEX89000 level 1 over level 1", [2]string{"0xc030", "0x100b"}, [2]string{"0xc030", "0x100b"}, PathPXB},
		{"mixed generations", [2]string{"0xc010", "0xa096"}, [2]string{"0xc030", "0x100b"}, PathPXB},
	}
	for _, c := range cases {
		d := set("0000:0a:00.0", c.top[0], c.top[1])
		for i := range d {
			if d[i].Addr == "0000:0d:00.0" {
				d[i].Device, d[i].SubsystemDevice = c.sub[0], c.sub[1]
			}
		}
		topo := BuildTopology(d)
		if got := topo.Path(gpu, nic); got != c.want {
			t.Errorf("%s: %s, want %s", c.name, got, c.want)
		}
	}
}

func TestTopoNCCLNodes(t *testing.T) {
	by := map[string]*nic.PCIDevice{
		"0000:16:00.0": {Addr: "0000:16:00.0", NUMANode: 3},
	}
	cases := []struct {
		d    nic.PCIDevice
		pci  []string
		numa int
	}{
		// Under a switch: the upstream port, NUMA from it.
		{nic.PCIDevice{Addr: "0000:18:00.0", NUMANode: 0, Bridges: []string{"0000:15:01.0", "0000:16:00.0", "0000:17:00.0"}},
			[]string{"0000:16:00.0"}, 3},
		// On a root port, or on the root bus: straight to the CPU.
		{nic.PCIDevice{Addr: "0000:41:00.0", NUMANode: 1, Bridges: []string{"0000:40:01.1"}}, nil, 1},
		{nic.PCIDevice{Addr: "0000:00:05.0", NUMANode: -1}, nil, -1},
		// A VMD domain's 5-digit addresses are not BDFs to NCCL: CPU.
		{nic.PCIDevice{Addr: "10000:e1:00.0", NUMANode: 0, Bridges: []string{"10000:e0:1d.0"}}, nil, 0},
	}
	for _, c := range cases {
		n := topoNCCLNodes(c.d, by)
		if !reflect.DeepEqual(n.pci, c.pci) || n.numa != c.numa {
			t.Errorf("%s: got %v numa %d, want %v numa %d", c.d.Addr, n.pci, n.numa, c.pci, c.numa)
		}
	}
}

// topoHand builds a topology with given paths (rows GPUs, columns NICs) to
// test the affinity on its own.
func topoHand(rows [][]PathType, nicDevs [][]string) *Topology {
	t := &Topology{}
	for g := range rows {
		t.GPUs = append(t.GPUs, nic.PCIDevice{Addr: "gpu" + string(rune('0'+g))})
	}
	for n := range rows[0] {
		t.NICs = append(t.NICs, nic.PCIDevice{Addr: "nic" + string(rune('0'+n)), RDMADevs: nicDevs[n],
			RDMAPorts: map[string][]int{nicDevs[n][0]: {1}}})
	}
	for g, row := range rows {
		for n, p := range row {
			t.Pairs = append(t.Pairs, TopoPair{GPU: g, NIC: n, Path: p})
		}
	}
	t.Affinity = topoAffinity(t)
	t.HCAOrder = topoHCAOrder(t)
	return t
}

func TestTopoAffinityMostConstrainedFirst(t *testing.T) {
	// GPU0 is PIX to both NICs, GPU1 only to NIC0: in index order GPU0
	// would take NIC0 and push GPU1 to PHB.
	topo := topoHand([][]PathType{
		{PathPIX, PathPIX},
		{PathPIX, PathPHB},
	}, [][]string{{"mlx5_0"}, {"mlx5_1"}})
	if a := topo.Affinity; a[0].NIC != 1 || a[1].NIC != 0 || a[0].Path != PathPIX || a[1].Path != PathPIX {
		t.Fatalf("affinity %+v", a)
	}
	if topo.HCAOrder != "=mlx5_1:1,mlx5_0:1" {
		t.Errorf("HCAOrder %q", topo.HCAOrder)
	}
}

func TestTopoAffinityBalances(t *testing.T) {
	// One NIC is closest to all four GPUs; capacity ceil(4/2)=2 sends two
	// of them to the other NIC.
	topo := topoHand([][]PathType{
		{PathPIX, PathSYS},
		{PathPIX, PathSYS},
		{PathPIX, PathSYS},
		{PathPIX, PathSYS},
	}, [][]string{{"mlx5_0"}, {"mlx5_1"}})
	var nics []int
	for _, a := range topo.Affinity {
		nics = append(nics, a.NIC)
	}
	if !reflect.DeepEqual(nics, []int{0, 0, 1, 1}) {
		t.Fatalf("NICs %v", nics)
	}
	// Ties at the same distance go to the least loaded NIC: alternate.
	topo = topoHand([][]PathType{
		{PathPIX, PathPIX},
		{PathPIX, PathPIX},
		{PathPIX, PathPIX},
		{PathPIX, PathPIX},
	}, [][]string{{"mlx5_0"}, {"mlx5_1"}})
	nics = nil
	for _, a := range topo.Affinity {
		nics = append(nics, a.NIC)
	}
	if !reflect.DeepEqual(nics, []int{0, 1, 0, 1}) {
		t.Fatalf("NICs %v", nics)
	}
	// More NICs than GPUs: each GPU one NIC, the rest unused and not listed.
	topo = topoHand([][]PathType{
		{PathPHB, PathPIX, PathSYS},
	}, [][]string{{"mlx5_0"}, {"mlx5_1"}, {"mlx5_2"}})
	if topo.Affinity[0].NIC != 1 || topo.HCAOrder != "=mlx5_1:1" {
		t.Fatalf("affinity %+v, HCA %q", topo.Affinity, topo.HCAOrder)
	}
}

func TestTopoHCAOrderPorts(t *testing.T) {
	topo := &Topology{
		GPUs: []nic.PCIDevice{{Addr: "g0"}, {Addr: "g1"}},
		NICs: []nic.PCIDevice{
			{Addr: "n0", RDMADevs: []string{"mlx4_0"}, RDMAPorts: map[string][]int{"mlx4_0": {1, 2}}},
			{Addr: "n1", RDMADevs: []string{"rxe0"}},
		},
		Affinity: []Affinity{{GPU: 0, NIC: 1}, {GPU: 1, NIC: 0}},
	}
	if got := topoHCAOrder(topo); got != "=rxe0,mlx4_0:1,mlx4_0:2" {
		t.Fatalf("got %q", got)
	}
}

func TestTopologyWithoutGPUsOrNICs(t *testing.T) {
	topo := BuildTopology([]nic.PCIDevice{
		{Addr: "0000:01:00.0", Class: "0x030200", Vendor: "0x10de"},
		{Addr: "0000:02:00.0", Class: "0x020000", Vendor: "0x15b3"}, // no RDMA device: not a NIC
		{Addr: "0000:03:00.0", Class: "0x030000", Vendor: "0x1002"}, // AMD VGA: not counted
	})
	if len(topo.GPUs) != 1 || len(topo.NICs) != 0 || len(topo.Pairs) != 0 || topo.Affinity != nil || topo.HCAOrder != "" {
		t.Fatalf("%+v", topo)
	}
}

func TestPathTypeJSON(t *testing.T) {
	b, err := json.Marshal(TopoPair{GPU: 1, NIC: 2, GPUAddr: "g", NICAddr: "n", Path: PathPXB})
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"gpu":1,"nic":2,"gpu_addr":"g","nic_addr":"n","path":"PXB"}`; string(b) != want {
		t.Fatalf("got %s, want %s", b, want)
	}
	var p TopoPair
	if err := json.Unmarshal(b, &p); err != nil || p.Path != PathPXB {
		t.Fatalf("round trip: %+v %v", p, err)
	}
	if err := json.Unmarshal([]byte(`{"path":"NVL"}`), &p); err == nil {
		t.Fatal("unknown path name accepted")
	}
	if _, err := json.Marshal(PathType(3)); err == nil {
		t.Fatal("invalid path type marshalled")
	}
}

// pciFS is a fixture host's PCI tree, generated and kept up to date by
// nic's pci_fixture_test.go.
func pciFS(host string) nic.FS {
	return nic.NewFS(filepath.Join("..", "nic", "testdata", "pci", host), true)
}

// The real machine's PCI tree (read-only) builds a topology without error.
func TestReadTopologyOfThisMachine(t *testing.T) {
	if _, err := ReadTopology(nic.NewFS("/", true)); err != nil {
		t.Fatal(err)
	}
}
