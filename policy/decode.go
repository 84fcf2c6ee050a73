package policy

import (
	"fmt"
	"math"
	"path"
	"strconv"
	"strings"
	"time"

	"github.com/rocectl/rocectl/port"
)

// decoder walks a merged profile tree against the schema, filling a Profile
// and collecting every problem instead of stopping at the first.
type decoder struct {
	diags Diagnostics
	pos   map[string]Pos
}

type field struct {
	name string
	fn   func(key string, v *node)
}

func (d *decoder) add(n *node, atKey bool, sev Severity, key, allowed, format string, args ...any) {
	p := Pos{}
	var src *source
	if n != nil {
		p, src = n.valPos, n.src
		if atKey {
			p = n.keyPos
		}
	}
	d.diags = append(d.diags, Diagnostic{
		Pos: p, Key: key, Msg: fmt.Sprintf(format, args...), Allowed: allowed,
		Source: src.line(p.Line), Severity: sev,
	})
}

func (d *decoder) errf(n *node, key, allowed, format string, args ...any) {
	d.add(n, false, SevError, key, allowed, format, args...)
}

func (d *decoder) warnf(n *node, key, allowed, format string, args ...any) {
	d.add(n, false, SevWarning, key, allowed, format, args...)
}

func join(prefix, k string) string {
	if prefix == "" {
		return k
	}
	return prefix + "." + k
}

// fields decodes a table whose keys are fixed by the schema.
func (d *decoder) fields(key string, n *node, fs []field) {
	if !d.want(key, n, kTable, "") {
		return
	}
	names := make([]string, len(fs))
	for i, f := range fs {
		names[i] = f.name
	}
	for _, k := range n.tbl.keys {
		v := n.tbl.m[k]
		full := join(key, k)
		found := false
		for _, f := range fs {
			if f.name == k {
				d.pos[full] = v.keyPos
				f.fn(full, v)
				found = true
				break
			}
		}
		if !found {
			d.add(v, true, SevError, full, strings.Join(names, ", "), "unknown key%s", suggest(k, names))
		}
	}
}

// freeTable walks a table whose keys the profile chooses (private flags,
// devlink parameters, NCCL variables): it records each key's position,
// reports a name that re refuses ("%q is not <what>", allowed: nameAllowed)
// and hands every other entry to fn.
func (d *decoder) freeTable(key string, n *node, allowed string, rule nameRule, nameAllowed, what string, fn func(k, name string, el *node)) {
	if !d.want(key, n, kTable, allowed) {
		return
	}
	for _, name := range n.tbl.keys {
		el := n.tbl.m[name]
		k := join(key, name)
		d.pos[k] = el.keyPos
		if !rule.ok(name) {
			d.add(el, true, SevError, k, nameAllowed, "%q is not %s", name, what)
			continue
		}
		fn(k, name, el)
	}
}

// suggest names the closest known key when the unknown one looks like a typo.
func suggest(k string, names []string) string {
	if short, ok := strings.CutPrefix(k, "NCCL_"); ok {
		for _, n := range names {
			if n == short {
				return fmt.Sprintf("; write %s, without the NCCL_ prefix", short)
			}
		}
	}
	best, bestD := "", 3
	for _, n := range names {
		if dist := editDistance(k, n); dist < bestD {
			best, bestD = n, dist
		}
	}
	if best == "" {
		return ""
	}
	return fmt.Sprintf("; did you mean %q?", best)
}

func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur := make([]int, len(b)+1)
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev = cur
	}
	return prev[len(b)]
}

// want checks n's kind; allowed says what would be accepted, for the
// message ("" gives the kind itself).
func (d *decoder) want(key string, n *node, k nodeKind, allowed string) bool {
	if n.kind == k && !n.aot {
		return true
	}
	if allowed == "" {
		allowed = article(k.String())
	}
	if n.aot {
		d.add(n, true, SevError, key, allowed, "arrays of tables ([[...]]) are not used in profiles")
		return false
	}
	d.errf(n, key, allowed, "expected %s, got %s", article(k.String()), describe(n))
	return false
}

func (d *decoder) str(key string, n *node) (string, bool) {
	if !d.want(key, n, kString, "") {
		return "", false
	}
	return n.str, true
}

func (d *decoder) enum(key string, n *node, allowed ...string) (string, bool) {
	if !d.want(key, n, kString, quoteAll(allowed)) {
		return "", false
	}
	s := n.str
	for _, a := range allowed {
		if s == a {
			return s, true
		}
	}
	d.errf(n, key, quoteAll(allowed), "%q is not a valid value", s)
	return "", false
}

func quoteAll(ss []string) string {
	q := make([]string, len(ss))
	for i, s := range ss {
		q[i] = strconv.Quote(s)
	}
	return strings.Join(q, ", ")
}

func rangeText(lo, hi int64) string {
	if hi == math.MaxInt64 {
		return fmt.Sprintf("%d or more", lo)
	}
	return fmt.Sprintf("%d..%d", lo, hi)
}

func (d *decoder) int(key string, n *node, lo, hi int64) (int64, bool) {
	if n.kind != kInt {
		d.errf(n, key, rangeText(lo, hi), "expected an integer, got %s", describe(n))
		return 0, false
	}
	if n.i < lo || n.i > hi {
		d.errf(n, key, rangeText(lo, hi), "%d is out of range", n.i)
		return 0, false
	}
	return n.i, true
}

func (d *decoder) intp(key string, n *node, lo, hi int64) *int {
	v, ok := d.int(key, n, lo, hi)
	if !ok {
		return nil
	}
	i := int(v)
	return &i
}

func (d *decoder) bool(key string, n *node) (bool, bool) {
	if !d.want(key, n, kBool, "true or false") {
		return false, false
	}
	return n.b, true
}

func (d *decoder) float(key string, n *node, lo, hi float64) (float64, bool) {
	var f float64
	switch n.kind {
	case kFloat:
		f = n.f
	case kInt:
		f = float64(n.i)
	default:
		d.errf(n, key, fmt.Sprintf("%g..%g", lo, hi), "expected a number, got %s", describe(n))
		return 0, false
	}
	if math.IsNaN(f) || f < lo || f > hi {
		d.errf(n, key, fmt.Sprintf("%g..%g", lo, hi), "%s is out of range", describe(n))
		return 0, false
	}
	return f, true
}

func (d *decoder) duration(key string, n *node, lo, hi time.Duration) (time.Duration, bool) {
	allowed := fmt.Sprintf("a duration like \"200ms\" or \"60s\", %v..%v", lo, hi)
	if n.kind != kString {
		d.errf(n, key, allowed, "expected a duration string, got %s", describe(n))
		return 0, false
	}
	v, err := ParseDuration(n.str)
	if err != nil {
		d.errf(n, key, allowed, "%v", err)
		return 0, false
	}
	if v < lo || v > hi {
		d.errf(n, key, allowed, "%v is out of range", v)
		return 0, false
	}
	return v, true
}

func (d *decoder) size(key string, n *node, hi Size) (Size, bool) {
	allowed := fmt.Sprintf("bytes as an integer or a string like \"130KiB\", at most %v", hi)
	var v Size
	switch n.kind {
	case kInt:
		if n.i < 0 {
			d.errf(n, key, allowed, "%d is negative", n.i)
			return 0, false
		}
		v = Size(n.i)
	case kString:
		s, err := ParseSize(n.str)
		if err != nil {
			d.errf(n, key, allowed, "%v", err)
			return 0, false
		}
		v = s
	default:
		d.errf(n, key, allowed, "expected a size, got %s", describe(n))
		return 0, false
	}
	if v > hi {
		d.errf(n, key, allowed, "%v is too large", v)
		return 0, false
	}
	return v, true
}

func (d *decoder) strings(key string, n *node) ([]string, bool) {
	if !d.want(key, n, kArray, "an array of strings") {
		return nil, false
	}
	out := make([]string, 0, len(n.arr))
	ok := true
	for i, el := range n.arr {
		s, good := d.str(fmt.Sprintf("%s[%d]", key, i), el)
		ok = ok && good
		out = append(out, s)
	}
	return out, ok
}

func (d *decoder) globs(key string, n *node) []string {
	gs, ok := d.strings(key, n)
	if !ok {
		return nil
	}
	for i, g := range gs {
		if _, err := path.Match(g, ""); err != nil || g == "" {
			d.errf(n.arr[i], fmt.Sprintf("%s[%d]", key, i), "shell globs such as \"ens*np0\" or \"mlx5_[0-3]\"", "%q is not a valid pattern", g)
		}
	}
	return gs
}

// prioSet decodes a list of distinct priorities 0..7.
func (d *decoder) prioSet(key string, n *node) *PrioSet {
	if !d.want(key, n, kArray, "an array of priorities 0..7, e.g. [3]") {
		return nil
	}
	var s PrioSet
	ok := true
	for i, el := range n.arr {
		k := fmt.Sprintf("%s[%d]", key, i)
		p, good := d.int(k, el, 0, 7)
		if !good {
			ok = false
			continue
		}
		if s.Has(int(p)) {
			d.errf(el, k, "each priority once", "priority %d is listed twice", p)
			ok = false
		}
		s |= 1 << p
	}
	if !ok {
		return nil
	}
	return &s
}

// array8 checks that n is an array of exactly eight elements (one per
// priority, TC or buffer) and calls fn on each.
func (d *decoder) array8(key string, n *node, what string, fn func(i int, k string, el *node) bool) bool {
	if !d.want(key, n, kArray, "an array of 8 values, one per "+what) {
		return false
	}
	if len(n.arr) != 8 {
		d.errf(n, key, "exactly 8 values, one per "+what, "has %d values", len(n.arr))
		return false
	}
	ok := true
	for i, el := range n.arr {
		if !fn(i, fmt.Sprintf("%s[%d]", key, i), el) {
			ok = false
		}
	}
	return ok
}

func (d *decoder) ints8(key string, n *node, what string, lo, hi int64) (*[8]int, bool) {
	var out [8]int
	ok := d.array8(key, n, what, func(i int, k string, el *node) bool {
		v, good := d.int(k, el, lo, hi)
		out[i] = int(v)
		return good
	})
	return &out, ok
}

// decodeProfile fills p from the merged tree.
func (d *decoder) decodeProfile(root *node, p *Profile) {
	d.fields("", root, []field{
		{"name", func(k string, v *node) {
			if s, ok := d.str(k, v); ok {
				if !profileName.ok(s) {
					d.errf(v, k, "letters, digits, '.', '_' and '-', 1..64 characters", "%q is not a valid profile name", s)
				}
				p.Name = s
			}
		}},
		{"description", func(k string, v *node) { p.Description, _ = d.str(k, v) }},
		{"include", func(k string, v *node) { d.strings(k, v) }}, // resolved by the loader
		{"match", func(k string, v *node) { d.match(k, v, &p.Match) }},
		{"link", func(k string, v *node) { d.link(k, v, &p.Link) }},
		{"qos", func(k string, v *node) { d.qos(k, v, &p.QoS) }},
		{"buffers", func(k string, v *node) { d.buffers(k, v, &p.Buffers) }},
		{"ecn", func(k string, v *node) { d.ecn(k, v, &p.ECN) }},
		{"roce", func(k string, v *node) { d.roce(k, v, &p.RoCE) }},
		{"devlink", func(k string, v *node) { d.devlink(k, v, p) }},
		{"firmware", func(k string, v *node) { d.firmware(k, v, &p.Firmware) }},
		{"nccl", func(k string, v *node) { d.nccl(k, v, &p.NCCL) }},
		{"classes", func(k string, v *node) { p.Classes = d.classes(k, v) }},
		{"verify", func(k string, v *node) { d.verify(k, v, &p.Verify) }},
		{"guard", func(k string, v *node) { d.guard(k, v, &p.Guard) }},
	})
}

// nameRule is the form of a name: a fixed prefix, then 1..max bytes from
// chars. Not a regexp: compiling x{1,64} unrolls 64 copies of x, and four
// such patterns cost every rocectl process half a millisecond at start-up.
type nameRule struct {
	prefix, chars string
	max           int
}

func (r nameRule) ok(s string) bool {
	rest, found := strings.CutPrefix(s, r.prefix)
	if !found || len(rest) == 0 || len(rest) > r.max {
		return false
	}
	for i := 0; i < len(rest); i++ {
		if strings.IndexByte(r.chars, rest[i]) < 0 {
			return false
		}
	}
	return true
}

const (
	lowerDigits = "abcdefghijklmnopqrstuvwxyz0123456789"
	upperDigits = "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
)

var profileName = nameRule{chars: lowerDigits + upperDigits + "._-", max: 64}

func (d *decoder) match(key string, n *node, m *Match) {
	d.fields(key, n, []field{
		{"drivers", func(k string, v *node) { m.Drivers = d.globs(k, v) }},
		{"netdevs", func(k string, v *node) { m.Netdevs = d.globs(k, v) }},
		{"rdma_devices", func(k string, v *node) { m.RDMADevices = d.globs(k, v) }},
		{"pci", func(k string, v *node) { m.PCI = d.globs(k, v) }},
		{"roles", func(k string, v *node) { m.Roles = d.roles(k, v) }},
	})
}

// roles decodes [match] roles: a non-empty list of port roles.
func (d *decoder) roles(key string, n *node) []string {
	if !d.want(key, n, kArray, "an array of roles") {
		return nil
	}
	out := make([]string, 0, len(n.arr))
	for i, el := range n.arr {
		if r, ok := d.enum(fmt.Sprintf("%s[%d]", key, i), el, port.RolePF, port.RoleVF, port.RoleBond, port.RoleVirtual); ok {
			out = append(out, r)
		}
	}
	if len(n.arr) == 0 {
		d.errf(n, key, "at least one of \"pf\", \"vf\", \"bond\", \"virtual\"", "an empty list matches no port")
	}
	return out
}

var privFlagName = nameRule{chars: lowerDigits + upperDigits + "_.-", max: 32}

func (d *decoder) link(key string, n *node, l *Link) {
	d.fields(key, n, []field{
		// 68 is the IPv4 minimum; 9978 is the largest MTU mlx5 accepts.
		// The NIC's own maximum is checked against the host at plan time.
		{"mtu", func(k string, v *node) { l.MTU = d.intp(k, v, 68, 9978) }},
		{"rx_ring", func(k string, v *node) { l.RxRing = d.intp(k, v, 1, 65536) }},
		{"tx_ring", func(k string, v *node) { l.TxRing = d.intp(k, v, 1, 65536) }},
		{"private_flags", func(k string, v *node) {
			d.freeTable(k, v, "a table of flag = true|false", privFlagName, "an ethtool private flag name such as rx_cqe_compress", "a private flag name",
				func(fk, name string, el *node) {
					if b, ok := d.bool(fk, el); ok {
						l.PrivateFlags = append(l.PrivateFlags, Flag{name, b})
					}
				})
		}},
	})
}

// TSA names as iproute2's dcb prints them.
// Transmission selection algorithms, as a profile's qos.ets.tc_tsa names
// them (IEEE 802.1Qaz; the kernel's IEEE_8021QAZ_TSA_* values are nic/dcb's).
const (
	TSAStrict = "strict"
	TSAETS    = "ets"
	TSAVendor = "vendor"
	TSACBS    = "cbs"
)

var tsaNames = []string{TSAStrict, TSAETS, TSAVendor, TSACBS}

func (d *decoder) qos(key string, n *node, q *QoS) {
	d.fields(key, n, []field{
		{"dcbx", func(k string, v *node) {
			if s, ok := d.enum(k, v, "host", "firmware"); ok {
				q.DCBX = &s
			}
		}},
		{"trust", func(k string, v *node) {
			if s, ok := d.enum(k, v, "pcp", "dscp"); ok {
				q.Trust = &s
			}
		}},
		{"dscp_to_priority", func(k string, v *node) { q.DSCPToPriority = d.dscpMap(k, v) }},
		{"pfc_priorities", func(k string, v *node) { q.PFCPriorities = d.prioSet(k, v) }},
		{"global_pause", func(k string, v *node) {
			if b, ok := d.bool(k, v); ok {
				q.GlobalPause = &b
			}
		}},
		{"pfc_storm_prevention", func(k string, v *node) { q.PFCStormPrevention = d.storm(k, v) }},
		{"cable_length_m", func(k string, v *node) { q.CableLengthM = d.intp(k, v, 1, 999) }},
		{"ets", func(k string, v *node) { q.ETS = d.ets(k, v) }},
	})
}

func (d *decoder) dscpMap(key string, n *node) *DSCPMap {
	if n.kind == kString {
		if n.str != "default" {
			d.errf(n, key, `"default" (priority = DSCP >> 3) or a table such as { 26 = 3, 48 = 6 }`, "%q is not a valid value", n.str)
			return nil
		}
		return defaultDSCPMap()
	}
	if !d.want(key, n, kTable, `"default" or a table such as { 26 = 3, 48 = 6 }`) {
		return nil
	}
	m := &DSCPMap{Entries: map[int]int{}}
	seen := map[int]string{}
	ok := true
	for _, k := range n.tbl.keys {
		el := n.tbl.m[k]
		ek := join(key, k)
		dscp, err := strconv.Atoi(k)
		if err != nil || dscp < 0 || dscp > 63 {
			d.add(el, true, SevError, ek, "DSCP values 0..63 as keys", "%q is not a DSCP value", k)
			ok = false
			continue
		}
		if first, dup := seen[dscp]; dup {
			d.add(el, true, SevError, ek, "each DSCP once", "DSCP %d is already mapped by key %q", dscp, first)
			ok = false
			continue
		}
		seen[dscp] = k
		if p, good := d.int(ek, el, 0, 7); good {
			m.Entries[dscp] = int(p)
		} else {
			ok = false
		}
	}
	if len(m.Entries) == 0 && ok {
		d.errf(n, key, `"default" or at least one entry`, "the table is empty")
		return nil
	}
	if !ok {
		return nil
	}
	return m
}

func (d *decoder) storm(key string, n *node) *StormPrevention {
	const allowed = `"off", "auto" (100 ms) or milliseconds 80..8000`
	switch n.kind {
	case kString:
		switch n.str {
		case "off":
			return &StormPrevention{Off: true}
		case "auto":
			return &StormPrevention{Auto: true}
		}
		d.errf(n, key, allowed, "%q is not a valid value", n.str)
	case kInt:
		if n.i < 80 || n.i > 8000 {
			d.errf(n, key, allowed, "%d ms is out of range", n.i)
			return nil
		}
		return &StormPrevention{MS: int(n.i)}
	default:
		d.errf(n, key, allowed, "expected a string or an integer, got %s", describe(n))
	}
	return nil
}

func (d *decoder) ets(key string, n *node) *ETS {
	var e ETS
	seen := map[string]bool{}
	ok := true
	d.fields(key, n, []field{
		{"priority_to_tc", func(k string, v *node) {
			seen["priority_to_tc"] = true
			arr, good := d.ints8(k, v, "priority", 0, 7)
			ok = ok && good
			if good {
				e.PriorityToTC = *arr
			}
		}},
		{"tc_tsa", func(k string, v *node) {
			seen["tc_tsa"] = true
			ok = d.array8(k, v, "traffic class", func(i int, ek string, el *node) bool {
				s, good := d.enum(ek, el, tsaNames...)
				e.TCTSA[i] = s
				return good
			}) && ok
		}},
		{"tc_bandwidth", func(k string, v *node) {
			seen["tc_bandwidth"] = true
			arr, good := d.ints8(k, v, "traffic class", 0, 100)
			ok = ok && good
			if good {
				e.TCBandwidth = *arr
			}
		}},
	})
	if n.kind != kTable {
		return nil
	}
	for _, req := range []string{"priority_to_tc", "tc_tsa", "tc_bandwidth"} {
		if !seen[req] {
			d.add(n, true, SevError, join(key, req), "", "missing: [qos.ets] needs priority_to_tc, tc_tsa and tc_bandwidth together")
			ok = false
		}
	}
	if !ok {
		return nil
	}
	return &e
}

// maxBufferSize bounds one receive buffer; real ports have well under 1 MiB
// in total, and the exact total is checked against the host at plan time.
const maxBufferSize = 16 << 20

func (d *decoder) buffers(key string, n *node, b *Buffers) {
	d.fields(key, n, []field{
		{"priority_to_buffer", func(k string, v *node) {
			if arr, ok := d.ints8(k, v, "priority", 0, 7); ok {
				b.PriorityToBuffer = arr
			}
		}},
		{"buffer_size", func(k string, v *node) {
			var out [8]Size
			if d.array8(k, v, "buffer", func(i int, ek string, el *node) bool {
				s, good := d.size(ek, el, maxBufferSize)
				out[i] = s
				return good
			}) {
				b.BufferSize = &out
			}
		}},
	})
}

// DCQCNSpec describes one DCQCN parameter: its OFED sysfs directory and name,
// the upstream debugfs name, and its valid range (PRM field width, narrowed
// where mstflint documents the meaning). Source: the reference's §A2.2.
type DCQCNSpec struct {
	Name     string // OFED sysfs name, used in profiles
	Dir      string // "rp" or "np"
	Upstream string // upstream debugfs cc_params name; "" if none
	Min, Max int64
	Unit     string
}

const u32max = 1<<32 - 1

// DCQCNParams lists every parameter [ecn.dcqcn] accepts.
var DCQCNParams = []DCQCNSpec{
	{"clamp_tgt_rate", "rp", "rp_clamp_tgt_rate", 0, 1, "bool"},
	{"clamp_tgt_rate_after_time_inc", "rp", "rp_clamp_tgt_rate_ati", 0, 1, "bool"},
	{"rpg_time_reset", "rp", "rp_time_reset", 0, u32max, "µs"},
	{"rpg_byte_reset", "rp", "rp_byte_reset", 0, u32max, "bytes, 0 = off"},
	{"rpg_threshold", "rp", "rp_threshold", 1, 31, "count"},
	{"rpg_max_rate", "rp", "rp_max_rate", 0, u32max, "Mbps, 0 = port speed"},
	{"rpg_ai_rate", "rp", "rp_ai_rate", 0, u32max, "Mbps"},
	{"rpg_hai_rate", "rp", "rp_hai_rate", 0, u32max, "Mbps"},
	{"rpg_gd", "rp", "rp_gd", 0, 15, "log2"},
	{"rpg_min_dec_fac", "rp", "rp_min_dec_fac", 1, 100, "%"},
	{"rpg_min_rate", "rp", "rp_min_rate", 0, u32max, "Mbps"},
	{"rate_to_set_on_first_cnp", "rp", "rp_rate_to_set_on_first_cnp", 0, u32max, "Mbps, 0 = line rate"},
	{"dce_tcp_g", "rp", "rp_dce_tcp_g", 0, 1023, "1/1024"},
	{"dce_tcp_rtt", "rp", "rp_dce_tcp_rtt", 0, u32max, "µs"},
	{"rate_reduce_monitor_period", "rp", "rp_rate_reduce_monitor_period", 0, u32max, "µs"},
	{"initial_alpha_value", "rp", "rp_initial_alpha_value", 0, 1023, "1/1024"},
	{"min_time_between_cnps", "np", "np_min_time_between_cnps", 0, u32max, "µs"},
}

// DCQCNSpecByName finds a parameter's spec.
func DCQCNSpecByName(name string) (DCQCNSpec, bool) {
	for _, s := range DCQCNParams {
		if s.Name == name {
			return s, true
		}
	}
	return DCQCNSpec{}, false
}

func (d *decoder) ecn(key string, n *node, e *ECN) {
	d.fields(key, n, []field{
		{"mode", func(k string, v *node) {
			if s, ok := d.enum(k, v, CCModes...); ok {
				e.Mode = &s
			}
		}},
		{"rp_priorities", func(k string, v *node) { e.RPPriorities = d.prioSet(k, v) }},
		{"np_priorities", func(k string, v *node) { e.NPPriorities = d.prioSet(k, v) }},
		{"cnp_dscp", func(k string, v *node) { e.CNPDSCP = d.intp(k, v, 0, 63) }},
		{"cnp_priority", func(k string, v *node) { e.CNPPriority = d.intp(k, v, 0, 7) }},
		{"dcqcn", func(k string, v *node) {
			fs := make([]field, 0, len(DCQCNParams))
			for _, s := range DCQCNParams {
				s := s
				fs = append(fs, field{s.Name, func(fk string, fv *node) {
					if s.Min == 0 && s.Max == 1 && fv.kind == kBool { // the flags read better as booleans
						v := int64(0)
						if fv.b {
							v = 1
						}
						e.DCQCN = append(e.DCQCN, DCQCNParam{s.Name, v})
						return
					}
					if val, ok := d.int(fk, fv, s.Min, s.Max); ok {
						e.DCQCN = append(e.DCQCN, DCQCNParam{s.Name, val})
					}
				}})
			}
			d.fields(k, v, fs)
		}},
	})
}

func (d *decoder) roce(key string, n *node, r *RoCE) {
	d.fields(key, n, []field{
		{"mode", func(k string, v *node) {
			if s, ok := d.enum(k, v, "v1", "v2"); ok {
				r.Mode = &s
			}
		}},
		{"default_tos", func(k string, v *node) { r.DefaultTOS = d.intp(k, v, 0, 255) }},
		{"verbs_traffic_class", func(k string, v *node) { r.VerbsTrafficClass = d.intp(k, v, 0, 255) }},
	})
}

func (d *decoder) firmware(key string, n *node, f *Firmware) {
	boolp := func(k string, v *node) *bool {
		if b, ok := d.bool(k, v); ok {
			return &b
		}
		return nil
	}
	d.fields(key, n, []field{
		{"cc_priorities", func(k string, v *node) { f.CCPriorities = d.prioSet(k, v) }},
		{"cnp_dscp", func(k string, v *node) { f.CNPDSCP = d.intp(k, v, 0, 63) }},
		{"cnp_priority", func(k string, v *node) { f.CNPPriority = d.intp(k, v, 0, 7) }},
		{"ats", func(k string, v *node) { f.ATS = boolp(k, v) }},
		{"advanced_pci_settings", func(k string, v *node) { f.AdvancedPCISettings = boolp(k, v) }},
	})
}

var devlinkName = nameRule{chars: lowerDigits + "_", max: 64}

func (d *decoder) devlink(key string, n *node, p *Profile) {
	d.freeTable(key, n, "a table of parameter = value", devlinkName, "a devlink parameter name such as enable_roce", "a devlink parameter name",
		func(k, name string, el *node) {
			switch el.kind {
			case kBool:
				p.Devlink = append(p.Devlink, DevlinkParam{name, el.b})
			case kInt:
				if el.i < 0 || el.i > u32max {
					d.errf(el, k, rangeText(0, u32max), "%d is out of range", el.i)
					return
				}
				p.Devlink = append(p.Devlink, DevlinkParam{name, el.i})
			case kString:
				p.Devlink = append(p.Devlink, DevlinkParam{name, el.str})
			default:
				d.errf(el, k, "a boolean, an integer or a string", "expected a parameter value, got %s", describe(el))
			}
		})
}

func (d *decoder) verify(key string, n *node, v *VerifySpec) {
	d.fields(key, n, []field{
		{"loopback", func(k string, x *node) { v.Loopback, _ = d.bool(k, x) }},
		{"min_bandwidth_gbps", func(k string, x *node) {
			if f, ok := d.float(k, x, 0, 3200); ok {
				v.MinBandwidthGbps = f
			}
		}},
		{"retries", func(k string, x *node) {
			if i, ok := d.int(k, x, 1, 60); ok {
				v.Retries = int(i)
			}
		}},
		{"retry_interval", func(k string, x *node) {
			if t, ok := d.duration(k, x, 10*time.Millisecond, time.Minute); ok {
				v.RetryInterval = t
			}
		}},
		{"duration", func(k string, x *node) {
			if t, ok := d.duration(k, x, 10*time.Millisecond, 10*time.Minute); ok {
				v.Duration = t
			}
		}},
		{"message_size", func(k string, x *node) {
			if s, ok := d.size(k, x, 1<<30); ok {
				if s == 0 {
					d.errf(x, k, "1 byte or more", "message size 0")
					return
				}
				v.MessageSize = s
			}
		}},
	})
}

func (d *decoder) guard(key string, n *node, g *GuardSpec) {
	d.fields(key, n, []field{
		{"enabled", func(k string, x *node) { g.Enabled, _ = d.bool(k, x) }},
		{"soak", func(k string, x *node) {
			if t, ok := d.duration(k, x, 0, 24*time.Hour); ok {
				g.Soak = t
			}
		}},
		// Poll and detection ranges are SONiC pfcwd's.
		{"poll", func(k string, x *node) {
			if t, ok := d.duration(k, x, 100*time.Millisecond, time.Second); ok {
				g.Poll = t
			}
		}},
		{"detection_time", func(k string, x *node) {
			if t, ok := d.duration(k, x, 100*time.Millisecond, 5*time.Second); ok {
				g.DetectionTime = t
			}
		}},
		{"max_pause_occupancy", func(k string, x *node) {
			if f, ok := d.float(k, x, 0.01, 1); ok {
				g.MaxPauseOccupancy = f
			}
		}},
		{"max_pause_frames_per_second", func(k string, x *node) {
			if f, ok := d.float(k, x, 0, 1e9); ok {
				g.MaxPauseFramesPerSecond = f
			}
		}},
	})
}

// ECNUpstreamName maps an OFED ECN parameter name (rpg_ai_rate, cnp_dscp,
// cnp_802p_prio) to upstream mlx5's debugfs cc_params name, "" if none.
func ECNUpstreamName(name string) string {
	switch name {
	case "cnp_dscp":
		return "np_cnp_dscp"
	case "cnp_802p_prio":
		return "np_cnp_prio"
	case "cnp_prio_mode": // no profile key: the planner manages it with cnp_priority
		return "np_cnp_prio_mode"
	}
	if s, ok := DCQCNSpecByName(name); ok {
		return s.Upstream
	}
	return ""
}
