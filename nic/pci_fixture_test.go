package nic

import (
	"fmt"
	"path/filepath"
	"strconv"
	"testing"
)

// The PCI fixture hosts under testdata/pci/, described compactly here and
// written by TestPCIFixturesUpToDate (-update-fixtures rewrites them). See
// testdata/pci/README.md for where the IDs and the structure come from.

type pciFxDev struct {
	addr                  string
	class, vendor, device string
	subVendor, subDevice  string
	numa                  int
	cur, max              string // link speeds; "" = no PCIe link files
	curW, maxW            int
	rdma                  []string // RDMA devices (port 1 each)
	netdevs               []string
	children              []pciFxDev
}

type pciFxRoot struct {
	name string // host bridge directory, "pci0000:15"
	devs []pciFxDev
}

type pciFxHost struct {
	dir   string
	roots []pciFxRoot
}

const (
	fxGen3 = "8.0 GT/s PCIe"
	fxGen4 = "16.0 GT/s PCIe"
	fxGen5 = "32.0 GT/s PCIe"
	fxIdle = "2.5 GT/s PCIe"
)

// Device models, with their IDs (see the README for the sources).
func fxIntelRootPort(addr string, numa int, child pciFxDev) pciFxDev {
	return pciFxDev{addr: addr, class: "0x060400", vendor: "0x8086", device: "0x352b", subVendor: "0x8086", subDevice: "0x0000",
		numa: numa, cur: child.cur, max: fxGen5, curW: child.curW, maxW: 16, children: []pciFxDev{child}}
}

func fxAMDRootPort(addr string, numa int, max string, maxW int, child pciFxDev) pciFxDev {
	return pciFxDev{addr: addr, class: "0x060400", vendor: "0x1022", device: "0x1483", subVendor: "0x1022", subDevice: "0x0000",
		numa: numa, cur: child.cur, max: max, curW: child.curW, maxW: maxW, children: []pciFxDev{child}}
}

// fxSwitch is a PCIe switch: the upstream port at up, one downstream port
// per child at downs[i], each down port's link being the child's.
func fxSwitch(vendor, device, subVendor, subDevice, speed, up string, numa int, downs []string, children ...pciFxDev) pciFxDev {
	sw := pciFxDev{addr: up, class: "0x060400", vendor: vendor, device: device, subVendor: subVendor, subDevice: subDevice,
		numa: numa, cur: speed, max: speed, curW: 16, maxW: 16}
	for i, c := range children {
		sw.children = append(sw.children, pciFxDev{addr: downs[i], class: "0x060400", vendor: vendor, device: device,
			subVendor: subVendor, subDevice: subDevice, numa: numa, cur: c.cur, max: speed, curW: c.curW, maxW: 16,
			children: []pciFxDev{c}})
	}
	return sw
}

func fxH100(addr string, numa int) pciFxDev {
	return pciFxDev{addr: addr, class: "0x030200", vendor: "0x10de", device: "0x2330", subVendor: "0x10de", subDevice: "0x16c1",
		numa: numa, cur: fxGen5, max: fxGen5, curW: 16, maxW: 16}
}

func fxCX7(addr string, numa int, rdma, netdev string) pciFxDev {
	return pciFxDev{addr: addr, class: "0x020000", vendor: "0x15b3", device: "0x1021", subVendor: "0x15b3", subDevice: "0x0023",
		numa: numa, cur: fxGen5, max: fxGen5, curW: 16, maxW: 16, rdma: []string{rdma}, netdevs: []string{netdev}}
}

func fxA100PCIe(addr string, numa int) pciFxDev {
	return pciFxDev{addr: addr, class: "0x030200", vendor: "0x10de", device: "0x20f1", subVendor: "0x10de", subDevice: "0x0000",
		numa: numa, cur: fxGen4, max: fxGen4, curW: 16, maxW: 16}
}

func fxT4(addr string, numa int) pciFxDev {
	return pciFxDev{addr: addr, class: "0x030200", vendor: "0x10de", device: "0x1eb8", subVendor: "0x10de", subDevice: "0x0000",
		numa: numa, cur: fxGen3, max: fxGen3, curW: 16, maxW: 16}
}

func fxCX6(addr string, numa int, rdma, netdev string) pciFxDev {
	return pciFxDev{addr: addr, class: "0x020000", vendor: "0x15b3", device: "0x101b", subVendor: "0x15b3", subDevice: "0x0000",
		numa: numa, cur: fxGen4, max: fxGen4, curW: 16, maxW: 16, rdma: []string{rdma}, netdevs: []string{netdev}}
}

func fxCX5(addr string, numa int, rdma, netdev string) pciFxDev {
	return pciFxDev{addr: addr, class: "0x020000", vendor: "0x15b3", device: "0x1017", subVendor: "0x15b3", subDevice: "0x0000",
		numa: numa, cur: fxGen3, max: fxGen3, curW: 16, maxW: 16, rdma: []string{rdma}, netdevs: []string{netdev}}
}

// fxHGXSwitch is one of the HGX host's four PEX890xx switches: NIC, GPU,
// GPU, NIC on its four downstream ports.
func fxHGXSwitch(bus string, numa int, nicA, nicB [2]string, modify func(*pciFxDev)) pciFxRoot {
	b, _ := strconv.ParseUint(bus, 16, 8)
	a := func(off uint64, dev string) string { return fmt.Sprintf("0000:%02x:%s", b+off, dev) }
	n0 := fxCX7(a(2, "00.0"), numa, nicA[0], nicA[1])
	n1 := fxCX7(a(5, "00.0"), numa, nicB[0], nicB[1])
	if modify != nil {
		modify(&n1)
	}
	sw := fxSwitch("0x1000", "0xc030", "0x1000", "0x100b", fxGen5, a(0, "00.0"), numa,
		[]string{a(1, "00.0"), a(1, "01.0"), a(1, "02.0"), a(1, "03.0")},
		n0, fxH100(a(3, "00.0"), numa), fxH100(a(4, "00.0"), numa), n1)
	return pciFxRoot{name: "pci0000:" + fmt.Sprintf("%02x", b-1), devs: []pciFxDev{fxIntelRootPort(fmt.Sprintf("0000:%02x:01.0", b-1), numa, sw)}}
}

// fxStorageCard is a dual-port CX-7 (two functions) straight on a root port.
func fxStorageCard(bus string, numa int, rdma0, rdma1 string) pciFxRoot {
	b, _ := strconv.ParseUint(bus, 16, 8)
	f0 := fxCX7(fmt.Sprintf("0000:%02x:00.0", b), numa, rdma0, fmt.Sprintf("enp%ds0f0np0", b))
	f1 := fxCX7(fmt.Sprintf("0000:%02x:00.1", b), numa, rdma1, fmt.Sprintf("enp%ds0f1np1", b))
	rp := fxIntelRootPort(fmt.Sprintf("0000:%02x:01.0", b-1), numa, f0)
	rp.children = append(rp.children, f1)
	return pciFxRoot{name: fmt.Sprintf("pci0000:%02x", b-1), devs: []pciFxDev{rp}}
}

var pciFxHosts = []pciFxHost{
	{
		// (a) HGX-style: 8 H100, 8 compute CX-7 and 2 dual-port storage
		// CX-7, 2 sockets, 4 PEX890xx switches each with NIC, GPU, GPU, NIC.
		// mlx5_7 trained at x8.
		dir: "hgx-h100-8gpu",
		roots: []pciFxRoot{
			fxHGXSwitch("16", 0, [2]string{"mlx5_0", "enp24s0np0"}, [2]string{"mlx5_1", "enp27s0np0"}, nil),
			fxStorageCard("2a", 0, "mlx5_2", "mlx5_3"),
			fxHGXSwitch("38", 0, [2]string{"mlx5_4", "enp58s0np0"}, [2]string{"mlx5_5", "enp61s0np0"}, nil),
			fxHGXSwitch("98", 1, [2]string{"mlx5_6", "enp154s0np0"}, [2]string{"mlx5_7", "enp157s0np0"},
				func(d *pciFxDev) { d.curW = 8 }),
			fxStorageCard("aa", 1, "mlx5_8", "mlx5_9"),
			fxHGXSwitch("b8", 1, [2]string{"mlx5_10", "enp186s0np0"}, [2]string{"mlx5_11", "enp189s0np0"}, nil),
		},
	},
	{
		// (b) PCIe-only: 4 A100 PCIe and 2 CX-6 each straight on a root port
		// of its own root complex, 2 sockets (AMD EPYC layout, four root
		// complexes per socket). GPU1 idles at 2.5 GT/s, GPU3 sits in an x8
		// slot, mlx5_1 trained at 8 GT/s in a 16 GT/s slot.
		dir: "pcie-4gpu",
		roots: []pciFxRoot{
			{"pci0000:00", []pciFxDev{fxAMDRootPort("0000:00:01.1", 0, fxGen4, 16, fxA100PCIe("0000:01:00.0", 0))}},
			{"pci0000:20", []pciFxDev{fxAMDRootPort("0000:20:01.1", 0, fxGen4, 16,
				func() pciFxDev { d := fxA100PCIe("0000:21:00.0", 0); d.cur = fxIdle; return d }())}},
			{"pci0000:40", []pciFxDev{fxAMDRootPort("0000:40:01.1", 0, fxGen4, 16, fxCX6("0000:41:00.0", 0, "mlx5_0", "enp65s0np0"))}},
			{"pci0000:80", []pciFxDev{fxAMDRootPort("0000:80:01.1", 1, fxGen4, 16, fxA100PCIe("0000:81:00.0", 1))}},
			{"pci0000:a0", []pciFxDev{fxAMDRootPort("0000:a0:01.1", 1, fxGen4, 8,
				func() pciFxDev { d := fxA100PCIe("0000:a1:00.0", 1); d.curW = 8; return d }())}},
			{"pci0000:c0", []pciFxDev{fxAMDRootPort("0000:c0:01.1", 1, fxGen4, 16,
				func() pciFxDev { d := fxCX6("0000:c1:00.0", 1, "mlx5_1", "enp193s0np0"); d.cur = fxGen3; return d }())}},
		},
	},
	{
		// (c) Nested switches, one socket (a structure test, not a real
		// machine): a PLX PEX 8747 cascade with two T4 under the second
		// level and a CX-5 under the first (PXB), and a DGX-A100-style
		// two-level Broadcom PEX88000 switch with a CX-6 under the top level
		// and a T4 under the sub-switch, which NCCL flattens (PIX).
		dir: "nested-switches",
		roots: []pciFxRoot{{"pci0000:00", []pciFxDev{
			fxAMDRootPort("0000:00:03.1", 0, fxGen4, 16,
				fxSwitch("0x10b5", "0x8747", "0x10b5", "0x0000", fxGen3, "0000:02:00.0", 0, []string{"0000:03:08.0", "0000:03:10.0"},
					fxSwitch("0x10b5", "0x8747", "0x10b5", "0x0000", fxGen3, "0000:04:00.0", 0, []string{"0000:05:08.0", "0000:05:10.0"},
						fxT4("0000:06:00.0", 0), fxT4("0000:07:00.0", 0)),
					fxCX5("0000:08:00.0", 0, "mlx5_0", "enp8s0np0"))),
			fxAMDRootPort("0000:00:07.1", 0, fxGen4, 16,
				fxSwitch("0x1000", "0xc010", "0x1000", "0xa096", fxGen4, "0000:0a:00.0", 0, []string{"0000:0b:00.0", "0000:0b:01.0"},
					fxCX6("0000:0c:00.0", 0, "mlx5_1", "enp12s0np0"),
					fxSwitch("0x1000", "0xc010", "0x1000", "0xa096", fxGen4, "0000:0d:00.0", 0, []string{"0000:0e:00.0"},
						fxT4("0000:0f:00.0", 0)))),
		}}},
	},
}

// pciFxTree renders a host in the kernel's layout: each function a
// directory /sys/devices/<host bridge>/<bridges...>/<addr> with the
// pci-sysfs attribute files, /sys/bus/pci/devices/<addr> a relative symlink
// to it, RDMA devices as <function>/infiniband/<dev> with
// /sys/class/infiniband/<dev> symlinks, netdevs as <function>/net/<if>
// with /sys/class/net/<if> symlinks.
func pciFxTree(h pciFxHost) *fxTree {
	t := newFxTree()
	var walk func(parent string, d pciFxDev)
	walk = func(parent string, d pciFxDev) {
		dir := parent + "/" + d.addr
		f := func(name, v string) { t.file("sys/devices/"+dir+"/"+name, v+"\n") }
		f("class", d.class)
		f("vendor", d.vendor)
		f("device", d.device)
		f("subsystem_vendor", d.subVendor)
		f("subsystem_device", d.subDevice)
		f("numa_node", strconv.Itoa(d.numa))
		if d.max != "" {
			f("current_link_speed", d.cur)
			f("max_link_speed", d.max)
			f("current_link_width", strconv.Itoa(d.curW))
			f("max_link_width", strconv.Itoa(d.maxW))
		}
		t.link("sys/bus/pci/devices/"+d.addr, "../../../devices/"+dir)
		for _, r := range d.rdma {
			t.file("sys/devices/"+dir+"/infiniband/"+r+"/ports/1/link_layer", "Ethernet\n")
			t.link("sys/class/infiniband/"+r, "../../devices/"+dir+"/infiniband/"+r)
		}
		for i, n := range d.netdevs {
			// dev_port: the port index of the netdev on the function.
			t.file("sys/devices/"+dir+"/net/"+n+"/dev_port", strconv.Itoa(i)+"\n")
			t.link("sys/class/net/"+n, "../../devices/"+dir+"/net/"+n)
		}
		for _, c := range d.children {
			walk(dir, c)
		}
	}
	for _, r := range h.roots {
		for _, d := range r.devs {
			walk(r.name, d)
		}
	}
	return t
}

func pciFxDir(host string) string { return filepath.Join("testdata", "pci", host) }

func TestPCIFixturesUpToDate(t *testing.T) {
	for _, h := range pciFxHosts {
		fxSync(t, pciFxDir(h.dir), pciFxTree(h))
	}
}
