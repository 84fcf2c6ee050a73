package dcb

import (
	"bytes"
	"errors"
	"reflect"
	"strings"
	"syscall"
	"testing"
)

// The link partner's DCBX as drivers report it through dcbnl. Where the
// kernel puts it (net/dcb/dcbnl.c, include/uapi/linux/dcbnl.h):
//
//   - dcbnl_ieee_fill, after the local objects and the APP trust table,
//     inside DCB_ATTR_IEEE: DCB_ATTR_IEEE_PEER_ETS (4, struct ieee_ets)
//     from ops->ieee_peer_getets, DCB_ATTR_IEEE_PEER_PFC (5, struct
//     ieee_pfc) from ops->ieee_peer_getpfc, and, when both
//     ops->peer_getappinfo and ops->peer_getapptable exist,
//     dcbnl_build_peer_app(DCB_ATTR_IEEE_PEER_APP (6),
//     DCB_ATTR_IEEE_APP_UNSPEC, DCB_ATTR_IEEE_APP): a nest of struct dcb_app
//     under type 1 and no info attribute (type 0 is not put).
//   - dcbnl_cee_fill (DCB_CMD_CEE_GET = 26), inside DCB_ATTR_CEE (16) after
//     TX_PG, RX_PG, PFC, APP_TABLE and FEAT: DCB_ATTR_CEE_PEER_PG (1,
//     struct cee_pg, 20 bytes) from ops->cee_peer_getpg,
//     DCB_ATTR_CEE_PEER_PFC (2, struct cee_pfc, 4 bytes) from
//     ops->cee_peer_getpfc, and dcbnl_build_peer_app(
//     DCB_ATTR_CEE_PEER_APP_TABLE (3), DCB_ATTR_CEE_PEER_APP_INFO (1,
//     struct dcb_peer_app_info, 2 bytes), DCB_ATTR_CEE_PEER_APP (2)).
//
// Each struct is zeroed before the op and sent whenever the op returns 0;
// the values below are what qede fills in (qed_dcbx.c): no real capture of
// a qede or cxgb4 reply could be found, so the replies are laid out here
// by hand from dcbnl_ieee_fill / dcbnl_cee_fill and the driver's ops.

// The switch of these vectors announces ETS TC0 50 % / TC1 50 % (both ETS),
// priority 3 in TC1, PFC on priority 4 (the host has 3: a mismatch), and
// two application entries for RoCE on priority 3: Ethertype 0x8915 and UDP
// port 4791.
var (
	qedeSwitchETS = ETS{ETSCap: 8, TCTxBW: [8]uint8{50, 50}, TCTSA: [8]uint8{TSAETS, TSAETS}, PrioTC: [8]uint8{3: 1}}
	qedeLocalPFC  = PFC{Cap: 8, Enable: 1 << 3}
)

// qede in IEEE mode (DCBX mode LLD_MANAGED|VER_IEEE = 0x0a from
// qed_dcbnl_getdcbx). qede_dcbnl_ops has ieee_getets, ieee_getpfc, the peer
// ops and getdcbx, no maxrate, QCN, buffer or APP trust getters; its local
// APP table is empty here. Peer values as qed_dcbnl_get_ieee_ets(remote)
// and qed_dcbnl_get_ieee_pfc(remote) fill them: ets_cap, willing, cbs,
// tc_tx_bw, tc_tsa, prio_tc (tc_rx_bw and the reco fields stay 0); pfc_cap
// and pfc_en only. qed_dcbnl_peer_getapptable writes every entry with
// selector DCB_APP_IDTYPE_PORTNUM (1) in IEEE mode: it tests
// app_entry[i].ethtype, which qed_dcbx_get_app_data sets only in CEE mode.
var qedeIEEEGetReply = "" +
	"00150000" + // dcbmsg: AF_UNSPEC, DCB_CMD_IEEE_GET (21)
	"0b000100 656e7332 66300000" + // IFNAME len 4+7 "ens2f0\0", padded
	"b8010d00" + // DCB_ATTR_IEEE, len 440, nla_nest_start_noflag
	// DCB_ATTR_IEEE_ETS len 4+59: willing 0, ets_cap 8, cbs 0, tc_tx_bw
	// 50 50, tc_rx_bw 0, tc_tsa 2 2 (ETS), prio_tc 3:1, reco 0; 1 pad byte
	"3f000100 000800 3232000000000000 0000000000000000 0202000000000000 0000000100000000" +
	"0000000000000000 0000000000000000 0000000000000000 00" +
	// DCB_ATTR_IEEE_PFC len 4+136: pfc_cap 8, pfc_en 0x08, mbc 0, pad,
	// delay 0, pad, 128 bytes of counters
	"8c000200 08080000 00000000" + zero128 +
	"04000300" + // DCB_ATTR_IEEE_APP_TABLE, empty, noflag
	"04000c80" + // DCB_ATTR_DCB_REWR_TABLE, empty, nla_nest_start (flagged)
	// DCB_ATTR_IEEE_PEER_ETS len 4+59: the switch's ETS, as above
	"3f000400 000800 3232000000000000 0000000000000000 0202000000000000 0000000100000000" +
	"0000000000000000 0000000000000000 0000000000000000 00" +
	// DCB_ATTR_IEEE_PEER_PFC len 4+136: pfc_cap 8, pfc_en 0x10
	"8c000500 08100000 00000000" + zero128 +
	// DCB_ATTR_IEEE_PEER_APP len 4+2*8: DCB_ATTR_IEEE_APP {sel 1, prio 3,
	// protocol 4791 = 0x12b7}, DCB_ATTR_IEEE_APP {sel 1, prio 3, 0x8915}
	"14000600 08000100 0103b712 08000100 01031589" +
	"05000e00 0a000000" // DCB_ATTR_DCBX 0x0a, padded

var zero128 = strings.Repeat("00", 128)

func TestDecodeGetReplyQedePeerIEEE(t *testing.T) {
	requireLittleEndian(t)
	msg := unhex(t, qedeIEEEGetReply)
	// The hand-laid vector is the same message the test helpers build from
	// the structs: a second, independent check of the offsets.
	built := dcbPayload(CmdIEEEGet,
		nla(AttrIfname, cstr("ens2f0")),
		nla(AttrIEEE,
			nla(AttrIEEEETS, etsBytes(qedeSwitchETS)),
			nla(AttrIEEEPFC, pfcBytes(qedeLocalPFC)),
			nla(AttrIEEEAppTable),
			nla(AttrDCBRewrTable|nestedFlag),
			nla(AttrIEEEPeerETS, etsBytes(qedeSwitchETS)),
			nla(AttrIEEEPeerPFC, pfcBytes(PFC{Cap: 8, Enable: 1 << 4})),
			nla(AttrIEEEPeerApp, nla(AttrIEEEApp, appBytes(App{1, 3, 4791})), nla(AttrIEEEApp, appBytes(App{1, 3, 0x8915}))),
		),
		nla(AttrDCBX, u8(DCBXLLDManaged|DCBXVerIEEE)),
	)
	if !bytes.Equal(msg, built) {
		t.Fatalf("vector and helpers disagree\nvector %x\nbuilt  %x", msg, built)
	}
	st, err := DecodeGetReply(msg)
	if err != nil {
		t.Fatal(err)
	}
	dcbx := DCBXLLDManaged | DCBXVerIEEE
	want := &State{
		ETS:  &qedeSwitchETS,
		PFC:  &qedeLocalPFC,
		DCBX: &dcbx,
		Peer: &Peer{
			ETS: &qedeSwitchETS,
			PFC: &PFC{Cap: 8, Enable: 1 << 4},
			App: &PeerApp{Entries: []App{{Selector: 1, Priority: 3, Protocol: 4791}, {Selector: 1, Priority: 3, Protocol: 0x8915}}},
		},
	}
	if !reflect.DeepEqual(st, want) {
		t.Fatalf("decoded\n%+v\n%+v\nwant\n%+v\n%+v", st, st.Peer, want, want.Peer)
	}
}

// qede in CEE mode: qed_dcbnl_get_ieee_ets/pfc answer -EINVAL ("DCBX is
// not enabled/operational in IEEE mode"), so the IEEE reply carries no peer
// ETS or PFC, but peer_getappinfo does not look at the mode and the peer APP
// table comes anyway, now with CEE selectors (0 Ethertype, 1 port).
func TestDecodeGetReplyPeerAppOnly(t *testing.T) {
	requireLittleEndian(t)
	msg := unhex(t, "00150000 0b000100 656e7332 66300000"+
		"20000d00"+ // IEEE len 4+4+4+20 = 32
		"04000300 04000c80"+ // empty APP and REWR tables
		"14000600 08000100 00031589 08000100 0103b712"+ // PEER_APP
		"05000e00 06000000") // DCBX LLD_MANAGED|VER_CEE
	st, err := DecodeGetReply(msg)
	if err != nil {
		t.Fatal(err)
	}
	want := &Peer{App: &PeerApp{Entries: []App{{0, 3, 0x8915}, {1, 3, 4791}}}}
	if !reflect.DeepEqual(st.Peer, want) || st.ETS != nil || *st.DCBX != 0x06 {
		t.Fatalf("peer %+v, state %+v", st.Peer, st)
	}
}

// dcbnl_build_peer_app puts the nest even when peer_getappinfo counts no
// entry: the driver reported an empty peer table, which is not the same as
// a driver without peer ops (no nest, Peer nil).
func TestDecodeGetReplyEmptyPeerApp(t *testing.T) {
	st, err := DecodeGetReply(dcbPayload(CmdIEEEGet, nla(AttrIEEE, nla(AttrIEEEAppTable), nla(AttrIEEEPeerApp))))
	if err != nil {
		t.Fatal(err)
	}
	if st.Peer == nil || st.Peer.App == nil || st.Peer.App.Entries == nil || len(st.Peer.App.Entries) != 0 {
		t.Fatalf("peer %+v", st.Peer)
	}
	st, err = DecodeGetReply(dcbPayload(CmdIEEEGet, nla(AttrIEEE, nla(AttrIEEEAppTable))))
	if err != nil || st.Peer != nil {
		t.Fatalf("no peer attributes: peer %+v, %v", st.Peer, err)
	}
}

// ceeLocalPG is one of dcbnl_cee_pg_fill's nests (TX_PG or RX_PG): eight
// DCB_PG_ATTR_TC_n nests (types 1..8) of PGID, UP_MAPPING, STRICT_PRIO,
// BW_PCT (types 1..4, u8), then DCB_PG_ATTR_BW_ID_0..7 (types 11..18, u8).
func ceeLocalPG(typ uint16) []byte {
	var parts [][]byte
	for tc := range 8 {
		parts = append(parts, nla(uint16(1+tc), nla(1, u8(0)), nla(2, u8(1<<tc)), nla(3, u8(0)), nla(4, u8(12))))
	}
	for pg := range 8 {
		parts = append(parts, nla(uint16(11+pg), u8(0xff))) // DCB_ATTR_VALUE_UNDEFINED
	}
	return nla(typ, parts...)
}

// The CEE peer part of qede's CEE_GET reply, byte by byte, as
// qed_dcbnl_cee_peer_getpg (willing from ets_willing; pg_en and
// tcs_supported never set), qed_dcbnl_cee_peer_getpfc (pfc_en and
// tcs_supported; willing and error never set) and
// qed_dcbnl_peer_getappinfo/getapptable (willing, error; CEE selectors)
// fill it.
const qedeCEEPeer = "" +
	// DCB_ATTR_CEE_PEER_PG len 4+20: willing 0, error 0, pg_en 0,
	// tcs_supported 0, pg_bw 50 50 0.., prio_pg 3:1
	"18000100 00000000 3232000000000000 0000000100000000" +
	// DCB_ATTR_CEE_PEER_PFC len 4+4: willing 0, error 0, pfc_en 0x10,
	// tcs_supported 8
	"08000200 00001008" +
	// DCB_ATTR_CEE_PEER_APP_TABLE len 4+8+8+8: APP_INFO len 6 {willing 1,
	// error 0} padded; APP {sel 0 (Ethertype), prio 3, 0x8915}; APP {sel 1
	// (port), prio 3, 4791}
	"1c000300 06000100 01000000 08000200 00031589 08000200 0103b712"

func qedeCEEGetReply(t *testing.T) []byte {
	return dcbPayload(CmdCEEGet,
		nla(AttrIfname, cstr("ens2f0")),
		nla(AttrCEE,
			ceeLocalPG(AttrCEETxPG),
			ceeLocalPG(AttrCEERxPG),
			nla(AttrCEEPFC, nla(1, u8(0)), nla(2, u8(0)), nla(3, u8(0)), nla(4, u8(0)), nla(5, u8(1)), nla(6, u8(0)), nla(7, u8(0)), nla(8, u8(0))),
			// local APP table: DCB_ATTR_APP (12) nests of IDTYPE u8, ID u16, PRIORITY u8
			nla(AttrCEEAppTable, nla(12, nla(1, u8(0)), nla(2, le16(0x8915)), nla(3, u8(1<<3)))),
			nla(AttrCEEFeat, nla(2, u8(2)), nla(3, u8(2)), nla(4, u8(2))),
			unhex(t, qedeCEEPeer),
		),
		nla(AttrDCBX, u8(DCBXLLDManaged|DCBXVerCEE)),
	)
}

func TestDecodeCEEGetReplyQede(t *testing.T) {
	requireLittleEndian(t)
	p, err := DecodeCEEGetReply(qedeCEEGetReply(t))
	if err != nil {
		t.Fatal(err)
	}
	want := &CEEPeer{
		PG:  &CEEPG{BW: [8]uint8{50, 50}, PrioPG: [8]uint8{3: 1}},
		PFC: &CEEPFC{Enable: 1 << 4, TCsSupported: 8},
		App: &PeerApp{Info: &PeerAppInfo{Willing: 1}, Entries: []App{{0, 3, 0x8915}, {1, 3, 4791}}},
	}
	if !reflect.DeepEqual(p, want) {
		t.Fatalf("decoded %+v %+v %+v\nwant %+v %+v %+v", p.PG, p.PFC, p.App, want.PG, want.PFC, want.App)
	}
	// The helpers lay the peer objects out the same way.
	built := slicesConcat(
		nla(AttrCEEPeerPG, []byte{0, 0, 0, 0, 50, 50, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0}),
		nla(AttrCEEPeerPFC, []byte{0, 0, 0x10, 8}),
		nla(AttrCEEPeerAppTable, nla(AttrCEEPeerAppInfo, []byte{1, 0}), nla(AttrCEEPeerApp, appBytes(App{0, 3, 0x8915})), nla(AttrCEEPeerApp, appBytes(App{1, 3, 4791}))),
	)
	if v := unhex(t, qedeCEEPeer); !bytes.Equal(v, built) {
		t.Fatalf("vector and helpers disagree\nvector %x\nbuilt  %x", v, built)
	}
}

func slicesConcat(parts ...[]byte) []byte {
	var b []byte
	for _, p := range parts {
		b = append(b, p...)
	}
	return b
}

// A driver without CEE peer ops (mlx5, i40e) answers CEE_GET with its local
// objects only: no peer, no error.
func TestDecodeCEEGetReplyNoPeer(t *testing.T) {
	p, err := DecodeCEEGetReply(dcbPayload(CmdCEEGet, nla(AttrIfname, cstr("eth0")),
		nla(AttrCEE, ceeLocalPG(AttrCEETxPG), nla(AttrCEEAppTable)), nla(AttrDCBX, u8(DCBXHost|DCBXVerCEE|DCBXVerIEEE))))
	if err != nil || p != nil {
		t.Fatalf("peer %+v, err %v", p, err)
	}
}

func TestDecodePeerMalformed(t *testing.T) {
	ieee := func(attrs ...[]byte) []byte { return dcbPayload(CmdIEEEGet, nla(AttrIEEE, attrs...)) }
	cee := func(attrs ...[]byte) []byte { return dcbPayload(CmdCEEGet, nla(AttrCEE, attrs...)) }
	for _, tc := range []struct {
		name string
		msg  []byte
		get  bool // DecodeGetReply, else DecodeCEEGetReply
	}{
		{"peer ETS one byte short", ieee(nla(AttrIEEEPeerETS, zeros(SizeETS-1))), true},
		{"peer PFC one byte short", ieee(nla(AttrIEEEPeerPFC, zeros(SizePFC-1))), true},
		{"peer APP entry of 3 bytes", ieee(nla(AttrIEEEPeerApp, nla(AttrIEEEApp, []byte{1, 3, 0}))), true},
		{"peer APP entry running past its nest", ieee(nla(AttrIEEEPeerApp, []byte{8, 0, 1, 0, 1, 3})), true},
		{"CEE peer PG one byte short", cee(nla(AttrCEEPeerPG, zeros(SizeCEEPG-1))), false},
		{"CEE peer PFC of 3 bytes", cee(nla(AttrCEEPeerPFC, zeros(3))), false},
		{"CEE peer APP info of 1 byte", cee(nla(AttrCEEPeerAppTable, nla(AttrCEEPeerAppInfo, u8(1)))), false},
		{"CEE reply without DCB_ATTR_CEE", dcbPayload(CmdCEEGet, nla(AttrIfname, cstr("eth0"))), false},
		{"two DCB_ATTR_CEE nests", dcbPayload(CmdCEEGet, nla(AttrCEE), nla(AttrCEE)), false},
		{"IEEE_GET reply read as CEE", ieee(), false},
		{"CEE reply shorter than dcbmsg", []byte{0, CmdCEEGet}, false},
	} {
		var err error
		if tc.get {
			_, err = DecodeGetReply(tc.msg)
		} else {
			_, err = DecodeCEEGetReply(tc.msg)
		}
		if !errors.Is(err, ErrMalformed) {
			t.Errorf("%s: err %v, want ErrMalformed", tc.name, err)
		}
	}
}

// In firmware-run CEE (qede, cxgb4 in CEE mode) Get follows IEEE_GET with
// a CEE_GET and keeps its peer; in any other mode it sends IEEE_GET alone.
func TestClientGetReadsCEEPeerInFirmwareCEEMode(t *testing.T) {
	requireLittleEndian(t)
	ieeeCEEMode := unhex(t, "00150000 0b000100 656e7332 66300000 0c000d00 04000300 04000c80 05000e00 06000000")
	f := &fakeKernel{reply: func(i int, req []byte) ([]byte, error) {
		switch req[17] {
		case CmdIEEEGet:
			return ieeeCEEMode, nil
		case CmdCEEGet:
			return qedeCEEGetReply(t), nil
		}
		return nil, syscall.EINVAL
	}}
	st, err := f.client().Get("ens2f0")
	if err != nil {
		t.Fatal(err)
	}
	wantCEE, _ := wire(1)(ceeGetRequest("ens2f0"))
	if len(f.sent) != 2 || !bytes.Equal(f.sent[1], wantCEE) {
		t.Fatalf("sent %x", f.sent)
	}
	if st.CEEPeer == nil || st.CEEPeer.PFC == nil || st.CEEPeer.PFC.Enable != 1<<4 {
		t.Fatalf("CEE peer %+v", st.CEEPeer)
	}

	// A CEE_GET the kernel refuses leaves the peer unknown, the IEEE state
	// intact.
	f = &fakeKernel{reply: func(i int, req []byte) ([]byte, error) {
		if req[17] == CmdCEEGet {
			return nil, syscall.EOPNOTSUPP
		}
		return ieeeCEEMode, nil
	}}
	st, err = f.client().Get("ens2f0")
	if err != nil || st.CEEPeer != nil || len(f.sent) != 2 {
		t.Fatalf("refused CEE_GET: state %+v, err %v, %d sent", st, err, len(f.sent))
	}

	// IEEE firmware mode and host mode: one request.
	for _, mode := range []uint8{DCBXLLDManaged | DCBXVerIEEE, DCBXHost | DCBXVerIEEE | DCBXVerCEE} {
		f = &fakeKernel{reply: func(int, []byte) ([]byte, error) {
			return dcbPayload(CmdIEEEGet, nla(AttrIEEE), nla(AttrDCBX, u8(mode))), nil
		}}
		if _, err := f.client().Get("ens2f0"); err != nil || len(f.sent) != 1 {
			t.Errorf("mode %#x: %d requests, err %v", mode, len(f.sent), err)
		}
	}
}

func TestCEEPeerStructWireImages(t *testing.T) {
	pg := CEEPG{Willing: 1, Error: 2, Enable: 3, TCsSupported: 8, BW: [8]uint8{1, 2, 3, 4, 5, 6, 7, 8}, PrioPG: [8]uint8{15, 0, 1, 2, 3, 4, 5, 6}}
	pfc := CEEPFC{Willing: 1, Error: 0, Enable: 0x08, TCsSupported: 8}
	info := PeerAppInfo{Willing: 1, Error: 1}
	for _, tc := range []struct {
		v, empty wireStruct
		image    []byte
	}{
		{&pg, &CEEPG{}, []byte{1, 2, 3, 8, 1, 2, 3, 4, 5, 6, 7, 8, 15, 0, 1, 2, 3, 4, 5, 6}},
		{&pfc, &CEEPFC{}, []byte{1, 0, 8, 8}},
		{&info, &PeerAppInfo{}, []byte{1, 1}},
	} {
		b, _ := tc.v.MarshalBinary()
		if !bytes.Equal(b, tc.image) {
			t.Errorf("%T: % x, want % x", tc.v, b, tc.image)
		}
		if err := tc.empty.UnmarshalBinary(tc.image); err != nil || !reflect.DeepEqual(tc.empty, tc.v) {
			t.Errorf("%T: decoded %+v, %v", tc.v, tc.empty, err)
		}
		if err := tc.empty.UnmarshalBinary(tc.image[:len(tc.image)-1]); !errors.Is(err, ErrMalformed) {
			t.Errorf("%T short: %v", tc.v, err)
		}
	}
}
