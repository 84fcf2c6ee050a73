package nccl

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/rocectl/rocectl/policy"
	"github.com/rocectl/rocectl/port"
)

// withRails writes [nccl.rails] into a derived exact-match HCA list:
// dev:port becomes dev:port:rail[:plane] (NCCL 2.30, ncclIbInitDevices
// reads rail and plane after the port). Devices the profile gives no
// rail keep dev:port: NCCL leaves their rail and plane undefined (-1).
func withRails(c *policy.NCCL, list string) string {
	if len(c.Rails) == 0 {
		return list
	}
	items := strings.Split(strings.TrimPrefix(list, "="), ",")
	for i, item := range items {
		dev, _, _ := strings.Cut(item, ":")
		if r, ok := c.Rail(dev); ok {
			items[i] = item + ":" + strconv.Itoa(r.Rail)
			if r.Plane >= 0 {
				items[i] += ":" + strconv.Itoa(r.Plane)
			}
		}
	}
	return "=" + strings.Join(items, ",")
}

// overrides warns of what the file decides for every job: from NCCL
// 2.26 a communicator carries its own traffic class (ncclConfig_t
// trafficClass), and ncclIbConnectImpl (src/transport/net_ib/connect.cc)
// takes NCCL_IB_TC, and NCCL_IB_SL for the SL, before it: a value in
// /etc/nccl.conf applies to every job on the host, whatever class the job
// asked for.
func overrides(c *policy.NCCL, vars []Var) []string {
	if !c.AtLeast(policy.NCCLCommTrafficClass) {
		return nil
	}
	where := "the environment"
	if c.Write != nil {
		where = *c.Write
	}
	var out []string
	for _, v := range vars {
		if v.Name == "NCCL_IB_TC" || v.Name == "NCCL_IB_SL" {
			field := "traffic class"
			if v.Name == "NCCL_IB_SL" {
				field = "service level"
			}
			out = append(out, fmt.Sprintf("%s=%s in %s overrides the trafficClass a communicator asks for (ncclConfig_t, NCCL ≥ 2.26; ncclIbConnectImpl takes %s first): every job on this host gets %s %s",
				v.Name, v.Value, where, v.Name, field, v.Value))
		}
	}
	return out
}

// notes are what Derive tells the operator beside the variables:
//   - a RoCE LAG is one RDMA device already (mlx5_bond_0 over both
//     physical ports): NCCL sees one device with the bond's bandwidth,
//     and NCCL_IB_MERGE_NICS, which merges a dual-port NIC's devices,
//     has nothing to merge there;
//   - rails that name no matched device.
func notes(p *policy.Profile, ports []port.Port) []string {
	c := &p.NCCL
	var out []string
	hca, _ := c.Var("IB_HCA")
	listed := map[string]bool{}
	for _, pt := range hcaPorts(p, ports) {
		listed[pt.RDMADevice] = true
		if pt.Bond != nil && hca == "auto" {
			out = append(out, fmt.Sprintf("%s is a RoCE LAG (%s): one RDMA device over its bond's ports, which NCCL_IB_HCA lists once; NCCL sees one NIC with the bond's bandwidth, and NCCL_IB_MERGE_NICS (which merges a dual-port NIC's devices) has nothing to merge there",
				pt.RDMADevice, strings.TrimSuffix(strings.TrimPrefix(pt.Describe(), pt.RDMADevice+" ("), ")")))
		}
	}
	if hca == "auto" {
		for _, r := range c.Rails {
			if !listed[r.Device] {
				out = append(out, fmt.Sprintf("nccl.rails names %s, which is not among this host's matched devices (%s)", r.Device, strings.Join(slices.Sorted(maps.Keys(listed)), ", ")))
			}
		}
	}
	return out
}

// mergedRails warns of ports of one NIC that [nccl.rails] puts on
// different rails or planes. NCCL merges a NIC's ports into one device
// by default (NCCL_IB_MERGE_NICS=1, NCCL_NET_MERGE_LEVEL=PORT: ncclTopo's
// fusion in src/graph/topo.cc), and ncclIbMakeVDeviceInternal
// (src/transport/net_ib/init.cc) leaves the merged device's rail
// undefined when its ports' rails differ: the rails written would be
// lost. NCCL_NET_MERGE_POLICY=RAIL (2.30.5) merges same-rail ports only;
// NCCL_IB_MERGE_NICS=0 merges none. A RoCE LAG is one device already.
func mergedRails(c *policy.NCCL, ports []port.Port) []string {
	if len(c.Rails) == 0 {
		return nil
	}
	for _, v := range c.Extra {
		if v.Name == "IB_MERGE_NICS" && v.Value == "0" || v.Name == "NET_MERGE_POLICY" && v.Value == "RAIL" || v.Name == "NET_MERGE_LEVEL" && v.Value == "LOC" {
			return nil
		}
	}
	nics := map[string][]port.Port{}
	var order []string
	for _, pt := range ports {
		if pt.PCI == "" || pt.Bond != nil || pt.Role == port.RoleVF {
			continue
		}
		nic := pt.PCI
		if i := strings.LastIndexByte(nic, '.'); i > 0 {
			nic = nic[:i] // domain:bus:device, without the function
		}
		if _, ok := nics[nic]; !ok {
			order = append(order, nic)
		}
		nics[nic] = append(nics[nic], pt)
	}
	var out []string
	for _, nic := range order {
		ps := nics[nic]
		seen := map[string]bool{}
		var names, rails []string
		for _, pt := range ps {
			if seen[pt.RDMADevice] {
				continue
			}
			seen[pt.RDMADevice] = true
			names = append(names, pt.RDMADevice)
			r, ok := c.Rail(pt.RDMADevice)
			switch {
			case !ok:
				rails = append(rails, "no rail")
			case r.Plane >= 0:
				rails = append(rails, fmt.Sprintf("rail %d plane %d", r.Rail, r.Plane))
			default:
				rails = append(rails, fmt.Sprintf("rail %d", r.Rail))
			}
		}
		if len(names) < 2 {
			continue
		}
		differ := false
		for _, r := range rails[1:] {
			if r != rails[0] {
				differ = true
			}
		}
		if !differ {
			continue
		}
		parts := make([]string, len(names))
		for i := range names {
			parts[i] = names[i] + " (" + rails[i] + ")"
		}
		out = append(out, fmt.Sprintf("%s are ports of one NIC (%s): NCCL merges them into one device, %s, by default (NCCL_IB_MERGE_NICS=1 at NCCL_NET_MERGE_LEVEL=PORT), and the merged device's rail is undefined when theirs differ (ncclIbMakeVDeviceInternal); set NCCL_NET_MERGE_POLICY = \"RAIL\" (NCCL 2.30.5) or NCCL_IB_MERGE_NICS = 0 in [nccl.extra]",
			strings.Join(parts, " and "), nic, strings.Join(names, "+")))
	}
	return out
}
