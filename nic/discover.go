package nic

import (
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"path"
	"slices"
	"sort"
	"strconv"
	"strings"
	"syscall"

	"github.com/rocectl/rocectl/internal/lib/parallel"
	"github.com/rocectl/rocectl/port"
)

// SkippedDevice is an RDMA device discovery left out, and why. One odd
// device never stops discovery of the others.
type SkippedDevice struct {
	Device string `json:"device"`
	Port   int    `json:"port,omitempty"`
	Reason string `json:"reason"`
}

// Inventory is what Discover found.
type Inventory struct {
	Ports   []port.Port     `json:"ports"`
	Skipped []SkippedDevice `json:"skipped,omitempty"`
	// RDMASource says where the RDMA device ports, their netdevs and
	// states came from: RDMASourceNetlink or RDMASourceSysfs.
	RDMASource string `json:"rdma_source,omitempty"`
	// SysfsReason says why sysfs was read rather than the kernel's RDMA
	// netlink ("the RDMA core (ib_core) is not loaded").
	SysfsReason string `json:"sysfs_reason,omitempty"`
}

// Where discovery found the RDMA device ports (Inventory.RDMASource).
const (
	RDMASourceNetlink = "netlink" // RDMA_NLDEV_CMD_PORT_GET (rdmanl.go)
	RDMASourceSysfs   = "sysfs"   // /sys/class/infiniband
)

// ErrNoRoCE says a host has no RoCE device. Callers report it as a fact
// ("no RoCE devices found"), not as a failure.
var ErrNoRoCE = errors.New("no RoCE devices found")

// Discover finds every RDMA device port with an Ethernet link layer, with its
// netdev, PCI address, driver, firmware, NUMA node and link state. The link
// layer, PCI address and the rest come from sysfs; the Kernel supplies
// ethtool driver info. A host without RDMA devices yields an empty
// inventory, not an error. A Kernel that is a NetdevLister (a snapshot
// imported from text dumps) adds its netdevs that no RDMA port claimed, as
// netdev-only ports.
//
// The RDMA device ports, each one's netdev and its state come from the
// kernel's RDMA netlink when the Kernel can give them (an RDMALinker: the
// live kernel for the live root, a snapshot that recorded them), from
// sysfs otherwise (the class directory's devices, each one's ports/,
// ports/N/state, and the netdev from device/net, "parent" or the GIDs);
// Inventory.RDMASource says which, and SysfsReason why not netlink.
func Discover(fs FS, k Kernel, log *slog.Logger) *Inventory {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	inv := &Inventory{RDMASource: RDMASourceSysfs}
	var links map[string]map[int]*RDMALink // by device and port
	var devs []string
	if view, err := rdmaLinks(fs, k); err != nil {
		inv.SysfsReason = err.Error()
		log.Debug("RDMA ports from sysfs", "reason", err)
		devs = RDMADevices(fs)
	} else {
		inv.RDMASource = RDMASourceNetlink
		links = map[string]map[int]*RDMALink{}
		for i := range view {
			l := &view[i]
			if links[l.Device] == nil {
				links[l.Device] = map[int]*RDMALink{}
				devs = append(devs, l.Device)
			}
			links[l.Device][l.Port] = l
		}
	}
	// Devices are independent: a 64-port host's discovery is ~20 file
	// reads and an ethtool query per port, run a few devices at a time.
	// Each device's class directory is resolved once, and its ports
	// (sysfs) listed below it, for all its ports' reads; it is closed
	// when they are done, so that the process never holds more than a
	// few directories per worker (Dir.Close).
	type portJob struct {
		num int
		p   port.Port
		err error
	}
	jobs := make([][]portJob, len(devs))
	parallel.Each(len(devs), func(i int) {
		dev := devs[i]
		ib := fs.Dir("/sys/class/infiniband/" + dev)
		defer ib.Close()
		var nums []int
		if links != nil {
			nums = slices.Sorted(maps.Keys(links[dev]))
		} else {
			nums = dirPorts(ib)
		}
		jobs[i] = make([]portJob, len(nums))
		for n, pn := range nums {
			j := &jobs[i][n]
			j.num = pn
			j.p, j.err = discoverPort(fs, k, ib, dev, pn, links[dev][pn], log)
		}
	})
	for i, dev := range devs {
		if len(jobs[i]) == 0 {
			inv.Skipped = append(inv.Skipped, SkippedDevice{Device: dev, Reason: "no ports in sysfs"})
		}
	}
	for i, dev := range devs {
		for _, j := range jobs[i] {
			if j.err != nil {
				log.Debug("skipping RDMA port", "device", dev, "port", j.num, "reason", j.err)
				inv.Skipped = append(inv.Skipped, SkippedDevice{Device: dev, Port: j.num, Reason: j.err.Error()})
				continue
			}
			inv.Ports = append(inv.Ports, j.p)
		}
	}
	inv.Ports = append(inv.Ports, netdevOnlyPorts(k, inv.Ports)...)
	sort.SliceStable(inv.Ports, func(i, j int) bool {
		if (inv.Ports[i].RDMADevice == "") != (inv.Ports[j].RDMADevice == "") {
			return inv.Ports[i].RDMADevice != "" // netdev-only ports last
		}
		if inv.Ports[i].RDMADevice == "" {
			return naturalLess(inv.Ports[i].Netdev, inv.Ports[j].Netdev)
		}
		return naturalLess(inv.Ports[i].RDMADevice, inv.Ports[j].RDMADevice) ||
			(inv.Ports[i].RDMADevice == inv.Ports[j].RDMADevice && inv.Ports[i].PortNum < inv.Ports[j].PortNum)
	})
	return inv
}

// NetdevLister is a Kernel that knows netdevs without knowing whether an
// RDMA device sits on them. A snapshot imported from text dumps is one:
// its kernel.json holds what ethtool and mlnx_qos said about each netdev,
// and no sysfs tells which RDMA device (if any) carries it.
//
// Why discovery, not the import: the alternative, an import that writes a
// sysfs tree for discovery to find, would have to invent an RDMA device
// (and its port, link layer and PCI function) for a netdev no dump tied to
// one, and a reader could no longer tell those inventions from captured
// files. (Where a show_gids dump does tie a netdev to an RDMA port, the
// import writes that port's GID table, the files show_gids read, under
// /sys/devices/rocectl-import, and discovery finds the port there.)
// The live kernel does not implement this interface: on a real
// host a netdev without an RDMA device (eth0, docker0) is not a RoCE port,
// and a profile without [match] must never reach it.
type NetdevLister interface {
	// NetdevsOfUnknownRDMA lists the netdevs whose RDMA device is not
	// known, sorted.
	NetdevsOfUnknownRDMA() []string
}

// netdevOnlyPorts returns a netdev-only port for each netdev k lists that
// none of ports (nor a bond's slave) already is. Driver, firmware and PCI
// address come from the driver info (ethtool -i) when the source has it;
// the operstate from the link (ip link).
func netdevOnlyPorts(k Kernel, ports []port.Port) []port.Port {
	nl, ok := k.(NetdevLister)
	if !ok {
		return nil
	}
	taken := map[string]bool{}
	for _, p := range ports {
		taken[p.Netdev] = true
		if p.Bond != nil {
			for _, s := range p.Bond.Slaves {
				taken[s.Netdev] = true
			}
		}
	}
	var out []port.Port
	for _, nd := range nl.NetdevsOfUnknownRDMA() {
		if taken[nd] {
			continue
		}
		p := port.Port{Netdev: nd, NUMANode: -1, State: "unknown", Role: port.RoleNetdevOnly, RoCEv2GID: -1}
		if di, err := k.DriverInfo(nd); err == nil {
			p.Driver, p.Firmware = di.Driver, di.Firmware
			if IsPCIAddress(di.BusInfo) {
				p.PCI = di.BusInfo
			}
		}
		if li, err := k.Link(nd); err == nil {
			p.OperState = li.OperState
		}
		out = append(out, p)
	}
	return out
}

// rdmaLinks is the kernel's RDMA netlink view of the host fs describes,
// or why there is none.
func rdmaLinks(fs FS, k Kernel) ([]RDMALink, error) {
	rl, ok := k.(RDMALinker)
	if !ok {
		return nil, fmt.Errorf("%w: the source has none", ErrNoRDMANetlink)
	}
	return rl.RDMALinks(fs)
}

// discoverPort reads one RDMA port of the device whose class directory is
// ib. link is what RDMA netlink said of it, nil when discovery reads
// sysfs: its state and netdev are then sysfs's.
func discoverPort(fs FS, k Kernel, ib Dir, dev string, pn int, link *RDMALink, log *slog.Logger) (port.Port, error) {
	pbase := "ports/" + strconv.Itoa(pn)
	ll, err := ib.ReadTrimmed(pbase + "/link_layer")
	if err != nil {
		return port.Port{}, fmt.Errorf("cannot read link_layer: %w", err)
	}
	if ll != "Ethernet" {
		return port.Port{}, fmt.Errorf("link layer %s, not RoCE", ll)
	}
	p := port.Port{RDMADevice: dev, PortNum: pn, NUMANode: -1, RoCEv2GID: -1}
	if link != nil {
		p.State = link.State
	} else {
		p.State = portState(ib.ReadTrimmed(pbase + "/state"))
	}
	p.Rate, _ = ib.ReadTrimmed(pbase + "/rate")
	p.HCAType, _ = ib.ReadTrimmed("hca_type")
	p.BoardID, _ = ib.ReadTrimmed("board_id")

	// The device link leads out of ib: resolved once, from the root, for
	// the PCI address and the reads below the function (numa_node, net).
	pci := fs.Dir(ib.Path() + "/device")
	defer pci.Close()
	if real, ok := pci.Resolved(); ok && IsPCIAddress(path.Base(real)) {
		p.PCI = path.Base(real)
		if s, err := pci.ReadTrimmed("numa_node"); err == nil {
			if n, err := strconv.Atoi(s); err == nil {
				p.NUMANode = n
			}
		}
	}
	switch {
	case link != nil && link.Netdev != "":
		p.Netdev = link.Netdev
	case link != nil:
		// The kernel names no netdev in this namespace, or is older
		// than 4.16 and names none at all. sysfs may know one, but its
		// netdev counts only if rtnetlink finds it here too: sysfs is
		// the mount's namespace, not the one rocectl works in.
		p.Netdev = portNetdev(ib, pci, dev, pn)
		if p.Netdev == "" {
			return port.Port{}, errors.New("no netdev found for this port (RDMA netlink names none in this network namespace; no device/net, parent or GID netdev)")
		}
		if _, err := k.Link(p.Netdev); errors.Is(err, syscall.ENODEV) {
			return port.Port{}, fmt.Errorf("its netdev %s (sysfs) is not in this network namespace, and RDMA netlink names none here", p.Netdev)
		}
		log.Debug("RDMA netlink names no netdev for the port; sysfs's used", "device", dev, "port", pn, "netdev", p.Netdev)
	default:
		p.Netdev = portNetdev(ib, pci, dev, pn)
	}
	if p.Netdev == "" {
		return port.Port{}, errors.New("no netdev found for this port (no device/net, parent or GID netdev)")
	}
	pci.Close() // done with it: one directory fewer held below
	// The netdev's class entry, resolved once for its attributes.
	nd := fs.Dir("/sys/class/net/" + p.Netdev)
	defer func() { nd.Close() }()
	// A RoCE LAG device sits on the PCI function of its first slave: its
	// netdev is the bond.
	if bond := lagNetdev(fs, nd, dev, pn, p.Netdev); bond != "" {
		p.Netdev = bond
		nd.Close()
		nd = fs.Dir("/sys/class/net/" + bond)
	}
	topology(fs, nd, &p)
	p.OperState, _ = nd.ReadTrimmed("operstate")
	if s, err := nd.ReadTrimmed("speed"); err == nil {
		if n, err := strconv.Atoi(s); err == nil && n > 0 {
			p.SpeedMbps = n
		}
	}
	// A bond's driver is "bonding": the port's driver, what a profile
	// matches and what decides driver behaviour, is its slaves'.
	drvNetdev := p.Netdev
	if p.Bond != nil && len(p.Bond.Slaves) > 0 {
		drvNetdev = p.Bond.Slaves[0].Netdev
	}
	if di, err := k.DriverInfo(drvNetdev); err == nil {
		p.Driver, p.Firmware = di.Driver, di.Firmware
	}
	if p.Driver == "" {
		if l, err := fs.Readlink("/sys/class/net/" + drvNetdev + "/device/driver"); err == nil {
			p.Driver = path.Base(l)
		}
	}
	if p.Firmware == "" {
		p.Firmware, _ = ib.ReadTrimmed("fw_ver")
	}
	return p, nil
}

// DevlinkHandle is the devlink instance of a netdev's device, "bus/name"
// (pci/0000:3b:00.0, netdevsim/netdevsim1), from the device link and its
// subsystem; "" for devices without one (veth).
func DevlinkHandle(fs FS, netdev string) string {
	dev := "/sys/class/net/" + netdev + "/device"
	real, err := fs.Resolve(dev)
	if err != nil {
		return ""
	}
	bus, err := fs.Readlink(dev + "/subsystem")
	if err != nil {
		return ""
	}
	return path.Base(bus) + "/" + path.Base(real)
}

// portState turns "4: ACTIVE", as read, into "ACTIVE".
func portState(s string, err error) string {
	if err != nil {
		return "unknown"
	}
	if _, name, ok := strings.Cut(s, ":"); ok {
		return strings.TrimSpace(name)
	}
	return s
}

// portNetdev finds the netdev of an RDMA port: the PCI function's single
// netdev (net/* below pci, ib's device, as doRoCE.sh does), the "parent"
// attribute of software devices (rxe), or the netdev of the port's GID
// entries (mlx4's two ports share one PCI function).
func portNetdev(ib, pci Dir, dev string, pn int) string {
	if nets, err := pci.ReadDir("net"); err == nil && len(nets) == 1 {
		return nets[0]
	}
	if parent, err := ib.ReadTrimmed("parent"); err == nil && parent != "" {
		return parent
	}
	gids, _ := ReadGIDs(ib.fs, dev, pn)
	for _, g := range gids {
		if g.Netdev != "" {
			return g.Netdev
		}
	}
	return ""
}

// naturalLess orders mlx5_2 before mlx5_10.
func naturalLess(a, b string) bool {
	ai, bi := trailingNumber(a), trailingNumber(b)
	pa, pb := strings.TrimRight(a, "0123456789"), strings.TrimRight(b, "0123456789")
	if pa == pb && ai >= 0 && bi >= 0 {
		return ai < bi
	}
	return a < b
}

func trailingNumber(s string) int {
	t := s[len(strings.TrimRight(s, "0123456789")):]
	if t == "" {
		return -1
	}
	n, _ := strconv.Atoi(t)
	return n
}
