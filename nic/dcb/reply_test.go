package dcb

import (
	"errors"
	"reflect"
	"strings"
	"syscall"
	"testing"
)

func TestDecodeGetReplyFull(t *testing.T) {
	requireLittleEndian(t)
	st, err := DecodeGetReply(fullGetReply(fixtureApps))
	if err != nil {
		t.Fatal(err)
	}
	dcbx := DCBXHost | DCBXVerIEEE
	want := &State{
		ETS:      &fixtureETS,
		PFC:      &fixturePFC,
		Apps:     fixtureApps,
		Buffer:   &fixtureBuffer,
		Maxrate:  &fixtureMaxrate,
		AppTrust: []uint8{SelDSCP, SelPCP},
		DCBX:     &dcbx,
	}
	if !reflect.DeepEqual(st, want) {
		t.Fatalf("decoded\n%+v\nwant\n%+v", st, want)
	}
	// The rewrite table (prio 3 -> DSCP 26) must not leak into Apps.
	for _, a := range st.Apps {
		if a.Protocol == 26 {
			t.Errorf("rewrite entry decoded as APP entry: %+v", a)
		}
	}
}

// A driver with no IEEE getters (e.g. one that only implements CEE ops) still
// gets IFNAME, the IEEE nest, an empty APP table and an empty rewrite table;
// without getdcbx there is no DCBX attribute either.
func TestDecodeGetReplyNoGetters(t *testing.T) {
	msg := dcbPayload(CmdIEEEGet,
		nla(AttrIfname, cstr("eth0")),
		nla(AttrIEEE,
			nla(AttrIEEEAppTable),
			nla(AttrDCBRewrTable|nestedFlag),
		),
	)
	st, err := DecodeGetReply(msg)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(st, &State{}) {
		t.Fatalf("want an empty State, got %+v", st)
	}
}

// A driver that implements getapptrust with nothing trusted yet sends an
// empty flagged nest: AppTrust must be empty, not nil (nil = no getter).
func TestDecodeGetReplyEmptyTrustTable(t *testing.T) {
	msg := dcbPayload(CmdIEEEGet,
		nla(AttrIfname, cstr("eth0")),
		nla(AttrIEEE, nla(AttrIEEEAppTable), nla(AttrDCBAppTrustTable|nestedFlag)),
	)
	st, err := DecodeGetReply(msg)
	if err != nil {
		t.Fatal(err)
	}
	if st.AppTrust == nil || len(st.AppTrust) != 0 {
		t.Fatalf("AppTrust = %#v, want empty non-nil", st.AppTrust)
	}
}

// Nests may come flagged with NLA_F_NESTED (RTNLGRP_DCB listeners, other
// kernels); types are compared with the flag masked off. The APP table may
// also hold a PCP entry under DCB_ATTR_DCB_APP and unknown types to skip.
func TestDecodeGetReplyFlaggedNests(t *testing.T) {
	requireLittleEndian(t)
	msg := dcbPayload(CmdIEEEGet,
		nla(AttrIfname, cstr("eth0")),
		nla(AttrIEEE|nestedFlag,
			nla(AttrIEEEPFC, pfcBytes(fixturePFC)),
			nla(AttrIEEEAppTable|nestedFlag,
				nla(AttrIEEEApp, appBytes(App{SelDSCP, 3, 26})),
				nla(7, []byte{1, 2, 3, 4}), // unknown type: skipped, as the kernel does
				nla(AttrDCBApp, appBytes(App{SelPCP, 2, 5})),
			),
		),
		nla(AttrDCBX, u8(DCBXHost|DCBXVerIEEE)),
	)
	st, err := DecodeGetReply(msg)
	if err != nil {
		t.Fatal(err)
	}
	if st.PFC == nil || *st.PFC != fixturePFC {
		t.Errorf("PFC %+v", st.PFC)
	}
	if want := []App{{SelDSCP, 3, 26}, {SelPCP, 2, 5}}; !reflect.DeepEqual(st.Apps, want) {
		t.Errorf("Apps %+v, want %+v", st.Apps, want)
	}
	if st.DCBX == nil || *st.DCBX != 0x09 {
		t.Errorf("DCBX %v", st.DCBX)
	}
}

// RTNLGRP_DCB notifications carry the same state under cmd IEEE_SET.
func TestDecodeGetReplyNotification(t *testing.T) {
	msg := fullGetReply(nil)
	msg[1] = CmdIEEESet
	if _, err := DecodeGetReply(msg); err != nil {
		t.Fatalf("notification: %v", err)
	}
	msg[1] = CmdSDCBX
	if _, err := DecodeGetReply(msg); !errors.Is(err, ErrMalformed) {
		t.Fatalf("SDCBX reply decoded as IEEE state: %v", err)
	}
}

func TestDecodeGetReplyMalformed(t *testing.T) {
	full := fullGetReply(fixtureApps)
	for _, tc := range []struct {
		name string
		msg  []byte
	}{
		{"empty", nil},
		{"dcbmsg only, no IEEE nest", dcbPayload(CmdIEEEGet)},
		{"truncated mid-attribute", full[:len(full)-4]},
		{"truncated inside the IEEE nest", full[:40]},
		{"stray bytes after the last attribute", append(dcbPayload(CmdIEEEGet, nla(AttrIEEE)), 1, 2)},
		{"attribute length below its header", dcbPayload(CmdIEEEGet, []byte{2, 0, 13, 0})},
		{"attribute length past the message", dcbPayload(CmdIEEEGet, []byte{0xff, 0, 13, 0, 0, 0, 0, 0})},
		{"short ETS", dcbPayload(CmdIEEEGet, nla(AttrIEEE, nla(AttrIEEEETS, zeros(58))))},
		{"short PFC", dcbPayload(CmdIEEEGet, nla(AttrIEEE, nla(AttrIEEEPFC, zeros(135))))},
		{"short BUFFER", dcbPayload(CmdIEEEGet, nla(AttrIEEE, nla(AttrDCBBuffer, zeros(43))))},
		{"short MAXRATE", dcbPayload(CmdIEEEGet, nla(AttrIEEE, nla(AttrIEEEMaxrate, zeros(63))))},
		{"short APP entry", dcbPayload(CmdIEEEGet, nla(AttrIEEE, nla(AttrIEEEAppTable, nla(AttrIEEEApp, zeros(3)))))},
		{"empty trust selector", dcbPayload(CmdIEEEGet, nla(AttrIEEE, nla(AttrDCBAppTrustTable|nestedFlag, nla(AttrIEEEApp))))},
		{"empty DCBX", dcbPayload(CmdIEEEGet, nla(AttrIEEE), nla(AttrDCBX))},
		{"two IEEE nests", dcbPayload(CmdIEEEGet, nla(AttrIEEE), nla(AttrIEEE))},
		{"nest length past its parent", dcbPayload(CmdIEEEGet, nla(AttrIEEE, []byte{0x40, 0, 3, 0}))},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st, err := DecodeGetReply(tc.msg)
			if !errors.Is(err, ErrMalformed) || st != nil {
				t.Fatalf("got %+v, %v; want nil, ErrMalformed", st, err)
			}
		})
	}
}

// The last attribute of a message may come without its padding.
func TestDecodeUnpaddedLastAttribute(t *testing.T) {
	msg := dcbPayload(CmdIEEEGet, nla(AttrIEEE), []byte{5, 0, byte(AttrDCBX), 0, 0x19})
	st, err := DecodeGetReply(msg)
	if err != nil {
		t.Fatal(err)
	}
	if st.DCBX == nil || *st.DCBX != 0x19 {
		t.Fatalf("DCBX %v", st.DCBX)
	}
}

func TestDecodeSetReply(t *testing.T) {
	// The kernel answers IEEE_SET/DEL with dcbmsg + u8 DCB_ATTR_IEEE holding
	// the driver's result as a negative errno cast to u8 (dcbnl_ieee_set).
	for _, tc := range []struct {
		name   string
		cmd    uint8
		status byte
		want   error
	}{
		{"ok", CmdIEEESet, 0x00, nil},
		{"EINVAL 0xea = -22", CmdIEEESet, 0xea, syscall.EINVAL},
		{"EOPNOTSUPP 0xa1 = -95", CmdIEEESet, 0xa1, syscall.EOPNOTSUPP},
		{"ERANGE 0xde = -34", CmdIEEESet, 0xde, syscall.ERANGE},
		{"EEXIST 0xef = -17", CmdIEEESet, 0xef, syscall.EEXIST},
		{"DEL ENOENT 0xfe = -2", CmdIEEEDel, 0xfe, syscall.ENOENT},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := DecodeSetReply(dcbPayload(tc.cmd, nla(AttrIEEE, u8(tc.status))))
			if tc.want == nil {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if !errors.Is(err, tc.want) {
				t.Fatalf("err %v, want %v", err, tc.want)
			}
			var errno syscall.Errno
			if !errors.As(err, &errno) || errno != tc.want {
				t.Fatalf("errno %v, want exactly %v", errno, tc.want)
			}
		})
	}
	// 0xF4 is -ENOMEM, and the low byte of bnxt's -ENOTSUPP (524): the
	// error says both, and still matches ENOMEM.
	err := DecodeSetReply(dcbPayload(CmdIEEESet, nla(AttrIEEE, u8(0xf4))))
	var se *StatusError
	if !errors.Is(err, syscall.ENOMEM) || !errors.As(err, &se) || !strings.Contains(err.Error(), "or ENOTSUPP (524") {
		t.Errorf("0xf4: %v, want ENOMEM or ENOTSUPP named", err)
	}
	for _, tc := range []struct {
		name string
		msg  []byte
	}{
		{"no status", dcbPayload(CmdIEEESet)},
		{"empty status", dcbPayload(CmdIEEESet, nla(AttrIEEE))},
		{"positive status", dcbPayload(CmdIEEESet, nla(AttrIEEE, u8(1)))},
		{"reply of another command", dcbPayload(CmdIEEEGet, nla(AttrIEEE, u8(0)))},
		{"short", []byte{0, 20}},
		{"bad attribute", dcbPayload(CmdIEEESet, []byte{9, 0, 13, 0, 0})},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if err := DecodeSetReply(tc.msg); !errors.Is(err, ErrMalformed) {
				t.Fatalf("err %v, want ErrMalformed", err)
			}
		})
	}
}

func TestDecodeDCBXReply(t *testing.T) {
	for _, cmd := range []uint8{CmdGDCBX, CmdSDCBX} {
		v, err := DecodeDCBXReply(dcbPayload(cmd, nla(AttrDCBX, u8(0x09))))
		if err != nil || v != 0x09 {
			t.Errorf("cmd %d: %d, %v", cmd, v, err)
		}
	}
	// SDCBX refusal: the driver's 1 passes through, it is not -1/EPERM.
	v, err := DecodeDCBXReply(dcbPayload(CmdSDCBX, nla(AttrDCBX, u8(1))))
	if err != nil || v != 1 {
		t.Errorf("refusal: %d, %v", v, err)
	}
	for _, msg := range [][]byte{
		dcbPayload(CmdSDCBX),
		dcbPayload(CmdSDCBX, nla(AttrDCBX)),
		dcbPayload(CmdIEEESet, nla(AttrDCBX, u8(0))),
		{0},
	} {
		if _, err := DecodeDCBXReply(msg); !errors.Is(err, ErrMalformed) {
			t.Errorf("% x: err %v, want ErrMalformed", msg, err)
		}
	}
}
