package peersim

import (
	"slices"

	"github.com/rocectl/rocectl/nic/dcb"
	"github.com/rocectl/rocectl/nic/nictest/simstate"
)

// The link partner's DCBX as the drivers whose firmware runs DCBX report
// it through dcbnl (dcb.State.Peer, dcb.State.CEEPeer). The kernel side is
// net/dcb/dcbnl.c: dcbnl_ieee_fill sends DCB_ATTR_IEEE_PEER_ETS/PFC whenever
// ieee_peer_getets/getpfc return 0, each struct zeroed first, and
// dcbnl_build_peer_app sends the peer APP nest (empty or not) whenever
// peer_getappinfo returns 0; dcbnl_cee_fill does the same for
// cee_peer_getpg/getpfc. What each driver puts in them is below, function
// by function; the other drivers have none of these ops.

// Partner is what the switch port announces in DCBX, as the NIC firmware
// that runs the DCBX agent keeps it (qed's remote MIB, cxgb4's peer DCB
// state).
type Partner struct {
	PFC        uint8 // PFC enable bitmap, bit p = priority p
	PFCCap     uint8 // PFC capability: TCs that may have PFC at once
	PFCWilling bool
	// PrioTC is each priority's traffic class (IEEE) or priority group
	// (CEE, 15 = strict); Bandwidth the percentage of each TC or group;
	// TSA each TC's algorithm (IEEE); ETSCap the TCs the switch supports.
	PrioTC     [8]uint8
	Bandwidth  [8]uint8
	TSA        [8]uint8
	ETSCap     uint8
	ETSWilling bool
	// Apps are the Application Priority entries as sent, with IEEE
	// selectors (1 Ethertype, 2 TCP, 3 UDP, 4 any port, 5 DSCP).
	Apps       []dcb.App
	AppWilling bool
}

// Qede is one qede link's driver: it reports the partner its firmware
// heard through its peer ops (qedePeer).
type Qede struct {
	simstate.Generic
	partner *Partner
}

// Cxgb4 is one cxgb4 link's driver: it reports the partner its firmware
// heard through its peer ops (cxgb4Peer).
type Cxgb4 struct {
	simstate.Generic
	partner *Partner
}

var (
	_ simstate.Model = (*Qede)(nil)
	_ simstate.Model = (*Cxgb4)(nil)
)

// SetPartner says what the NIC firmware has heard from the switch; nil
// means nothing yet (no DCBX peer on the link, or the firmware has not
// negotiated). The model keeps a copy.
func (m *Qede) SetPartner(p *Partner) { m.partner = clonePartner(p) }

// SetPartner is Qede.SetPartner's.
func (m *Cxgb4) SetPartner(p *Partner) { m.partner = clonePartner(p) }

func clonePartner(p *Partner) *Partner {
	if p == nil {
		return nil
	}
	c := *p
	c.Apps = slices.Clone(p.Apps)
	return &c
}

// ReadDCB fills st.Peer and st.CEEPeer as qede reports them; CEEPeer
// only in the mode where the client asks for it (dcb.CEEPeerMode), as
// dcb.Client.Get does.
func (m *Qede) ReadDCB(_ simstate.Link, st *dcb.State) {
	peer, cee := qedePeer(mode(st), m.partner)
	fill(st, peer, cee)
}

// ReadDCB fills st.Peer and st.CEEPeer as cxgb4 reports them (see
// Qede.ReadDCB).
func (m *Cxgb4) ReadDCB(_ simstate.Link, st *dcb.State) {
	peer, cee := cxgb4Peer(mode(st), m.partner)
	fill(st, peer, cee)
}

func mode(st *dcb.State) uint8 {
	if st.DCBX == nil {
		return 0
	}
	return *st.DCBX
}

func fill(st *dcb.State, peer *dcb.Peer, cee *dcb.CEEPeer) {
	st.Peer = peer
	if dcb.CEEPeerMode(st.DCBX) {
		st.CEEPeer = cee
	}
}

func b2u(b bool) uint8 {
	if b {
		return 1
	}
	return 0
}

// qedePeer is qede_dcbnl_ops (qede_dcbnl.c), whose peer ops forward to
// qed_dcbx.c:
//
//   - qede_dcbnl_ieee_peer_getets → qed_dcbnl_ieee_peer_getets →
//     qed_dcbnl_get_ieee_ets(remote): -EINVAL unless DCBX is operational in
//     IEEE mode ("DCBX is not enabled/operational in IEEE mode"); else
//     ets_cap, willing, cbs, tc_tx_bw, tc_tsa and prio_tc of the remote
//     MIB (tc_rx_bw and the reco fields stay zero).
//   - qede_dcbnl_ieee_peer_getpfc → qed_dcbnl_get_ieee_pfc(remote): the
//     same mode check; pfc_cap and pfc_en only (struct ieee_pfc has no
//     willing bit).
//   - qede_dcbnl_peer_getappinfo/getapptable → qed_dcbnl_peer_getappinfo
//     (willing, error, num_app_entries) and qed_dcbnl_peer_getapptable,
//     which do not look at the mode and write each entry's selector as
//     DCB_APP_IDTYPE_ETHTYPE (0) or DCB_APP_IDTYPE_PORTNUM (1) from
//     app_entry[i].ethtype, a field qed_dcbx_get_app_data sets only in CEE
//     mode: in IEEE mode every entry reads selector 1, whatever the switch
//     sent (a DSCP entry included). Priority is ffs(pri_map) - 1.
//   - qede_dcbnl_cee_peer_getpg → qed_dcbnl_cee_peer_getpg: willing from
//     ets_willing, pg_bw and prio_pg from the remote tables; error, pg_en
//     and tcs_supported are never set.
//   - qede_dcbnl_cee_peer_getpfc → qed_dcbnl_cee_peer_getpfc: pfc_en and
//     tcs_supported (max_tc); willing and error are never set.
//
// With nothing heard the remote MIB is all zero and every op still
// succeeds (qed_dcbx_query_params reads it as it is). The mode is the one
// qed_dcbnl_getdcbx reports: VER_IEEE when operational in IEEE.
func qedePeer(mode uint8, p *Partner) (*dcb.Peer, *dcb.CEEPeer) {
	r := Partner{}
	if p != nil {
		r = *p
	}
	ieee := mode&dcb.DCBXVerIEEE != 0
	apps := func() *dcb.PeerApp {
		out := &dcb.PeerApp{Entries: []dcb.App{}}
		for _, a := range r.Apps {
			sel := uint8(1) // DCB_APP_IDTYPE_PORTNUM: ethtype unset in IEEE mode
			if !ieee && a.Selector == dcb.SelEthertype {
				sel = 0 // DCB_APP_IDTYPE_ETHTYPE
			}
			out.Entries = append(out.Entries, dcb.App{Selector: sel, Priority: a.Priority, Protocol: a.Protocol})
		}
		return out
	}
	peer := &dcb.Peer{App: apps()}
	if ieee {
		peer.ETS = &dcb.ETS{ETSCap: r.ETSCap, Willing: b2u(r.ETSWilling), TCTxBW: r.Bandwidth, TCTSA: r.TSA, PrioTC: r.PrioTC}
		peer.PFC = &dcb.PFC{Cap: r.PFCCap, Enable: r.PFC}
	}
	app := apps()
	app.Info = &dcb.PeerAppInfo{Willing: b2u(r.AppWilling)}
	cee := &dcb.CEEPeer{
		PG:  &dcb.CEEPG{Willing: b2u(r.ETSWilling), BW: r.Bandwidth, PrioPG: r.PrioTC},
		PFC: &dcb.CEEPFC{Enable: r.PFC, TCsSupported: r.PFCCap},
		App: app,
	}
	return peer, cee
}

// cxgb4MaxApps is CXGB4_MAX_DCBX_APP_SUPPORTED (cxgb4_dcb.h).
const cxgb4MaxApps = 8

// cxgb4Unset stands for the bytes of a peer APP table entry nobody wrote:
// dcbnl_build_peer_app allocates the table (not zeroed) and
// cxgb4_getpeerapp_tbl stops at the first empty slot. Any value is
// possible; 0x6b (SLUB's free poison) makes them stand out in tests.
const cxgb4Unset = 0x6b

// cxgb4Peer is cxgb4_dcb_ops (cxgb4_dcb.c). The model takes a heard
// partner as the firmware having reached CXGB4_DCB_STATE_FW_ALLSYNCED with
// every DCB message in (cxgb4_dcb_handle_fw_update), and no partner as
// firmware DCB still incomplete (dcb state reset to zeros):
//
//   - ieee_peer_getets = cxgb4_ieee_peer_ets → cxgb4_ieee_read_ets(local
//     0): returns 0 with the struct untouched (all zero) until the PGID and
//     PGRATE messages came; then ets_cap, prio_tc from the peer's PGIDs,
//     tc_tx_bw = tc_rx_bw and tc_tsa from its PGRATE. Willing is not set.
//     It does not look at the DCBX version.
//   - ieee_peer_getpfc = cxgb4_ieee_get_pfc, the local getter ("We reuse
//     this for peer PFC as well, as we can't have it enabled one way"):
//     the negotiated pfc_en and pfc_cap, zero until the PFC message came.
//     The firmware is always willing, so negotiated is the switch's.
//   - peer_getappinfo = cxgb4_getpeer_app: returns 1 (no nest) until the
//     state is synced; sets willing and error to 0; counts by reading peer
//     entry idx *app_count, which stays 0, so the count is 0 when the
//     switch sent no entry and CXGB4_MAX_DCBX_APP_SUPPORTED (8) otherwise.
//   - peer_getapptable = cxgb4_getpeerapp_tbl: entries up to the first with
//     protocol 0, selector sel_field + 1 (IEEE selectors in IEEE mode; in
//     CEE mode the firmware keeps 0 for Ethertype and 3 for a port, as
//     __cxgb4_setapp writes them), priority ffs(user_prio_map) - 1. The
//     rest of the 8 counted entries are never written (cxgb4Unset).
//   - cee_peer_getpg = cxgb4_cee_peer_getpg: willing always true ("the
//     Switch Fabric always dictates the DCBX parameters to us": the NIC's
//     own bit, not the switch's), prio_pg and pg_bw from the peer,
//     tcs_supported; error and pg_en never set.
//   - cee_peer_getpfc = cxgb4_cee_peer_getpfc: the negotiated pfc_en and
//     pfc_num_tcs_supported; willing and error never set.
func cxgb4Peer(mode uint8, p *Partner) (*dcb.Peer, *dcb.CEEPeer) {
	ieee := mode&dcb.DCBXVerIEEE != 0
	if p == nil {
		return &dcb.Peer{ETS: &dcb.ETS{}, PFC: &dcb.PFC{}},
			&dcb.CEEPeer{PG: &dcb.CEEPG{Willing: 1}, PFC: &dcb.CEEPFC{}}
	}
	var entries []dcb.App
	for _, a := range p.Apps {
		if a.Protocol == 0 || len(entries) == cxgb4MaxApps {
			break
		}
		sel := a.Selector // sel_field + 1 with sel_field = selector - 1
		if !ieee {
			sel = 4 // CEE port entry: sel_field 3
			if a.Selector == dcb.SelEthertype {
				sel = 1
			}
		}
		entries = append(entries, dcb.App{Selector: sel, Priority: a.Priority, Protocol: a.Protocol})
	}
	if len(entries) > 0 {
		for len(entries) < cxgb4MaxApps {
			entries = append(entries, dcb.App{Selector: cxgb4Unset, Priority: cxgb4Unset, Protocol: cxgb4Unset<<8 | cxgb4Unset})
		}
	}
	table := func() *dcb.PeerApp { return &dcb.PeerApp{Entries: append([]dcb.App{}, entries...)} }
	peer := &dcb.Peer{
		ETS: &dcb.ETS{ETSCap: p.ETSCap, PrioTC: p.PrioTC, TCTxBW: p.Bandwidth, TCRxBW: p.Bandwidth, TCTSA: p.TSA},
		PFC: &dcb.PFC{Cap: p.PFCCap, Enable: p.PFC},
		App: table(),
	}
	app := table()
	app.Info = &dcb.PeerAppInfo{}
	cee := &dcb.CEEPeer{
		PG:  &dcb.CEEPG{Willing: 1, BW: p.Bandwidth, PrioPG: p.PrioTC, TCsSupported: p.ETSCap},
		PFC: &dcb.CEEPFC{Enable: p.PFC, TCsSupported: p.PFCCap},
		App: app,
	}
	return peer, cee
}
