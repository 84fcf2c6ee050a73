package policy

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// Class is one [classes.<name>] table: a traffic class as intent, a DSCP
// and the priority it travels on, and whether that priority is lossless
// (PFC). The names data (RoCE traffic), cnp (congestion notification
// packets) and control (NCCL's CTS messages, NCCL_IB_FIFO_TC) have a
// meaning; any other name is a class of its own (storage, management)
// that only claims its DSCP and priority.
//
// From the classes rocectl derives every setting the profile leaves out
// (deriveClasses) and checks every one it spells out (checkClasses): the
// NIC's DSCP map and PFC set, the CNP marking, the rdma_cm TOS and NCCL's
// IB_TC, IB_FIFO_TC and IB_SL, all from one statement of intent.
type Class struct {
	Name     string
	DSCP     *int // nil: missing (an error)
	Priority *int // nil: missing (an error)
	Lossless bool
}

// Class names with a meaning.
const (
	ClassData    = "data"
	ClassCNP     = "cnp"
	ClassControl = "control"
)

// Class returns the named class, if the profile has it with both its
// DSCP and priority.
func (p *Profile) Class(name string) (Class, bool) {
	for _, c := range p.Classes {
		if c.Name == name && c.DSCP != nil && c.Priority != nil {
			return c, true
		}
	}
	return Class{}, false
}

// TOS is the class's TOS byte: DSCP << 2 | ECN, with ECT(0) (ECN bits
// 10) when congestion control runs, as DCQCN needs ECN-capable packets
// to mark.
func (c Class) TOS(ecnCapable bool) int {
	tos := *c.DSCP << 2
	if ecnCapable {
		tos |= 2
	}
	return tos
}

var className = nameRule{chars: lowerDigits + "_-", max: 32}

// classes decodes [classes]: a table of named classes, each a table of
// dscp, priority and lossless.
func (d *decoder) classes(key string, n *node) []Class {
	var out []Class
	d.freeTable(key, n, "a table of [classes.<name>] tables", className, "a class name: lower-case letters, digits, '_' and '-' (data, cnp, control, or your own)", "a class name",
		func(k, name string, el *node) {
			c := Class{Name: name}
			if !d.want(k, el, kTable, "a table with dscp, priority and lossless") {
				return
			}
			d.fields(k, el, []field{
				{"dscp", func(fk string, v *node) { c.DSCP = d.intp(fk, v, 0, 63) }},
				{"priority", func(fk string, v *node) { c.Priority = d.intp(fk, v, 0, 7) }},
				{"lossless", func(fk string, v *node) { c.Lossless, _ = d.bool(fk, v) }},
			})
			for _, req := range []string{"dscp", "priority"} {
				if el.tbl.get(req) == nil {
					d.add(el, true, SevError, k+"."+req, "", "missing: every class needs a DSCP and a priority")
				}
			}
			out = append(out, c)
		})
	return out
}

// ccOn says whether the profile runs congestion control on its RoCE
// traffic, so that its TOS must be ECN-capable: a mode other than "off",
// or, without a mode, reaction or notification on some priority. A
// profile that says nothing about [ecn] leaves the NIC's default, DCQCN
// on mlx5 and bnxt_re, in place: its traffic must be ECN-capable too.
func (p *Profile) ccOn() bool {
	e := &p.ECN
	if e.Mode != nil {
		return *e.Mode != CCOff
	}
	if e.RPPriorities != nil || e.NPPriorities != nil {
		return e.RPPriorities != nil && *e.RPPriorities != 0 || e.NPPriorities != nil && *e.NPPriorities != 0
	}
	return true
}

// tosText is the arithmetic of a TOS byte, as operators need it spelled
// out: "TOS 104 = DSCP 26 << 2 | ECN 00".
func tosText(tos int) string {
	return fmt.Sprintf("TOS %d = DSCP %d << 2 | ECN %02b", tos, tos>>2, tos&3)
}

// checkClasses holds the classes against each other and against every
// setting the profile spells out by hand (bad input, each at its
// position, all in one pass):
//   - a class without a DSCP or a priority (the decoder), two classes on
//     one DSCP, a profile with classes but no data class;
//   - two classes on one priority, one lossless and one not: PFC pauses
//     a priority, not a class;
//   - a CNP class on a lossless priority, or a lossless CNP class: a CNP
//     paused behind the congestion it reports arrives too late;
//   - a hand-written map, PFC set, CNP marking, TOS, FIFO class or SL
//     that disagrees with the classes: both sides, and the arithmetic.
func checkClasses(p *Profile, r *decoder, at func(string) *node) {
	if len(p.Classes) == 0 {
		return
	}
	node := func(c Class, field string) *node {
		if n := at("classes." + c.Name + "." + field); n != nil {
			return n
		}
		return at("classes." + c.Name)
	}
	var complete []Class
	for _, c := range p.Classes {
		if c.DSCP != nil && c.Priority != nil {
			complete = append(complete, c)
		}
	}
	if _, ok := p.Class(ClassData); !ok && !slices.ContainsFunc(p.Classes, func(c Class) bool { return c.Name == ClassData }) {
		r.add(at("classes"), true, SevError, "classes", "a [classes.data] table alongside the others", "no data class: the classes say nothing of where RoCE traffic travels")
	}
	lossless := PrioSet(0)
	for i, c := range complete {
		if c.Lossless {
			lossless |= 1 << *c.Priority
		}
		for _, o := range complete[:i] {
			if *o.DSCP == *c.DSCP {
				r.errf(node(c, "dscp"), "classes."+c.Name+".dscp", "a DSCP no other class has",
					"DSCP %d is also classes.%s's: one DSCP maps to one priority", *c.DSCP, o.Name)
			}
			if *o.Priority == *c.Priority && o.Lossless != c.Lossless {
				r.errf(node(c, "priority"), "classes."+c.Name+".priority", "another priority, or the same lossless as classes."+o.Name,
					"priority %d is also classes.%s's, which is %s, and this class is %s: PFC pauses a priority, not a class",
					*c.Priority, o.Name, losslessWord(o.Lossless), losslessWord(c.Lossless))
			}
		}
	}
	if _, ok := p.Class(ClassControl); ok && at("nccl") != nil && !p.NCCL.AtLeast(NCCLFifoTC) {
		r.warnf(at("classes.control"), "classes.control", `[nccl] generation "2.22" or later`,
			"NCCL_IB_FIFO_TC, which carries the control class, exists since NCCL 2.22.3; with generation %s rocectl does not write it", genText(p.NCCL.Generation))
	}
	if cnp, ok := p.Class(ClassCNP); ok {
		switch {
		case cnp.Lossless:
			r.errf(node(cnp, "lossless"), "classes.cnp.lossless", "false",
				"a lossless CNP class: a CNP paused behind the congestion it reports arrives too late to help")
		case lossless.Has(*cnp.Priority):
			r.errf(node(cnp, "priority"), "classes.cnp.priority", "a priority no lossless class uses, not in "+prioText(lossless),
				"CNP class on priority %d, a PFC priority (lossless classes: %s): a CNP paused behind the congestion it reports arrives too late to help", *cnp.Priority, prioText(lossless))
		case p.QoS.PFCPriorities != nil && p.QoS.PFCPriorities.Has(*cnp.Priority):
			r.errf(node(cnp, "priority"), "classes.cnp.priority", "a priority not in qos.pfc_priorities "+prioText(*p.QoS.PFCPriorities),
				"CNP class on priority %d, which qos.pfc_priorities makes a PFC priority: a CNP paused behind the congestion it reports arrives too late to help", *cnp.Priority)
		}
	}

	// What the profile spells out by hand, against the classes.
	q := &p.QoS
	if q.Trust != nil && *q.Trust == "pcp" {
		r.errf(at("qos.trust"), "qos.trust", `"dscp", or leave it out with [classes]`,
			"trust = \"pcp\" ignores the DSCPs the classes are defined by")
	}
	dmap, mapName := q.DSCPToPriority, "qos.dscp_to_priority"
	if dmap != nil && dmap.Default {
		mapName = "qos.dscp_to_priority (\"default\": priority = DSCP >> 3)"
	}
	if dmap != nil {
		for _, c := range complete {
			if prio, ok := dmap.Priority(*c.DSCP); !ok {
				r.errf(at("qos.dscp_to_priority"), "qos.dscp_to_priority", fmt.Sprintf("an entry %d = %d, or leave the map to the classes", *c.DSCP, *c.Priority),
					"classes.%s is DSCP %d on priority %d; the map does not map DSCP %d", c.Name, *c.DSCP, *c.Priority, *c.DSCP)
			} else if prio != *c.Priority {
				key := "qos.dscp_to_priority"
				if !dmap.Default && at(key+"."+strconv.Itoa(*c.DSCP)) != nil {
					key += "." + strconv.Itoa(*c.DSCP) // the entry itself
				}
				r.errf(at(key), key, fmt.Sprintf("DSCP %d → priority %d, or leave the map to the classes", *c.DSCP, *c.Priority),
					"classes.%s is DSCP %d on priority %d; %s sends DSCP %d to priority %d", c.Name, *c.DSCP, *c.Priority, mapName, *c.DSCP, prio)
			}
		}
	}
	if pfc := q.PFCPriorities; pfc != nil {
		for _, c := range complete {
			switch {
			case c.Lossless && !pfc.Has(*c.Priority):
				r.errf(at("qos.pfc_priorities"), "qos.pfc_priorities", "the lossless classes' priorities "+prioText(lossless)+", or leave it to the classes",
					"classes.%s is lossless on priority %d, which qos.pfc_priorities %s leaves without PFC", c.Name, *c.Priority, prioText(*pfc))
			case !c.Lossless && c.Name != ClassCNP && pfc.Has(*c.Priority) && !lossless.Has(*c.Priority):
				r.errf(at("qos.pfc_priorities"), "qos.pfc_priorities", "the lossless classes' priorities "+prioText(lossless)+", or leave it to the classes",
					"qos.pfc_priorities %s pauses priority %d, which classes.%s says is not lossless", prioText(*pfc), *c.Priority, c.Name)
			}
		}
	}
	if cnp, ok := p.Class(ClassCNP); ok {
		if v := p.ECN.CNPDSCP; v != nil && *v != *cnp.DSCP {
			r.errf(at("ecn.cnp_dscp"), "ecn.cnp_dscp", fmt.Sprintf("%d, classes.cnp's, or leave it to the classes", *cnp.DSCP),
				"CNP DSCP %d here, DSCP %d in classes.cnp", *v, *cnp.DSCP)
		}
		if v := p.ECN.CNPPriority; v != nil && *v != *cnp.Priority {
			r.errf(at("ecn.cnp_priority"), "ecn.cnp_priority", fmt.Sprintf("%d, classes.cnp's, or leave it to the classes", *cnp.Priority),
				"CNP priority %d here, priority %d in classes.cnp", *v, *cnp.Priority)
		}
	}
	ect := p.ccOn()
	tosAgainst := func(key string, tos int, c Class) {
		want := c.TOS(ect)
		if tos>>2 == *c.DSCP {
			return // the ECN bits are the ECN rule's (a warning with the arithmetic)
		}
		where := ""
		if dmap != nil {
			if prio, ok := dmap.Priority(tos >> 2); ok {
				where = fmt.Sprintf(", which %s sends to priority %d", mapName, prio)
			} else {
				where = ", which the map does not map"
			}
		} else {
			where = fmt.Sprintf(", which the classes' map sends nowhere (only %s)", classDSCPs(complete))
		}
		r.errf(at(key), key, fmt.Sprintf("%d (DSCP %d << 2 | ECN %02b), or leave it to the classes", want, *c.DSCP, want&3),
			"%s: DSCP %d%s; classes.%s is DSCP %d on priority %d", tosText(tos), tos>>2, where, c.Name, *c.DSCP, *c.Priority)
	}
	if data, ok := p.Class(ClassData); ok {
		if v := p.RoCE.DefaultTOS; v != nil {
			tosAgainst("roce.default_tos", *v, data)
		}
		if v := p.RoCE.VerbsTrafficClass; v != nil {
			tosAgainst("roce.verbs_traffic_class", *v, data)
		}
		if v, ok := p.NCCL.Var("IB_TC"); ok {
			if tc, err := strconv.Atoi(v); err == nil {
				tosAgainst("nccl.IB_TC", tc, data)
			}
		}
		if v, ok := p.NCCL.Var("IB_SL"); ok {
			if sl, err := strconv.Atoi(v); err == nil && sl&7 != *data.Priority {
				r.errf(at("nccl.IB_SL"), "nccl.IB_SL", fmt.Sprintf("%d, classes.data's priority, or leave it to the classes", *data.Priority),
					"SL %d is priority %d (SL & 7) on a VLAN-tagged frame; classes.data is priority %d", sl, sl&7, *data.Priority)
			}
		}
	}
	if ctl, ok := p.Class(ClassControl); ok {
		if v, ok := p.NCCL.Var("IB_FIFO_TC"); ok {
			if tc, err := strconv.Atoi(v); err == nil {
				tosAgainst("nccl.IB_FIFO_TC", tc, ctl)
			}
		}
	}
}

func genText(g string) string {
	if g == "" {
		return NCCLModern + " (the default)"
	}
	return g
}

func losslessWord(b bool) string {
	if b {
		return "lossless"
	}
	return "not lossless"
}

func classDSCPs(cs []Class) string {
	parts := make([]string, len(cs))
	for i, c := range cs {
		parts[i] = fmt.Sprintf("DSCP %d → %d", *c.DSCP, *c.Priority)
	}
	return strings.Join(parts, ", ")
}

// deriveClasses fills in, from the classes, every setting the profile
// leaves out; what it spells out was checked against them
// (checkClasses). It runs on a profile without errors. A derived
// setting's position is its class's, so that later messages (plan,
// audit) point at the statement it came from.
func deriveClasses(p *Profile) {
	data, ok := p.Class(ClassData)
	if !ok {
		return
	}
	at := func(key, from string) {
		if pos, ok := p.pos[from]; ok {
			p.pos[key] = pos
		}
	}
	q := &p.QoS
	if q.Trust == nil {
		s := "dscp"
		q.Trust = &s
		at("qos.trust", "classes")
	}
	if q.DSCPToPriority == nil {
		m := &DSCPMap{Entries: map[int]int{}}
		for _, c := range p.Classes {
			m.Entries[*c.DSCP] = *c.Priority
		}
		q.DSCPToPriority = m
		at("qos.dscp_to_priority", "classes")
	}
	if q.PFCPriorities == nil {
		var s PrioSet
		for _, c := range p.Classes {
			if c.Lossless {
				s |= 1 << *c.Priority
			}
		}
		q.PFCPriorities = &s
		at("qos.pfc_priorities", "classes")
	}
	if cnp, ok := p.Class(ClassCNP); ok {
		if p.ECN.CNPDSCP == nil {
			v := *cnp.DSCP
			p.ECN.CNPDSCP = &v
			at("ecn.cnp_dscp", "classes.cnp")
		}
		if p.ECN.CNPPriority == nil {
			v := *cnp.Priority
			p.ECN.CNPPriority = &v
			at("ecn.cnp_priority", "classes.cnp")
		}
	}
	ect := p.ccOn()
	if p.RoCE.DefaultTOS == nil {
		v := data.TOS(ect)
		p.RoCE.DefaultTOS = &v
		at("roce.default_tos", "classes.data")
	}
	// NCCL's variables only where the profile has an [nccl] section: a
	// profile without one manages no NCCL file and prints nothing.
	// NCCL_IB_TC follows roce.default_tos (nccl.Derive).
	if _, ok := p.pos["nccl"]; !ok {
		return
	}
	c := &p.NCCL
	if _, ok := c.Var("IB_SL"); !ok {
		c.Vars = append(c.Vars, NCCLVar{"IB_SL", strconv.Itoa(*data.Priority)})
		at("nccl.IB_SL", "classes.data")
	}
	if ctl, ok := p.Class(ClassControl); ok && c.AtLeast(NCCLFifoTC) {
		if _, ok := c.Var("IB_FIFO_TC"); !ok {
			c.Vars = append(c.Vars, NCCLVar{"IB_FIFO_TC", strconv.Itoa(ctl.TOS(ect))})
			at("nccl.IB_FIFO_TC", "classes.control")
		}
	}
}
