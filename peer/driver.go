package peer

import (
	"fmt"

	"github.com/rocectl/rocectl/lldp"
	"github.com/rocectl/rocectl/nic/dcb"
)

// The switch's DCBX as the port's driver reports it through dcbnl: where
// the NIC firmware runs the DCBX agent and keeps what the link partner
// announced, the driver's ieee_peer_get* / cee_peer_get* / peer_getapp*
// ops hand it over in the DCB state (dcb.State.Peer, CEEPeer). Upstream,
// qede and cxgb4 have them (docs/drivers.md). It answers at once, where
// LLDP needs a frame, and works where the firmware takes the frames before
// the host sees them. What each driver leaves out or fills with its own
// values is not judged: it is listed in Result.Unchecked.

// Where a peer result comes from.
const (
	SourceLLDP  = "lldp"  // a frame heard on the port
	SourceDCBNL = "dcbnl" // the driver's peer objects
)

// DriverPeer is the link partner's DCBX as the driver reported it, in
// Result for the record.
type DriverPeer struct {
	IEEE *dcb.Peer    `json:"ieee,omitempty"`
	CEE  *dcb.CEEPeer `json:"cee,omitempty"`
}

// Drivers with quirks in their peer ops (nic/nictest/peersim models
// them, citing each function).
const (
	driverQede  = "qede"
	driverCxgb4 = "cxgb4"
	// cxgb4MaxApps is CXGB4_MAX_DCBX_APP_SUPPORTED: the peer APP count
	// cxgb4_getpeer_app gives whenever the switch sent any entry.
	cxgb4MaxApps = 8
)

// JudgeDriver judges the switch's DCBX as the port's driver (r.Driver)
// reports it in st against e. It returns false when the driver reports no
// usable peer, with the likely reason ("" when the driver has no peer ops
// at all); the caller then listens for LLDP.
func JudgeDriver(r *Result, st *dcb.State, e lldp.Expect) (bool, string) {
	f, u, unchecked, why := driverView(r.Driver, st, e)
	if f == nil {
		return false, why
	}
	r.Source = SourceDCBNL
	r.DriverPeer = &DriverPeer{IEEE: st.Peer, CEE: st.CEEPeer}
	r.Frame, r.HeardAt, r.Reason = nil, nil, ""
	r.DCBX = f.DCBX()
	r.Unchecked = unchecked
	r.Mismatches = lldp.CheckKnown(f, e, u)
	r.Verdict = Consistent
	if len(r.Mismatches) > 0 {
		r.Verdict = Mismatch
	}
	return true, ""
}

// ieeePFCKnown: the kernel zeroes struct ieee_pfc before the op and sends
// it when the op returns 0, which cxgb4_ieee_get_pfc does before its
// firmware sent PFC and qed does with an empty remote MIB. A switch that
// announces PFC announces its capability, so cap 0 with nothing enabled is
// "nothing heard".
func ieeePFCKnown(p *dcb.PFC) bool { return p != nil && (p.Cap != 0 || p.Enable != 0) }

func ceePFCKnown(p *dcb.CEEPFC) bool { return p != nil && (p.TCsSupported != 0 || p.Enable != 0) }

// driverView turns what the driver reports into a frame for
// lldp.CheckKnown, with what it cannot tell: nil when it reports no
// usable peer. A port in CEE mode (VER_CEE without VER_IEEE) is read from
// its CEE peer when it has one.
func driverView(driver string, st *dcb.State, e lldp.Expect) (*lldp.Frame, lldp.Unknown, []string, string) {
	var mode uint8
	if st.DCBX != nil {
		mode = *st.DCBX
	}
	ceeMode := mode&dcb.DCBXVerCEE != 0 && mode&dcb.DCBXVerIEEE == 0
	switch {
	case ceeMode && st.CEEPeer != nil && ceePFCKnown(st.CEEPeer.PFC):
		f, u, notes := ceeView(driver, st.CEEPeer, e)
		return f, u, notes, ""
	case st.Peer != nil && ieeePFCKnown(st.Peer.PFC):
		f, u, notes := ieeeView(driver, st.Peer, e)
		return f, u, notes, ""
	case st.Peer == nil && st.CEEPeer == nil:
		return nil, lldp.Unknown{}, nil, ""
	}
	name := driver
	if name == "" {
		name = "the driver"
	}
	return nil, lldp.Unknown{}, nil, fmt.Sprintf("%s reports the switch's DCBX through dcbnl but has heard none yet (its peer objects are empty: the firmware has not negotiated DCBX with the switch)", name)
}

func ieeeView(driver string, p *dcb.Peer, e lldp.Expect) (*lldp.Frame, lldp.Unknown, []string) {
	u := lldp.Unknown{PFCWilling: true}
	notes := []string{"the switch's PFC willing bit (struct ieee_pfc carries none)"}
	q := &lldp.IEEE{PFC: &lldp.PFC{Cap: p.PFC.Cap, Enable: p.PFC.Enable, MBC: p.PFC.MBC != 0}}
	if ets := p.ETS; ets != nil && ets.ETSCap != 0 {
		q.ETS = &lldp.ETSConfig{Willing: ets.Willing != 0, CBS: ets.CBS != 0, MaxTCs: ets.ETSCap,
			PrioTC: ets.PrioTC, TCBandwidth: ets.TCTxBW, TSA: ets.TCTSA}
		if driver == driverCxgb4 {
			u.ETSWilling = true
			notes = append(notes, "the switch's ETS willing bit (cxgb4_ieee_read_ets does not set it for the peer)")
		}
	} else {
		u.ETSWilling = true
		if e.PFC != nil {
			notes = append(notes, "the ETS class of the lossless priorities (the driver reports no peer ETS)")
		}
	}
	dscp := func(why string) {
		u.DSCP = true
		if e.Trust != "" {
			notes = append(notes, "DSCP → priority and trust ("+why+")")
		}
	}
	switch {
	case driver == driverQede:
		dscp("qed_dcbnl_peer_getapptable reports every peer APP entry with selector 1 in IEEE mode, so DSCP entries cannot be told apart")
	case p.App == nil:
		dscp("the driver reports no peer APP table")
	case driver == driverCxgb4 && len(p.App.Entries) == cxgb4MaxApps:
		dscp("cxgb4_getpeer_app counts 8 peer APP entries whenever the switch sent one and cxgb4_getpeerapp_tbl leaves those after the last real one unwritten")
	case !hasDSCP(p.App.Entries):
		dscp("the driver's peer APP table has no DSCP entry: whether the switch sends none or the firmware keeps none cannot be told")
	default:
		for _, a := range p.App.Entries {
			q.App = append(q.App, lldp.App{Priority: a.Priority, Selector: a.Selector, Protocol: a.Protocol})
		}
	}
	return &lldp.Frame{IEEE: q}, u, notes
}

func hasDSCP(apps []dcb.App) bool {
	for _, a := range apps {
		if a.Selector == dcb.SelDSCP {
			return true
		}
	}
	return false
}

// ceeView: CEE has no DSCP selector, so Check compares no DSCP entry.
// Neither qede nor cxgb4 fills the peer PFC willing bit; cxgb4 puts its
// own (always 1) in the priority group's.
func ceeView(driver string, p *dcb.CEEPeer, e lldp.Expect) (*lldp.Frame, lldp.Unknown, []string) {
	var u lldp.Unknown
	var notes []string
	if driver == driverQede || driver == driverCxgb4 {
		u.PFCWilling = true
		notes = append(notes, "the switch's PFC willing bit ("+driver+"'s cee_peer_getpfc does not set it)")
	}
	c := &lldp.CEE{PFC: &lldp.CEEPFC{CEEFeature: lldp.CEEFeature{Enabled: true, Willing: p.PFC.Willing != 0}, Enable: p.PFC.Enable, NumTCs: p.PFC.TCsSupported}}
	if pg := p.PG; pg != nil && pg.BW != [8]uint8{} {
		// pg_en is left unset by both drivers that have the op: a
		// reported group is taken as enabled.
		c.PG = &lldp.CEEPG{CEEFeature: lldp.CEEFeature{Enabled: true, Willing: pg.Willing != 0}, PGID: pg.PrioPG, Percent: pg.BW, NumTCs: pg.TCsSupported}
		if driver == driverCxgb4 {
			u.ETSWilling = true
			notes = append(notes, "the switch's priority group willing bit (cxgb4_cee_peer_getpg always reports the NIC's own, 1)")
		}
	} else {
		u.ETSWilling = true
		if e.PFC != nil {
			notes = append(notes, "the priority group of the lossless priorities (the driver reports none)")
		}
	}
	return &lldp.Frame{CEE: c}, u, notes
}
