package nccl

import (
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/rocectl/rocectl/nic"
)

// PathType is NCCL's classification of the PCIe path between two devices,
// with the values of NCCL's PATH_* constants (src/include/graph.h at
// NVIDIA/nccl@5067397), so that a smaller value is a closer path.
type PathType int

const (
	// PathPIX: through at most one PCIe switch.
	PathPIX PathType = 4
	// PathPXB: through several PCIe switches, not through a host bridge.
	PathPXB PathType = 5
	// PathPHB: through a host bridge, the CPU, within one NUMA node. NCCL
	// counts different root complexes of one NUMA node as one CPU node, so
	// this covers what nvidia-smi splits into PHB and NODE.
	PathPHB PathType = 8
	// PathSYS: across the interconnect between NUMA nodes (QPI/UPI/xGMI).
	PathSYS PathType = 9
)

func (p PathType) String() string {
	switch p {
	case PathPIX:
		return "PIX"
	case PathPXB:
		return "PXB"
	case PathPHB:
		return "PHB"
	case PathSYS:
		return "SYS"
	}
	return "PathType(" + strconv.Itoa(int(p)) + ")"
}

// MarshalText writes the NCCL name, so JSON reports read "PIX", not 4.
func (p PathType) MarshalText() ([]byte, error) {
	switch p {
	case PathPIX, PathPXB, PathPHB, PathSYS:
		return []byte(p.String()), nil
	}
	return nil, fmt.Errorf("invalid path type %d", int(p))
}

// UnmarshalText reads an NCCL path name back.
func (p *PathType) UnmarshalText(b []byte) error {
	for _, v := range []PathType{PathPIX, PathPXB, PathPHB, PathSYS} {
		if string(b) == v.String() {
			*p = v
			return nil
		}
	}
	return fmt.Errorf("unknown path type %q", b)
}

// TopoPair is the path between one GPU and one NIC.
type TopoPair struct {
	GPU     int      `json:"gpu"` // index into Topology.GPUs
	NIC     int      `json:"nic"` // index into Topology.NICs
	GPUAddr string   `json:"gpu_addr"`
	NICAddr string   `json:"nic_addr"`
	Path    PathType `json:"path"`
}

// Degradation is a GPU, RDMA NIC or PCIe switch uplink whose link trained
// below what the device supports.
type Degradation struct {
	Addr string `json:"addr"`
	Role string `json:"role"` // "gpu", "nic", "switch"
	// Name is "GPU<i>", the NIC's first RDMA device, or "" for a switch.
	Name     string `json:"name,omitempty"`
	CurSpeed string `json:"cur_speed"`
	MaxSpeed string `json:"max_speed"`
	CurWidth int    `json:"cur_width"`
	MaxWidth int    `json:"max_width"`
	// PortMaxSpeed and PortMaxWidth are the upstream port's capabilities
	// (the bridge directly above), when known.
	PortMaxSpeed string `json:"port_max_speed,omitempty"`
	PortMaxWidth int    `json:"port_max_width,omitempty"`
	SpeedLow     bool   `json:"speed_low"`
	WidthLow     bool   `json:"width_low"`
	// CappedByPort: the upstream port cannot do more than the link runs at
	// (a slot, riser or bifurcation limit, not a training fault).
	CappedByPort bool   `json:"capped_by_port"`
	Reason       string `json:"reason"`
}

// Affinity is the NIC proposed for one GPU.
type Affinity struct {
	GPU      int      `json:"gpu"`
	GPUAddr  string   `json:"gpu_addr"`
	NIC      int      `json:"nic"`
	NICAddr  string   `json:"nic_addr"`
	RDMADevs []string `json:"rdma_devs"`
	Path     PathType `json:"path"`
}

// Topology is the GPU/NIC view of the PCI tree.
type Topology struct {
	// GPUs and NICs are in PCI address order; GPU<i> names index GPUs
	// (nvidia-smi's default order; CUDA's may differ, see CUDA_DEVICE_ORDER).
	GPUs []nic.PCIDevice `json:"gpus"`
	NICs []nic.PCIDevice `json:"nics"`
	// Pairs holds every GPU×NIC path, GPU-major.
	Pairs    []TopoPair    `json:"pairs"`
	Degraded []Degradation `json:"degraded"`
	Affinity []Affinity    `json:"affinity"`
	// HCAOrder is a value for NCCL_IB_HCA: the NICs the affinity uses, in
	// the order of the first GPU each serves, as "=dev:port,...". The
	// leading '=' asks NCCL for exact names; without it NCCL matches
	// prefixes, and mlx5_1 would also select mlx5_10 … mlx5_19. Empty when
	// there is no GPU or no RDMA NIC.
	HCAOrder string `json:"hca_order"`
}

// Path returns the path type between GPU g and NIC n (indexes).
func (t *Topology) Path(g, n int) PathType {
	return t.Pairs[g*len(t.NICs)+n].Path
}

// IsGPU reports an NVIDIA GPU: vendor 0x10de with class 0x0302xx (3D
// controller, the data-centre parts) or 0x0300xx (VGA).
func IsGPU(d nic.PCIDevice) bool {
	return d.Vendor == "0x10de" && (strings.HasPrefix(d.Class, "0x0302") || strings.HasPrefix(d.Class, "0x0300"))
}

// IsRDMANIC reports a PCI function with at least one RDMA device under it
// (RoCE or InfiniBand, including devices on an auxiliary device of the
// function). A NIC whose RDMA driver is not loaded does not count: NCCL
// could not use it either.
func IsRDMANIC(d nic.PCIDevice) bool { return len(d.RDMADevs) > 0 }

// ReadTopology reads the PCI tree under fs and derives the GPU/NIC
// topology. It fails only when /sys/bus/pci/devices cannot be read.
func ReadTopology(fs nic.FS) (*Topology, error) {
	devs, err := nic.ReadPCIDevices(fs)
	if err != nil {
		return nil, err
	}
	return BuildTopology(devs), nil
}

// BuildTopology derives the topology from a set of PCI functions (all of
// them: bridges are needed for NUMA nodes and switch identities).
func BuildTopology(devs []nic.PCIDevice) *Topology {
	by := map[string]*nic.PCIDevice{}
	for i := range devs {
		by[devs[i].Addr] = &devs[i]
	}
	t := &Topology{}
	for _, d := range devs {
		switch {
		case IsGPU(d):
			t.GPUs = append(t.GPUs, d)
		case IsRDMANIC(d):
			t.NICs = append(t.NICs, d)
		}
	}
	sort.Slice(t.GPUs, func(i, j int) bool { return t.GPUs[i].Addr < t.GPUs[j].Addr })
	sort.Slice(t.NICs, func(i, j int) bool { return t.NICs[i].Addr < t.NICs[j].Addr })

	gpuNodes := make([]topoNodes, len(t.GPUs))
	for i, g := range t.GPUs {
		gpuNodes[i] = topoNCCLNodes(g, by)
	}
	nicNodes := make([]topoNodes, len(t.NICs))
	for i, n := range t.NICs {
		nicNodes[i] = topoNCCLNodes(n, by)
	}
	for gi, g := range t.GPUs {
		for ni, n := range t.NICs {
			t.Pairs = append(t.Pairs, TopoPair{
				GPU: gi, NIC: ni, GPUAddr: g.Addr, NICAddr: n.Addr,
				Path: topoPath(gpuNodes[gi], nicNodes[ni]),
			})
		}
	}
	t.Degraded = topoDegraded(t, by)
	t.Affinity = topoAffinity(t)
	t.HCAOrder = topoHCAOrder(t)
	return t
}

// topoNodes is a device's place in NCCL's topology graph: the PCI switch
// nodes above it, nearest first, and the CPU (NUMA) node at the top.
type topoNodes struct {
	pci  []string // after the BCM flattening
	raw  []string // before it: every switch uplink on the way
	numa int
}

// topoNCCLNodes rebuilds the chain NCCL derives from sysfs
// (src/graph/xml.cc ncclTopoGetXmlFromSys): from a function's path NCCL
// rewinds two components at a time, so the parent of a function is its
// grandparent, normally the upstream port of the switch whose downstream
// port the function sits on; a switch's downstream ports, and the root
// port, never become nodes. It stops at the first component that is not a
// 12-character BDF (the host bridge), where it attaches a CPU node keyed by
// the numa_node of the last PCI node reached. Then, as
// ncclTopoFlattenBcmSwitches does, a Broadcom PEX switch that presents
// itself as two levels is merged into one.
func topoNCCLNodes(d nic.PCIDevice, by map[string]*nic.PCIDevice) topoNodes {
	chain := append(append([]string(nil), d.Bridges...), d.Addr)
	k := len(chain) - 1
	var nodes []string
	top := d.Addr
	for {
		if k-1 < 0 || !topoBDF12(chain[k-1]) || k-2 < 0 || !topoBDF12(chain[k-2]) {
			break
		}
		k -= 2
		nodes = append(nodes, chain[k])
		top = chain[k]
	}
	numa := d.NUMANode
	if b, ok := by[top]; ok {
		numa = b.NUMANode
	}
	return topoNodes{pci: topoFlattenBCM(nodes, by), raw: nodes, numa: numa}
}

// topoBDF12 is NCCL's checkBDFFormat: exactly "BBBB:BB:DD.F".
func topoBDF12(s string) bool {
	return len(s) == 12 && s[4] == ':' && s[7] == ':' && s[10] == '.' && nic.IsPCIAddress(s)
}

// topoFlattenBCM merges, along one chain (nearest first), a Broadcom
// Gen4/Gen5 PEX switch's second level into its first, as NCCL's
// ncclTopoFlattenBcmSwitches does: a switch matching the first level merges
// its direct children matching the second level of the same generation,
// and is not merged again.
func topoFlattenBCM(nodes []string, by map[string]*nic.PCIDevice) []string {
	out := append([]string(nil), nodes...)
	for i := len(out) - 1; i >= 1; {
		g := topoBcmGen(by[out[i]], 0)
		if g != 0 && topoBcmGen(by[out[i-1]], 1) == g {
			out = append(out[:i-1], out[i:]...)
			i -= 2
			continue
		}
		i--
	}
	return out
}

// topoBcmGen is NCCL's getBcmGen over the 64-bit id NCCL builds from
// vendor, device, subsystem vendor and subsystem device: 4 for a PEX88000
// (1000:c010, subsystem 1000:axxx, both levels alike), 5 for a PEX89000
// (1000:c030, subsystem 1000:<level>xxx), 0 otherwise.
func topoBcmGen(d *nic.PCIDevice, level uint64) int {
	if d == nil {
		return 0
	}
	v, ok1 := topoHex(d.Vendor)
	dev, ok2 := topoHex(d.Device)
	sv, ok3 := topoHex(d.SubsystemVendor)
	sd, ok4 := topoHex(d.SubsystemDevice)
	if !ok1 || !ok2 || !ok3 || !ok4 {
		return 0
	}
	id := v<<48 | dev<<32 | sv<<16 | sd
	switch {
	case id&0xfffffffffffff000 == 0x1000c0101000a000:
		return 4
	case id&0xfffffffffffff000 == 0x1000c03010000000|level*0x1000:
		return 5
	}
	return 0
}

func topoHex(s string) (uint64, bool) {
	v, err := strconv.ParseUint(strings.TrimPrefix(s, "0x"), 16, 16)
	return v, err == nil
}

// topoPath classifies the path between two devices as NCCL's
// ncclTopoSetPaths does on the tree: a hop device–switch is PIX,
// switch–switch is PXB, anything–CPU is PHB, CPU–CPU is SYS, and the path
// takes the worst hop.
func topoPath(a, b topoNodes) PathType {
	for i, x := range a.pci {
		for j, y := range b.pci {
			if x == y {
				if i == 0 && j == 0 {
					return PathPIX
				}
				return PathPXB
			}
		}
	}
	if a.numa == b.numa {
		return PathPHB
	}
	return PathSYS
}

// topoDegraded checks the links of GPUs, NICs and the switch uplinks above
// them (the NCCL switch nodes: their current_link_* is the link towards the
// CPU). A downstream or root port reports the same link as the device below
// it, so it is not checked again.
func topoDegraded(t *Topology, by map[string]*nic.PCIDevice) []Degradation {
	type item struct {
		d    nic.PCIDevice
		role string
		name string
	}
	var items []item
	seen := map[string]bool{}
	add := func(d nic.PCIDevice, role, name string) {
		if seen[d.Addr] {
			return
		}
		seen[d.Addr] = true
		items = append(items, item{d, role, name})
	}
	for i, g := range t.GPUs {
		add(g, "gpu", "GPU"+strconv.Itoa(i))
	}
	for _, n := range t.NICs {
		add(n, "nic", n.RDMADevs[0])
	}
	// The switch uplinks, those merged by the BCM flattening included: each
	// is a link of its own.
	for _, d := range append(append([]nic.PCIDevice(nil), t.GPUs...), t.NICs...) {
		for _, a := range topoNCCLNodes(d, by).raw {
			if b, ok := by[a]; ok {
				add(*b, "switch", "")
			}
		}
	}

	var out []Degradation
	for _, it := range items {
		if dg, ok := topoCheckLink(it.d, by, it.role, it.name); ok {
			out = append(out, dg)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Addr < out[j].Addr })
	return out
}

func topoCheckLink(d nic.PCIDevice, by map[string]*nic.PCIDevice, role, name string) (Degradation, bool) {
	cur, ok1 := nic.ParseLinkSpeed(d.CurSpeed)
	top, ok2 := nic.ParseLinkSpeed(d.MaxSpeed)
	speedLow := ok1 && ok2 && cur < top
	widthLow := d.CurWidth > 0 && d.MaxWidth > 0 && d.CurWidth < d.MaxWidth
	if !speedLow && !widthLow {
		return Degradation{}, false
	}
	dg := Degradation{
		Addr: d.Addr, Role: role, Name: name,
		CurSpeed: d.CurSpeed, MaxSpeed: d.MaxSpeed, CurWidth: d.CurWidth, MaxWidth: d.MaxWidth,
		SpeedLow: speedLow, WidthLow: widthLow,
	}
	var port *nic.PCIDevice
	if len(d.Bridges) > 0 {
		port = by[d.Bridges[len(d.Bridges)-1]]
	}
	portSpeedCap, portWidthCap := false, false
	if port != nil {
		dg.PortMaxSpeed, dg.PortMaxWidth = port.MaxSpeed, port.MaxWidth
		if pm, ok := nic.ParseLinkSpeed(port.MaxSpeed); ok && speedLow && pm <= cur {
			portSpeedCap = true
		}
		if port.MaxWidth > 0 && widthLow && port.MaxWidth <= d.CurWidth {
			portWidthCap = true
		}
	}
	dg.CappedByPort = (!speedLow || portSpeedCap) && (!widthLow || portWidthCap)

	var parts []string
	if widthLow {
		s := fmt.Sprintf("link width x%d, device supports x%d", d.CurWidth, d.MaxWidth)
		if portWidthCap {
			s += fmt.Sprintf("; the upstream port supports only x%d (slot, riser or bifurcation)", port.MaxWidth)
		} else {
			s += "; both ends support more: reseat the card, check the riser or cable"
		}
		parts = append(parts, s)
	}
	if speedLow {
		s := fmt.Sprintf("link speed %s, device supports %s", d.CurSpeed, d.MaxSpeed)
		switch {
		case portSpeedCap:
			s += fmt.Sprintf("; the upstream port supports only %s", port.MaxSpeed)
		case role == "gpu":
			s += "; GPUs lower their link speed when idle: check again under load"
		default:
			s += "; both ends support more: check the slot, riser, cable or BIOS link-speed setting"
		}
		parts = append(parts, s)
	}
	dg.Reason = strings.Join(parts, "; ")
	return dg, true
}

// topoAffinity gives each GPU the closest NIC while spreading GPUs evenly:
// no NIC serves more than ceil(GPUs/NICs) of them. Path types are handled
// from closest to farthest; within one, the GPU with the fewest NICs still
// open at that distance goes first (lowest index on ties) and takes the
// least loaded of them (lowest index on ties). Every GPU ends up with a NIC
// because the NICs' capacity covers all GPUs and every pair has a path.
func topoAffinity(t *Topology) []Affinity {
	if len(t.GPUs) == 0 || len(t.NICs) == 0 {
		return nil
	}
	capacity := (len(t.GPUs) + len(t.NICs) - 1) / len(t.NICs)
	load := make([]int, len(t.NICs))
	assigned := make([]int, len(t.GPUs))
	for i := range assigned {
		assigned[i] = -1
	}
	for _, pt := range []PathType{PathPIX, PathPXB, PathPHB, PathSYS} {
		for {
			bestG, bestCount := -1, 0
			for g := range t.GPUs {
				if assigned[g] >= 0 {
					continue
				}
				c := 0
				for n := range t.NICs {
					if load[n] < capacity && t.Path(g, n) == pt {
						c++
					}
				}
				if c > 0 && (bestG < 0 || c < bestCount) {
					bestG, bestCount = g, c
				}
			}
			if bestG < 0 {
				break
			}
			bestN := -1
			for n := range t.NICs {
				if load[n] < capacity && t.Path(bestG, n) == pt && (bestN < 0 || load[n] < load[bestN]) {
					bestN = n
				}
			}
			assigned[bestG] = bestN
			load[bestN]++
		}
	}
	out := make([]Affinity, 0, len(t.GPUs))
	for g, n := range assigned {
		out = append(out, Affinity{
			GPU: g, GPUAddr: t.GPUs[g].Addr, NIC: n, NICAddr: t.NICs[n].Addr,
			RDMADevs: t.NICs[n].RDMADevs, Path: t.Path(g, n),
		})
	}
	return out
}

// topoHCAOrder lists the NICs the affinity uses, each once, in the order
// of the first GPU that uses it, as an exact-match NCCL_IB_HCA value. Each
// RDMA device is listed with each of its ports; one whose ports are unknown
// is listed bare (NCCL then takes all its ports).
func topoHCAOrder(t *Topology) string {
	var parts []string
	used := map[int]bool{}
	for _, a := range t.Affinity {
		if used[a.NIC] {
			continue
		}
		used[a.NIC] = true
		nic := t.NICs[a.NIC]
		for _, dev := range nic.RDMADevs {
			ports := nic.RDMAPorts[dev]
			if len(ports) == 0 {
				parts = append(parts, dev)
				continue
			}
			for _, p := range ports {
				parts = append(parts, dev+":"+strconv.Itoa(p))
			}
		}
	}
	if len(parts) == 0 {
		return ""
	}
	return "=" + strings.Join(parts, ",")
}
