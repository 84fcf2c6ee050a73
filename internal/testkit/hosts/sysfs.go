package hosts

import (
	"fmt"
	"path"
	"strings"
)

// Layout of PCI devices, netdevs and RDMA devices in sysfs, as on a real
// host: the device directory sits under its root port, and class/,
// bus/pci/ and the device's own net/, infiniband/, driver links are
// relative symlinks.

// pciFunc is one PCI function behind a root port.
type pciFunc struct {
	domainRoot string // "pci0000:3a"
	bridge     string // root port, "0000:3a:00.0"
	bdf        string // "0000:3b:00.0"
}

// newPCIFunc places bus:00.fn behind root port (bus-1):00.0 in domain 0.
func newPCIFunc(bus, fn int) pciFunc { return newPCIFuncIn(0, bus, fn) }

// newPCIFuncIn is function fn of the device on bus in PCI domain dom
// (segment): a host with more cards than one domain's buses holds.
func newPCIFuncIn(dom, bus, fn int) pciFunc {
	return pciFunc{
		domainRoot: fmt.Sprintf("pci%04x:%02x", dom, bus-1),
		bridge:     fmt.Sprintf("%04x:%02x:00.0", dom, bus-1),
		bdf:        fmt.Sprintf("%04x:%02x:00.%d", dom, bus, fn),
	}
}

func (f pciFunc) dir() string {
	return "/sys/devices/" + f.domainRoot + "/" + f.bridge + "/" + f.bdf
}

// rel is the relative link target from the directory holding a link at
// from to the host path to.
func rel(from, to string) string {
	a := strings.Split(strings.TrimPrefix(path.Dir(from), "/"), "/")
	b := strings.Split(strings.TrimPrefix(to, "/"), "/")
	i := 0
	for i < len(a) && i < len(b) && a[i] == b[i] {
		i++
	}
	return strings.Repeat("../", len(a)-i) + strings.Join(b[i:], "/")
}

// pciAttrs are the PCI attributes a fixture device carries.
type pciAttrs struct {
	vendor, device, subVendor, class string
	numaNode                         int
	linkSpeed                        string // current/max_link_speed
	linkWidth                        int
	src                              string
}

// addPCI adds the device directory's attributes and its driver and bus
// links.
func addPCI(t *tree, f pciFunc, driver string, a pciAttrs) {
	d := f.dir()
	t.file(d+"/vendor", a.vendor+"\n", a.src)
	t.file(d+"/device", a.device+"\n", a.src)
	t.file(d+"/subsystem_vendor", a.subVendor+"\n", a.src)
	t.file(d+"/class", a.class+"\n", a.src)
	t.file(d+"/numa_node", fmt.Sprintf("%d\n", a.numaNode), a.src)
	t.file(d+"/current_link_speed", a.linkSpeed+"\n", a.src)
	t.file(d+"/max_link_speed", a.linkSpeed+"\n", a.src)
	t.file(d+"/current_link_width", fmt.Sprintf("%d\n", a.linkWidth), a.src)
	t.file(d+"/max_link_width", fmt.Sprintf("%d\n", a.linkWidth), a.src)
	drv := "/sys/bus/pci/drivers/" + driver
	t.link(d+"/driver", rel(d+"/driver", drv), srcLayout)
	t.link(drv+"/"+f.bdf, rel(drv+"/"+f.bdf, d), srcLayout)
	t.link("/sys/bus/pci/devices/"+f.bdf, rel("/sys/bus/pci/devices/"+f.bdf, d), srcLayout)
}

// netdevAttrs are a netdev's sysfs attributes (the values rtnetlink also
// reports, kept consistent with kernel.json).
type netdevAttrs struct {
	ifname       string
	ifindex      int
	mac          string
	mtu          int
	speed        int // Mb/s
	physPortName string
	src          string
}

func netdevDir(f pciFunc, ifname string) string { return f.dir() + "/net/" + ifname }

func addNetdev(t *tree, f pciFunc, a netdevAttrs) {
	d := netdevDir(f, a.ifname)
	t.file(d+"/address", a.mac+"\n", a.src)
	t.file(d+"/addr_len", "6\n", a.src)
	t.file(d+"/ifindex", fmt.Sprintf("%d\n", a.ifindex), a.src)
	t.file(d+"/mtu", fmt.Sprintf("%d\n", a.mtu), a.src)
	t.file(d+"/operstate", "up\n", a.src)
	t.file(d+"/carrier", "1\n", a.src)
	t.file(d+"/speed", fmt.Sprintf("%d\n", a.speed), a.src)
	t.file(d+"/duplex", "full\n", a.src)
	t.file(d+"/type", "1\n", a.src)
	if a.physPortName != "" {
		t.file(d+"/phys_port_name", a.physPortName+"\n", a.src)
	}
	t.link(d+"/device", rel(d+"/device", f.dir()), srcLayout)
	cls := "/sys/class/net/" + a.ifname
	t.link(cls, rel(cls, d), srcLayout)
}

func ibdevDir(f pciFunc, ibdev string) string { return f.dir() + "/infiniband/" + ibdev }

// ibdevAttrs are an RDMA device's attributes.
type ibdevAttrs struct {
	name                             string
	nodeGUID, sysImageGUID           string
	fwVer, hcaType, boardID          string
	state, physState, rate, linkType string
	src                              string
}

func addIBDev(t *tree, f pciFunc, a ibdevAttrs) {
	d := ibdevDir(f, a.name)
	t.file(d+"/node_type", "1: CA\n", a.src)
	t.file(d+"/node_guid", a.nodeGUID+"\n", a.src)
	t.file(d+"/sys_image_guid", a.sysImageGUID+"\n", a.src)
	t.file(d+"/fw_ver", a.fwVer+"\n", a.src)
	if a.hcaType != "" {
		t.file(d+"/hca_type", a.hcaType+"\n", a.src)
	}
	if a.boardID != "" {
		t.file(d+"/board_id", a.boardID+"\n", a.src)
	}
	p := d + "/ports/1"
	t.file(p+"/state", a.state+"\n", a.src)
	t.file(p+"/phys_state", a.physState+"\n", a.src)
	t.file(p+"/rate", a.rate+"\n", a.src)
	t.file(p+"/link_layer", a.linkType+"\n", a.src)
	t.link(d+"/device", rel(d+"/device", f.dir()), srcLayout)
	cls := "/sys/class/infiniband/" + a.name
	t.link(cls, rel(cls, d), srcLayout)
}

// gidTableLen is how many GID entries a fixture port has. Real mlx5 ports
// have 256 (ibv_devinfo gid_tbl_len); 16 keeps the fixtures small while
// leaving empty entries after the populated ones.
const gidTableLen = 16

const zeroGID = "0000:0000:0000:0000:0000:0000:0000:0000"

// gid is one populated GID table entry.
type gid struct {
	addr string // sysfs "%pI6" form
	typ  string // "IB/RoCE v1" | "RoCE v2"
	ndev string
	src  string
}

// addGIDs writes ports/1/gids and gid_attrs. Empty entries hold the zero
// GID and have no types/ndevs file: the kernel fails those reads with
// EINVAL, so a capture has nothing to store and lists them as unreadable.
func addGIDs(t *tree, f pciFunc, ibdev string, gids []gid, srcEmpty string) (unreadable []string) {
	p := ibdevDir(f, ibdev) + "/ports/1"
	for i := range gidTableLen {
		if i < len(gids) && gids[i].addr != "" {
			g := gids[i]
			t.file(fmt.Sprintf("%s/gids/%d", p, i), g.addr+"\n", g.src)
			t.file(fmt.Sprintf("%s/gid_attrs/types/%d", p, i), g.typ+"\n", g.src)
			t.file(fmt.Sprintf("%s/gid_attrs/ndevs/%d", p, i), g.ndev+"\n", g.src)
			continue
		}
		t.file(fmt.Sprintf("%s/gids/%d", p, i), zeroGID+"\n", srcEmpty)
		unreadable = append(unreadable,
			fmt.Sprintf("%s/gid_attrs/ndevs/%d: EINVAL", p, i),
			fmt.Sprintf("%s/gid_attrs/types/%d: EINVAL", p, i))
	}
	return unreadable
}

// addRdmaCM adds the rdma_cm configfs directory of an RDMA device as it
// looks after `mkdir /sys/kernel/config/rdma_cm/<dev>` (configfs creates
// the port groups; a fixture tree cannot, so they are pre-created).
func addRdmaCM(t *tree, ibdev, mode string, tos int, src string) {
	d := "/sys/kernel/config/rdma_cm/" + ibdev + "/ports/1"
	t.file(d+"/default_roce_mode", mode+"\n", src)
	t.file(d+"/default_roce_tos", fmt.Sprintf("%d\n", tos), src)
}
