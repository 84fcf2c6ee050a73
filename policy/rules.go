package policy

import (
	"fmt"
	"strconv"
	"strings"
)

// checkRules applies the cross-field rules: things that are each valid alone
// but wrong together. It runs alongside the decoder's own errors, so one
// validate run reports every problem: a rule is skipped only when an input
// it needs failed to decode (p.failed). Where a rule's verdict cannot
// depend on a broken element, it uses the elements that did decode: with
// pfc_priorities = [3, 9], cnp_priority = 3 is wrong whatever 9 becomes.
func checkRules(p *Profile, root *table) Diagnostics {
	r := &decoder{pos: p.pos}
	at := func(key string) *node { return lookup(root, key) }
	// elem is the i-th element of an array key, so a message points at the
	// value it is about.
	elem := func(key string, i int) *node {
		n := at(key)
		if n != nil && n.kind == kArray && i < len(n.arr) {
			return n.arr[i]
		}
		return n
	}
	q, e := &p.QoS, &p.ECN
	// pfc is the set of PFC priorities that decoded: all of them, or, when
	// an element is broken, the others; pfcSome says the list names at
	// least one priority, broken or not.
	pfc, pfcSome := q.PFCPriorities, q.PFCPriorities != nil && *q.PFCPriorities != 0
	if pfc == nil {
		if n := at("qos.pfc_priorities"); n != nil && n.kind == kArray {
			pfc, pfcSome = cleanPrios("qos.pfc_priorities", n), len(n.arr) > 0
		}
	}

	// PFC data priorities must not carry CNPs: a CNP paused behind the very
	// congestion it reports arrives too late to help.
	if e.CNPPriority != nil && pfc != nil && pfc.Has(*e.CNPPriority) {
		r.errf(at("ecn.cnp_priority"), "ecn.cnp_priority", "a priority not in qos.pfc_priorities "+prioText(*pfc),
			"CNP priority %d is also a PFC data priority", *e.CNPPriority)
	}

	// The firmware's boot-time CNP priority, likewise.
	if f := p.Firmware.CNPPriority; f != nil && pfc != nil && pfc.Has(*f) {
		r.errf(at("firmware.cnp_priority"), "firmware.cnp_priority", "a priority not in qos.pfc_priorities "+prioText(*pfc),
			"CNP priority %d is also a PFC data priority", *f)
	}

	if q.GlobalPause != nil && *q.GlobalPause && pfcSome {
		r.errf(at("qos.global_pause"), "qos.global_pause", "false when qos.pfc_priorities is not empty",
			"global 802.3x pause and PFC are mutually exclusive on a port")
	}

	// A trust value that failed to decode was already reported; saying the
	// map has no effect would be a second error for the same typo.
	// A map with a broken entry is still a map: whether it has an effect
	// does not depend on its entries.
	trustBroken := q.Trust == nil && at("qos.trust") != nil
	if (q.DSCPToPriority != nil || at("qos.dscp_to_priority") != nil) && !trustBroken {
		if q.Trust == nil {
			if len(p.Classes) == 0 { // [classes] derive trust = "dscp"
				r.errf(at("qos.dscp_to_priority"), "qos.dscp_to_priority", `qos.trust = "dscp" alongside it`, "a DSCP map has no effect unless the port trusts DSCP")
			}
		} else if *q.Trust == "pcp" {
			r.errf(at("qos.dscp_to_priority"), "qos.dscp_to_priority", `qos.trust = "dscp", or remove dscp_to_priority`, "a DSCP map has no effect with trust = \"pcp\"")
		}
	}

	if q.ETS != nil {
		checkETS(r, q.ETS, func(tc int) *node { return elem("qos.ets.tc_bandwidth", tc) }, at("qos.ets.tc_bandwidth"))
	}

	// Element by element: a broken buffer size elsewhere does not change
	// that PFC priority 3 lands in a buffer of size 0.
	p2b := cleanInts8("buffers.priority_to_buffer", at("buffers.priority_to_buffer"), p.Buffers.PriorityToBuffer, func(d *decoder, k string, el *node) (int, bool) {
		v, ok := d.int(k, el, 0, 7)
		return int(v), ok
	})
	sizes := cleanInts8("buffers.buffer_size", at("buffers.buffer_size"), p.Buffers.BufferSize, func(d *decoder, k string, el *node) (Size, bool) {
		return d.size(k, el, maxBufferSize)
	})
	if p2b != nil && sizes != nil && pfc != nil {
		for _, prio := range pfc.List() {
			if p2b[prio] == nil {
				continue
			}
			buf := *p2b[prio]
			if s := sizes[buf]; s != nil && *s == 0 {
				r.errf(elem("buffers.buffer_size", buf), fmt.Sprintf("buffers.buffer_size[%d]", buf), "a non-zero size for every buffer a PFC priority uses",
					"PFC priority %d uses buffer %d, whose size is 0", prio, buf)
			}
		}
	}

	// A TOS is DSCP << 2 | ECN: with congestion control on, RoCE traffic
	// must be ECN-capable (ECT(0), ECN bits 10), or a marking switch has
	// nothing to mark and DCQCN never reacts; ECN 11 (CE) would read as
	// congestion on every packet. The arithmetic goes in the message:
	// operators get it wrong ("104 for DSCP 26").
	ccOn := e.Mode == nil && (e.RPPriorities != nil && *e.RPPriorities != 0 || e.NPPriorities != nil && *e.NPPriorities != 0) ||
		e.Mode != nil && *e.Mode != CCOff
	if ccOn {
		ecnCheck := func(key string, tos int) {
			dscp, bits := tos>>2, tos&3
			want := dscp<<2 | 2
			switch bits {
			case 0:
				r.warnf(at(key), key, fmt.Sprintf("%d (DSCP %d << 2 | ECN 10, ECT(0))", want, dscp),
					"TOS %d = DSCP %d << 2 | ECN 00: not ECN-capable, so congestion is never marked and DCQCN never reacts", tos, dscp)
			case 3:
				r.warnf(at(key), key, fmt.Sprintf("%d (DSCP %d << 2 | ECN 10, ECT(0))", want, dscp),
					"TOS %d = DSCP %d << 2 | ECN 11: CE, every packet already reads as congestion experienced", tos, dscp)
			}
		}
		if v := p.RoCE.DefaultTOS; v != nil {
			ecnCheck("roce.default_tos", *v)
		}
		if v := p.RoCE.VerbsTrafficClass; v != nil {
			ecnCheck("roce.verbs_traffic_class", *v)
		}
		if v, ok := p.NCCL.Var("IB_TC"); ok {
			if tc, err := strconv.Atoi(v); err == nil {
				ecnCheck("nccl.IB_TC", tc)
			}
		}
	}

	// Which priority RoCE traffic lands on, under the profile's own map.
	dmap := q.DSCPToPriority
	if dmap == nil && q.Trust != nil && *q.Trust == "dscp" {
		dmap = defaultDSCPMap()
	}
	if dmap != nil && q.PFCPriorities != nil && *q.PFCPriorities != 0 {
		check := func(key string, tos int) {
			dscp := tos >> 2
			prio, ok := dmap.Priority(dscp)
			switch {
			case !ok:
				r.warnf(at(key), key, "a TOS whose DSCP (TOS >> 2) is in qos.dscp_to_priority",
					"TOS %d is DSCP %d, which qos.dscp_to_priority does not map", tos, dscp)
			case !q.PFCPriorities.Has(prio):
				r.warnf(at(key), key, "a TOS whose DSCP maps to a PFC priority "+prioText(*q.PFCPriorities),
					"TOS %d is DSCP %d, which maps to priority %d: not lossless", tos, dscp, prio)
			}
		}
		if v := p.RoCE.DefaultTOS; v != nil {
			check("roce.default_tos", *v)
		}
		if v := p.RoCE.VerbsTrafficClass; v != nil {
			check("roce.verbs_traffic_class", *v)
		}
		if v, ok := p.NCCL.Var("IB_TC"); ok {
			if tc, err := strconv.Atoi(v); err == nil {
				check("nccl.IB_TC", tc)
			}
		}
		if e.CNPDSCP != nil && e.CNPPriority != nil {
			if prio, ok := dmap.Priority(*e.CNPDSCP); ok && prio != *e.CNPPriority {
				r.warnf(at("ecn.cnp_dscp"), "ecn.cnp_dscp", fmt.Sprintf("a DSCP that maps to cnp_priority %d", *e.CNPPriority),
					"CNP DSCP %d maps to priority %d on receiving hosts, not to cnp_priority %d", *e.CNPDSCP, prio, *e.CNPPriority)
			}
		}
	}

	// mode = "off" is PFC-only: ECN off on the lossless priorities. It
	// needs them, and a list that turns ECN on for one contradicts it.
	off := e.Mode != nil && *e.Mode == CCOff
	if off && !pfcSome && at("qos.pfc_priorities") == nil {
		r.warnf(at("ecn.mode"), "ecn.mode", "qos.pfc_priorities alongside it, or another mode",
			`mode = "off" turns congestion control off on the lossless priorities, and the profile has none: RoCE would run with neither`)
	}
	for _, set := range []struct {
		key string
		s   *PrioSet
	}{{"ecn.rp_priorities", e.RPPriorities}, {"ecn.np_priorities", e.NPPriorities}} {
		if !off || set.s == nil || pfc == nil {
			continue
		}
		for _, prio := range pfc.List() {
			if set.s.Has(prio) {
				r.errf(at(set.key), set.key, "the priorities without PFC only, or leave it out",
					`mode = "off" turns ECN off on PFC priority %d, which this list turns on`, prio)
			}
		}
	}
	if off && len(e.DCQCN) > 0 {
		r.warnf(at("ecn.dcqcn"), "ecn.dcqcn", "leave [ecn.dcqcn] out",
			`DCQCN parameters tune an algorithm that mode = "off" turns off on the lossless priorities`)
	}

	// Lossless priorities usually want ECN too, or PFC does all the work.
	for _, set := range []struct {
		key string
		s   *PrioSet
	}{{"ecn.np_priorities", e.NPPriorities}, {"ecn.rp_priorities", e.RPPriorities}} {
		if set.s == nil || q.PFCPriorities == nil || off {
			continue // with mode = "off", PFC alone is what was asked
		}
		for _, prio := range q.PFCPriorities.List() {
			if !set.s.Has(prio) {
				r.warnf(at(set.key), set.key, "include every PFC priority "+prioText(*q.PFCPriorities),
					"PFC priority %d has no ECN here: congestion on it is handled by pause frames alone", prio)
			}
		}
	}

	// The firmware's CC mask is which priorities DCQCN acts on at all: a
	// PFC priority left out of it is paused, never rate-limited, whatever
	// [ecn] says (on upstream kernels nothing else can turn it on).
	if f := p.Firmware.CCPriorities; f != nil && q.PFCPriorities != nil && !off {
		for _, prio := range q.PFCPriorities.List() {
			if !f.Has(prio) {
				r.warnf(at("firmware.cc_priorities"), "firmware.cc_priorities", "include every PFC priority "+prioText(*q.PFCPriorities),
					"PFC priority %d has no DCQCN in the firmware: congestion on it is handled by pause frames alone", prio)
			}
		}
	}
	// [firmware]'s CNP values are what the port starts with; [ecn]'s what
	// the driver is set to at run time. Different values flip at every
	// reboot until the next apply.
	for _, pair := range []struct {
		fw, ecn string
		f, e    *int
	}{{"firmware.cnp_dscp", "ecn.cnp_dscp", p.Firmware.CNPDSCP, e.CNPDSCP}, {"firmware.cnp_priority", "ecn.cnp_priority", p.Firmware.CNPPriority, e.CNPPriority}} {
		if pair.f != nil && pair.e != nil && *pair.f != *pair.e {
			r.warnf(at(pair.fw), pair.fw, fmt.Sprintf("the same value as %s (%d)", pair.ecn, *pair.e),
				"the firmware's boot-time %d differs from %s = %d: the port starts each boot with %d until the next apply", *pair.f, pair.ecn, *pair.e, *pair.f)
		}
	}

	if tc, ok := p.NCCL.Var("IB_TC"); ok && p.RoCE.DefaultTOS != nil && tc != strconv.Itoa(*p.RoCE.DefaultTOS) {
		r.warnf(at("nccl.IB_TC"), "nccl.IB_TC", "the same value as roce.default_tos, or leave IB_TC unset to derive it",
			"NCCL traffic class %s differs from roce.default_tos %d", tc, *p.RoCE.DefaultTOS)
	}

	checkNCCLGeneration(p, r, at)
	checkClasses(p, r, at)
	checkHandChain(p, r, at)

	// A poll or detection time that failed to decode left its default in
	// p.Guard: comparing that default would report a value nobody wrote.
	g := &p.Guard
	if g.Poll > g.DetectionTime && !p.failedKey("guard.poll") && !p.failedKey("guard.detection_time") {
		// Point at whichever of the two the profile wrote (poll first).
		if at("guard.poll") == nil && at("guard.detection_time") != nil {
			r.errf(at("guard.detection_time"), "guard.detection_time", fmt.Sprintf("at least guard.poll (%v, the default)", g.Poll),
				"detection time %v is shorter than the poll interval", g.DetectionTime)
		} else {
			r.errf(at("guard.poll"), "guard.poll", fmt.Sprintf("at most guard.detection_time (%v)", g.DetectionTime),
				"poll interval %v is longer than the detection time", g.Poll)
		}
	}
	return r.diags
}

// failedKey reports whether key, or an element or sub-key of it, failed to
// decode.
func (p *Profile) failedKey(key string) bool {
	for _, k := range p.failed {
		if k == key || strings.HasPrefix(k, key+"[") || strings.HasPrefix(k, key+".") {
			return true
		}
	}
	return false
}

// cleanPrios is the set of the elements of a priority array that decode on
// their own (a scratch decoder: their errors were reported already).
func cleanPrios(key string, n *node) *PrioSet {
	var s PrioSet
	scratch := &decoder{pos: map[string]Pos{}}
	for i, el := range n.arr {
		if v, ok := scratch.int(fmt.Sprintf("%s[%d]", key, i), el, 0, 7); ok {
			s |= 1 << v
		}
	}
	return &s
}

// cleanInts8 returns, per element of an eight-element array, its value
// when it decodes (decoded, when the whole array did), nil otherwise; nil
// when the array is absent or not eight elements long.
func cleanInts8[T any](key string, n *node, decoded *[8]T, dec func(d *decoder, k string, el *node) (T, bool)) *[8]*T {
	var out [8]*T
	if decoded != nil {
		for i := range decoded {
			out[i] = &decoded[i]
		}
		return &out
	}
	if n == nil || n.kind != kArray || len(n.arr) != 8 {
		return nil
	}
	scratch := &decoder{pos: map[string]Pos{}}
	for i, el := range n.arr {
		if v, ok := dec(scratch, fmt.Sprintf("%s[%d]", key, i), el); ok {
			out[i] = &v
		}
	}
	return &out
}

func checkETS(r *decoder, e *ETS, elem func(tc int) *node, n *node) {
	sum, anyETS := 0, false
	for tc := 0; tc < 8; tc++ {
		if e.TCTSA[tc] == "ets" {
			anyETS = true
			sum += e.TCBandwidth[tc]
		} else if e.TCBandwidth[tc] != 0 {
			r.errf(elem(tc), fmt.Sprintf("qos.ets.tc_bandwidth[%d]", tc), "0 for traffic classes that are not \"ets\"",
				"TC %d is %q but has bandwidth %d%%", tc, e.TCTSA[tc], e.TCBandwidth[tc])
		}
	}
	if anyETS && sum != 100 {
		r.errf(n, "qos.ets.tc_bandwidth", "ETS bandwidths that add up to 100", "ETS traffic classes add up to %d%%", sum)
	}
}

func prioText(s PrioSet) string {
	parts := make([]string, 0, 8)
	for _, p := range s.List() {
		parts = append(parts, strconv.Itoa(p))
	}
	return "[" + strings.Join(parts, ", ") + "]"
}

func defaultDSCPMap() *DSCPMap {
	m := &DSCPMap{Default: true, Entries: make(map[int]int, 64)}
	for dscp := 0; dscp < 64; dscp++ {
		m.Entries[dscp] = dscp >> 3
	}
	return m
}

// lookup finds the node at a dotted key path.
func lookup(t *table, key string) *node {
	parts := strings.Split(key, ".")
	for i, p := range parts {
		n := t.get(p)
		if n == nil {
			return nil
		}
		if i == len(parts)-1 {
			return n
		}
		if n.kind != kTable {
			return nil
		}
		t = n.tbl
	}
	return nil
}

// Var returns the value of an [nccl] variable (name without NCCL_).
func (c *NCCL) Var(name string) (string, bool) {
	for _, v := range c.Vars {
		if v.Name == name {
			return v.Value, true
		}
	}
	return "", false
}
