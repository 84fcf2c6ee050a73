package nic

import (
	"errors"
	"fmt"
	"os"
	"path"
	"sort"
	"strconv"
	"strings"
)

// PCIDevice is one PCI function as sysfs shows it under
// /sys/bus/pci/devices/<addr> (drivers/pci/pci-sysfs.c), read without any
// vendor tool.
type PCIDevice struct {
	// Addr is the function's address, "0000:18:00.0".
	Addr string `json:"addr"`
	// Class is the class file, "0x030200" (base class, subclass, prog-if).
	Class string `json:"class"`
	// Vendor and Device are the vendor and device files, "0x10de", "0x2330".
	Vendor string `json:"vendor"`
	Device string `json:"device"`
	// SubsystemVendor and SubsystemDevice are subsystem_vendor and
	// subsystem_device; NCCL uses them to recognise Broadcom PEX switches.
	SubsystemVendor string `json:"subsystem_vendor,omitempty"`
	SubsystemDevice string `json:"subsystem_device,omitempty"`
	// NUMANode is numa_node: -1 when the firmware gives none or the kernel
	// has no NUMA support.
	NUMANode int `json:"numa_node"`
	// CurSpeed and MaxSpeed are current_link_speed and max_link_speed as the
	// kernel prints them ("32.0 GT/s PCIe"; "8 GT/s" on kernels before 5.x);
	// empty for functions without a PCIe capability.
	CurSpeed string `json:"cur_speed,omitempty"`
	MaxSpeed string `json:"max_speed,omitempty"`
	// CurWidth and MaxWidth are current_link_width and max_link_width
	// (lanes); 0 when absent.
	CurWidth int `json:"cur_width,omitempty"`
	MaxWidth int `json:"max_width,omitempty"`
	// Bridges is the chain of PCI bridges above the function, root port
	// first, from the resolved /sys/devices/pci<dom>:<bus>/.../<addr> path.
	Bridges []string `json:"bridges,omitempty"`
	// RootComplex is the host bridge the chain hangs off, "pci0000:15".
	RootComplex string `json:"root_complex"`
	// RDMADevs are the RDMA devices whose nearest PCI function this is
	// (/sys/class/infiniband/<dev> resolved; covers devices registered on
	// an auxiliary device of the function too, e.g. irdma).
	RDMADevs []string `json:"rdma_devs,omitempty"`
	// RDMAPorts lists each RDMA device's port numbers
	// (/sys/class/infiniband/<dev>/ports/).
	RDMAPorts map[string][]int `json:"rdma_ports,omitempty"`
	// Netdevs are the function's network interfaces (<addr>/net/).
	Netdevs []string `json:"netdevs,omitempty"`
}

// IsPCIAddress reports whether s is a PCI function address as sysfs names
// it: domain (4 hex digits, 5 or more for VMD domains), bus, device,
// function, as in 0000:3b:00.0; the pattern
// ^[0-9a-f]{4,}:[0-9a-f]{2}:[0-1][0-9a-f]\.[0-7]$. Written out rather than
// compiled from a regexp: compiling costs every rocectl start, a command
// run thousands of times across a fleet, tens of microseconds per pattern.
func IsPCIAddress(s string) bool {
	const tail = len(":3b:00.0")
	if len(s) < 4+tail {
		return false
	}
	dom, t := s[:len(s)-tail], s[len(s)-tail:]
	return isLowerHex(dom) && t[0] == ':' && isLowerHex(t[1:3]) && t[3] == ':' &&
		(t[4] == '0' || t[4] == '1') && isLowerHex(t[5:6]) && t[6] == '.' && '0' <= t[7] && t[7] <= '7'
}

// isHostBridge reports whether s names a host bridge directory, as
// /sys/devices/pci0000:15 does: ^pci[0-9a-f]{4,}:[0-9a-f]{2}$.
func isHostBridge(s string) bool {
	rest, ok := strings.CutPrefix(s, "pci")
	if !ok || len(rest) < 4+3 {
		return false
	}
	dom, bus := rest[:len(rest)-3], rest[len(rest)-3:]
	return isLowerHex(dom) && bus[0] == ':' && isLowerHex(bus[1:])
}

// isLowerHex reports whether s is non-empty and all [0-9a-f].
func isLowerHex(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return false
		}
	}
	return s != ""
}

// ReadPCIDevices reads every function in /sys/bus/pci/devices, sorted by
// address. It fails when that directory cannot be listed (wrapping the
// error: errors.Is(err, os.ErrNotExist) on a root without PCI sysfs); a
// function that disappears while it is read (hot unplug) is left out.
func ReadPCIDevices(fs FS) ([]PCIDevice, error) {
	names, err := fs.ReadDir("/sys/bus/pci/devices")
	if err != nil {
		return nil, fmt.Errorf("list PCI devices: %w", err)
	}
	rdma := pciRDMAByFunction(fs)
	var out []PCIDevice
	for _, n := range names {
		if !IsPCIAddress(n) {
			continue
		}
		d, err := readPCIDevice(fs, n, rdma[n])
		if errors.Is(err, os.ErrNotExist) {
			continue
		}
		if err != nil {
			return nil, err
		}
		out = append(out, d)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Addr < out[j].Addr })
	return out, nil
}

func readPCIDevice(fs FS, addr string, rdmaDevs []string) (PCIDevice, error) {
	p := "/sys/bus/pci/devices/" + addr
	resolved, err := fs.Resolve(p)
	if err != nil {
		return PCIDevice{}, fmt.Errorf("resolve %s: %w", p, err)
	}
	d := PCIDevice{Addr: addr, NUMANode: -1}
	d.RootComplex, d.Bridges = pciChain(resolved)

	d.Class, _ = fs.ReadTrimmed(p + "/class")
	d.Vendor, _ = fs.ReadTrimmed(p + "/vendor")
	d.Device, _ = fs.ReadTrimmed(p + "/device")
	d.SubsystemVendor, _ = fs.ReadTrimmed(p + "/subsystem_vendor")
	d.SubsystemDevice, _ = fs.ReadTrimmed(p + "/subsystem_device")
	if s, err := fs.ReadTrimmed(p + "/numa_node"); err == nil {
		if n, err := strconv.Atoi(s); err == nil {
			d.NUMANode = n
		}
	}
	// The link files exist only for PCIe functions, and reading them fails
	// (EINVAL) for a function whose config space is not accessible; both
	// leave the fields empty.
	d.CurSpeed, _ = fs.ReadTrimmed(p + "/current_link_speed")
	d.MaxSpeed, _ = fs.ReadTrimmed(p + "/max_link_speed")
	d.CurWidth = pciReadInt(fs, p+"/current_link_width")
	d.MaxWidth = pciReadInt(fs, p+"/max_link_width")

	if nets, err := fs.ReadDir(p + "/net"); err == nil {
		d.Netdevs = nets
	}
	d.RDMADevs = append([]string(nil), rdmaDevs...)
	for _, r := range d.RDMADevs {
		ports := pciRDMAPorts(fs, r)
		if d.RDMAPorts == nil {
			d.RDMAPorts = map[string][]int{}
		}
		d.RDMAPorts[r] = ports
	}
	return d, nil
}

// pciChain splits a resolved device path into its host bridge and the
// bridges between that and the device. The host bridge is the last
// pci<dom>:<bus> component (VMD puts a second one below a PCI function);
// the bridges are the function addresses after it, the device excluded.
func pciChain(resolved string) (string, []string) {
	comps := strings.Split(strings.Trim(resolved, "/"), "/")
	host := -1
	for i, c := range comps {
		if isHostBridge(c) {
			host = i
		}
	}
	if host < 0 {
		return "", nil
	}
	var bridges []string
	for _, c := range comps[host+1 : len(comps)-1] {
		if IsPCIAddress(c) {
			bridges = append(bridges, c)
		}
	}
	return comps[host], bridges
}

// pciRDMAByFunction maps each PCI function to the RDMA devices under it:
// every /sys/class/infiniband/<dev> is resolved and attributed to the last
// PCI function address in its path. Without RDMA sysfs the map is empty.
func pciRDMAByFunction(fs FS) map[string][]string {
	out := map[string][]string{}
	devs, err := fs.ReadDir("/sys/class/infiniband")
	if err != nil {
		return out
	}
	for _, dev := range devs {
		resolved, err := fs.Resolve("/sys/class/infiniband/" + dev)
		if err != nil {
			continue
		}
		comps := strings.Split(resolved, "/")
		for i := len(comps) - 1; i >= 0; i-- {
			if IsPCIAddress(comps[i]) {
				out[comps[i]] = append(out[comps[i]], dev)
				break
			}
		}
	}
	for k := range out {
		sort.Slice(out[k], func(i, j int) bool { return pciNaturalLess(out[k][i], out[k][j]) })
	}
	return out
}

func pciRDMAPorts(fs FS, dev string) []int {
	names, err := fs.ReadDir(path.Join("/sys/class/infiniband", dev, "ports"))
	if err != nil {
		return nil
	}
	var ports []int
	for _, n := range names {
		if p, err := strconv.Atoi(n); err == nil && p > 0 {
			ports = append(ports, p)
		}
	}
	sort.Ints(ports)
	return ports
}

func pciReadInt(fs FS, p string) int {
	s, err := fs.ReadTrimmed(p)
	if err != nil {
		return 0
	}
	n, err := strconv.Atoi(s)
	if err != nil {
		return 0
	}
	return n
}

// ParseLinkSpeed returns the transfer rate in GT/s of a current_link_speed
// or max_link_speed value: "32.0 GT/s PCIe", "16.0 GT/s PCIe", and the
// older "8 GT/s", "2.5 GT/s". "Unknown" (and "Unknown speed") reports false.
func ParseLinkSpeed(s string) (float64, bool) {
	f := strings.Fields(s)
	if len(f) < 2 || f[1] != "GT/s" {
		return 0, false
	}
	v, err := strconv.ParseFloat(f[0], 64)
	if err != nil || v <= 0 {
		return 0, false
	}
	return v, true
}

// pciNaturalLess orders names with numeric suffixes numerically, so mlx5_2
// sorts before mlx5_10.
func pciNaturalLess(a, b string) bool {
	ta := strings.TrimRight(a, "0123456789")
	tb := strings.TrimRight(b, "0123456789")
	if ta == tb && len(ta) < len(a) && len(tb) < len(b) {
		na, _ := strconv.Atoi(a[len(ta):])
		nb, _ := strconv.Atoi(b[len(tb):])
		if na != nb {
			return na < nb
		}
	}
	return a < b
}
