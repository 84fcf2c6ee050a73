package policy

import (
	"fmt"
	"net"
	"strconv"
	"strings"
)

// NCCLSpec describes one NCCL variable [nccl] accepts, with NCCL's own valid
// range (reference §C, from NVIDIA/nccl's src/transport/net_ib and
// src/graph). Names are written without the NCCL_ prefix.
type NCCLSpec struct {
	Name    string
	Kind    string // "int", "string", "enum", "cidr"
	Min     int64
	Max     int64
	Enum    []string
	Auto    bool // accepts "auto" (derived from the host)
	Summary string
}

// gdrLevels are NCCL's path types (graph/topo.h), plus the old numeric forms.
var gdrLevels = []string{"LOC", "NVL", "NVB", "C2C", "PIX", "PXB", "P2C", "PXN", "PHB", "SYS", "0", "1", "2", "3", "4", "5"}

// NCCLVars lists the [nccl] keys.
var NCCLVars = []NCCLSpec{
	{Name: "IB_HCA", Kind: "string", Auto: true, Summary: `"auto" = exact-match list of the matched RDMA ports (=mlx5_0:1,...)`},
	{Name: "IB_GID_INDEX", Kind: "int", Min: -1, Max: 255, Auto: true, Summary: `"auto" = the RoCE v2 IPv4 GID index found on the host; "select" = no pinned index (-1) but the family/range/version NCCL ≥ 2.21 selects by, checked against every port's GID table; -1 = NCCL's dynamic selection`},
	{Name: "IB_TC", Kind: "int", Min: 0, Max: 255, Summary: "traffic class (full TOS byte); defaults to roce.default_tos"},
	{Name: "IB_FIFO_TC", Kind: "int", Min: 0, Max: 255, Summary: "traffic class of the receiver's control (CTS) messages"},
	{Name: "IB_SL", Kind: "int", Min: 0, Max: 15, Summary: "service level (PCP = SL & 7 under PCP trust)"},
	{Name: "IB_TIMEOUT", Kind: "int", Min: 0, Max: 31, Summary: "QP ACK timeout exponent: 4.096 µs × 2^n"},
	{Name: "IB_RETRY_CNT", Kind: "int", Min: 0, Max: 7, Summary: "QP retry count"},
	{Name: "IB_QPS_PER_CONNECTION", Kind: "int", Min: 1, Max: 128, Summary: "QPs per connection"},
	{Name: "IB_SPLIT_DATA_ON_QPS", Kind: "int", Min: 0, Max: 1, Summary: "1 = split each message across QPs, 0 = round-robin messages"},
	{Name: "IB_ROCE_VERSION_NUM", Kind: "int", Min: 1, Max: 2, Summary: "RoCE version used by NCCL's dynamic GID selection"},
	{Name: "IB_ADDR_FAMILY", Kind: "enum", Enum: []string{"AF_INET", "AF_INET6"}, Summary: "address family of the GID NCCL selects"},
	{Name: "IB_ADDR_RANGE", Kind: "cidr", Summary: "subnet the GID must be in, a.b.c.d/n"},
	{Name: "IB_ADAPTIVE_ROUTING", Kind: "int", Min: 0, Max: 1, Summary: "adaptive routing (NCCL default: 0 on RoCE)"},
	{Name: "IB_ECE_ENABLE", Kind: "int", Min: 0, Max: 1, Summary: "enhanced connection establishment"},
	{Name: "SOCKET_IFNAME", Kind: "string", Summary: "bootstrap socket interfaces ([^][=]prefix,...)"},
	{Name: "NET_GDR_LEVEL", Kind: "enum", Enum: gdrLevels, Summary: "max distance for GPUDirect RDMA"},
	{Name: "BUFFSIZE", Kind: "int", Min: 1, Max: 1 << 30, Summary: "buffer size per channel in bytes"},
}

// NCCLSpecByName finds a variable's spec (name without NCCL_).
func NCCLSpecByName(name string) (NCCLSpec, bool) {
	for _, s := range NCCLVars {
		if s.Name == name {
			return s, true
		}
	}
	return NCCLSpec{}, false
}

var ncclExtraName = nameRule{prefix: "NCCL_", chars: upperDigits + "_", max: 64}

func (d *decoder) nccl(key string, n *node, c *NCCL) {
	fs := []field{
		{"write", func(k string, v *node) {
			if s, ok := d.str(k, v); ok {
				if !strings.HasPrefix(s, "/") || strings.ContainsAny(s, "\n\x00") {
					d.errf(v, k, `an absolute path such as "/etc/nccl.conf"`, "%q is not an absolute path", s)
					return
				}
				c.Write = &s
			}
		}},
		{"generation", func(k string, v *node) {
			if s, ok := d.str(k, v); ok {
				if _, ok := ParseNCCLGeneration(s); !ok {
					d.errf(v, k, generationAllowed, "%q is not a valid value", s)
					return
				}
				c.Generation = s
			}
		}},
		{"rails", func(k string, v *node) { c.Rails = d.ncclRails(k, v) }},
		{"extra", func(k string, v *node) {
			d.freeTable(k, v, "a table of NCCL_NAME = value", ncclExtraName, "NCCL_ followed by upper-case letters, digits and '_'", "an NCCL variable name",
				func(ek, name string, el *node) {
					short := strings.TrimPrefix(name, "NCCL_")
					if _, known := NCCLSpecByName(short); known {
						d.add(el, true, SevError, ek, "", "%s has its own key in [nccl]; set %s there", name, short)
						return
					}
					if val, ok := d.ncclText(ek, el); ok {
						c.Extra = append(c.Extra, NCCLVar{short, val})
					}
				})
		}},
	}
	for _, s := range NCCLVars {
		s := s
		fs = append(fs, field{s.Name, func(k string, v *node) {
			if val, ok := d.ncclVar(k, v, s); ok {
				c.Vars = append(c.Vars, NCCLVar{s.Name, val})
			}
		}})
	}
	d.fields(key, n, fs)
}

// ncclText accepts a string or an integer and checks that NCCL's config
// file can carry it: NCCL neither trims nor unquotes, so no surrounding
// space, no newline.
func (d *decoder) ncclText(k string, v *node) (string, bool) {
	s, ok := textOf(v)
	if !ok {
		d.errf(v, k, "a string or an integer", "expected a value, got %s", describe(v))
		return "", false
	}
	if s == "" || strings.TrimSpace(s) != s || strings.ContainsAny(s, "\r\n\x00") {
		d.errf(v, k, "a non-empty value without surrounding spaces or newlines (NCCL keeps them verbatim)", "%q cannot be written to an NCCL config file", s)
		return "", false
	}
	return s, true
}

// textOf is a string's text or an integer's decimal form; ok is false for
// any other kind of value.
func textOf(v *node) (string, bool) {
	switch v.kind {
	case kString:
		return v.str, true
	case kInt:
		return strconv.FormatInt(v.i, 10), true
	}
	return "", false
}

func (d *decoder) ncclVar(k string, v *node, s NCCLSpec) (string, bool) {
	if s.Auto && v.kind == kString && v.str == "auto" {
		return "auto", true
	}
	if s.Name == "IB_GID_INDEX" && v.kind == kString && v.str == GIDSelect {
		return GIDSelect, true
	}
	switch s.Kind {
	case "int":
		allowed := rangeText(s.Min, s.Max)
		if s.Auto {
			allowed = `"auto" or ` + allowed
		}
		if s.Name == "IB_GID_INDEX" {
			allowed = `"auto", "select" or ` + rangeText(s.Min, s.Max)
		}
		if s.Name == "BUFFSIZE" && v.kind == kString {
			allowed := fmt.Sprintf("bytes, e.g. 4194304 or \"4MiB\", 1..%v", Size(s.Max))
			sz, err := ParseSize(v.str)
			switch {
			case err != nil:
				d.errf(v, k, allowed, "%q is not a size", v.str)
				return "", false
			case sz < 1 || sz > Size(s.Max):
				d.errf(v, k, allowed, "%v is out of range", sz)
				return "", false
			}
			return strconv.FormatUint(uint64(sz), 10), true
		}
		if v.kind != kInt {
			d.errf(v, k, allowed, "expected an integer, got %s", describe(v))
			return "", false
		}
		if v.i < s.Min || v.i > s.Max {
			d.errf(v, k, allowed, "%d is out of range", v.i)
			return "", false
		}
		return strconv.FormatInt(v.i, 10), true
	case "enum":
		str, _ := textOf(v)
		for _, e := range s.Enum {
			if str == e {
				return str, true
			}
		}
		d.errf(v, k, strings.Join(s.Enum, ", "), "%s is not a valid value", describe(v))
		return "", false
	case "cidr":
		str, ok := d.str(k, v)
		if !ok {
			return "", false
		}
		if _, _, err := net.ParseCIDR(str); err != nil {
			d.errf(v, k, "a subnet such as 10.0.0.0/16", "%q is not a subnet", str)
			return "", false
		}
		return str, true
	default:
		if s.Name == "IB_HCA" && v.kind == kString && v.str != "auto" {
			if err := checkHCAList(v.str); err != nil {
				d.errf(v, k, `"auto" or [^][=]dev[:port],...`, "%v", err)
				return "", false
			}
		}
		return d.ncclText(k, v)
	}
}

// checkHCAList checks NCCL_IB_HCA syntax: an optional ^ (exclude) and/or =
// (exact match) prefix, then dev[:port[:rail[:plane]]] items.
func checkHCAList(s string) error {
	t := strings.TrimPrefix(strings.TrimPrefix(s, "^"), "=")
	if t == "" {
		return fmt.Errorf("%q names no device", s)
	}
	for _, item := range strings.Split(t, ",") {
		parts := strings.Split(item, ":")
		if parts[0] == "" || len(parts) > 4 {
			return fmt.Errorf("%q is not dev[:port]", item)
		}
		for _, num := range parts[1:] {
			if _, err := strconv.Atoi(num); err != nil {
				return fmt.Errorf("%q: port %q is not a number", item, num)
			}
		}
	}
	return nil
}
