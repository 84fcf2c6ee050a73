package dump

import (
	"fmt"
	"maps"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/rocectl/rocectl/nic"
	"github.com/rocectl/rocectl/nic/dcb"
	"github.com/rocectl/rocectl/nic/snapshot"
)

// Fact is one thing an import read, and where from: a value it put into
// the snapshot, an inference, or something it recognised and reports
// although the snapshot cannot hold it (RDMA devices, PCI functions).
type Fact struct {
	// Netdev is what the fact is about: a netdev, or, for facts of
	// dumps that name none, the RDMA device port ("mlx5_0/1"), devlink
	// device ("pci/0000:3b:00.0"), PCI function or GPU.
	Netdev   string
	What     string // "pause", "dcb.pfc", "stats (101 counters)", ...
	From     Source
	Then     *Source `json:",omitempty"` // the second sample of a two-sample inference
	Inferred string  // for an inference: what it concludes
}

func (f Fact) String() string {
	from := f.From.String()
	if f.Then != nil {
		from += " → " + f.Then.String()
	}
	if f.Inferred != "" {
		return fmt.Sprintf("%s: %s: inferred from %s (%s)", f.Netdev, f.Inferred, f.What, from)
	}
	return fmt.Sprintf("%s: %s from %s", f.Netdev, f.What, from)
}

// statSample is one `ethtool -S` dump of a netdev.
type statSample struct {
	values map[string]uint64
	stats  *Stats // where each counter was read
}

// Import is what Build made of a set of dumps.
type Import struct {
	State    *snapshot.KernelState // every op without data is in NotCaptured
	Facts    []Fact
	Warnings []Warning
	// Anonymous are the files that name no host, MAC, PCI function or
	// RDMA port (CheckIdentity): nothing shows they are of the same host
	// as the others.
	Anonymous []string

	samples map[string][]statSample // netdev → its ethtool -S dumps, in argument order
	gids    map[string]*gidPort     // "dev/port" → its show_gids rows (SysTree)
}

// Build turns parsed blocks into a kernel state. Blocks that do not name
// their interface are tied to netdev (--netdev); without one they are
// warnings. Nothing absent from the dumps is filled in: each op and DCB
// member without data is listed as not captured. Two `ethtool -S` dumps
// of one netdev are two samples in block (argument) order: the snapshot
// keeps the later value of each counter, and counters that rose between
// them may support an inference (finish). Dumps that are not of one host
// are refused first, with an *IdentityError (CheckIdentity).
func Build(blocks []Block, netdev string) (*Import, error) {
	anonymous, err := CheckIdentity(blocks, netdev)
	if err != nil {
		return nil, err
	}
	im := &Import{Anonymous: anonymous, State: &snapshot.KernelState{Links: map[string]*snapshot.LinkState{}, NotCaptured: []string{snapshot.OpDevlink}},
		samples: map[string][]statSample{}}
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
		if im.addDeviceLevel(b) {
			continue
		}
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
			im.addGIDs(b)
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
			switch n := len(im.samples[nd]); {
			case n == 0:
				// The first sample's map is the link's: no copy of
				// thousands of counters (a sample is never changed).
				ls.Stats = b.Stats.Values
			case n == 1:
				// A later sample: the link's map is the first sample's
				// until now, which must stay as it was read.
				ls.Stats = maps.Clone(ls.Stats)
				fallthrough
			default:
				maps.Copy(ls.Stats, b.Stats.Values)
			}
			im.samples[nd] = append(im.samples[nd], statSample{values: b.Stats.Values, stats: b.Stats})
			what := fmt.Sprintf("stats (%d counters)", len(b.Stats.Values))
			if n := len(im.samples[nd]); n > 1 {
				what = fmt.Sprintf("stats sample %d (%d counters; later values kept)", n, len(b.Stats.Values))
			}
			fact(nd, what, b.At)
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
	im.gidFacts()
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
		// mlnx_qos prints a "tc:" row only for the TCs that priorities
		// map to (all 8 with -a); the others' TSA and bandwidth are
		// not in the dump, and ETS is set as one whole.
		var absent []string
		for tc := 0; tc < 8; tc++ {
			if _, ok := q.TSA[tc]; !ok {
				absent = append(absent, strconv.Itoa(tc))
			}
		}
		if absent != nil {
			warn(q.At["ets"], fmt.Sprintf("no tc row for tc %s (mlnx_qos lists only the TCs that priorities map to; mlnx_qos -a lists all 8): ETS not used", strings.Join(absent, ",")))
			return
		}
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
	im.inferPause(nd, ls)
}

// pauseCounters are counters of global (802.3x) pause frames a port
// sent, in the order they are tried: mlx5's tx_pause_ctrl_phy and
// tx_global_pause (PPCNT; en_stats.c), then the names other drivers use
// (bnxt_en's tx_pause_frames; tx_xoff_frames). A port that sends them has
// TX pause on, whatever the driver; counts that rise between two samples
// say it is in use now.
var pauseCounters = []string{"tx_pause_ctrl_phy", "tx_global_pause", "tx_pause_frames", "tx_xoff_frames"}

// inferPause records what the port's own counters say about its global
// pause setting when no `ethtool -a` said it: with two samples of a
// counter that rose, the inference "in use (from FILE:LINE → FILE:LINE)";
// with one non-zero sample (or two equal ones) only a note that pause
// frames were sent at some time, never a value.
func (im *Import) inferPause(nd string, ls *snapshot.LinkState) {
	if _, refused := ls.Errors[snapshot.OpPause]; ls.Pause != nil || refused || len(im.samples[nd]) == 0 {
		return
	}
	samples := im.samples[nd]
	var note *snapshot.Inference
	var noteFact Fact
	for _, c := range pauseCounters {
		var first, last *statSample
		for i := range samples {
			if _, ok := samples[i].values[c]; ok {
				if first == nil {
					first = &samples[i]
				}
				last = &samples[i]
			}
		}
		if first == nil {
			continue
		}
		a, b := first.values[c], last.values[c]
		from, _ := first.stats.At(c)
		to, _ := last.stats.At(c)
		switch {
		case first != last && b > a:
			inf := &snapshot.Inference{Value: "in use", From: []string{from.String(), to.String()}}
			im.setInference(ls, inf)
			im.Facts = append(im.Facts, Fact{Netdev: nd, What: fmt.Sprintf("ethtool -S %s %d → %d", c, a, b), From: from, Then: &to,
				Inferred: "global pause in use (tx pause frames sent between the two samples)"})
			return
		case note != nil:
		case first != last && b == a && b > 0:
			note = &snapshot.Inference{Note: fmt.Sprintf("global pause frames were sent at some time (%s = %d, unchanged between two samples)", c, b),
				From: []string{from.String(), to.String()}}
			noteFact = Fact{Netdev: nd, What: fmt.Sprintf("ethtool -S %s = %d in both samples", c, b), From: from, Then: &to,
				Inferred: "global pause sent at some time, not between the samples; the pause setting itself stays unknown"}
		case first != last && b < a:
			// Lower in the later sample: the counter was reset (driver
			// reload) in between, so the two do not compare.
			note = &snapshot.Inference{Note: fmt.Sprintf("global pause frames were sent at some time (%s = %d, then %d: reset between the samples)", c, a, b),
				From: []string{from.String(), to.String()}}
			noteFact = Fact{Netdev: nd, What: fmt.Sprintf("ethtool -S %s %d, then %d", c, a, b), From: from, Then: &to,
				Inferred: "global pause sent at some time (the counter was reset between the samples); the pause setting itself stays unknown"}
		case first == last && b > 0:
			note = &snapshot.Inference{Note: fmt.Sprintf("global pause frames were sent at some time (%s = %d; one sample, so not known to be rising)", c, b),
				From: []string{to.String()}}
			noteFact = Fact{Netdev: nd, What: fmt.Sprintf("ethtool -S %s = %d", c, b), From: to,
				Inferred: "global pause sent (non-zero counter; one sample, so not known to be rising); the pause setting itself stays unknown"}
		}
	}
	if note != nil {
		im.setInference(ls, note)
		im.Facts = append(im.Facts, noteFact)
	}
}

func (im *Import) setInference(ls *snapshot.LinkState, inf *snapshot.Inference) {
	if ls.Inferred == nil {
		ls.Inferred = map[string]*snapshot.Inference{}
	}
	ls.Inferred[snapshot.OpPause] = inf
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
