package nccl

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/rocectl/rocectl/policy"
)

// Env derives the NCCL variables of a host from the profile and its
// matched ports: "auto" values are resolved, IB_TC defaults to the RoCE TOS.
// Names in the result carry the NCCL_ prefix. Variables that cannot be
// derived yet are returned as unresolved, with the reason.
func Env(p *policy.Profile, ports []policy.Port) ([]Var, []policy.Unsupported) {
	var out []Var
	var unresolved []policy.Unsupported
	c := &p.NCCL
	seen := map[string]bool{}
	for _, v := range c.Vars {
		seen[v.Name] = true
		val := v.Value
		if val == "auto" {
			var reason string
			switch v.Name {
			case "IB_HCA":
				val, reason = hcaList(ports)
			case "IB_GID_INDEX":
				val, reason = gidIndex(ports)
			}
			if reason != "" {
				unresolved = append(unresolved, policy.Unsupported{Key: policy.HostScope + ".nccl.NCCL_" + v.Name, Scope: policy.HostScope, Reason: reason})
				continue
			}
		}
		out = append(out, Var{"NCCL_" + v.Name, val})
	}
	if !seen["IB_TC"] && p.RoCE.DefaultTOS != nil && len(c.Vars)+len(c.Extra) > 0 {
		out = append(out, Var{"NCCL_IB_TC", strconv.Itoa(*p.RoCE.DefaultTOS)})
	}
	for _, v := range c.Extra {
		out = append(out, Var{"NCCL_" + v.Name, v.Value})
	}
	return out, unresolved
}

// hcaList is NCCL_IB_HCA for the matched ports. The leading "=" makes NCCL
// match names exactly: without it "mlx5_1" also selects mlx5_10..mlx5_19.
func hcaList(ports []policy.Port) (string, string) {
	if len(ports) == 0 {
		return "", "no RDMA port matched the profile, so there is no HCA list to derive"
	}
	parts := make([]string, len(ports))
	for i, p := range ports {
		parts[i] = fmt.Sprintf("%s:%d", p.RDMADevice, p.PortNum)
	}
	return "=" + strings.Join(parts, ","), ""
}

// gidIndex is NCCL_IB_GID_INDEX: one index must serve every port, since NCCL
// takes one value per process.
func gidIndex(ports []policy.Port) (string, string) {
	if len(ports) == 0 {
		return "", "no RDMA port matched the profile"
	}
	idx := -2
	var where []string
	for _, p := range ports {
		if p.RoCEv2GID < 0 {
			return "", fmt.Sprintf("%s port %d has no RoCE v2 IPv4 GID yet (is an IPv4 address configured on %s?)", p.RDMADevice, p.PortNum, p.Netdev)
		}
		where = append(where, fmt.Sprintf("%s:%d=%d", p.RDMADevice, p.PortNum, p.RoCEv2GID))
		if idx == -2 {
			idx = p.RoCEv2GID
		} else if idx != p.RoCEv2GID {
			idx = -3
		}
	}
	if idx == -3 {
		return "", "ports disagree on the RoCE v2 IPv4 GID index (" + strings.Join(where, ", ") + "); set IB_GID_INDEX explicitly or align the addressing"
	}
	return strconv.Itoa(idx), ""
}

// Resolve adds to d the host settings of the NCCL config file, derived for
// the ports d matched, when the profile asks rocectl to manage one ([nccl]
// write); variables that cannot be derived yet go to d.Unresolved. A host
// none of whose ports the profile selects is not the profile's business:
// its NCCL file is left alone.
func Resolve(d *policy.Desired) {
	p := d.Profile
	if p.NCCL.Write == nil || len(d.Ports) == 0 {
		return
	}
	ports := make([]policy.Port, len(d.Ports))
	for i, dp := range d.Ports {
		ports[i] = dp.Port
	}
	vars, unresolved := Env(p, ports)
	for _, v := range vars {
		d.Host = append(d.Host, policy.Setting{Key: policy.HostScope + ".nccl." + v.Name, Scope: policy.HostScope, Name: "nccl." + v.Name,
			Kind: policy.KindNCCL, Arg: v.Name, Value: v.Value, From: "nccl." + strings.TrimPrefix(v.Name, "NCCL_")})
	}
	d.Unresolved = append(d.Unresolved, unresolved...)
}
