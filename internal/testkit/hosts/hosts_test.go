package hosts

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/rocectl/rocectl/internal/testkit/fixturehost"
	"github.com/rocectl/rocectl/nic"
	"github.com/rocectl/rocectl/nic/dcb"
	"github.com/rocectl/rocectl/nic/nictest"
	"github.com/rocectl/rocectl/nic/snapshot"
)

var update = flag.Bool("update", false, "regenerate testdata/hosts")

const (
	capturesDir = "../../../testdata/captures"
	hostsDir    = "../../../testdata/hosts"
)

// TestGolden regenerates every host into a temporary directory and checks
// that the committed testdata/hosts is exactly that: same entries, same
// bytes, same symlink targets. Run with -update after changing the
// generator or a capture.
func TestGolden(t *testing.T) {
	if *update {
		if err := WriteAll(capturesDir, hostsDir); err != nil {
			t.Fatal(err)
		}
	}
	tmp := t.TempDir()
	if err := WriteAll(capturesDir, tmp); err != nil {
		t.Fatal(err)
	}
	for _, s := range Specs() {
		got, want := fixturehost.Tree(t, filepath.Join(tmp, s.Name)), fixturehost.Tree(t, filepath.Join(hostsDir, s.Name))
		for _, p := range slices.Sorted(maps.Keys(got)) {
			if w, ok := want[p]; !ok {
				t.Errorf("%s/%s: generated but not committed (run go test -update)", s.Name, p)
			} else if w != got[p] {
				t.Errorf("%s/%s differs from the generator's output (run go test -update)", s.Name, p)
			}
		}
		for _, p := range slices.Sorted(maps.Keys(want)) {
			if _, ok := got[p]; !ok {
				t.Errorf("%s/%s: committed but no longer generated (run go test -update)", s.Name, p)
			}
		}
	}
}

func openHost(t *testing.T, name string) *snapshot.Snapshot {
	t.Helper()
	s, err := snapshot.Open(filepath.Join(hostsDir, name))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// TestHostsConsistent checks, for every committed host, that sysfs and
// kernel.json tell the same story the way a real host would.
func TestHostsConsistent(t *testing.T) {
	for _, spec := range Specs() {
		t.Run(spec.Name, func(t *testing.T) {
			s := openHost(t, spec.Name)
			fsys, k := s.FS(), s.Kernel()
			ifnames, err := fsys.ReadDir("/sys/class/net")
			if err != nil {
				t.Fatal(err)
			}
			st := s.State()
			if !slices.Equal(ifnames, slices.Sorted(maps.Keys(st.Links))) {
				t.Fatalf("class/net %v, kernel.json links %v", ifnames, slices.Sorted(maps.Keys(st.Links)))
			}
			withRDMA := 0 // netdevs whose PCI function has an RDMA device
			for _, ifname := range ifnames {
				checkNetdev(t, fsys, k, ifname)
				if fsys.Exists("/sys/class/net/" + ifname + "/device/infiniband") {
					withRDMA++
				}
			}
			ibdevs, err := fsys.ReadDir("/sys/class/infiniband")
			if err != nil || len(ibdevs) != withRDMA {
				t.Fatalf("class/infiniband %v %v", ibdevs, err)
			}
			for _, ibdev := range ibdevs {
				checkIBDev(t, fsys, ibdev)
			}
			if err := st.Validate(); err != nil {
				t.Error(err)
			}
			if s.Meta.CapturedAt != capturedAt || s.Meta.Format != snapshot.Format {
				t.Errorf("meta %+v", s.Meta)
			}
		})
	}
}

func checkNetdev(t *testing.T, fsys nic.FS, k nic.Kernel, ifname string) {
	t.Helper()
	cls := "/sys/class/net/" + ifname
	fi, err := os.Lstat(fsys.Path(cls))
	if err != nil || fi.Mode()&fs.ModeSymlink == 0 {
		t.Fatalf("%s is not a symlink (%v)", cls, err)
	}
	real, err := fsys.Resolve(cls)
	virtual := strings.HasPrefix(real, "/sys/devices/virtual/net/") // a bond
	if err != nil || !strings.HasPrefix(real, "/sys/devices/pci") && !virtual {
		t.Fatalf("%s resolves to %q (%v)", cls, real, err)
	}
	link, err := k.Link(ifname)
	if err != nil {
		t.Fatal(err)
	}
	if v, _ := fsys.ReadTrimmed(cls + "/mtu"); v != strconv.Itoa(link.MTU) {
		t.Errorf("%s: sysfs mtu %s, rtnetlink %d", ifname, v, link.MTU)
	}
	if v, _ := fsys.ReadTrimmed(cls + "/address"); v != link.MAC {
		t.Errorf("%s: sysfs address %s, rtnetlink %s", ifname, v, link.MAC)
	}
	if v, _ := fsys.ReadTrimmed(cls + "/ifindex"); v != strconv.Itoa(link.Index) {
		t.Errorf("%s: sysfs ifindex %s, rtnetlink %d", ifname, v, link.Index)
	}
	drv, err := k.DriverInfo(ifname)
	if err != nil {
		t.Fatal(err)
	}
	if virtual {
		if fsys.Exists(cls + "/device") {
			t.Errorf("%s: a virtual netdev has a device link", ifname)
		}
		return
	}
	dev, err := fsys.Resolve(cls + "/device")
	if err != nil || filepath.Base(dev) != drv.BusInfo {
		t.Errorf("%s: device -> %s (%v), bus_info %s", ifname, dev, err, drv.BusInfo)
	}
	drvDir, err := fsys.Resolve(cls + "/device/driver")
	if err != nil || filepath.Base(drvDir) != drv.Driver {
		t.Errorf("%s: driver -> %s (%v), ethtool driver %s", ifname, drvDir, err, drv.Driver)
	}
}

func checkIBDev(t *testing.T, fsys nic.FS, ibdev string) {
	t.Helper()
	cls := "/sys/class/infiniband/" + ibdev
	// rdmamap lists class/infiniband and skips anything but symlinks (§B2).
	if fi, err := os.Lstat(fsys.Path(cls)); err != nil || fi.Mode()&fs.ModeSymlink == 0 {
		t.Fatalf("%s is not a symlink", cls)
	}
	nets, err := fsys.ReadDir(cls + "/device/net")
	if err != nil || len(nets) != 1 {
		t.Fatalf("%s/device/net: %v %v", cls, nets, err)
	}
	if v, _ := fsys.ReadTrimmed(cls + "/ports/1/link_layer"); v != "Ethernet" {
		t.Errorf("%s link_layer %q", ibdev, v)
	}
	gids, err := fsys.ReadDir(cls + "/ports/1/gids")
	if err != nil || len(gids) != gidTableLen {
		t.Fatalf("%s gids: %d %v", ibdev, len(gids), err)
	}
	populated := 0
	for i := range gidTableLen {
		g, err := fsys.ReadTrimmed(fmt.Sprintf("%s/ports/1/gids/%d", cls, i))
		if err != nil {
			t.Fatal(err)
		}
		typ, terr := fsys.ReadTrimmed(fmt.Sprintf("%s/ports/1/gid_attrs/types/%d", cls, i))
		ndev, nerr := fsys.ReadTrimmed(fmt.Sprintf("%s/ports/1/gid_attrs/ndevs/%d", cls, i))
		if g == zeroGID {
			// Not in the tree, listed as unreadable: read from the
			// snapshot, EINVAL, as the kernel answers for an empty entry.
			if !errors.Is(terr, syscall.EINVAL) || !errors.Is(nerr, syscall.EINVAL) {
				t.Errorf("%s gid %d empty but its attrs read %q (%v), %q (%v); want EINVAL", ibdev, i, typ, terr, ndev, nerr)
			}
			continue
		}
		populated++
		// A RoCE LAG device's GIDs live on the bond its netdev is a slave of.
		want := nets[0]
		if m, err := fsys.Resolve("/sys/class/net/" + nets[0] + "/master"); err == nil {
			want = filepath.Base(m)
		}
		if terr != nil || nerr != nil || (typ != "IB/RoCE v1" && typ != "RoCE v2") || ndev != want {
			t.Errorf("%s gid %d: type %q (%v), ndev %q (%v), want netdev %s", ibdev, i, typ, terr, ndev, nerr, want)
		}
	}
	if populated < 2 {
		t.Errorf("%s: %d populated GIDs", ibdev, populated)
	}
	if _, err := fsys.ReadTrimmed("/sys/kernel/config/rdma_cm/" + ibdev + "/ports/1/default_roce_mode"); err != nil {
		t.Errorf("rdma_cm: %v", err)
	}
}

func TestFactoryHost(t *testing.T) {
	s := openHost(t, "cx6dx-ofed-factory")
	k, fsys := s.Kernel(), s.FS()
	d, err := k.DCB("ens1f0np0")
	if err != nil {
		t.Fatal(err)
	}
	if *d.DCBX != 0x0c || d.PFC.Enable != 0 || d.PFC.Delay != 7 || len(d.Apps) != 0 || d.ETS.PrioTC != [8]uint8{1, 0, 2, 3, 4, 5, 6, 7} {
		t.Errorf("factory DCB %+v %+v %v", d.PFC, d.ETS, *d.DCBX)
	}
	if p, _ := k.Pause("ens1f0np0"); !p.Rx || !p.Tx || p.Autoneg {
		t.Errorf("pause %+v", p)
	}
	stats, _ := k.Stats("ens1f0np0")
	if stats["tx_global_pause"] != 5745042 || stats["rx_discards_phy"] != 58591428329 {
		t.Errorf("captured counters not carried: %d %d", stats["tx_global_pause"], stats["rx_discards_phy"])
	}
	if _, ok := stats["rx_prio3_pause"]; ok {
		t.Error("per-priority pause counter without PFC")
	}
	if v, _ := k.PFCPreventionTimeout("ens1f1np1"); v != 8000 {
		t.Errorf("tunable %d", v)
	}
	for _, p := range []string{"0", "3", "7"} {
		if v, _ := fsys.ReadTrimmed("/sys/class/net/ens1f0np0/ecn/roce_rp/enable/" + p); v != "1" {
			t.Errorf("rp enable/%s = %q", p, v)
		}
	}
	if v, _ := fsys.ReadTrimmed("/sys/class/net/ens1f0np0/ecn/roce_rp/rpg_time_reset"); v != "300" {
		t.Errorf("rpg_time_reset %q", v)
	}
	if v, err := fsys.ReadString("/sys/class/infiniband/mlx5_0/tc/1/traffic_class"); err != nil || v != "" {
		t.Errorf("traffic_class %q %v", v, err)
	}
	if g, _ := fsys.ReadTrimmed("/sys/class/infiniband/mlx5_0/ports/1/gids/5"); g != "0000:0000:0000:0000:0000:ffff:ac13:003c" {
		t.Errorf("mlx5_0 gid 5 = %s", g)
	}
	if g, _ := fsys.ReadTrimmed("/sys/class/infiniband/mlx5_1/ports/1/gids/3"); g != "0000:0000:0000:0000:0000:ffff:ac13:003d" {
		t.Errorf("mlx5_1 gid 3 = %s", g)
	}
	if _, err := fsys.ReadString("/sys/class/net/ens1f0np0/qos/trust"); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("qos/trust exists on DOCA-OFED: %v", err)
	}
	if !slices.Contains(s.Meta.Unreadable, "/sys/devices/pci0000:3a/0000:3a:00.0/0000:3b:00.0/infiniband/mlx5_0/ports/1/gid_attrs/types/6: EINVAL") {
		t.Errorf("unreadable: %v", s.Meta.Unreadable)
	}
	ps, err := k.DevlinkParams("pci/0000:3b:00.1")
	if err != nil || ps[0].Name != "enable_roce" || ps[0].Values[0].Value != true {
		t.Errorf("devlink %+v %v", ps, err)
	}
}

func TestLosslessHost(t *testing.T) {
	s := openHost(t, "cx6dx-ofed-lossless")
	k, fsys := s.Kernel(), s.FS()
	for _, ifname := range []string{"ens1f0np0", "ens1f1np1"} {
		d, err := k.DCB(ifname)
		if err != nil {
			t.Fatal(err)
		}
		if *d.DCBX != dcb.DCBXHost|dcb.DCBXVerIEEE || d.PFC.Enable != 0x08 || d.PFC.Delay != 7 || len(d.Apps) != 64 {
			t.Errorf("%s: dcbx %#x pfc %+v apps %d", ifname, *d.DCBX, d.PFC, len(d.Apps))
		}
		for _, a := range d.Apps {
			if a.Selector != dcb.SelDSCP || a.Priority != uint8(a.Protocol>>3) {
				t.Errorf("app %+v", a)
			}
		}
		stats, _ := k.Stats(ifname)
		for _, n := range nictest.MLX5PrioPauseCounters(3) {
			if v, ok := stats[n]; !ok || v != 0 {
				t.Errorf("%s %s = %d,%v", ifname, n, v, ok)
			}
		}
		for _, n := range nictest.MLX5GlobalPauseCounters() {
			if _, ok := stats[n]; ok {
				t.Errorf("%s: %s with pause off", ifname, n)
			}
		}
		if l, _ := k.Link(ifname); l.MTU != 9000 {
			t.Errorf("mtu %d", l.MTU)
		}
		if v, _ := k.PFCPreventionTimeout(ifname); v != 100 {
			t.Errorf("tunable %d", v)
		}
		for p := range 8 {
			want := "0"
			if p == 3 {
				want = "1"
			}
			for _, proto := range []string{"roce_rp", "roce_np"} {
				if v, _ := fsys.ReadTrimmed(fmt.Sprintf("/sys/class/net/%s/ecn/%s/enable/%d", ifname, proto, p)); v != want {
					t.Errorf("%s %s enable/%d = %q", ifname, proto, p, v)
				}
			}
		}
	}
	if v, _ := fsys.ReadString("/sys/class/infiniband/mlx5_1/tc/1/traffic_class"); v != "Global tclass=106" {
		t.Errorf("traffic_class %q", v)
	}
	if v, _ := fsys.ReadTrimmed("/sys/kernel/config/rdma_cm/mlx5_0/ports/1/default_roce_tos"); v != "106" {
		t.Errorf("tos %q", v)
	}
}

func TestUpstreamAndBnxtHosts(t *testing.T) {
	cx7 := openHost(t, "cx7-upstream-factory")
	fsys := cx7.FS()
	if _, err := fsys.ReadDir("/sys/class/net/enp8s0f0np0/ecn"); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("upstream host has OFED ecn/: %v", err)
	}
	if v, _ := fsys.ReadTrimmed("/sys/kernel/debug/mlx5/0000:08:00.1/cc_params/np_cnp_dscp"); v != "48" {
		t.Errorf("np_cnp_dscp %q", v)
	}
	if _, err := fsys.ReadTrimmed("/sys/class/infiniband/rocep8s0f0/ports/1/hw_counters/cc_rx_ce_pkts"); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("optional counter in sysfs: %v", err)
	}
	if v, _ := fsys.ReadTrimmed("/sys/class/infiniband/rocep8s0f0/ports/1/hw_counters/np_cnp_sent"); v != "0" {
		t.Errorf("np_cnp_sent %q", v)
	}

	bnxt := openHost(t, "bnxt-re-factory")
	k := bnxt.Kernel()
	if _, err := k.PFCPreventionTimeout("enp202s0f1np1"); !errors.Is(err, syscall.EOPNOTSUPP) {
		t.Errorf("bnxt tunable: %v", err)
	}
	stats, _ := k.Stats("enp202s0f1np1")
	if stats["[0]: rx_ucast_packets"] != 19121609 || stats["rx_pfc_ena_frames_pri3"] != 0 {
		t.Errorf("bnxt stats not from the capture")
	}
	if v, _ := bnxt.FS().ReadTrimmed("/sys/kernel/config/bnxt_re/bnxt_re0/ports/1/cc/ecn_enable"); v != "0" {
		t.Errorf("ecn_enable %q", v)
	}
	// Firmware-managed DCBX: the simulated bnxt refuses host PFC writes.
	sim := nictest.NewSim(bnxt.State())
	if err := sim.SetPFC("enp202s0f1np1", dcb.PFC{Enable: 0x08}); !errors.Is(err, syscall.EINVAL) {
		t.Errorf("bnxt PFC with LLD-managed DCBX: %v", err)
	}
}

func TestCX6DxFactoryN(t *testing.T) {
	for _, n := range []int{8, 64} {
		dir := filepath.Join(t.TempDir(), "h")
		if err := WriteCX6DxFactoryN(DefaultCapturesDir(), dir, n); err != nil {
			t.Fatal(err)
		}
		s, err := snapshot.Open(dir)
		if err != nil {
			t.Fatal(err)
		}
		st := s.State()
		if len(st.Links) != n {
			t.Fatalf("%d links", len(st.Links))
		}
		bdfs := map[string]bool{}
		for name, ls := range st.Links {
			bdfs[ls.Driver.BusInfo] = true
			checkNetdev(t, s.FS(), s.Kernel(), name)
		}
		if len(bdfs) != n {
			t.Errorf("%d distinct PCI addresses for %d ports", len(bdfs), n)
		}
		last := fmt.Sprintf("ens%df1np1", n/2)
		if _, ok := st.Links[last]; !ok {
			t.Errorf("no %s", last)
		}
		ib, _ := s.FS().ReadDir("/sys/class/infiniband")
		if len(ib) != n || !slices.Contains(ib, fmt.Sprintf("mlx5_%d", n-1)) {
			t.Errorf("ibdevs %v", ib)
		}
	}
	if _, err := CX6DxFactoryN(nil, 0); err == nil {
		t.Error("0 ports accepted")
	}
}

func TestParsers(t *testing.T) {
	st, err := parseEthtoolS("NIC statistics:\n     [0]: rx_ucast_packets: 19\n     tx_bytes: 2070\n")
	if err != nil || !slices.Equal(st.Names, []string{"[0]: rx_ucast_packets", "tx_bytes"}) || st.Values["tx_bytes"] != 2070 {
		t.Errorf("%+v %v", st, err)
	}
	for _, bad := range []string{"", "stats:\n", "NIC statistics:\n x: y\n", "NIC statistics:\n a: 1\n a: 2\n"} {
		if _, err := parseEthtoolS(bad); err == nil {
			t.Errorf("parseEthtoolS(%q) accepted", bad)
		}
	}
	rows, err := parseShowGids("DEV PORT INDEX GID IPv4 VER DEV\nmlx5_5  1  0  fe80:0000:0000:0000:08c0:eb03:00b6:a0b4  v1\nmlx5_3 1 2 0000:0000:0000:0000:0000:ffff:c0a8:f238 192.168.242.56 v1 ens14f0\n")
	if err != nil || rows[0].Netdev != "" || rows[0].Ver != "v1" || rows[1].IPv4 != "192.168.242.56" || rows[1].Netdev != "ens14f0" {
		t.Errorf("%+v %v", rows, err)
	}
	if g, _ := sysfsGID("::ffff:192.168.1.11"); g != "0000:0000:0000:0000:0000:ffff:c0a8:010b" {
		t.Errorf("sysfsGID = %s", g)
	}
	m := parseMAC("b8:59:9f:37:82:68")
	if m.nodeGUID() != "b859:9f03:0037:8268" || m.linkLocal() != "fe80:0000:0000:0000:ba59:9fff:fe37:8268" {
		t.Errorf("%s %s", m.nodeGUID(), m.linkLocal())
	}
	if back, err := macFromLinkLocal("fe80::ba59:9fff:fe37:8268"); err != nil || back != m {
		t.Errorf("macFromLinkLocal = %s %v", back, err)
	}
	if rel("/sys/class/net/x", "/sys/devices/pci0000:3a/0000:3a:00.0/0000:3b:00.0/net/x") != "../../devices/pci0000:3a/0000:3a:00.0/0000:3b:00.0/net/x" {
		t.Error("rel")
	}
}

// capturedHere are the captures taken into testdata/captures directly,
// not through shared/fixtures (from public sources, or by rocectl capture
// on a machine lent to the project): SOURCES.md must name each with its
// source.
var capturedHere = map[string]bool{capIceEthtoolS: true, capIceEthtoolI: true, "rocectl-capture-h200-vm": true}

// TestCapturesAreVerbatim pins the committed captures to their sizes in
// shared/fixtures when that directory is present (it is not in the repo).
func TestCapturesAreVerbatim(t *testing.T) {
	sources, err := os.ReadFile(filepath.Join(capturesDir, "SOURCES.md"))
	if err != nil {
		t.Fatal(err)
	}
	for name := range capturedHere {
		if !bytes.Contains(sources, []byte("### "+name)) {
			t.Errorf("%s: no entry in SOURCES.md", name)
		}
	}
	const shared = "/work/shared/fixtures"
	ents, err := os.ReadDir(capturesDir)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(shared); err != nil {
		t.Skip("shared fixtures not available")
	}
	for _, e := range ents {
		if e.Name() == "SOURCES.md" || capturedHere[e.Name()] {
			continue
		}
		a, err1 := os.ReadFile(filepath.Join(capturesDir, e.Name()))
		b, err2 := os.ReadFile(filepath.Join(shared, e.Name()))
		if err1 != nil || err2 != nil || !bytes.Equal(a, b) {
			t.Errorf("%s differs from %s (%v %v)", e.Name(), shared, err1, err2)
		}
	}
}

// BenchmarkOpen64 opens a 64-port host and reads every port's DCB state
// through the replay kernel.
func BenchmarkOpen64(b *testing.B) {
	dir := filepath.Join(b.TempDir(), "h")
	if err := WriteCX6DxFactoryN(DefaultCapturesDir(), dir, 64); err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for b.Loop() {
		s, err := snapshot.Open(dir)
		if err != nil {
			b.Fatal(err)
		}
		k := s.Kernel()
		for i := range 64 {
			if _, err := k.DCB(fmt.Sprintf("ens%df%dnp%d", i/2+1, i%2, i%2)); err != nil {
				b.Fatal(err)
			}
		}
	}
}

// The benchmarks' 256-port host (bench/cmd/applybench -audit-ports) has
// 128 cards: more than one PCI domain's buses hold four apart, so cards
// after the 48th go to the next domain, each at a PCI address of its own,
// and the first 48 keep the addresses the shipped hosts have.
func TestCardPCIAddressesFor256Ports(t *testing.T) {
	seen := map[string]int{}
	for k := 1; k <= 128; k++ {
		for fn := range 2 {
			f := cardPCI(k, fn)
			if prev, dup := seen[f.bdf]; dup {
				t.Fatalf("card %d function %d: %s, card %d's too", k, fn, f.bdf, prev)
			}
			seen[f.bdf] = k
			if !strings.HasPrefix(f.dir(), "/sys/devices/pci") || !strings.HasPrefix(f.bdf, f.domainRoot[3:7]+":") {
				t.Errorf("card %d: %s under %s", k, f.bdf, f.dir())
			}
		}
	}
	for k, want := range map[int]string{1: "0000:3b:00.0", 48: "0000:f7:00.0", 49: "0001:3b:00.0", 128: "0002:b7:00.0"} {
		if got := cardPCI(k, 0).bdf; got != want {
			t.Errorf("card %d at %s, want %s", k, got, want)
		}
	}
}
