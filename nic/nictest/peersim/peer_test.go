package peersim_test

import (
	"reflect"
	"testing"

	"github.com/rocectl/rocectl/nic"
	"github.com/rocectl/rocectl/nic/dcb"
	"github.com/rocectl/rocectl/nic/nictest"
	"github.com/rocectl/rocectl/nic/nictest/peersim"
	"github.com/rocectl/rocectl/nic/snapshot"
)

func u8p(v uint8) *uint8 { return &v }

func peerHost(driver string, mode uint8) *nictest.Sim {
	return nictest.NewSim(&snapshot.KernelState{Links: map[string]*snapshot.LinkState{
		"p0": {
			Link:   &nic.LinkInfo{Index: 4, MTU: 1500, OperState: "up", AdminUp: true},
			Driver: &nic.DriverInfo{Driver: driver},
			DCB:    &dcb.State{ETS: &dcb.ETS{ETSCap: 8}, PFC: &dcb.PFC{Cap: 8}, DCBX: u8p(mode)},
		},
	}})
}

// A RoCE switch port: PFC on 3, priority 3 in TC1 with 50 %, RoCE v2 on
// priority 3 by UDP port and by DSCP 26.
var roceSwitch = peersim.Partner{
	PFC: 1 << 3, PFCCap: 8, ETSCap: 8,
	PrioTC: [8]uint8{3: 1}, Bandwidth: [8]uint8{50, 50}, TSA: [8]uint8{dcb.TSAETS, dcb.TSAETS},
	ETSWilling: true,
	Apps:       []dcb.App{{Selector: dcb.SelDgram, Priority: 3, Protocol: 4791}, {Selector: dcb.SelDSCP, Priority: 3, Protocol: 26}},
}

func TestQedePeerIEEE(t *testing.T) {
	s := peerHost(snapshot.DriverQede, dcb.DCBXLLDManaged|dcb.DCBXVerIEEE)
	// Nothing heard: the zeroed remote MIB, every op still answering.
	st, _ := s.DCB("p0")
	want := &dcb.Peer{ETS: &dcb.ETS{}, PFC: &dcb.PFC{}, App: &dcb.PeerApp{Entries: []dcb.App{}}}
	if !reflect.DeepEqual(st.Peer, want) || st.CEEPeer != nil {
		t.Fatalf("nothing heard: %+v %+v", st.Peer, st.CEEPeer)
	}
	s.SetPartner("p0", &roceSwitch)
	st, _ = s.DCB("p0")
	want = &dcb.Peer{
		ETS: &dcb.ETS{ETSCap: 8, Willing: 1, PrioTC: [8]uint8{3: 1}, TCTxBW: [8]uint8{50, 50}, TCTSA: [8]uint8{dcb.TSAETS, dcb.TSAETS}},
		PFC: &dcb.PFC{Cap: 8, Enable: 1 << 3},
		// qed_dcbnl_peer_getapptable in IEEE mode: selector 1 for all.
		App: &dcb.PeerApp{Entries: []dcb.App{{Selector: 1, Priority: 3, Protocol: 4791}, {Selector: 1, Priority: 3, Protocol: 26}}},
	}
	if !reflect.DeepEqual(st.Peer, want) {
		t.Fatalf("peer %+v %+v %+v\nwant %+v %+v %+v", st.Peer.ETS, st.Peer.PFC, st.Peer.App, want.ETS, want.PFC, want.App)
	}
	// The state the Sim keeps is not changed by a read.
	if s.State().Links["p0"].DCB.Peer != nil {
		t.Errorf("peer stored in the state")
	}
}

func TestQedePeerCEE(t *testing.T) {
	s := peerHost(snapshot.DriverQede, dcb.DCBXLLDManaged|dcb.DCBXVerCEE)
	sw := roceSwitch
	sw.Apps = []dcb.App{{Selector: dcb.SelEthertype, Priority: 3, Protocol: 0x8915}, {Selector: dcb.SelDgram, Priority: 3, Protocol: 4791}}
	sw.AppWilling = true
	s.SetPartner("p0", &sw)
	st, _ := s.DCB("p0")
	// No IEEE peer ETS/PFC outside IEEE mode (-EINVAL); the APP table
	// comes anyway, with CEE selectors.
	cee := []dcb.App{{Selector: 0, Priority: 3, Protocol: 0x8915}, {Selector: 1, Priority: 3, Protocol: 4791}}
	if st.Peer == nil || st.Peer.ETS != nil || st.Peer.PFC != nil || !reflect.DeepEqual(st.Peer.App.Entries, cee) {
		t.Fatalf("IEEE peer %+v", st.Peer)
	}
	want := &dcb.CEEPeer{
		PG:  &dcb.CEEPG{Willing: 1, BW: [8]uint8{50, 50}, PrioPG: [8]uint8{3: 1}},
		PFC: &dcb.CEEPFC{Enable: 1 << 3, TCsSupported: 8},
		App: &dcb.PeerApp{Info: &dcb.PeerAppInfo{Willing: 1}, Entries: cee},
	}
	if !reflect.DeepEqual(st.CEEPeer, want) {
		t.Fatalf("CEE peer %+v %+v %+v", st.CEEPeer.PG, st.CEEPeer.PFC, st.CEEPeer.App)
	}
}

func TestCxgb4Peer(t *testing.T) {
	s := peerHost(snapshot.DriverCxgb4, dcb.DCBXLLDManaged|dcb.DCBXVerIEEE)
	// Firmware DCB not synced: zeroed ETS and PFC (the ops return 0
	// without filling them), no APP nest (cxgb4_getpeer_app returns 1).
	st, _ := s.DCB("p0")
	if !reflect.DeepEqual(st.Peer, &dcb.Peer{ETS: &dcb.ETS{}, PFC: &dcb.PFC{}}) {
		t.Fatalf("not synced: %+v", st.Peer)
	}
	s.SetPartner("p0", &roceSwitch)
	st, _ = s.DCB("p0")
	p := st.Peer
	if p.ETS.Willing != 0 || p.ETS.TCRxBW != p.ETS.TCTxBW || p.ETS.PrioTC[3] != 1 || p.PFC.Enable != 1<<3 {
		t.Errorf("peer ETS %+v PFC %+v", p.ETS, p.PFC)
	}
	// Two real entries with IEEE selectors, then six never written: the
	// count is 8 whenever the first entry exists.
	if len(p.App.Entries) != 8 || p.App.Entries[1] != (dcb.App{Selector: dcb.SelDSCP, Priority: 3, Protocol: 26}) ||
		p.App.Entries[2] != (dcb.App{Selector: peersim.Cxgb4Unset, Priority: peersim.Cxgb4Unset, Protocol: 0x6b6b}) {
		t.Errorf("peer APP %+v", p.App.Entries)
	}
	// No entry from the switch: an empty table.
	sw := roceSwitch
	sw.Apps = nil
	s.SetPartner("p0", &sw)
	if st, _ = s.DCB("p0"); st.Peer.App == nil || len(st.Peer.App.Entries) != 0 {
		t.Errorf("no entries: %+v", st.Peer.App)
	}
	// CEE mode: the priority group's willing bit is always 1 (the NIC's).
	s = peerHost(snapshot.DriverCxgb4, dcb.DCBXLLDManaged|dcb.DCBXVerCEE)
	s.SetPartner("p0", &sw)
	if st, _ = s.DCB("p0"); st.CEEPeer == nil || st.CEEPeer.PG.Willing != 1 || st.CEEPeer.PFC.Enable != 1<<3 {
		t.Errorf("CEE peer %+v", st.CEEPeer)
	}
}

// Drivers without peer ops report none, partner or not.
func TestNoPeerElsewhere(t *testing.T) {
	s := peerHost(snapshot.DriverMLX5, dcb.DCBXHost|dcb.DCBXVerIEEE|dcb.DCBXVerCEE)
	s.SetPartner("p0", &roceSwitch)
	if st, _ := s.DCB("p0"); st.Peer != nil || st.CEEPeer != nil {
		t.Errorf("mlx5 peer %+v %+v", st.Peer, st.CEEPeer)
	}
}
