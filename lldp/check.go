package lldp

import (
	"fmt"
	"sort"
	"strings"
)

// Expect is what the host is set up to do, as far as its switch port must
// agree: the caller derives it from the profile.
type Expect struct {
	// PFC is the PFC enable bitmap (bit p = priority p); nil when the
	// profile does not manage PFC.
	PFC *uint8
	// Trust is "dscp", "pcp" or "" (not managed).
	Trust string
	// DSCP lists the DSCPs the host marks (RoCE data, CNPs) and the
	// priority each must map to.
	DSCP []DSCPUse
	// ETS is the profile's [qos.ets], nil when not set.
	ETS *ExpectETS
}

// DSCPUse is one DSCP the host sends and the priority it must land in.
type DSCPUse struct {
	DSCP     int
	Priority int
	Role     string // "RoCE data", "CNP"
}

// ExpectETS is the profile's ETS: per priority its TC, per TC its
// scheduling ("strict", "ets", ...) and bandwidth percentage.
type ExpectETS struct {
	PrioTC    [8]int
	TSA       [8]string
	Bandwidth [8]int
}

// Mismatch is one thing the switch says differently from the profile.
type Mismatch struct {
	Key     string `json:"key"` // e.g. "pfc", "willing", "dscp 26 (RoCE data)", "ets priority 3"
	Switch  string `json:"switch"`
	Profile string `json:"profile"`
}

// DCBX names the flavour a frame carries: "ieee", "cee", or "" for none.
func (f *Frame) DCBX() string {
	switch {
	case f.IEEE != nil:
		return "ieee"
	case f.CEE != nil && (f.CEE.PFC != nil || f.CEE.PG != nil || f.CEE.App != nil):
		return "cee"
	}
	return ""
}

// PFCEnable is the switch's PFC enable bitmap and whether it announced one.
// A CEE PFC feature that is not enabled counts as no priority.
func (f *Frame) PFCEnable() (uint8, bool) {
	switch f.DCBX() {
	case "ieee":
		if f.IEEE.PFC != nil {
			return f.IEEE.PFC.Enable, true
		}
	case "cee":
		if p := f.CEE.PFC; p != nil {
			if !p.Enabled {
				return 0, true
			}
			return p.Enable, true
		}
	}
	return 0, false
}

// Unknown names what a source of the switch's DCBX cannot tell. A frame
// heard on the wire tells everything it carries; the peer objects a driver
// reports through dcbnl do not (struct ieee_pfc has no willing bit, some
// drivers report no DSCP entries or their own bits in the peer's place).
// Check leaves an unknown part unjudged instead of reading its absence as
// the switch's word.
type Unknown struct {
	PFCWilling bool // the PFC willing bit
	ETSWilling bool // the ETS (IEEE) or priority group (CEE) willing bit
	DSCP       bool // DSCP → priority entries, and so the switch's trust mode
}

// Check compares the switch's DCBX in f with e. It judges the IEEE TLVs
// when the frame has them (a switch that sends both runs IEEE), else CEE.
// A frame without DCBX has nothing to compare: the caller reports it.
func Check(f *Frame, e Expect) []Mismatch { return CheckKnown(f, e, Unknown{}) }

// CheckKnown is Check for a source that cannot tell the parts u names.
func CheckKnown(f *Frame, e Expect, u Unknown) []Mismatch {
	var out []Mismatch
	add := func(key, sw, prof string) { out = append(out, Mismatch{Key: key, Switch: sw, Profile: prof}) }
	dcbx := f.DCBX()
	if dcbx == "" {
		return nil
	}
	// PFC enable set.
	if e.PFC != nil {
		if en, ok := f.PFCEnable(); !ok {
			add("pfc", "no PFC TLV", "priorities "+prioList(*e.PFC))
		} else if en != *e.PFC {
			add("pfc", "priorities "+prioList(en), "priorities "+prioList(*e.PFC))
		}
	}
	// The switch's willing bit: a willing switch adopts its peer's
	// settings and may not enforce what it announces.
	if w := f.willing(u); w != "" {
		add("willing", "willing ("+w+")", "the switch decides: not willing")
	}
	// DSCP → priority (IEEE only: CEE has no DSCP selector).
	if dcbx == "ieee" && e.Trust != "" && !u.DSCP {
		m := map[int][]int{}
		for _, a := range f.IEEE.App {
			if a.Selector == SelDSCP {
				m[int(a.Protocol)] = append(m[int(a.Protocol)], int(a.Priority))
			}
		}
		switch {
		case e.Trust == "pcp" && len(m) > 0:
			add("trust", fmt.Sprintf("dscp (%d DSCP → priority entries)", len(m)), "pcp")
		case e.Trust == "dscp" && len(m) == 0:
			add("trust", "pcp (no DSCP → priority entry)", "dscp")
		case e.Trust == "dscp":
			for _, u := range e.DSCP {
				key := fmt.Sprintf("dscp %d (%s)", u.DSCP, u.Role)
				prios := m[u.DSCP]
				switch {
				case len(prios) == 0:
					add(key, "no entry", fmt.Sprintf("priority %d", u.Priority))
				case len(prios) > 1 || prios[0] != u.Priority:
					add(key, "priority "+joinInts(prios), fmt.Sprintf("priority %d", u.Priority))
				}
			}
		}
	}
	// ETS class of each lossless priority.
	if e.PFC != nil {
		for p := 0; p < 8; p++ {
			if *e.PFC&(1<<p) == 0 {
				continue
			}
			if m, ok := f.checkETS(p, e.ETS); ok {
				out = append(out, m)
			}
		}
	}
	return out
}

func (f *Frame) willing(u Unknown) string {
	var what []string
	if q := f.IEEE; q != nil && f.DCBX() == "ieee" {
		if q.PFC != nil && q.PFC.Willing && !u.PFCWilling {
			what = append(what, "PFC")
		}
		if q.ETS != nil && q.ETS.Willing && !u.ETSWilling {
			what = append(what, "ETS")
		}
	} else if c := f.CEE; c != nil {
		if c.PFC != nil && c.PFC.Willing && !u.PFCWilling {
			what = append(what, "PFC")
		}
		if c.PG != nil && c.PG.Willing && !u.ETSWilling {
			what = append(what, "PG")
		}
	}
	return strings.Join(what, ", ")
}

// checkETS judges the class priority p is in on the switch: a class with
// no bandwidth starves the lossless traffic; with a profile ETS, the
// class must be scheduled the same way with the same share.
func (f *Frame) checkETS(p int, want *ExpectETS) (Mismatch, bool) {
	key := fmt.Sprintf("ets priority %d", p)
	var sched string
	var bw int
	switch f.DCBX() {
	case "ieee":
		ets := f.IEEE.ETS
		if ets == nil {
			return Mismatch{}, false
		}
		tc := ets.PrioTC[p]
		if tc > 7 {
			return Mismatch{key, fmt.Sprintf("traffic class %d (reserved)", tc), "a traffic class 0..7"}, true
		}
		sched, bw = tsaName(ets.TSA[tc]), int(ets.TCBandwidth[tc])
	case "cee":
		pg := f.CEE.PG
		if pg == nil || !pg.Enabled {
			return Mismatch{}, false
		}
		id := pg.PGID[p]
		if id == 15 {
			sched = "strict"
		} else if id < 8 {
			sched, bw = "ets", int(pg.Percent[id])
		} else {
			return Mismatch{key, fmt.Sprintf("priority group %d (reserved)", id), "a priority group 0..7 or 15"}, true
		}
	default:
		return Mismatch{}, false
	}
	sw := sched
	if sched == "ets" {
		sw = fmt.Sprintf("ets %d%%", bw)
	}
	if want != nil {
		tc := want.PrioTC[p]
		ws := want.TSA[tc]
		prof := ws
		if ws == "ets" {
			prof = fmt.Sprintf("ets %d%%", want.Bandwidth[tc])
		}
		if ws != sched || (ws == "ets" && want.Bandwidth[tc] != bw) {
			return Mismatch{key, sw, prof}, true
		}
		return Mismatch{}, false
	}
	if sched == "ets" && bw == 0 {
		return Mismatch{key, sw + " (starved)", "a bandwidth share for the lossless class"}, true
	}
	return Mismatch{}, false
}

func tsaName(t uint8) string {
	switch t {
	case TSAStrict:
		return "strict"
	case TSACBS:
		return "cbs"
	case TSAETS:
		return "ets"
	case TSAVendor:
		return "vendor"
	}
	return fmt.Sprintf("tsa %d", t)
}

func prioList(b uint8) string {
	var ps []int
	for p := 0; p < 8; p++ {
		if b&(1<<p) != 0 {
			ps = append(ps, p)
		}
	}
	if len(ps) == 0 {
		return "none"
	}
	return joinInts(ps)
}

func joinInts(v []int) string {
	v = append([]int(nil), v...)
	sort.Ints(v)
	s := make([]string, len(v))
	for i, x := range v {
		s[i] = fmt.Sprint(x)
	}
	return strings.Join(s, ",")
}
