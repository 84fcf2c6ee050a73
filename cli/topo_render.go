package cli

import (
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/rocectl/rocectl/nccl"
	"github.com/rocectl/rocectl/nic"
)

// RenderTopology writes the `rocectl topo` report: a GPU×NIC matrix of
// NCCL path types laid out like `nvidia-smi topo -m` (rows GPUs, columns
// NICs, NUMA nodes at the ends), the devices, the degraded links, the
// proposed GPU→NIC affinity and the NCCL_IB_HCA line that goes with it.
func RenderTopology(w io.Writer, t *nccl.Topology) error {
	ew := &topoErrWriter{w: w}
	ew.printf("GPU/NIC PCIe topology (NCCL path types)\n\n")
	switch {
	case len(t.GPUs) == 0 && len(t.NICs) == 0:
		ew.printf("No NVIDIA GPU and no RDMA NIC found.\n")
		return ew.err
	case len(t.GPUs) == 0:
		ew.printf("No NVIDIA GPU found.\n\n")
	case len(t.NICs) == 0:
		ew.printf("No RDMA NIC found.\n\n")
	default:
		topoMatrix(ew, t)
	}
	topoDevices(ew, t)
	if len(t.GPUs) > 0 && len(t.NICs) > 0 {
		ew.printf("Legend:\n" +
			"  PIX  = through at most one PCIe switch\n" +
			"  PXB  = through several PCIe switches, no host bridge\n" +
			"  PHB  = through a PCIe host bridge (the CPU), same NUMA node\n" +
			"  SYS  = across NUMA nodes (the socket interconnect)\n\n")
	}
	topoDegradedLinks(ew, t)
	if len(t.Affinity) > 0 {
		ew.printf("Proposed GPU -> NIC affinity:\n")
		tw := tabwriter.NewWriter(ew, 0, 0, 2, ' ', 0)
		for _, a := range t.Affinity {
			fmt.Fprintf(tw, "  GPU%d\t%s\t->\t%s\t%s\t%s\n", a.GPU, a.GPUAddr, strings.Join(a.RDMADevs, ","), a.NICAddr, a.Path)
		}
		tw.Flush()
		ew.printf("\n")
	}
	if t.HCAOrder != "" {
		// The value itself starts with '=', NCCL's exact-match marker.
		ew.printf("NCCL_IB_HCA for these GPUs (the leading '=' of the value asks NCCL for exact names):\n")
		ew.printf("NCCL_IB_HCA=%s\n", t.HCAOrder)
	}
	return ew.err
}

func topoMatrix(ew *topoErrWriter, t *nccl.Topology) {
	tw := tabwriter.NewWriter(ew, 0, 0, 2, ' ', 0)
	fmt.Fprint(tw, "\t")
	for _, n := range t.NICs {
		fmt.Fprintf(tw, "%s\t", topoNICName(n))
	}
	fmt.Fprint(tw, "NUMA\n")
	for g, d := range t.GPUs {
		fmt.Fprintf(tw, "GPU%d\t", g)
		for n := range t.NICs {
			fmt.Fprintf(tw, "%s\t", t.Path(g, n))
		}
		fmt.Fprintf(tw, "%s\n", topoNUMA(d.NUMANode))
	}
	numa := make([]string, len(t.NICs))
	for i, n := range t.NICs {
		numa[i] = topoNUMA(n.NUMANode)
	}
	fmt.Fprintf(tw, "NUMA\t%s\n", strings.Join(numa, "\t"))
	tw.Flush()
	ew.printf("\n")
}

func topoDevices(ew *topoErrWriter, t *nccl.Topology) {
	tw := tabwriter.NewWriter(ew, 0, 0, 2, ' ', 0)
	if len(t.GPUs) > 0 {
		fmt.Fprint(tw, "GPUs:\n")
		for g, d := range t.GPUs {
			fmt.Fprintf(tw, "  GPU%d\t%s\t%s\tNUMA %s\t%s\n", g, d.Addr, topoID(d), topoNUMA(d.NUMANode), topoLink(d))
		}
	}
	if len(t.NICs) > 0 {
		fmt.Fprint(tw, "NICs:\n")
		for _, d := range t.NICs {
			line := fmt.Sprintf("  %s\t%s\t%s\tNUMA %s\t%s", topoNICName(d), d.Addr, topoID(d), topoNUMA(d.NUMANode), topoLink(d))
			if len(d.Netdevs) > 0 {
				line += "\t" + strings.Join(d.Netdevs, ",")
			}
			fmt.Fprintln(tw, line)
		}
	}
	tw.Flush()
	ew.printf("\n")
}

func topoDegradedLinks(ew *topoErrWriter, t *nccl.Topology) {
	if len(t.Degraded) == 0 {
		ew.printf("Degraded links: none\n\n")
		return
	}
	ew.printf("Degraded links:\n")
	for _, d := range t.Degraded {
		who := d.Role
		if d.Name != "" {
			who += " " + d.Name
		}
		ew.printf("  %s (%s): %s\n", d.Addr, who, d.Reason)
	}
	ew.printf("\n")
}

func topoNICName(d nic.PCIDevice) string {
	if len(d.RDMADevs) == 0 {
		return d.Addr
	}
	return strings.Join(d.RDMADevs, ",")
}

func topoID(d nic.PCIDevice) string {
	return strings.TrimPrefix(d.Vendor, "0x") + ":" + strings.TrimPrefix(d.Device, "0x")
}

func topoNUMA(n int) string {
	if n < 0 {
		return "N/A"
	}
	return strconv.Itoa(n)
}

func topoLink(d nic.PCIDevice) string {
	if d.CurSpeed == "" {
		return "-"
	}
	s := fmt.Sprintf("%s x%d", d.CurSpeed, d.CurWidth)
	if d.CurSpeed != d.MaxSpeed || d.CurWidth != d.MaxWidth {
		s += fmt.Sprintf(" (max %s x%d)", d.MaxSpeed, d.MaxWidth)
	}
	return s
}

// topoErrWriter keeps the first write error so the report code can write
// without checking every call.
type topoErrWriter struct {
	w   io.Writer
	err error
}

func (e *topoErrWriter) Write(p []byte) (int, error) {
	if e.err != nil {
		return 0, e.err
	}
	n, err := e.w.Write(p)
	e.err = err
	return n, err
}

func (e *topoErrWriter) printf(format string, args ...any) {
	fmt.Fprintf(e, format, args...)
}
