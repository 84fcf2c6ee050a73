package policy

import (
	"fmt"
	"net"
	"strconv"
	"strings"
)

// GIDSelect is IB_GID_INDEX = "select": pin no index (write -1) and let NCCL
// (2.21 and later) select the GID per device by NCCL_IB_ADDR_FAMILY,
// NCCL_IB_ADDR_RANGE and NCCL_IB_ROCE_VERSION_NUM, which rocectl derives
// and checks against every matched port's GID table (nccl.Derive). A
// pinned index breaks when a table shifts (a container's, a VLAN added)
// or has no IPv4 GID at all (IPv6-only fabrics): the most common NCCL
// RoCE failure.
const GIDSelect = "select"

const generationAllowed = `"2.21+", "pre-2.21", or the oldest NCCL version the fleet runs, e.g. "2.26" or "2.30.3"`

// ParseNCCLGeneration reads [nccl] generation: "2.21+" (21), "pre-2.21"
// (20: anything before 2.21) or a version "2.N", "2.N.M", "2.N.M-K" (N).
// It returns NCCL's minor version, the only part NCCL's features have
// been keyed by since 2.0.
func ParseNCCLGeneration(s string) (int, bool) {
	switch s {
	case "", NCCLModern:
		return 21, true
	case NCCLPre221:
		return 20, true
	}
	rest, ok := strings.CutPrefix(s, "2.")
	if !ok {
		return 0, false
	}
	rest, _, _ = strings.Cut(rest, "-")
	parts := strings.Split(rest, ".")
	if len(parts) > 2 {
		return 0, false
	}
	minor := -1
	for i, part := range parts {
		n, err := strconv.Atoi(part)
		if err != nil || n < 0 || n > 999 || part != strconv.Itoa(n) {
			return 0, false
		}
		if i == 0 {
			minor = n
		}
	}
	return minor, minor >= 0
}

// Minor is the NCCL minor version the profile's generation names (21 for
// the default "2.21+").
func (c *NCCL) Minor() int {
	m, _ := ParseNCCLGeneration(c.Generation)
	return m
}

// AtLeast reports whether the oldest NCCL the fleet runs is 2.minor or
// later.
func (c *NCCL) AtLeast(minor int) bool { return c.Minor() >= minor }

// NCCL versions that changed what rocectl writes, from NVIDIA/nccl's
// history and docs/userguide/source/env.rst.
const (
	// NCCLSelectsGID: ncclIbGetGidIndex selects by family, range and
	// RoCE version (2.21.5-1, commit ab2b89c4).
	NCCLSelectsGID = 21
	// NCCLFifoTC: NCCL_IB_FIFO_TC, the control (CTS) messages' class
	// (2.22.3-1, commit 178b6b75).
	NCCLFifoTC = 22
	// NCCLCommTrafficClass: a communicator's own trafficClass
	// (ncclConfig_t, 2.26.2-1, commit f44ac759), which an NCCL_IB_TC or
	// NCCL_IB_SL in the environment or /etc/nccl.conf overrides
	// (ncclIbConnectImpl in src/transport/net_ib/connect.cc).
	NCCLCommTrafficClass = 26
	// NCCLRailPlane: NCCL_IB_HCA entries dev:port:rail:plane (2.30).
	NCCLRailPlane = 30
)

// NCCLRail is one [nccl.rails] entry: an RDMA device's rail and plane.
type NCCLRail struct {
	Device string
	Rail   int
	Plane  int // -1: not given
}

// Rail returns the device's rail entry, if the profile names one.
func (c *NCCL) Rail(device string) (NCCLRail, bool) {
	for _, r := range c.Rails {
		if r.Device == device {
			return r, true
		}
	}
	return NCCLRail{}, false
}

var rdmaDeviceName = nameRule{chars: lowerDigits + upperDigits + "_.-", max: 64}

// ncclRails decodes [nccl.rails]: device = rail, or device = [rail, plane].
func (d *decoder) ncclRails(key string, n *node) []NCCLRail {
	const allowed = "a rail 0..255, or [rail, plane] with each 0..255"
	var out []NCCLRail
	d.freeTable(key, n, "a table of RDMA device = rail or [rail, plane]", rdmaDeviceName, "an RDMA device name such as mlx5_0", "an RDMA device name",
		func(k, name string, el *node) {
			r := NCCLRail{Device: name, Plane: -1}
			switch el.kind {
			case kInt:
				v, ok := d.int(k, el, 0, 255)
				if !ok {
					return
				}
				r.Rail = int(v)
			case kArray:
				if len(el.arr) != 2 {
					d.errf(el, k, allowed, "has %d values", len(el.arr))
					return
				}
				rail, ok1 := d.int(k+"[0]", el.arr[0], 0, 255)
				plane, ok2 := d.int(k+"[1]", el.arr[1], 0, 255)
				if !ok1 || !ok2 {
					return
				}
				r.Rail, r.Plane = int(rail), int(plane)
			default:
				d.errf(el, k, allowed, "expected a rail, got %s", describe(el))
				return
			}
			out = append(out, r)
		})
	return out
}

// checkNCCLGeneration holds what the profile asks of NCCL against the
// oldest NCCL it says the fleet runs.
func checkNCCLGeneration(p *Profile, r *decoder, at func(string) *node) {
	c := &p.NCCL
	if p.failedKey("nccl.generation") {
		return
	}
	gen := c.Generation
	if gen == "" {
		gen = NCCLModern + ", the default"
	}
	if v, ok := c.Var("IB_GID_INDEX"); ok && v == GIDSelect && !c.AtLeast(NCCLSelectsGID) {
		r.errf(at("nccl.IB_GID_INDEX"), "nccl.IB_GID_INDEX", `"auto" or an index, or generation "2.21" or later`,
			`"select" needs NCCL 2.21 or later (ncclIbGetGidIndex selects by family, range and RoCE version since 2.21.5); generation is %s`, gen)
	}
	// The default generation (2.21+) says nothing of the FIFO class: only
	// a generation the profile names older than 2.22 is held against it.
	if _, ok := c.Var("IB_FIFO_TC"); ok && c.Generation != "" && c.Generation != NCCLModern && !c.AtLeast(NCCLFifoTC) {
		r.warnf(at("nccl.IB_FIFO_TC"), "nccl.IB_FIFO_TC", `generation "2.22" or later, or leave IB_FIFO_TC out`,
			"NCCL_IB_FIFO_TC exists since NCCL 2.22.3; older NCCL ignores it (generation is %s)", gen)
	}
	// NCCL parses IB_ADDR_RANGE in the family IB_ADDR_FAMILY names
	// (envIbAddrRange: inet_pton(af, ...)) and ignores a range of the
	// other family without a word: the subnet the operator meant would
	// select nothing.
	if fam, ok := c.Var("IB_ADDR_FAMILY"); ok {
		if rng, ok := c.Var("IB_ADDR_RANGE"); ok {
			if _, n, err := net.ParseCIDR(rng); err == nil {
				rf := "AF_INET6"
				if n.IP.To4() != nil {
					rf = "AF_INET"
				}
				if rf != fam {
					r.errf(at("nccl.IB_ADDR_RANGE"), "nccl.IB_ADDR_RANGE", "an "+fam+" subnet, or IB_ADDR_FAMILY = \""+rf+"\"",
						"%s is an %s range and IB_ADDR_FAMILY is %s: NCCL parses the range in that family and ignores it (envIbAddrRange)", rng, rf, fam)
				}
			}
		}
	}
	if len(c.Rails) > 0 {
		if !c.AtLeast(NCCLRailPlane) {
			r.errf(at("nccl.rails"), "nccl.rails", `generation "2.30" or later`,
				"NCCL_IB_HCA takes dev:port:rail:plane since NCCL 2.30; older NCCL reads the rail as a port and finds no device (generation is %s)", gen)
		}
		if v, ok := c.Var("IB_HCA"); !ok || v != "auto" {
			r.errf(at("nccl.rails"), "nccl.rails", `IB_HCA = "auto" alongside it`,
				"rails are written into the NCCL_IB_HCA list rocectl derives; %s", hcaNote(ok, v))
		}
	}
}

func hcaNote(set bool, v string) string {
	if !set {
		return "the profile derives none (IB_HCA is not set)"
	}
	return fmt.Sprintf("IB_HCA = %q is written as it is", v)
}

// NeedsGIDTables reports whether resolving the profile needs each port's
// whole GID table: IB_GID_INDEX = "select", whose family, range and RoCE
// version are checked against every entry.
func (p *Profile) NeedsGIDTables() bool {
	v, _ := p.NCCL.Var("IB_GID_INDEX")
	return v == GIDSelect
}
