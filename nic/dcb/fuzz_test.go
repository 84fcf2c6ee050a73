package dcb

import (
	"bytes"
	"reflect"
	"testing"
)

// Fuzz targets. Plain `go test` runs only the seeds; run one for real with
//
//	go test -run x -fuzz FuzzDecodeGetReply -fuzztime 20s ./nic/dcb/

func FuzzDecodeGetReply(f *testing.F) {
	f.Add(fullGetReply(fixtureApps))
	f.Add(dcbPayload(CmdIEEEGet, nla(AttrIfname, cstr("eth0")), nla(AttrIEEE, nla(AttrIEEEAppTable))))
	f.Add(dcbPayload(CmdIEEEGet, nla(AttrIEEE|nestedFlag, nla(AttrDCBAppTrustTable|nestedFlag, nla(AttrDCBApp, u8(SelPCP))))))
	f.Add(dcbPayload(CmdIEEEGet, nla(AttrIEEE), []byte{5, 0, byte(AttrDCBX), 0, 9}))
	f.Add(dcbPayload(CmdIEEEGet, nla(AttrIEEE, nla(AttrIEEEPeerETS, etsBytes(fixtureETS)), nla(AttrIEEEPeerPFC, pfcBytes(fixturePFC)),
		nla(AttrIEEEPeerApp, nla(AttrIEEEApp, appBytes(App{1, 3, 4791}))))))
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, msg []byte) {
		st, err := DecodeGetReply(msg)
		if (err == nil) == (st == nil) {
			t.Fatalf("state %v with error %v", st, err)
		}
		if err != nil {
			return
		}
		// Decoding is a pure function of the bytes.
		again, _ := DecodeGetReply(bytes.Clone(msg))
		if !reflect.DeepEqual(st, again) {
			t.Fatalf("two decodes differ")
		}
	})
}

func FuzzDecodeSetReply(f *testing.F) {
	for _, s := range []byte{0, 0xea, 0xa1, 1, 0x80} {
		f.Add(dcbPayload(CmdIEEESet, nla(AttrIEEE, u8(s))))
	}
	f.Add(dcbPayload(CmdIEEEDel, nla(AttrIfname, cstr("eth0")), nla(AttrIEEE, u8(0xfe))))
	f.Add([]byte{0, 20, 0, 0, 5, 0})
	f.Fuzz(func(t *testing.T, msg []byte) {
		_ = DecodeSetReply(msg)
	})
}

func FuzzDecodeDCBXReply(f *testing.F) {
	f.Add(dcbPayload(CmdSDCBX, nla(AttrDCBX, u8(0))))
	f.Add(dcbPayload(CmdGDCBX, nla(AttrDCBX, u8(9))))
	f.Add(dcbPayload(CmdSDCBX, nla(AttrDCBX)))
	f.Fuzz(func(t *testing.T, msg []byte) {
		_, _ = DecodeDCBXReply(msg)
	})
}

// Any bytes decode into each struct and re-encode to the same bytes (PFC's
// three pad bytes aside), or fail cleanly when too short.
func FuzzStructRoundTrip(f *testing.F) {
	f.Add(pfcBytes(fixturePFC))
	f.Add(etsBytes(fixtureETS))
	f.Add([]byte{5, 3, 26})
	f.Fuzz(func(t *testing.T, b []byte) {
		for _, v := range []wireStruct{&ETS{}, &PFC{}, &App{}, &Buffer{}, &Maxrate{}} {
			if err := v.UnmarshalBinary(b); err != nil {
				continue
			}
			out, _ := v.MarshalBinary()
			want := bytes.Clone(b[:len(out)])
			if _, ok := v.(*PFC); ok {
				want[3], want[6], want[7] = 0, 0, 0
			}
			if !bytes.Equal(out, want) {
				t.Fatalf("%T: % x -> % x", v, want, out)
			}
		}
	})
}

// An APP request is itself a dcbmsg with an IEEE nest holding an APP table,
// so the reply decoder must read back exactly the entries the encoder wrote.
func FuzzAppRequestRoundTrip(f *testing.F) {
	f.Add([]byte{5, 3, 26, 0, 5, 6, 48, 0})
	f.Add([]byte{255, 2, 5, 0, 1, 4, 0x15, 0x89})
	f.Fuzz(func(t *testing.T, raw []byte) {
		var apps []App
		for len(raw) >= SizeApp && len(apps) < MaxAppsPerMessage {
			var a App
			_ = a.UnmarshalBinary(raw)
			apps = append(apps, a)
			raw = raw[SizeApp:]
		}
		for _, cmd := range []uint8{CmdIEEESet, CmdIEEEDel} {
			r, err := appRequest(cmd, "eth0", apps)
			if err != nil {
				t.Fatal(err)
			}
			st, err := DecodeGetReply(r.bytes(1)[16:])
			if err != nil {
				t.Fatal(err)
			}
			if len(apps) == 0 && len(st.Apps) == 0 {
				continue
			}
			if !reflect.DeepEqual(st.Apps, apps) {
				t.Fatalf("sent %v, decoded %v", apps, st.Apps)
			}
		}
	})
}

func FuzzDecodeCEEGetReply(f *testing.F) {
	f.Add(dcbPayload(CmdCEEGet, nla(AttrCEE, nla(AttrCEEPeerPG, zeros(SizeCEEPG)), nla(AttrCEEPeerPFC, zeros(SizeCEEPFC)),
		nla(AttrCEEPeerAppTable, nla(AttrCEEPeerAppInfo, []byte{1, 0}), nla(AttrCEEPeerApp, appBytes(App{0, 3, 0x8915}))))))
	f.Add(dcbPayload(CmdCEEGet, nla(AttrCEE, ceeLocalPG(AttrCEETxPG))))
	f.Add(dcbPayload(CmdCEEGet))
	f.Fuzz(func(t *testing.T, msg []byte) {
		p, err := DecodeCEEGetReply(msg)
		if err != nil && p != nil {
			t.Fatalf("peer %+v with error %v", p, err)
		}
	})
}
