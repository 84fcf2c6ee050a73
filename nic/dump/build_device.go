package dump

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/rocectl/rocectl/nic"
)

// addDeviceLevel takes the blocks of dumps about devices rather than
// netdevs (devlink, ibv_devinfo, rdma link, lspci, nvidia-smi topo -m)
// and reports whether b was one. What a snapshot can hold goes into it
// (devlink parameters); the rest is reported as facts and, once per
// dump, a warning that says why it is not used.
func (im *Import) addDeviceLevel(b Block) bool {
	warn := func(at Source, msg string) { im.Warnings = append(im.Warnings, Warning{at, msg}) }
	switch b.Kind {
	case KindDevlinkParams:
		im.addDevlink(b)
	case KindMstconfig:
		im.addNVConfig(b)
	case KindIbvDevinfo:
		var names []string
		for _, d := range b.Devices {
			names = append(names, d.Name)
			for _, p := range d.Ports {
				im.Facts = append(im.Facts, Fact{Netdev: fmt.Sprintf("%s/%d", d.Name, p.Port), What: "ibv_devinfo: " + portSummary(p, d), From: p.At})
			}
			if len(d.Ports) == 0 {
				im.Facts = append(im.Facts, Fact{Netdev: d.Name, What: "ibv_devinfo: " + devSummary(d), From: d.At})
			}
		}
		if len(names) > 0 {
			warn(b.At, fmt.Sprintf("ibv_devinfo: RDMA device(s) %s recognised, not used: %s", strings.Join(names, ", "), noRDMAInImport))
		}
	case KindRdmaLink:
		var ports []string
		for _, p := range b.RDMALinks {
			ports = append(ports, fmt.Sprintf("%s/%d", p.Device, p.Port))
			what := "rdma link: state " + p.State
			if p.PhysState != "" {
				what += ", physical_state " + p.PhysState
			}
			if p.Netdev != "" {
				what += ", netdev " + p.Netdev
			}
			im.Facts = append(im.Facts, Fact{Netdev: fmt.Sprintf("%s/%d", p.Device, p.Port), What: what, From: p.At})
		}
		if len(ports) > 0 {
			warn(b.At, fmt.Sprintf("rdma link: RDMA port(s) %s and their netdevs recognised, not used: %s", strings.Join(ports, ", "), noRDMAInImport))
		}
	case KindLspci:
		for _, f := range b.PCI {
			im.Facts = append(im.Facts, Fact{Netdev: f.Addr, What: "lspci: " + pciSummary(f), From: f.At})
			if f.Downgraded || f.StaSpeed != "" && f.CapSpeed != "" && (f.StaSpeed != f.CapSpeed || f.StaWidth < f.CapWidth) {
				im.Facts = append(im.Facts, Fact{Netdev: f.Addr, What: fmt.Sprintf("lspci LnkSta %s x%d, LnkCap %s x%d", f.StaSpeed, f.StaWidth, f.CapSpeed, f.CapWidth),
					From: f.AtOf["lnksta"], Inferred: "PCIe link trained below what the function supports"})
			}
			im.crossCheckDriver(f)
		}
		if len(b.PCI) > 0 {
			warn(b.At, "lspci: NUMA node and PCIe link of "+strconv.Itoa(len(b.PCI))+" function(s) recognised, not used: "+noPCIInImport)
		}
	case KindLspciTree:
		if len(b.PCITree) > 0 {
			im.Facts = append(im.Facts, Fact{Netdev: "pci", What: fmt.Sprintf("lspci -t: %d functions", len(b.PCITree)), From: b.At})
			warn(b.At, "lspci -t: the PCI tree recognised, not used: "+noPCIInImport)
		}
	case KindGPUTopo:
		g := b.GPUTopo
		for _, gpu := range g.Devices {
			if !strings.HasPrefix(gpu, "GPU") || g.Matrix[gpu] == nil {
				continue
			}
			im.Facts = append(im.Facts, Fact{Netdev: gpu, What: "nvidia-smi topo -m: " + gpuSummary(g, gpu), From: g.At[gpu]})
		}
		warn(b.At, "nvidia-smi topo -m: the GPU/NIC matrix recognised, not used: a snapshot has no place for it "+
			"(rocectl topo derives NCCL's path types from the PCI tree in sysfs, which an import does not write)")
	default:
		return false
	}
	return true
}

// noRDMAInImport says why RDMA devices of dumps are not used.
const noRDMAInImport = "a snapshot holds RDMA devices only as their sysfs, which an import does not write " +
	"(inventing that tree would make invented files look captured); the netdevs other dumps describe stay netdev-only ports, " +
	"their RDMA-scoped settings unknown"

// noPCIInImport says why PCI functions of dumps are not used.
const noPCIInImport = "a snapshot holds PCI functions only as their sysfs, which an import does not write; " +
	"a port's PCI address comes from ethtool -i"

func portSummary(p RDMAPort, d RDMADevice) string {
	var parts []string
	add := func(k, v string) {
		if v != "" {
			parts = append(parts, k+" "+v)
		}
	}
	add("state", p.State)
	add("link_layer", p.LinkLayer)
	if p.ActiveMTU > 0 {
		add("active_mtu", strconv.Itoa(p.ActiveMTU))
	}
	add("fw_ver", d.FWVer)
	add("board_id", d.BoardID)
	add("node_guid", d.NodeGUID)
	return strings.Join(parts, ", ")
}

func devSummary(d RDMADevice) string {
	return strings.TrimPrefix(portSummary(RDMAPort{}, d), ", ")
}

func pciSummary(f PCIFunction) string {
	var parts []string
	if f.Driver != "" {
		parts = append(parts, "driver "+f.Driver)
	}
	if f.NUMANode != nil {
		parts = append(parts, "NUMA node "+strconv.Itoa(*f.NUMANode))
	}
	if f.StaSpeed != "" {
		parts = append(parts, fmt.Sprintf("link %s x%d", f.StaSpeed, f.StaWidth))
	}
	if len(parts) == 0 {
		return f.Desc
	}
	return strings.Join(parts, ", ")
}

// gpuSummary names a GPU's closest NICs: those with the nearest
// connection type in its row (PIX before PXB before PHB before NODE
// before SYS, as nvidia-smi's legend orders them).
func gpuSummary(g *GPUTopo, gpu string) string {
	rank := map[string]int{"PIX": 1, "PXB": 2, "PHB": 3, "NODE": 4, "SYS": 5}
	best, bestRank := []string(nil), 99
	for _, d := range g.Devices {
		if strings.HasPrefix(d, "GPU") {
			continue
		}
		r, ok := rank[g.Matrix[gpu][d]]
		if !ok {
			continue
		}
		name := d
		if n := g.NICs[d]; n != "" {
			name = n
		}
		switch {
		case r < bestRank:
			best, bestRank = []string{name}, r
		case r == bestRank:
			best = append(best, name)
		}
	}
	s := "no NIC in the matrix"
	if len(best) > 0 {
		var typ string
		for t, r := range rank {
			if r == bestRank {
				typ = t
			}
		}
		s = fmt.Sprintf("closest NIC(s) %s (%s)", strings.Join(best, ", "), typ)
	}
	if n := g.NUMA[gpu]; n != "" {
		s += ", NUMA affinity " + n
	}
	return s
}

// crossCheckDriver warns when lspci's driver of a PCI function is not the
// driver ethtool -i gave for the netdev on it (two dumps of different
// hosts pasted together, or a driver rebound between them).
func (im *Import) crossCheckDriver(f PCIFunction) {
	if f.Driver == "" {
		return
	}
	for _, nd := range slices.Sorted(maps.Keys(im.State.Links)) {
		di := im.State.Links[nd].Driver
		if di != nil && di.BusInfo == f.Addr && di.Driver != f.Driver {
			im.Warnings = append(im.Warnings, Warning{f.AtOf["driver"], fmt.Sprintf("lspci says %s is driven by %s, ethtool -i says %s's driver is %s", f.Addr, f.Driver, nd, di.Driver)})
		}
	}
}

// devlinkGenericTypes are the widths of the generic devlink parameters
// whose values the text output prints as bare numbers
// (DEVLINK_PARAM_GENERIC_*_TYPE in include/net/devlink.h, torvalds/linux
// @00cf1fb; io_eq_size and event_eq_size were u16 in the patches' first
// versions, u32 as merged). A
// driver-specific number's width is not printed, so it is not used.
var devlinkGenericTypes = map[string]string{
	"max_macs": "u32", "msix_vec_per_pf_max": "u32", "msix_vec_per_pf_min": "u32",
	"fw_load_policy": "u8", "reset_dev_on_drv_probe": "u8", "io_eq_size": "u32", "event_eq_size": "u32",
}

var devlinkCmodes = map[string]uint8{"runtime": nic.CmodeRuntime, "driverinit": nic.CmodeDriverinit, "permanent": nic.CmodePermanent}

// addDevlink puts `devlink dev param show` into the snapshot's devlink
// section. The snapshot keeps listing devlink as not captured: the dump
// may hold only some of a device's parameters (one `name X`, or a dump
// that stopped), so a parameter it does not list reads as unknown.
func (im *Import) addDevlink(b Block) {
	warn := func(at Source, msg string) { im.Warnings = append(im.Warnings, Warning{at, msg}) }
	if im.State.Devlink == nil {
		im.State.Devlink = map[string][]nic.DevlinkParam{}
	}
	for _, p := range b.DevlinkParams {
		typ, err := devlinkType(p)
		if err != "" {
			warn(p.At, fmt.Sprintf("devlink %s %s: %s: not used", p.Dev, p.Name, err))
			continue
		}
		dp := nic.DevlinkParam{Name: p.Name, Generic: p.Generic, Type: typ}
		bad := false
		for _, v := range p.Values {
			cm, ok := devlinkCmodes[v.Cmode]
			if !ok {
				warn(v.At, fmt.Sprintf("devlink %s %s: cmode %q: not used", p.Dev, p.Name, v.Cmode))
				bad = true
				break
			}
			val, err := devlinkValue(typ, v.Value)
			if err != nil {
				warn(v.At, fmt.Sprintf("devlink %s %s: %v: not used", p.Dev, p.Name, err))
				bad = true
				break
			}
			dp.Values = append(dp.Values, nic.DevlinkParamValue{Cmode: cm, Value: val})
		}
		if bad || len(dp.Values) == 0 {
			continue
		}
		ps := slices.DeleteFunc(im.State.Devlink[p.Dev], func(x nic.DevlinkParam) bool { return x.Name == p.Name })
		im.State.Devlink[p.Dev] = append(ps, dp)
		var vals []string
		for _, v := range p.Values {
			vals = append(vals, v.Cmode+" "+v.Value)
		}
		im.Facts = append(im.Facts, Fact{Netdev: p.Dev, What: fmt.Sprintf("devlink %s (%s)", p.Name, strings.Join(vals, ", ")), From: p.At})
	}
}

// devlinkType returns the parameter's type as the snapshot names it, or
// why it cannot be known: a bool prints true/false, a string anything
// else that is not a number; a number's width only the generic table
// gives.
func devlinkType(p DevlinkParam) (string, string) {
	kinds := map[string]bool{}
	for _, v := range p.Values {
		switch {
		case v.JSON == "bool", v.JSON == "" && (v.Value == "true" || v.Value == "false"):
			kinds["bool"] = true
		case v.JSON == "number", v.JSON == "" && isUint(v.Value):
			kinds["number"] = true
		default:
			kinds["string"] = true
		}
	}
	if len(kinds) != 1 {
		return "", "values of different types"
	}
	switch {
	case kinds["bool"]:
		return "bool", ""
	case kinds["string"]:
		return "string", ""
	}
	if t, ok := devlinkGenericTypes[p.Name]; ok && p.Generic {
		return t, ""
	}
	return "", "numeric value of a parameter whose width (u8 … u64) the dump does not print"
}

func isUint(s string) bool {
	_, err := strconv.ParseUint(s, 10, 64)
	return err == nil
}

func devlinkValue(typ, s string) (any, error) {
	switch typ {
	case "bool":
		return s == "true", nil
	case "string":
		return s, nil
	}
	bits := map[string]int{"u8": 8, "u16": 16, "u32": 32, "u64": 64}[typ]
	n, err := strconv.ParseUint(s, 10, bits)
	if err != nil {
		return nil, fmt.Errorf("%q is not a %s", s, typ)
	}
	switch typ {
	case "u8":
		return uint8(n), nil
	case "u16":
		return uint16(n), nil
	case "u32":
		return uint32(n), nil
	}
	return n, nil
}
