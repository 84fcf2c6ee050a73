package dump

import (
	"fmt"
	"strings"
)

// GPUTopo is `nvidia-smi topo -m`: the connection matrix between GPUs
// and NICs (X, PIX, PXB, PHB, NODE, SYS, NV#) and each GPU's CPU and NUMA
// affinity. Devices are the column names in order ("GPU0", "NIC0" or,
// before the NIC legend, the RDMA device itself, "mlx5_0"); NICs maps a
// "NICn" column to the RDMA device the NIC legend names.
type GPUTopo struct {
	Devices []string
	Matrix  map[string]map[string]string // row → column → cell
	CPU     map[string]string            `json:",omitempty"` // "CPU Affinity" of a GPU row
	NUMA    map[string]string            `json:",omitempty"` // "NUMA Affinity" of a GPU row
	NICs    map[string]string            `json:",omitempty"`
	At      map[string]Source            // row or legend entry → its line
}

var (
	topoCellRE   = lazyRegexp(`^(X|PIX|PXB|PHB|NODE|SYS|NV\d+|SOC)$`)
	nicLegendRE  = lazyRegexp(`^(NIC\d+): (\S+)$`)
	topoDeviceRE = lazyRegexp(`^(GPU\d+|NIC\d+|mlx\d+_\d+|[a-z]+[a-zA-Z0-9_]*\d)$`)
)

// parseGPUTopo reads the matrix, its legend and its NIC legend. The
// header has one column per device, then "CPU Affinity", "NUMA Affinity"
// and (newer drivers) "GPU NUMA ID"; NIC rows end after the device
// columns.
func parseGPUTopo(ls []line) (*Block, []line, []Warning) {
	f := strings.Fields(ls[0].text)
	if len(f) < 2 || f[0] != "GPU0" || !strings.Contains(ls[0].text, "CPU Affinity") {
		return nil, ls, nil
	}
	g := &GPUTopo{Matrix: map[string]map[string]string{}, At: map[string]Source{}}
	for _, x := range f {
		if x == "CPU" {
			break
		}
		g.Devices = append(g.Devices, x)
	}
	var warns []Warning
	i := 1
	for ; i < len(ls); i++ {
		l := ls[i]
		t := strings.TrimSpace(l.text)
		row := strings.Fields(t)
		if len(row) == 0 || !topoDeviceRE().MatchString(row[0]) || row[0] == "Legend" {
			break
		}
		cells := row[1:]
		if len(cells) < len(g.Devices) {
			warns = append(warns, Warning{l.at, fmt.Sprintf("topo row %s has %d of %d columns: not used", row[0], len(cells), len(g.Devices))})
			continue
		}
		m := map[string]string{}
		bad := false
		for j, d := range g.Devices {
			if !topoCellRE().MatchString(cells[j]) {
				warns = append(warns, Warning{l.at, fmt.Sprintf("topo row %s column %s: %q is not a connection type: row not used", row[0], d, cells[j])})
				bad = true
				break
			}
			m[d] = cells[j]
		}
		if bad {
			continue
		}
		g.Matrix[row[0]] = m
		g.At[row[0]] = l.at
		if rest := cells[len(g.Devices):]; len(rest) > 0 {
			if g.CPU == nil {
				g.CPU, g.NUMA = map[string]string{}, map[string]string{}
			}
			g.CPU[row[0]] = rest[0]
			if len(rest) > 1 {
				g.NUMA[row[0]] = rest[1]
			}
		}
	}
	// The legends: "Legend:", the connection types, "NIC Legend:", and
	// "NICn: device" lines.
	for ; i < len(ls); i++ {
		l := ls[i]
		t := strings.TrimSpace(l.text)
		switch {
		case t == "", t == "Legend:", t == "NIC Legend:":
		case strings.Contains(t, " = "):
		default:
			if m := nicLegendRE().FindStringSubmatch(t); m != nil {
				if g.NICs == nil {
					g.NICs = map[string]string{}
				}
				g.NICs[m[1]] = m[2]
				g.At[m[1]+" legend"] = l.at
				continue
			}
			return &Block{Kind: KindGPUTopo, At: ls[0].at, GPUTopo: g}, ls[i:], warns
		}
	}
	return &Block{Kind: KindGPUTopo, At: ls[0].at, GPUTopo: g}, ls[i:], warns
}
