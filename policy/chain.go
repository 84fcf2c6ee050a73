package policy

import (
	"fmt"
	"strconv"
)

// Intent is what every place along the QoS chain (the NIC's map and PFC
// set, the CNP marking, rdma_cm's TOS, NCCL's classes, the switch's DCBX)
// must carry: the data class, and the CNP and control classes when the
// profile has them. It comes from [classes], or, for a profile that spells
// its settings out by hand, from those settings by the same arithmetic
// (Profile.Intent).
type Intent struct {
	Data    Class
	CNP     *Class
	Control *Class
	// ECT: congestion control runs, so RoCE traffic must be ECN-capable
	// (ECT(0), ECN bits 10).
	ECT bool
	// From says where the data class came from, for messages:
	// "classes.data" or "roce.default_tos".
	From string
	// DataTOS is the TOS RoCE data must carry: the class's (DSCP << 2,
	// with ECT(0) when ECT), or the one the profile writes by hand.
	DataTOS int
}

// Intent returns the profile's QoS intent, and false when the profile
// says nothing of where RoCE traffic travels (no data class, and no TOS
// with a map that places it).
func (p *Profile) Intent() (Intent, bool) {
	in := Intent{ECT: p.ccOn()}
	if c, ok := p.Class(ClassData); ok {
		in.Data, in.From = c, "classes.data"
		if cnp, ok := p.Class(ClassCNP); ok {
			in.CNP = &cnp
		}
		if ctl, ok := p.Class(ClassControl); ok {
			in.Control = &ctl
		}
		in.DataTOS = c.TOS(in.ECT)
		return in, true
	}
	q := &p.QoS
	dmap := q.DSCPToPriority
	if dmap == nil && q.Trust != nil && *q.Trust == "dscp" {
		dmap = defaultDSCPMap()
	}
	tos, from := -1, ""
	switch {
	case p.RoCE.DefaultTOS != nil:
		tos, from = *p.RoCE.DefaultTOS, "roce.default_tos"
	case p.RoCE.VerbsTrafficClass != nil:
		tos, from = *p.RoCE.VerbsTrafficClass, "roce.verbs_traffic_class"
	default:
		if v, ok := p.NCCL.Var("IB_TC"); ok {
			if n, err := strconv.Atoi(v); err == nil {
				tos, from = n, "nccl.IB_TC"
			}
		}
	}
	if tos < 0 || dmap == nil {
		return in, false
	}
	prio, ok := dmap.Priority(tos >> 2)
	if !ok {
		return in, false
	}
	dscp := tos >> 2
	in.Data = Class{Name: ClassData, DSCP: &dscp, Priority: &prio, Lossless: q.PFCPriorities != nil && q.PFCPriorities.Has(prio)}
	in.From, in.DataTOS = from, tos
	if e := &p.ECN; e.CNPDSCP != nil {
		cp, ok := dmap.Priority(*e.CNPDSCP)
		if e.CNPPriority != nil {
			cp, ok = *e.CNPPriority, true
		}
		if ok {
			d := *e.CNPDSCP
			in.CNP = &Class{Name: ClassCNP, DSCP: &d, Priority: &cp}
		}
	}
	if v, ok := p.NCCL.Var("IB_FIFO_TC"); ok {
		if n, err := strconv.Atoi(v); err == nil {
			if cp, ok := dmap.Priority(n >> 2); ok {
				d := n >> 2
				in.Control = &Class{Name: ClassControl, DSCP: &d, Priority: &cp}
			}
		}
	}
	return in, true
}

// String is the intent in one line, for a section header.
func (in Intent) String() string {
	s := fmt.Sprintf("data DSCP %d → priority %d", *in.Data.DSCP, *in.Data.Priority)
	if in.Data.Lossless {
		s += " (lossless)"
	}
	s += fmt.Sprintf(", TOS %d", in.DataTOS)
	if in.CNP != nil {
		s += fmt.Sprintf("; CNP DSCP %d → priority %d", *in.CNP.DSCP, *in.CNP.Priority)
	}
	if in.Control != nil {
		s += fmt.Sprintf("; control DSCP %d → priority %d", *in.Control.DSCP, *in.Control.Priority)
	}
	return s + " (from " + in.From + ")"
}

// View is one side's QoS facts, as far as they are known: what a host's
// NIC and files hold, or what the switch announces. A nil field is not
// known (not read, not managed, not announced) and is not judged.
type View struct {
	// Trust is "dscp" or "pcp" (nil: not known). Under PCP trust the map
	// decides nothing.
	Trust *string
	// Map is the DSCP → priority map; a DSCP absent from it is not
	// mapped (nil: the map is not known).
	Map         map[int]int
	PFC         *PrioSet
	CNPDSCP     *int
	CNPPriority *int
	// TOS are the TOS bytes this side marks RoCE data with (rdma_cm's
	// default, the verbs traffic class, NCCL_IB_TC), by the key they are
	// read from.
	TOS []Fact
	// FifoTC is NCCL_IB_FIFO_TC, the control class's TOS.
	FifoTC *Fact
	// SL is NCCL_IB_SL.
	SL *Fact
}

// AddNCCL records NCCL variable name's value f where the chain reads it:
// NCCL_IB_TC as a data TOS, NCCL_IB_FIFO_TC as the control class's,
// NCCL_IB_SL as the SL; any other variable says nothing of the chain.
func (v *View) AddNCCL(name string, f Fact) {
	switch name {
	case "NCCL_IB_TC":
		v.TOS = append(v.TOS, f)
	case "NCCL_IB_FIFO_TC":
		v.FifoTC = &f
	case "NCCL_IB_SL":
		v.SL = &f
	}
}

// Fact is one value and the key it was read from.
type Fact struct {
	Key   string
	Value int
}

// ChainProblem is one disagreement: the key on the side judged, and the
// message naming both sides and the arithmetic.
type ChainProblem struct {
	Key string
	Msg string
}

// CheckChain judges one side's facts against the intent. side names the
// side in messages ("host", "switch"). Every disagreement names both
// sides and the arithmetic, e.g. "TOS 104 = DSCP 26 << 2 | ECN 00: not
// ECN-capable; DCQCN needs ECT(0) → 106".
func CheckChain(in Intent, side string, v View) []ChainProblem {
	var out []ChainProblem
	add := func(key, format string, args ...any) {
		out = append(out, ChainProblem{Key: key, Msg: fmt.Sprintf(format, args...)})
	}
	data := in.Data
	dscp, prio := *data.DSCP, *data.Priority
	tos := func(f Fact, c Class, role string) {
		d, bits := f.Value>>2, f.Value&3
		want := c.TOS(in.ECT)
		src := in.From
		if role == "data" {
			want = in.DataTOS
		} else if src == "classes.data" {
			src = "classes." + c.Name
		} else {
			src = "nccl.IB_FIFO_TC"
		}
		switch {
		case d != *c.DSCP:
			where := ""
			if v.Map != nil && (v.Trust == nil || *v.Trust != "pcp") {
				if p, ok := v.Map[d]; ok {
					where = fmt.Sprintf(", which the %s's map sends to priority %d", side, p)
				} else {
					where = fmt.Sprintf(", which the %s's map does not map", side)
				}
			}
			add(f.Key, "%s: DSCP %d%s; the profile's %s class is DSCP %d on priority %d (%s) → %d",
				tosText(f.Value), d, where, role, *c.DSCP, *c.Priority, src, want)
		case in.ECT && bits == 0:
			add(f.Key, "%s: not ECN-capable; DCQCN needs ECT(0) → %d", tosText(f.Value), want)
		case bits == 3:
			add(f.Key, "%s: CE, every packet already reads as congestion experienced → %d", tosText(f.Value), want)
		}
	}
	for _, f := range v.TOS {
		tos(f, data, "data")
	}
	if v.FifoTC != nil && in.Control != nil {
		tos(*v.FifoTC, *in.Control, "control")
	}
	if v.SL != nil && v.SL.Value&7 != prio {
		add(v.SL.Key, "SL %d is priority %d (SL & 7); the profile's data class is priority %d (%s)", v.SL.Value, v.SL.Value&7, prio, in.From)
	}
	mapped := func(key string, c Class, role string) {
		p, ok := v.Map[*c.DSCP]
		switch {
		case !ok:
			add(key, "the %s's map does not map DSCP %d; the profile's %s class is DSCP %d → priority %d", side, *c.DSCP, role, *c.DSCP, *c.Priority)
		case p != *c.Priority:
			add(key, "the %s's map sends DSCP %d to priority %d; the profile's %s class is DSCP %d → priority %d", side, *c.DSCP, p, role, *c.DSCP, *c.Priority)
		}
	}
	if v.Trust != nil && *v.Trust == "pcp" {
		add("trust", "the %s trusts PCP, so DSCP %d (the profile's data class, %s) decides nothing: RoCE traffic lands on the priority of its VLAN tag, or 0", side, dscp, in.From)
	} else if v.Map != nil {
		mapped("dscp "+strconv.Itoa(dscp), data, "data")
		if in.CNP != nil {
			mapped("dscp "+strconv.Itoa(*in.CNP.DSCP), *in.CNP, "CNP")
		}
		if in.Control != nil {
			mapped("dscp "+strconv.Itoa(*in.Control.DSCP), *in.Control, "control")
		}
	}
	if v.PFC != nil {
		if data.Lossless && !v.PFC.Has(prio) {
			add("pfc", "the %s's PFC %s leaves priority %d without pause; the profile's data class (DSCP %d) is lossless on priority %d", side, prioText(*v.PFC), prio, dscp, prio)
		}
		if !data.Lossless && v.PFC.Has(prio) {
			add("pfc", "the %s's PFC %s pauses priority %d; the profile's data class (DSCP %d) is not lossless", side, prioText(*v.PFC), prio, dscp)
		}
		if in.CNP != nil && v.PFC.Has(*in.CNP.Priority) {
			add("pfc", "the %s's PFC %s pauses priority %d, the profile's CNP priority: a CNP paused behind the congestion it reports arrives too late", side, prioText(*v.PFC), *in.CNP.Priority)
		}
	}
	if in.CNP != nil {
		if v.CNPDSCP != nil && *v.CNPDSCP != *in.CNP.DSCP {
			add("cnp_dscp", "the %s marks CNPs with DSCP %d; the profile's CNP class is DSCP %d", side, *v.CNPDSCP, *in.CNP.DSCP)
		}
		if v.CNPPriority != nil && *v.CNPPriority != *in.CNP.Priority {
			add("cnp_priority", "the %s sends CNPs on priority %d; the profile's CNP class is priority %d", side, *v.CNPPriority, *in.CNP.Priority)
		}
	}
	return out
}

// PortView is the host side of one matched port.
type PortView struct {
	Port string // the port's header name: its netdev
	View View
}

// HostViews are the host's facts, from what audit read (o) for the
// settings the profile manages (d): host-wide, the NCCL file's IB_TC,
// IB_FIFO_TC and IB_SL; per matched port, the trust mode, DSCP map and
// PFC set, the CNP marking, rdma_cm's TOS and the verbs traffic class. A
// setting the profile does not manage, or whose read failed, is unknown
// and not judged.
func HostViews(d *Desired, o *Observed) (View, []PortView) {
	val := func(s Setting) (string, bool) {
		v, ok := o.Values[s.Key]
		return v, ok && v != ""
	}
	atoi := func(s Setting) (int, bool) {
		v, ok := val(s)
		if !ok {
			return 0, false
		}
		n, err := strconv.Atoi(v)
		return n, err == nil
	}
	var host View
	for _, s := range d.Host {
		if s.Kind != KindNCCL {
			continue
		}
		n, ok := atoi(s)
		if !ok {
			continue
		}
		host.AddNCCL(s.Arg, Fact{Key: s.Key, Value: n})
	}
	var out []PortView
	for _, dp := range d.Ports {
		var v View
		for _, s := range dp.Settings {
			switch s.Kind {
			case KindTrust:
				if raw, ok := val(s); ok {
					t := raw
					v.Trust = &t
				}
			case KindDSCPMap:
				if raw, ok := val(s); ok {
					if m, err := ParseDSCPMap(raw); err == nil {
						v.Map = m
					}
				}
			case KindPFC:
				if raw, ok := val(s); ok {
					if b, err := ParsePrioBitmap(raw); err == nil {
						set := PrioSet(b)
						v.PFC = &set
					}
				}
			case KindECNParam:
				if n, ok := atoi(s); ok {
					switch s.Arg {
					case "np/cnp_dscp":
						v.CNPDSCP = &n
					case "np/cnp_802p_prio":
						v.CNPPriority = &n
					}
				}
			case KindRoCETOS, KindTrafficClass:
				if n, ok := atoi(s); ok {
					v.TOS = append(v.TOS, Fact{Key: s.Key, Value: n})
				}
			}
		}
		name := dp.Port.Netdev
		if name == "" {
			name = dp.Port.RDMAScope()
		}
		out = append(out, PortView{Port: name, View: v})
	}
	return host, out
}

// checkHandChain holds a profile without [classes] against the intent its
// own settings state (Intent: its RoCE TOS through its map), for the pairs
// the rules in rules.go do not already judge: the verbs traffic class
// beside rdma_cm's TOS, and NCCL's SL beside the data priority. The same
// arithmetic as audit's chain; warnings, as the other TOS rules are.
func checkHandChain(p *Profile, r *decoder, at func(string) *node) {
	if len(p.Classes) > 0 {
		return // checkClasses holds every hand-written key against them
	}
	in, ok := p.Intent()
	if !ok {
		return
	}
	var v View
	if t := p.RoCE.VerbsTrafficClass; t != nil && in.From != "roce.verbs_traffic_class" && *t>>2 != *in.Data.DSCP && !notLossless(p, *t) {
		v.TOS = append(v.TOS, Fact{"roce.verbs_traffic_class", *t})
	}
	if s, ok := p.NCCL.Var("IB_SL"); ok {
		if n, err := strconv.Atoi(s); err == nil {
			v.SL = &Fact{"nccl.IB_SL", n}
		}
	}
	for _, pr := range CheckChain(in, "profile", v) {
		r.warnf(at(pr.Key), pr.Key, fmt.Sprintf("agreeing with %s (DSCP %d on priority %d)", in.From, *in.Data.DSCP, *in.Data.Priority), "%s", pr.Msg)
	}
}

// notLossless reports whether checkRules already warns of tos: its DSCP
// unmapped, or mapped off the PFC priorities, under the profile's map.
func notLossless(p *Profile, tos int) bool {
	q := &p.QoS
	dmap := q.DSCPToPriority
	if dmap == nil && q.Trust != nil && *q.Trust == "dscp" {
		dmap = defaultDSCPMap()
	}
	if dmap == nil || q.PFCPriorities == nil || *q.PFCPriorities == 0 {
		return false
	}
	prio, ok := dmap.Priority(tos >> 2)
	return !ok || !q.PFCPriorities.Has(prio)
}
