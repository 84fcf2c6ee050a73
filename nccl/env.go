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

// Env derives the NCCL variables of a host from the profile and its
// matched ports: "auto" values are resolved, IB_TC defaults to the RoCE TOS.
// Names in the result carry the NCCL_ prefix. Variables that cannot be
// derived are returned as unresolved, with the reason; the variables are
// then incomplete and must be neither printed as a result nor written.
func Env(p *policy.Profile, ports []port.Port) ([]Var, []policy.Unsupported) {
	d := Derive(p, ports)
	return d.Vars, d.Unresolved
}

// Derivation is what Derive found: the variables, what could not be
// derived, and how NCCL_IB_GID_INDEX = "auto" was decided.
type Derivation struct {
	Vars       []Var
	Unresolved []policy.Unsupported
	// GID is nil unless the profile sets IB_GID_INDEX = "auto" or
	// "select".
	GID *GIDChoice
	// Notes are what the operator should know about the variables though
	// nothing fails (notes.go): several GIDs NCCL could select, a RoCE
	// LAG's merged device.
	Notes []string
	// Warnings are variables that do something the operator may not
	// mean: from NCCL 2.26, an NCCL_IB_TC or NCCL_IB_SL in the file
	// overriding every communicator's own traffic class.
	Warnings []string
}

// GIDChoice is how IB_GID_INDEX = "auto" was resolved.
type GIDChoice struct {
	// Mode is "pinned" (one index serves every port), "dynamic" (-1:
	// NCCL selects per device), "refused" (pre-2.21 NCCL, and no one
	// index serves every port) or "unknown" (a port's RDMA device or GID
	// table is not known: a snapshot without them, a read that failed).
	Mode   string `json:"mode"`
	Index  *int   `json:"index,omitempty"` // the pinned index
	Reason string `json:"reason"`
}

func (c GIDChoice) String() string { return c.Mode + ": " + c.Reason }

// GID choice modes.
const (
	GIDPinned  = "pinned"
	GIDDynamic = "dynamic"
	GIDRefused = "refused"
	GIDUnknown = "unknown"
)

// unknownGIDs says, for each port whose GID pick is not known, why: no
// RDMA device known behind its netdev (a snapshot imported from netdev
// dumps), or a GID table that could not be read.
func unknownGIDs(ports []port.Port) []string {
	var why []string
	for _, p := range ports {
		switch {
		case p.RDMADevice == "":
			why = append(why, fmt.Sprintf("the RDMA device behind %s is not known", p.Netdev))
		case p.GIDUnknown != "":
			why = append(why, fmt.Sprintf("the GID table of %s:%d could not be read (%s)", p.RDMADevice, p.PortNum, p.GIDUnknown))
		}
	}
	return why
}

// Derive is Env with the reasons for the GID index.
func Derive(p *policy.Profile, ports []port.Port) Derivation {
	var d Derivation
	c := &p.NCCL
	seen := map[string]bool{}
	for _, v := range c.Vars {
		seen[v.Name] = true
	}
	for _, v := range c.Vars {
		val := v.Value
		var extra []Var
		if v.Name == "IB_GID_INDEX" && val == policy.GIDSelect {
			choice, extra, notes := selectGID(c, ports)
			d.GID = &choice
			d.Notes = append(d.Notes, notes...)
			if choice.Mode != GIDSelected {
				d.Unresolved = append(d.Unresolved, policy.Unsupported{Key: policy.HostScope + ".nccl.NCCL_" + v.Name, Scope: policy.HostScope, Reason: choice.Reason})
				continue
			}
			// No index: -1, NCCL's default, is its own selection. Written
			// all the same, so that a stale pin elsewhere in the file
			// (a user's line, which NCCL would read first were it not
			// for the managed block) cannot defeat the selection.
			d.Vars = append(d.Vars, Var{"NCCL_IB_GID_INDEX", "-1"})
			d.Vars = append(d.Vars, extra...)
			continue
		}
		if val == "auto" {
			var reason string
			switch v.Name {
			case "IB_HCA":
				val, reason = hcaList(hcaPorts(p, ports))
				if reason == "" {
					val = withRails(c, val)
				}
			case "IB_GID_INDEX":
				var choice GIDChoice
				choice, extra = gidIndex(c, ports, seen)
				d.GID = &choice
				switch choice.Mode {
				case GIDPinned:
					val = strconv.Itoa(*choice.Index)
					if c.DynamicGID() {
						d.Notes = append(d.Notes, fmt.Sprintf("NCCL ≥ 2.21 selects the GID itself: a pinned index (%d) breaks when a port's table shifts (a container's, a VLAN or address added); IB_GID_INDEX = \"select\" writes the family and RoCE version it should select by instead, checked on every port's table", *choice.Index))
					}
				case GIDDynamic:
					val = "-1"
				default:
					reason = choice.Reason
				}
			}
			if reason != "" {
				d.Unresolved = append(d.Unresolved, policy.Unsupported{Key: policy.HostScope + ".nccl.NCCL_" + v.Name, Scope: policy.HostScope, Reason: reason})
				continue
			}
		}
		d.Vars = append(d.Vars, Var{"NCCL_" + v.Name, val})
		d.Vars = append(d.Vars, extra...)
	}
	if !seen["IB_TC"] && p.RoCE.DefaultTOS != nil && len(c.Vars)+len(c.Extra) > 0 {
		d.Vars = append(d.Vars, Var{"NCCL_IB_TC", strconv.Itoa(*p.RoCE.DefaultTOS)})
	}
	for _, v := range c.Extra {
		d.Vars = append(d.Vars, Var{"NCCL_" + v.Name, v.Value})
	}
	d.Warnings = append(overrides(&p.NCCL, d.Vars), mergedRails(&p.NCCL, hcaPorts(p, ports))...)
	d.Notes = append(d.Notes, notes(p, ports)...)
	return d
}

// hcaPorts are the ports NCCL_IB_HCA = "auto" lists: each RDMA device
// port once (a RoCE LAG is one device, mlx5_bond_0, never its slaves,
// which discovery does not list as ports), and VFs only when the profile
// targets them by role: a VF is usually a pod's, not the host's.
func hcaPorts(p *policy.Profile, ports []port.Port) []port.Port {
	vfs := slices.Contains(p.Match.Roles, port.RoleVF)
	seen := map[string]bool{}
	var out []port.Port
	for _, pt := range ports {
		id := fmt.Sprintf("%s:%d", pt.RDMADevice, pt.PortNum)
		if seen[id] || pt.Role == port.RoleVF && !vfs {
			continue
		}
		seen[id] = true
		out = append(out, pt)
	}
	return out
}

// hcaList is NCCL_IB_HCA for the matched ports. The leading "=" makes NCCL
// match names exactly: without it "mlx5_1" also selects mlx5_10..mlx5_19.
func hcaList(ports []port.Port) (string, string) {
	if len(ports) == 0 {
		return "", "no RDMA port matched the profile, so there is no HCA list to derive"
	}
	parts := make([]string, len(ports))
	var unknown []string
	for i, p := range ports {
		if p.RDMADevice == "" {
			unknown = append(unknown, p.Netdev)
		}
		parts[i] = fmt.Sprintf("%s:%d", p.RDMADevice, p.PortNum)
	}
	if len(unknown) > 0 {
		return "", fmt.Sprintf("unknown: the RDMA devices behind %s are not known (a snapshot without their sysfs)", strings.Join(unknown, ", "))
	}
	return "=" + strings.Join(parts, ","), ""
}

// gidFilters are the variables NCCL's dynamic GID selection applies
// (ncclIbGetGidIndex in NVIDIA/nccl src/transport/net_ib/connect.cc; in
// src/transport/net_ib.cc since 2.21.5-1, commit ab2b89c4). A pinned
// NCCL_IB_GID_INDEX returns before any of them is read.
var gidFilters = []string{"IB_ADDR_RANGE", "IB_ADDR_FAMILY", "IB_ROCE_VERSION_NUM"}

// gidIndex decides NCCL_IB_GID_INDEX = "auto". NCCL takes one value per
// process, so a pinned index must be right on every port:
//   - pinned when every port has its RoCE v2 IPv4 GID (port.Port's
//     RoCEv2GID, which counts GIDs of VLAN upper devices as NCCL does) at
//     the same index, and the profile sets no selection filter;
//   - otherwise, with NCCL 2.21 or later, -1: NCCL runs ncclIbGetGidIndex
//     per device, and extra holds the ROCE_VERSION_NUM and ADDR_FAMILY it
//     should select by (unless the profile sets them);
//   - pre-2.21 NCCL has no selection: NCCL_IB_GID_INDEX defaults to 0 there
//     (a RoCE v1 link-local GID), so only a pinned index works, and where
//     none serves every port the choice is refused with the reason.
func gidIndex(c *policy.NCCL, ports []port.Port, set map[string]bool) (GIDChoice, []Var) {
	if len(ports) == 0 {
		return GIDChoice{Mode: GIDRefused, Reason: "no RDMA port matched the profile"}, nil
	}
	if why := unknownGIDs(ports); len(why) > 0 {
		return GIDChoice{Mode: GIDUnknown, Reason: "unknown: " + strings.Join(why, "; ")}, nil
	}
	var where, missing []string
	idx, agree := ports[0].RoCEv2GID, true
	for _, p := range ports {
		if p.RoCEv2GID < 0 {
			missing = append(missing, fmt.Sprintf("%s:%d has no RoCE v2 IPv4 GID yet (no IPv4 address on %s or a VLAN above it)", p.RDMADevice, p.PortNum, p.Netdev))
			agree = false
			continue
		}
		where = append(where, fmt.Sprintf("%s:%d=%d", p.RDMADevice, p.PortNum, p.RoCEv2GID))
		if p.RoCEv2GID != idx {
			agree = false
		}
	}
	var filters []string
	for _, f := range gidFilters {
		if set[f] {
			filters = append(filters, f)
		}
	}
	if agree && (len(filters) == 0 || !c.DynamicGID()) {
		reason := fmt.Sprintf("all ports agree on index %d (%s)", idx, strings.Join(where, ", "))
		if len(filters) > 0 {
			reason += fmt.Sprintf("; %s has no effect before NCCL 2.21", strings.Join(filters, " and "))
		}
		return GIDChoice{Mode: GIDPinned, Index: &idx, Reason: reason}, nil
	}
	var why []string
	switch {
	case len(missing) > 0:
		why = missing
	case !agree:
		why = []string{"ports disagree (" + strings.Join(where, ", ") + ")"}
	default:
		why = []string{fmt.Sprintf("the profile sets %s, which NCCL applies only when it selects the GID itself", strings.Join(filters, " and "))}
	}
	if len(missing) > 0 && len(where) > 0 {
		why = append(why, "the others: "+strings.Join(where, ", "))
	}
	if !c.DynamicGID() {
		return GIDChoice{Mode: GIDRefused, Reason: strings.Join(why, "; ") +
			"; with generation = \"pre-2.21\" NCCL cannot select per device (it would use index 0, a RoCE v1 link-local GID): align the addressing so one index serves every port, or set IB_GID_INDEX"}, nil
	}
	version, family := "2", "AF_INET"
	var extra []Var
	if v, ok := c.Var("IB_ROCE_VERSION_NUM"); ok {
		version = v
	} else {
		extra = append(extra, Var{"NCCL_IB_ROCE_VERSION_NUM", version})
	}
	if v, ok := c.Var("IB_ADDR_FAMILY"); ok {
		family = v
	} else {
		extra = append(extra, Var{"NCCL_IB_ADDR_FAMILY", family})
	}
	if len(missing) > 0 {
		why = append(why, "NCCL uses index 0 there until such an address exists")
	}
	how := fmt.Sprintf("NCCL ≥ 2.21 selects per device with ROCE_VERSION_NUM=%s, ADDR_FAMILY=%s", version, family)
	if r, ok := c.Var("IB_ADDR_RANGE"); ok {
		how += ", ADDR_RANGE=" + r
	}
	return GIDChoice{Mode: GIDDynamic, Reason: strings.Join(why, "; ") + "; " + how}, extra
}

// Resolve adds to d the host settings of the NCCL config file, derived for
// the ports d matched, when the profile asks rocectl to manage one ([nccl]
// write). When a variable cannot be derived, it goes to d.Unresolved and
// none of the file's settings are added: a partial file is never written. A host
// none of whose ports the profile selects is not the profile's business:
// its NCCL file is left alone.
func Resolve(d *policy.Desired) {
	p := d.Profile
	if p.NCCL.Write == nil || len(d.Ports) == 0 {
		return
	}
	ports := make([]port.Port, len(d.Ports))
	var noDevice []string
	for i, dp := range d.Ports {
		ports[i] = dp.Port
		if dp.Port.RDMADevice == "" {
			noDevice = append(noDevice, dp.Port.Netdev)
		}
	}
	dv := Derive(p, ports)
	vars, unresolved := dv.Vars, dv.Unresolved
	var why string
	switch {
	case len(noDevice) > 0:
		why = fmt.Sprintf("%s (the RDMA devices behind %s)", policy.UnknownReason, strings.Join(noDevice, ", "))
	case dv.GID != nil && dv.GID.Mode == GIDUnknown:
		why = strings.TrimPrefix(dv.GID.Reason, "unknown: ") // shown as "unknown (…)"
	}
	if why != "" {
		// A snapshot imported from netdev-level dumps knows no RDMA
		// device behind these ports, and a GID table that could not be
		// read hides the index NCCL would pick, so the HCA list or the
		// GID index (and with them the file) cannot be derived:
		// unknown, not drift. Only the profile's own variables are
		// named: which selection variables NCCL would need depends on
		// the GIDs, unknown too.
		names := map[string]bool{}
		for _, v := range p.NCCL.Vars {
			names["NCCL_"+v.Name] = true
		}
		for _, v := range p.NCCL.Extra {
			names["NCCL_"+v.Name] = true
		}
		for _, v := range vars {
			if v.Name == "NCCL_IB_TC" {
				names[v.Name] = true // derived from the profile alone
			}
		}
		for _, name := range slices.Sorted(maps.Keys(names)) {
			d.Unknown = append(d.Unknown, policy.Unknown{Key: policy.HostScope + ".nccl." + name, Scope: policy.HostScope, Reason: why})
		}
		return
	}
	if len(unresolved) > 0 {
		// Part of the file is no file NCCL should read: leave it as it is.
		for i := range unresolved {
			unresolved[i].Reason += fmt.Sprintf("; %s is left as it is rather than written in part", *p.NCCL.Write)
		}
		d.Unresolved = append(d.Unresolved, unresolved...)
		return
	}
	for _, v := range vars {
		d.Host = append(d.Host, policy.Setting{Key: policy.HostScope + ".nccl." + v.Name, Scope: policy.HostScope, Name: "nccl." + v.Name,
			Kind: policy.KindNCCL, Arg: v.Name, Value: v.Value, From: "nccl." + strings.TrimPrefix(v.Name, "NCCL_")})
	}
}
