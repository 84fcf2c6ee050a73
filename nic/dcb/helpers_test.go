package dcb

import (
	"encoding/binary"
	"encoding/hex"
	"strings"
	"testing"
)

// Test helpers that build netlink bytes by hand, independently of the nl
// package the product code uses, so that encoder and decoder are checked
// against something they do not share.

// unhex decodes a hex dump with arbitrary spaces, '|' separators and line
// breaks, as the vectors are written in the reference.
func unhex(t testing.TB, s string) []byte {
	t.Helper()
	s = strings.NewReplacer(" ", "", "\n", "", "\t", "", "|", "").Replace(s)
	b, err := hex.DecodeString(s)
	if err != nil {
		t.Fatalf("bad hex in test vector: %v", err)
	}
	return b
}

// nla builds one netlink attribute: u16 length (header + payload, without
// padding), u16 type, payload, zero padding to 4 bytes.
func nla(typ uint16, payload ...[]byte) []byte {
	var p []byte
	for _, x := range payload {
		p = append(p, x...)
	}
	b := binary.NativeEndian.AppendUint16(nil, uint16(4+len(p)))
	b = binary.NativeEndian.AppendUint16(b, typ)
	b = append(b, p...)
	for len(b)%4 != 0 {
		b = append(b, 0)
	}
	return b
}

// dcbPayload is a reply payload without its nlmsghdr: struct dcbmsg
// {AF_UNSPEC, cmd, pad 0} followed by attributes.
func dcbPayload(cmd uint8, attrs ...[]byte) []byte {
	b := []byte{0, cmd, 0, 0}
	for _, a := range attrs {
		b = append(b, a...)
	}
	return b
}

const nestedFlag = 0x8000 // NLA_F_NESTED

func u8(v uint8) []byte { return []byte{v} }

func le16(v uint16) []byte { return binary.NativeEndian.AppendUint16(nil, v) }
func le32(v uint32) []byte { return binary.NativeEndian.AppendUint32(nil, v) }
func le64(v uint64) []byte { return binary.NativeEndian.AppendUint64(nil, v) }

func cstr(s string) []byte { return append([]byte(s), 0) }

func zeros(n int) []byte { return make([]byte, n) }

// requireLittleEndian skips byte-exact tests on big-endian hosts: the uapi
// structs are host-endian and the vectors were taken on x86_64.
func requireLittleEndian(t testing.TB) {
	t.Helper()
	if binary.NativeEndian.Uint16([]byte{1, 0}) != 1 {
		t.Skip("byte vectors are little-endian (x86_64); this host is big-endian")
	}
}

// Values copied from real captures in shared/fixtures (mlxsw Spectrum port
// eni1np1, iproute2 commit messages by the dcb author):
//
//	mlxsw-dcb-ets-show-eni1np1.txt:
//	  willing on ets_cap 8 cbs off
//	  tc-bw 0:0 1:0 2:0 3:0 4:100 5:0 6:0 7:0
//	  tc-tsa 0:strict 1:strict 2:strict 3:strict 4:ets 5:strict 6:strict 7:strict
//	  prio-tc 0:1 1:3 2:5 3:0 4:0 5:0 6:0 7:0   (reco-* all zero / strict)
//	mlxsw-dcb-pfc-show-eni1np1.txt:
//	  pfc-cap 8 macsec-bypass on delay 0, pfc on 1 and 7,
//	  requests 1:217 7:28, indications 1:179 7:18
//	mlxsw-dcb-buffer-show-eni1np1.txt:
//	  prio-buffer 3:3 6:6 (others 0), buffer-size 0:10000 3:70000 6:10000,
//	  total-size 221072
//	mlxsw-dcb-app-show-eni1np1.txt: dscp-prio 0:0 CS3:3 CS6:6
var (
	fixtureETS = ETS{
		Willing: 1, ETSCap: 8,
		TCTxBW: [8]uint8{4: 100},
		TCTSA:  [8]uint8{TSAStrict, TSAStrict, TSAStrict, TSAStrict, TSAETS, TSAStrict, TSAStrict, TSAStrict},
		PrioTC: [8]uint8{1, 3, 5, 0, 0, 0, 0, 0},
	}
	fixturePFC = PFC{
		Cap: 8, Enable: 1<<1 | 1<<7, MBC: 1, Delay: 0,
		Requests:    [8]uint64{1: 217, 7: 28},
		Indications: [8]uint64{1: 179, 7: 18},
	}
	fixtureBuffer = Buffer{
		PrioBuffer: [8]uint8{3: 3, 6: 6},
		Size:       [8]uint32{0: 10000, 3: 70000, 6: 10000},
		TotalSize:  221072,
	}
	fixtureApps = []App{
		{Selector: SelDSCP, Priority: 0, Protocol: 0},
		{Selector: SelDSCP, Priority: 3, Protocol: 24}, // CS3
		{Selector: SelDSCP, Priority: 6, Protocol: 48}, // CS6
	}
	// 25 Gbit/s on TC 3 (the lab's `dcb maxrate set tc-maxrate 3:25Gbit`) in kbit/s.
	fixtureMaxrate = Maxrate{TCMaxrate: [8]uint64{3: 25_000_000}}
)

// Hand-written wire images of the fixture structs, field by field at the
// uapi offsets (§A1.3).
func etsBytes(e ETS) []byte {
	b := []byte{e.Willing, e.ETSCap, e.CBS}
	for _, a := range [][8]uint8{e.TCTxBW, e.TCRxBW, e.TCTSA, e.PrioTC, e.TCRecoBW, e.TCRecoTSA, e.RecoPrioTC} {
		b = append(b, a[:]...)
	}
	return b
}

func pfcBytes(p PFC) []byte {
	b := []byte{p.Cap, p.Enable, p.MBC, 0} // pad at 3
	b = append(b, le16(p.Delay)...)        // delay at 4
	b = append(b, 0, 0)                    // pad at 6..7
	for _, v := range p.Requests {         // requests at 8
		b = append(b, le64(v)...)
	}
	for _, v := range p.Indications { // indications at 72
		b = append(b, le64(v)...)
	}
	return b
}

func bufferBytes(bu Buffer) []byte {
	b := append([]byte{}, bu.PrioBuffer[:]...)
	for _, v := range bu.Size {
		b = append(b, le32(v)...)
	}
	return append(b, le32(bu.TotalSize)...)
}

func maxrateBytes(m Maxrate) []byte {
	var b []byte
	for _, v := range m.TCMaxrate {
		b = append(b, le64(v)...)
	}
	return b
}

func appBytes(a App) []byte { return append([]byte{a.Selector, a.Priority}, le16(a.Protocol)...) }

// fullGetReply is an IEEE_GET reply in dcbnl_ieee_fill order (§A1.4.7):
// IFNAME, IEEE{ETS, MAXRATE, PFC, BUFFER, APP_TABLE, REWR_TABLE(flagged),
// APP_TRUST_TABLE(flagged)}, DCBX. IEEE and APP_TABLE are opened with
// nla_nest_start_noflag, REWR and APP_TRUST with nla_nest_start.
func fullGetReply(apps []App) []byte {
	var table [][]byte
	for _, a := range apps {
		table = append(table, nla(appAttrType(a.Selector), appBytes(a)))
	}
	return dcbPayload(CmdIEEEGet,
		nla(AttrIfname, cstr("eni1np1")),
		nla(AttrIEEE,
			nla(AttrIEEEETS, etsBytes(fixtureETS)),
			nla(AttrIEEEMaxrate, maxrateBytes(fixtureMaxrate)),
			nla(AttrIEEEPFC, pfcBytes(fixturePFC)),
			nla(AttrDCBBuffer, bufferBytes(fixtureBuffer)),
			nla(AttrIEEEAppTable, table...),
			nla(AttrDCBRewrTable|nestedFlag, nla(AttrIEEEApp, appBytes(App{SelDSCP, 3, 26}))),
			nla(AttrDCBAppTrustTable|nestedFlag, nla(AttrIEEEApp, u8(SelDSCP)), nla(AttrDCBApp, u8(SelPCP))),
		),
		nla(AttrDCBX, u8(DCBXHost|DCBXVerIEEE)),
	)
}
