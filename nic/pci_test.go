package nic

import (
	"errors"
	"math/rand/v2"
	"os"
	"reflect"
	"regexp"
	"strings"
	"testing"
)

func pciFS(host string) FS { return NewFS(pciFxDir(host), true) }

func pciByAddr(t *testing.T, devs []PCIDevice, addr string) PCIDevice {
	t.Helper()
	for _, d := range devs {
		if d.Addr == addr {
			return d
		}
	}
	t.Fatalf("no PCI device %s", addr)
	return PCIDevice{}
}

func TestReadPCIDevicesHGX(t *testing.T) {
	devs, err := ReadPCIDevices(pciFS("hgx-h100-8gpu"))
	if err != nil {
		t.Fatal(err)
	}
	// 4 switches × (root port, upstream, 4 downstream, 4 endpoints) + 2
	// storage cards × (root port, 2 functions).
	if len(devs) != 46 {
		t.Fatalf("%d devices, want 46", len(devs))
	}
	for i := 1; i < len(devs); i++ {
		if devs[i-1].Addr >= devs[i].Addr {
			t.Fatalf("not sorted: %s before %s", devs[i-1].Addr, devs[i].Addr)
		}
	}
	got := pciByAddr(t, devs, "0000:9d:00.0")
	want := PCIDevice{
		Addr: "0000:9d:00.0", Class: "0x020000", Vendor: "0x15b3", Device: "0x1021",
		SubsystemVendor: "0x15b3", SubsystemDevice: "0x0023", NUMANode: 1,
		CurSpeed: "32.0 GT/s PCIe", MaxSpeed: "32.0 GT/s PCIe", CurWidth: 8, MaxWidth: 16,
		Bridges:     []string{"0000:97:01.0", "0000:98:00.0", "0000:99:03.0"},
		RootComplex: "pci0000:97",
		RDMADevs:    []string{"mlx5_7"}, RDMAPorts: map[string][]int{"mlx5_7": {1}},
		Netdevs: []string{"enp157s0np0"},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got  %+v\nwant %+v", got, want)
	}
	gpu := pciByAddr(t, devs, "0000:19:00.0")
	if gpu.Class != "0x030200" || gpu.Vendor != "0x10de" || gpu.Device != "0x2330" || len(gpu.RDMADevs) != 0 ||
		!reflect.DeepEqual(gpu.Bridges, []string{"0000:15:01.0", "0000:16:00.0", "0000:17:01.0"}) {
		t.Errorf("GPU0: %+v", gpu)
	}
	// The two functions of a storage card share the root port.
	f1 := pciByAddr(t, devs, "0000:2a:00.1")
	if !reflect.DeepEqual(f1.Bridges, []string{"0000:29:01.0"}) || f1.RootComplex != "pci0000:29" ||
		!reflect.DeepEqual(f1.RDMADevs, []string{"mlx5_3"}) || !reflect.DeepEqual(f1.Netdevs, []string{"enp42s0f1np1"}) {
		t.Errorf("storage function 1: %+v", f1)
	}
	rp := pciByAddr(t, devs, "0000:15:01.0")
	if len(rp.Bridges) != 0 || rp.RootComplex != "pci0000:15" || rp.Class != "0x060400" {
		t.Errorf("root port: %+v", rp)
	}
}

func TestReadPCIDevicesMissingSysfs(t *testing.T) {
	_, err := ReadPCIDevices(NewFS(t.TempDir(), true))
	if !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("err = %v, want ErrNotExist", err)
	}
}

func TestReadPCIDevicesLegacyAndAuxRDMA(t *testing.T) {
	// A conventional PCI function (no link files, no numa_node) and an RDMA
	// device registered on an auxiliary device under a PCI function, as
	// irdma does on an E810 (…/0000:3b:00.0/ice.roce.0/infiniband/irdma0).
	tr := newFxTree()
	legacy := "sys/devices/pci0000:00/0000:00:1e.0/0000:05:01.0"
	tr.file(legacy+"/class", "0x0c0330\n")
	tr.file(legacy+"/vendor", "0x1912\n")
	tr.file(legacy+"/device", "0x0014\n")
	tr.link("sys/bus/pci/devices/0000:05:01.0", "../../../devices/pci0000:00/0000:00:1e.0/0000:05:01.0")
	bridge := "sys/devices/pci0000:00/0000:00:1e.0"
	tr.file(bridge+"/class", "0x060401\n")
	tr.link("sys/bus/pci/devices/0000:00:1e.0", "../../../devices/pci0000:00/0000:00:1e.0")
	e810 := "sys/devices/pci0000:3a/0000:3a:00.0/0000:3b:00.0"
	tr.file(e810+"/class", "0x020000\n")
	tr.file(e810+"/vendor", "0x8086\n")
	tr.file(e810+"/numa_node", "0\n")
	tr.file(e810+"/ice.roce.0/infiniband/irdma0/ports/1/link_layer", "Ethernet\n")
	tr.link("sys/bus/pci/devices/0000:3b:00.0", "../../../devices/pci0000:3a/0000:3a:00.0/0000:3b:00.0")
	tr.link("sys/class/infiniband/irdma0", "../../devices/pci0000:3a/0000:3a:00.0/0000:3b:00.0/ice.roce.0/infiniband/irdma0")
	root := t.TempDir()
	if err := tr.write(root); err != nil {
		t.Fatal(err)
	}
	devs, err := ReadPCIDevices(NewFS(root, true))
	if err != nil {
		t.Fatal(err)
	}
	if len(devs) != 3 {
		t.Fatalf("%d devices: %+v", len(devs), devs)
	}
	l := pciByAddr(t, devs, "0000:05:01.0")
	if l.NUMANode != -1 || l.CurSpeed != "" || l.CurWidth != 0 || !reflect.DeepEqual(l.Bridges, []string{"0000:00:1e.0"}) {
		t.Errorf("legacy function: %+v", l)
	}
	e := pciByAddr(t, devs, "0000:3b:00.0")
	if !reflect.DeepEqual(e.RDMADevs, []string{"irdma0"}) || !reflect.DeepEqual(e.RDMAPorts["irdma0"], []int{1}) || len(e.RDMADevs) == 0 {
		t.Errorf("E810: %+v", e)
	}
}

func TestPCIChain(t *testing.T) {
	cases := []struct {
		path, root string
		bridges    []string
	}{
		{"/sys/devices/pci0000:15/0000:15:01.0/0000:16:00.0/0000:17:00.0/0000:18:00.0", "pci0000:15",
			[]string{"0000:15:01.0", "0000:16:00.0", "0000:17:00.0"}},
		{"/sys/devices/pci0000:00/0000:00:02.0", "pci0000:00", nil},
		// Intel VMD: a second host bridge below the VMD controller.
		{"/sys/devices/pci0000:00/0000:00:0e.0/pci10000:e0/10000:e0:1d.0/10000:e1:00.0", "pci10000:e0", []string{"10000:e0:1d.0"}},
		// Arm: host bridge under a platform device.
		{"/sys/devices/platform/soc/a000000.pcie/pci0002:00/0002:00:00.0/0002:01:00.0", "pci0002:00", []string{"0002:00:00.0"}},
		{"/sys/devices/virtual/net/lo", "", nil},
	}
	for _, c := range cases {
		root, bridges := pciChain(c.path)
		if root != c.root || !reflect.DeepEqual(bridges, c.bridges) {
			t.Errorf("%s: got %q %q, want %q %q", c.path, root, bridges, c.root, c.bridges)
		}
	}
}

func TestParseLinkSpeed(t *testing.T) {
	cases := map[string]float64{
		"32.0 GT/s PCIe": 32, "16.0 GT/s PCIe": 16, "8.0 GT/s PCIe": 8, "2.5 GT/s PCIe": 2.5,
		"64.0 GT/s PCIe": 64, "8 GT/s": 8, "5 GT/s": 5, "2.5 GT/s": 2.5,
		"Unknown": 0, "Unknown speed": 0, "": 0, "fast": 0,
	}
	for in, want := range cases {
		got, ok := ParseLinkSpeed(in)
		if got != want || ok != (want > 0) {
			t.Errorf("ParseLinkSpeed(%q) = %v %v, want %v", in, got, ok, want)
		}
	}
}

func TestPCINaturalLess(t *testing.T) {
	want := []string{"irdma0", "mlx5_1", "mlx5_2", "mlx5_10", "mlx5_11", "mlx5_bond_0"}
	for i := range want {
		for j := range want {
			if (i < j) != pciNaturalLess(want[i], want[j]) {
				t.Errorf("pciNaturalLess(%s, %s) = %v", want[i], want[j], !(i < j))
			}
		}
	}
}

// TestReadPCIDevicesLiveHost reads this machine's real sysfs, read-only.
func TestReadPCIDevicesLiveHost(t *testing.T) {
	if _, err := os.Stat("/sys/bus/pci/devices"); err != nil {
		t.Skip("no PCI sysfs on this machine")
	}
	devs, err := ReadPCIDevices(NewFS("/", true))
	if err != nil {
		t.Fatal(err)
	}
	if len(devs) == 0 {
		t.Skip("no PCI devices on this machine")
	}
	for _, d := range devs {
		if d.RootComplex == "" || !strings.HasPrefix(d.Class, "0x") || !strings.HasPrefix(d.Vendor, "0x") {
			t.Errorf("incomplete: %+v", d)
		}
	}
}

// TestHandWrittenPatternsMatchTheirRegexps keeps IsPCIAddress and
// isHostBridge equal to the regexps they replace, on real names and on
// random strings over the characters those names are made of.
func TestHandWrittenPatternsMatchTheirRegexps(t *testing.T) {
	bdf := regexp.MustCompile(`^[0-9a-f]{4,}:[0-9a-f]{2}:[0-1][0-9a-f]\.[0-7]$`)
	bridge := regexp.MustCompile(`^pci[0-9a-f]{4,}:[0-9a-f]{2}$`)
	check := func(s string) {
		t.Helper()
		if got, want := IsPCIAddress(s), bdf.MatchString(s); got != want {
			t.Errorf("IsPCIAddress(%q) = %v, regexp says %v", s, got, want)
		}
		if got, want := isHostBridge(s), bridge.MatchString(s); got != want {
			t.Errorf("isHostBridge(%q) = %v, regexp says %v", s, got, want)
		}
	}
	for _, s := range []string{
		"", "0000:3b:00.0", "0000:3b:00.1", "10000:01:00.0", "0000:3b:1f.7", "0000:3b:20.0",
		"0000:3b:00.8", "000:3b:00.0", "0000:3B:00.0", "0000:3b:00.0 ", "x0000:3b:00.0",
		"pci0000:15", "pci10000:e2", "pci000:15", "pci0000:1", "pci0000:15:", "0000:15",
		"106", "-3", "--3", "a-3b", "prio 3: -12 x", "-", "tc 106\n", "3-4",
	} {
		check(s)
	}
	// Random strings, and valid names with a character or two changed,
	// dropped or added (so both sides of each pattern get exercised).
	const alphabet = "0123456789abcdefAx:.-p "
	seeds := []string{"0000:3b:00.0", "10000:01:1f.7", "pci0000:15", "pci10000:e2", "tc -106"}
	rng := rand.New(rand.NewPCG(1, 2))
	for range 200000 {
		var b []byte
		if rng.IntN(2) == 0 {
			for range rng.IntN(16) {
				b = append(b, alphabet[rng.IntN(len(alphabet))])
			}
		} else {
			b = []byte(seeds[rng.IntN(len(seeds))])
			for range 1 + rng.IntN(2) {
				i, c := rng.IntN(len(b)), alphabet[rng.IntN(len(alphabet))]
				switch rng.IntN(3) {
				case 0:
					b[i] = c
				case 1:
					b = append(b[:i], b[i+1:]...)
				default:
					b = append(b[:i], append([]byte{c}, b[i:]...)...)
				}
			}
		}
		check(string(b))
		if t.Failed() {
			return
		}
	}
}
