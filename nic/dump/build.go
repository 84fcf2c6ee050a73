package dump

import (
	"fmt"
	"maps"
	"slices"
	"sort"

	"github.com/rocectl/rocectl/nic"
	"github.com/rocectl/rocectl/nic/dcb"
	"github.com/rocectl/rocectl/nic/snapshot"
)

// Fact is one value an import put into the snapshot, and where from.
type Fact struct {
	Netdev   string
	What     string // "pause", "dcb.pfc", "stats (101 counters)", ...
	From     Source
	Inferred string // for an inference: what it concludes
}

func (f Fact) String() string {
	if f.Inferred != "" {
		return fmt.Sprintf("%s: %s: inferred from %s (%s)", f.Netdev, f.Inferred, f.What, f.From)
	}
	return fmt.Sprintf("%s: %s from %s", f.Netdev, f.What, f.From)
}

// Import is what Build made of a set of dumps.
type Import struct {
	State    *snapshot.KernelState // every op without data is in NotCaptured
	Facts    []Fact
	Warnings []Warning

	statLines map[string]map[string]Source // netdev → counter → line
}

// Build turns parsed blocks into a kernel state. Blocks that do not name
// their interface are tied to netdev (--netdev); without one they are
// warnings. Nothing absent from the dumps is filled in: each op and DCB
// member without data is listed as not captured.
func Build(blocks []Block, netdev string) (*Import, error) {
	im := &Import{State: &snapshot.KernelState{Links: map[string]*snapshot.LinkState{}, NotCaptured: []string{snapshot.OpDevlink}},
		statLines: map[string]map[string]Source{}}
	link := func(name string) *snapshot.LinkState {
		ls := im.State.Links[name]
		if ls == nil {
			ls = &snapshot.LinkState{}
			im.State.Links[name] = ls
		}
		return ls
	}
	fact := func(nd, what string, at Source) { im.Facts = append(im.Facts, Fact{Netdev: nd, What: what, From: at}) }
	dcbOf := func(ls *snapshot.LinkState) *dcb.State {
		if ls.DCB == nil {
			ls.DCB = &dcb.State{}
		}
		return ls.DCB
	}
	for _, b := range blocks {
		nd := b.Netdev
		if nd == "" && b.Kind != KindIPLink && b.Kind != KindShowGids {
			if netdev == "" {
				im.Warnings = append(im.Warnings, Warning{b.At, fmt.Sprintf("%s output does not name its interface: give --netdev", b.Kind)})
				continue
			}
			nd = netdev
		}
		switch b.Kind {
		case KindIPLink:
			for _, l := range b.Links {
				li := nic.LinkInfo{Index: l.Index, MTU: l.MTU, MinMTU: l.MinMTU, MaxMTU: l.MaxMTU, OperState: l.OperState, AdminUp: l.AdminUp, MAC: l.MAC}
				link(l.Name).Link = &li
				fact(l.Name, "link (mtu, state, mac)", l.At)
			}
		case KindShowGids:
			for _, g := range b.GIDs {
				if g.Netdev != "" && g.RoCEv2 {
					im.Facts = append(im.Facts, Fact{Netdev: g.Netdev, What: fmt.Sprintf("show_gids %s/%d index %d", g.Device, g.Port, g.Index), From: g.At,
						Inferred: fmt.Sprintf("RoCE v2 GID on %s port %d", g.Device, g.Port)})
				}
			}
		case KindEthtoolI:
			if b.Driver != nil {
				link(nd).Driver = &nic.DriverInfo{Driver: b.Driver.Driver, Version: b.Driver.Version, Firmware: b.Driver.Firmware, BusInfo: b.Driver.BusInfo}
				fact(nd, "driver "+b.Driver.Driver, b.Driver.At)
			}
		case KindEthtoolA:
			if b.Errno != "" {
				// What a capture records for the same refusal.
				ls := link(nd)
				if ls.Errors == nil {
					ls.Errors = map[string]string{}
				}
				ls.Errors[snapshot.OpPause] = b.Errno
				fact(nd, "pause: "+b.Errno+" (the driver has no pause parameters)", b.At)
			}
			if b.Pause != nil {
				link(nd).Pause = &nic.Pause{Autoneg: b.Pause.Autoneg, Rx: b.Pause.RX, Tx: b.Pause.TX}
				fact(nd, "pause", b.Pause.At)
			}
		case KindEthtoolS:
			ls := link(nd)
			if ls.Stats == nil {
				ls.Stats = map[string]uint64{}
			}
			maps.Copy(ls.Stats, b.Stats.Values)
			if im.statLines[nd] == nil {
				im.statLines[nd] = map[string]Source{}
			}
			maps.Copy(im.statLines[nd], b.Stats.At)
			fact(nd, fmt.Sprintf("stats (%d counters)", len(b.Stats.Values)), b.At)
		case KindMlnxQos:
			im.addQos(nd, dcbOf(link(nd)), b.Qos, fact)
		case KindDCBPFC:
			p := b.DCBPFC
			if p.Enable == nil || p.Delay == nil {
				im.Warnings = append(im.Warnings, Warning{b.At, "dcb pfc output without prio-pfc or delay: PFC not used"})
				continue
			}
			pfc := &dcb.PFC{Enable: bitmap(*p.Enable), Delay: *p.Delay}
			if p.Cap != nil {
				pfc.Cap = *p.Cap
			}
			if p.Req != nil {
				pfc.Requests = *p.Req
			}
			if p.Ind != nil {
				pfc.Indications = *p.Ind
			}
			dcbOf(link(nd)).PFC = pfc
			fact(nd, "dcb.pfc", p.EnAt)
		case KindDCBApp:
			st := dcbOf(link(nd))
			st.Apps = []dcb.App{}
			for _, a := range b.DCBApps {
				st.Apps = append(st.Apps, dcb.App{Selector: dcb.SelDSCP, Priority: a.Prio, Protocol: uint16(a.DSCP)})
			}
			fact(nd, "dcb.apps", b.At)
		}
	}
	for _, nd := range slices.Sorted(maps.Keys(im.State.Links)) {
		im.finish(nd, im.State.Links[nd])
	}
	sort.SliceStable(im.Facts, func(i, j int) bool { return im.Facts[i].Netdev < im.Facts[j].Netdev })
	return im, im.State.Validate()
}

// addQos puts what mlnx_qos printed into st, each DCB member only when
// the output held all of it.
func (im *Import) addQos(nd string, st *dcb.State, q *MlnxQos, fact func(string, string, Source)) {
	warn := func(at Source, msg string) { im.Warnings = append(im.Warnings, Warning{at, msg}) }
	switch q.DCBXMode {
	case "OS controlled":
		v := dcb.DCBXHost | dcb.DCBXVerIEEE
		st.DCBX = &v
		fact(nd, "dcb.dcbx (host)", q.At["dcbx"])
	case "Firmware controlled":
		v := dcb.DCBXLLDManaged | dcb.DCBXVerCEE | dcb.DCBXVerIEEE
		st.DCBX = &v
		fact(nd, "dcb.dcbx (firmware)", q.At["dcbx"])
	case "":
	default:
		warn(q.At["dcbx"], fmt.Sprintf("DCBX mode %q not used", q.DCBXMode))
	}
	switch {
	case q.Trust == "dscp" && q.DSCP2Prio != nil:
		// Upstream mlx5 trusts DSCP exactly when DSCP APP entries exist:
		// the populated dscp2prio table is that APP table.
		st.Apps = []dcb.App{}
		for _, d := range slices.Sorted(maps.Keys(q.DSCP2Prio)) {
			st.Apps = append(st.Apps, dcb.App{Selector: dcb.SelDSCP, Priority: q.DSCP2Prio[d], Protocol: uint16(d)})
		}
		im.Facts = append(im.Facts, Fact{Netdev: nd, What: "mlnx_qos dscp2prio table", From: q.At["dscp2prio"], Inferred: "trust dscp (DSCP APP table populated)"})
	case q.Trust == "dscp":
		warn(q.At["trust"], "trust dscp without a dscp2prio table: the DSCP map is unknown")
	case q.Trust == "pcp":
		st.Apps = []dcb.App{} // trust pcp: no DSCP APP entries
		fact(nd, "dcb.apps (trust pcp)", q.At["trust"])
	}
	switch {
	case q.PFC != nil && q.CableLen != nil:
		st.PFC = &dcb.PFC{Cap: 8, Enable: bitmap(*q.PFC), Delay: *q.CableLen}
		fact(nd, "dcb.pfc", q.At["pfc"])
	case q.PFC != nil:
		warn(q.At["pfc"], "PFC row without a cable length: PFC not used")
	}
	if q.BufferSize != nil && q.Prio2Buffer != nil {
		b := &dcb.Buffer{PrioBuffer: *q.Prio2Buffer, TotalSize: q.MaxBufferSize}
		copy(b.Size[:], q.BufferSize)
		st.Buffer = b
		fact(nd, "dcb.buffer", q.At["buffer_size"])
	}
	if q.TSA != nil {
		e := &dcb.ETS{}
		for p, tc := range q.PrioTC {
			e.PrioTC[p] = uint8(tc)
		}
		for tc := 0; tc < 8; tc++ {
			switch q.TSA[tc] {
			case "strict":
				e.TCTSA[tc] = dcb.TSAStrict
			case "ets":
				e.TCTSA[tc] = dcb.TSAETS
			case "vendor":
				e.TCTSA[tc] = dcb.TSAVendor
			default:
				warn(q.At["ets"], fmt.Sprintf("tc %d tsa %q: ETS not used", tc, q.TSA[tc]))
				return
			}
			e.TCTxBW[tc] = q.BW[tc]
		}
		st.ETS = e
		fact(nd, "dcb.ets", q.At["ets"])
	}
}

// finish lists what the dumps did not hold, and draws the inferences the
// data allows.
func (im *Import) finish(nd string, ls *snapshot.LinkState) {
	has := map[string]bool{
		snapshot.OpLink: ls.Link != nil, snapshot.OpDriver: ls.Driver != nil, snapshot.OpPause: ls.Pause != nil,
		snapshot.OpRings: ls.Rings != nil, snapshot.OpPrivFlags: ls.PrivFlags != nil, snapshot.OpStats: ls.Stats != nil,
		snapshot.OpTunable: ls.PFCPreventionTimeout != nil, snapshot.OpDCB: ls.DCB != nil,
	}
	for _, op := range snapshot.ReadOps {
		if _, refused := ls.Errors[op]; !has[op] && !refused {
			ls.NotCaptured = append(ls.NotCaptured, op)
		}
	}
	if st := ls.DCB; st != nil {
		members := map[string]bool{
			snapshot.DCBPartETS: st.ETS != nil, snapshot.DCBPartPFC: st.PFC != nil, snapshot.DCBPartApps: st.Apps != nil,
			snapshot.DCBPartBuffer: st.Buffer != nil, snapshot.DCBPartMaxrate: st.Maxrate != nil,
			snapshot.DCBPartAppTrust: st.AppTrust != nil, snapshot.DCBPartDCBX: st.DCBX != nil,
		}
		for _, p := range snapshot.DCBParts {
			if !members[p] {
				ls.NotCaptured = append(ls.NotCaptured, snapshot.OpDCB+"."+p)
			}
		}
	}
	// Global pause: no `ethtool -a`, but the port's own counters show it
	// sending pause frames, so it is on (tx) whatever the driver is.
	if _, refused := ls.Errors[snapshot.OpPause]; ls.Pause == nil && !refused && ls.Stats != nil {
		for _, c := range []string{"tx_pause_ctrl_phy", "tx_global_pause", "tx_pause_frames", "tx_xoff_frames"} {
			if n := ls.Stats[c]; n > 0 {
				im.Facts = append(im.Facts, Fact{Netdev: nd, What: fmt.Sprintf("ethtool -S %s = %d", c, n), From: im.statLines[nd][c],
					Inferred: "global pause sent (non-zero counter; one sample, so not known to be rising); the pause setting itself stays unknown"})
				break
			}
		}
	}
}

func bitmap(b [8]bool) uint8 {
	var m uint8
	for p, on := range b {
		if on {
			m |= 1 << p
		}
	}
	return m
}
