package dcb

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"strings"
	"testing"
)

// Byte-exact request vectors. The first three are copied from reference
// §A1.6 (generated with vishvananda/netlink/nl, Seq 1, Pid 0); the others
// are derived here from the uapi layouts, with the arithmetic in comments.
//
// Common prefix of every request on "eth0":
//
//	nlmsghdr  LLLLLLLL TTTT FFFF 01000000 00000000   len, type, flags, seq 1, pid 0
//	dcbmsg    00 CC 0000                              AF_UNSPEC, cmd, pad
//	IFNAME    0900 0100 "eth0\0" 000000               len 4+5, type 1, padded to 12

// wire serializes a built request with sequence number seq, the bytes the
// client puts on the socket: wire(1)(pfcSetRequest("eth0", p)).
func wire(seq uint32) func(*request, error) ([]byte, error) {
	return func(r *request, err error) ([]byte, error) {
		if err != nil {
			return nil, err
		}
		return r.bytes(seq), nil
	}
}

// requestVector is one request's bytes: built by the request builder
// (build, with the sequence number in want) and written by the client's
// public call (send) onto a socket whose next number is that one.
type requestVector struct {
	name  string
	build func() ([]byte, error)
	send  func(*Client) error
	want  string
}

var referenceVectors = []requestVector{
	{
		name: "IEEE_SET PFC prio 3 (176 bytes)",
		send: func(c *Client) error { return c.SetPFC("eth0", PFC{Cap: 8, Enable: 0x08}) },
		build: func() ([]byte, error) {
			return wire(1)(pfcSetRequest("eth0", PFC{Cap: 8, Enable: 0x08}))
		},
		// nlmsghdr(len 176, RTM_SETDCB, REQUEST|ACK) dcbmsg(0, 20, 0)
		// IFNAME, IEEE(len 144, 0x800d) PFC(len 140, type 2): cap 8,
		// pfc_en 0x08, mbc 0, pad, delay 0, pad, 128 zero bytes.
		want: "b0000000 4f000500 01000000 00000000 | 00140000 | 09000100 65746830 00000000 |" +
			"90000d80 8c000200 08080000 00000000" + strings.Repeat("00", 128),
	},
	{
		name: "IEEE_SET APP DSCP 26 -> prio 3 (48 bytes)",
		send: func(c *Client) error { return c.AddApps("eth0", []App{{Selector: SelDSCP, Priority: 3, Protocol: 26}}) },
		build: func() ([]byte, error) {
			return wire(1)(appRequest(CmdIEEESet, "eth0", []App{{Selector: SelDSCP, Priority: 3, Protocol: 26}}))
		},
		want: "30000000 4f000500 01000000 00000000 00140000 09000100 65746830 00000000" +
			"10000d80 0c000380 08000100 05031a00",
	},
	{
		name:  "IEEE_GET (32 bytes)",
		send:  func(c *Client) error { _, err := c.Get("eth0"); return err },
		build: func() ([]byte, error) { return wire(1)(ieeeGetRequest("eth0")) },
		// GET carries NLM_F_REQUEST only (flags 0x0001), type RTM_GETDCB 0x4e.
		want: "20000000 4e000100 01000000 00000000 00150000 09000100 65746830 00000000",
	},
}

// mlx5DefaultETS is mlx5's ETS at driver init (§A1.8), as a GET reads it.
var mlx5DefaultETS = ETS{
	ETSCap: 8,
	TCTxBW: [8]uint8{100, 100, 100, 100, 100, 100, 100, 100},
	TCTSA:  [8]uint8{255, 255, 255, 255, 255, 255, 255, 255},
	PrioTC: [8]uint8{1, 0, 2, 3, 4, 5, 6, 7},
}

var derivedVectors = []requestVector{
	{
		// ETS of the mlxsw capture. ETS attr = 4+59 = 63 (0x3f), padded
		// to 64; IEEE nest = 4+64 = 68 (0x44); message = 16+4+12+68 = 100
		// (0x64). Payload: willing 1, ets_cap 8, cbs 0, tc_tx_bw
		// [0 0 0 0 100 0 0 0], tc_rx_bw zeros, tc_tsa [0 0 0 0 2 0 0 0],
		// prio_tc [1 3 5 0 0 0 0 0], three reco arrays of zeros, 1 pad.
		name:  "IEEE_SET ETS mlxsw capture (100 bytes)",
		send:  func(c *Client) error { return c.SetETS("eth0", fixtureETS) },
		build: func() ([]byte, error) { return wire(1)(etsSetRequest("eth0", fixtureETS)) },
		want: "64000000 4f000500 01000000 00000000 00140000 09000100 65746830 00000000" +
			"44000d80 3f000100 010800" + "0000000064000000" + "0000000000000000" +
			"0000000002000000" + "0103050000000000" + strings.Repeat("00", 24) + "00",
	},
	{
		// mlx5's ETS at driver init: every TC vendor (255) at 100 %,
		// prio_tc [1 0 2 3 4 5 6 7] (§A1.8). The bandwidth of non-ETS TCs
		// must leave as 0 (§A1.4.6), so tc_tx_bw is all zeros on the wire.
		name:  "IEEE_SET ETS mlx5 default, non-ETS bandwidth zeroed (100 bytes)",
		send:  func(c *Client) error { return c.SetETS("eth0", mlx5DefaultETS) },
		build: func() ([]byte, error) { return wire(1)(etsSetRequest("eth0", mlx5DefaultETS)) },
		want: "64000000 4f000500 01000000 00000000 00140000 09000100 65746830 00000000" +
			"44000d80 3f000100 000800" + "0000000000000000" + "0000000000000000" +
			"ffffffffffffffff" + "0100020304050607" + strings.Repeat("00", 24) + "00",
	},
	{
		// BUFFER of the mlxsw capture. Attr type 10 (0x0a), len 4+44 = 48
		// (0x30); IEEE nest 52 (0x34); message 16+4+12+52 = 84 (0x54).
		// prio2buffer [0 0 0 3 0 0 6 0]; sizes u32: 10000 = 0x2710,
		// 70000 = 0x11170; total_size 221072 = 0x35f90.
		name:  "IEEE_SET BUFFER mlxsw capture (84 bytes)",
		send:  func(c *Client) error { return c.SetBuffer("eth0", fixtureBuffer) },
		build: func() ([]byte, error) { return wire(1)(bufferSetRequest("eth0", fixtureBuffer)) },
		want: "54000000 4f000500 01000000 00000000 00140000 09000100 65746830 00000000" +
			"34000d80 30000a00 0000000300000600" +
			"10270000 00000000 00000000 70110100 00000000 00000000 10270000 00000000" +
			"905f0300",
	},
	{
		// MAXRATE 25 Gbit/s on TC 3 = 25,000,000 kbit/s = 0x017d7840 at
		// offset 3*8. Attr type 7, len 4+64 = 68 (0x44); IEEE nest 72
		// (0x48); message 16+4+12+72 = 104 (0x68).
		name:  "IEEE_SET MAXRATE 25 Gbit/s on TC 3 (104 bytes)",
		send:  func(c *Client) error { return c.SetMaxrate("eth0", fixtureMaxrate) },
		build: func() ([]byte, error) { return wire(1)(maxrateSetRequest("eth0", fixtureMaxrate)) },
		want: "68000000 4f000500 01000000 00000000 00140000 09000100 65746830 00000000" +
			"48000d80 44000700" + strings.Repeat("00", 24) + "40787d0100000000" + strings.Repeat("00", 32),
	},
	{
		// IEEE_DEL (cmd 27 = 0x1b) of DSCP 26->3 and 48->6: two 8-byte
		// DCB_ATTR_IEEE_APP entries, APP_TABLE nest 4+16 = 20 (0x14,
		// flagged 0x8003), IEEE nest 24 (0x18); message 16+4+12+24 = 56.
		name: "IEEE_DEL APP DSCP 26->3, 48->6 (56 bytes)",
		send: func(c *Client) error { return c.DelApps("eth0", []App{{SelDSCP, 3, 26}, {SelDSCP, 6, 48}}) },
		build: func() ([]byte, error) {
			return wire(1)(appRequest(CmdIEEEDel, "eth0", []App{{SelDSCP, 3, 26}, {SelDSCP, 6, 48}}))
		},
		want: "38000000 4f000500 01000000 00000000 001b0000 09000100 65746830 00000000" +
			"18000d80 14000380 08000100 05031a00 08000100 05063000",
	},
	{
		// A PCP entry (selector 255) travels under DCB_ATTR_DCB_APP (2),
		// a DSCP entry under DCB_ATTR_IEEE_APP (1), in one table.
		name: "IEEE_SET APP PCP 5 -> prio 2 and DSCP 46 -> prio 5 (56 bytes)",
		send: func(c *Client) error { return c.AddApps("eth0", []App{{SelPCP, 2, 5}, {SelDSCP, 5, 46}}) },
		build: func() ([]byte, error) {
			return wire(1)(appRequest(CmdIEEESet, "eth0", []App{{SelPCP, 2, 5}, {SelDSCP, 5, 46}}))
		},
		want: "38000000 4f000500 01000000 00000000 00140000 09000100 65746830 00000000" +
			"18000d80 14000380 08000200 ff020500 08000100 05052e00",
	},
	{
		// GDCBX (cmd 22 = 0x16) is a GET: RTM_GETDCB, NLM_F_REQUEST only.
		name:  "GDCBX (32 bytes)",
		send:  func(c *Client) error { _, err := c.GetDCBX("eth0"); return err },
		build: func() ([]byte, error) { return wire(1)(gdcbxRequest("eth0")) },
		want:  "20000000 4e000100 01000000 00000000 00160000 09000100 65746830 00000000",
	},
	{
		// SDCBX (cmd 23 = 0x17) HOST|VER_IEEE = 0x09: a bare top-level u8
		// DCB_ATTR_DCBX (type 14, len 5, padded to 8) — not in a nest,
		// as iproute2 sends it. Message 16+4+12+8 = 40 (0x28).
		name:  "SDCBX host+ieee (40 bytes)",
		send:  func(c *Client) error { return c.SetDCBX("eth0", DCBXHost|DCBXVerIEEE) },
		build: func() ([]byte, error) { return wire(1)(sdcbxRequest("eth0", DCBXHost|DCBXVerIEEE)) },
		want:  "28000000 4f000500 01000000 00000000 00170000 09000100 65746830 00000000 05000e00 09000000",
	},
	{
		// CEE_GET (cmd 26 = 0x1a) is a GET shaped like IEEE_GET: the name
		// alone (dcbnl_cee_get reads nothing else).
		name:  "CEE_GET (32 bytes)",
		send:  func(c *Client) error { _, err := c.GetCEEPeer("eth0"); return err },
		build: func() ([]byte, error) { return wire(1)(ceeGetRequest("eth0")) },
		want:  "20000000 4e000100 01000000 00000000 001a0000 09000100 65746830 00000000",
	},
	{
		// A 9-character name: IFNAME len 4+10 = 14 (0x0e), padded to 16;
		// GET message 16+4+16 = 36 (0x24); seq 0x01020304 lands as is.
		name:  "IEEE_GET ens1f0np0 with seq 0x01020304 (36 bytes)",
		send:  func(c *Client) error { _, err := c.Get("ens1f0np0"); return err },
		build: func() ([]byte, error) { return wire(0x01020304)(ieeeGetRequest("ens1f0np0")) },
		want:  "24000000 4e000100 04030201 00000000 00150000 0e000100 656e7331 66306e70 30000000",
	},
}

func TestRequestVectorsFromReference(t *testing.T) {
	requireLittleEndian(t)
	for _, tc := range referenceVectors {
		t.Run(tc.name, func(t *testing.T) {
			got, err := tc.build()
			if err != nil {
				t.Fatal(err)
			}
			want := unhex(t, tc.want)
			if !bytes.Equal(got, want) {
				t.Fatalf("request bytes differ\n got %x\nwant %x", got, want)
			}
		})
	}
}

func TestRequestVectorsDerived(t *testing.T) {
	requireLittleEndian(t)
	for _, tc := range derivedVectors {
		t.Run(tc.name, func(t *testing.T) {
			got, err := tc.build()
			if err != nil {
				t.Fatal(err)
			}
			want := unhex(t, tc.want)
			if !bytes.Equal(got, want) {
				t.Fatalf("request bytes differ\n got %x\nwant %x", got, want)
			}
			if l := binary.NativeEndian.Uint32(got[0:4]); int(l) != len(got) {
				t.Errorf("nlmsg_len %d, message is %d bytes", l, len(got))
			}
		})
	}
}

// All 64 DSCP values with the firmware default map prio = dscp>>3 fit in one
// message: 16 + 4 + 12 + IEEE(4 + APP_TABLE(4 + 64*8)) = 552 bytes.
func TestAppSetRequestFullDSCPMap(t *testing.T) {
	requireLittleEndian(t)
	apps := make([]App, 64)
	for d := range apps {
		apps[d] = App{Selector: SelDSCP, Priority: uint8(d >> 3), Protocol: uint16(d)}
	}
	b, err := wire(1)(appRequest(CmdIEEESet, "eth0", apps))
	if err != nil {
		t.Fatal(err)
	}
	if len(b) != 552 {
		t.Fatalf("message is %d bytes, want 552", len(b))
	}
	if got := binary.NativeEndian.Uint16(b[32:34]); got != 4+4+64*8 {
		t.Errorf("IEEE nest length %d, want %d", got, 4+4+64*8)
	}
	if got := binary.NativeEndian.Uint16(b[36:38]); got != 4+64*8 {
		t.Errorf("APP_TABLE length %d, want %d", got, 4+64*8)
	}
	for d := range 64 {
		off := 40 + 8*d
		want := []byte{8, 0, 1, 0, SelDSCP, byte(d >> 3), byte(d), 0}
		if !bytes.Equal(b[off:off+8], want) {
			t.Fatalf("entry %d at offset %d: % x, want % x", d, off, b[off:off+8], want)
		}
	}
	if _, err := wire(1)(appRequest(CmdIEEESet, "eth0", append(apps, App{SelDSCP, 0, 0}))); err == nil {
		t.Errorf("65 entries in one message: no error")
	}
}

func TestRequestIfnameChecks(t *testing.T) {
	requireLittleEndian(t)
	// 15 characters is IFNAMSIZ-1, the longest the kernel's policy takes:
	// IFNAME len 4+16 = 20, GET message 16+4+20 = 40.
	b, err := wire(1)(ieeeGetRequest("abcdefghijklmno"))
	if err != nil {
		t.Fatal(err)
	}
	if len(b) != 40 || binary.NativeEndian.Uint16(b[20:22]) != 20 || b[39] != 0 {
		t.Errorf("15-character name: % x", b)
	}
	for _, bad := range []string{"", "abcdefghijklmnop", "eth\x000"} {
		_, err := wire(1)(ieeeGetRequest(bad))
		var ve *ValidationError
		if !errors.As(err, &ve) {
			t.Errorf("ifname %q: err %v, want a *ValidationError", bad, err)
		}
	}
}

// Every builder must leave the request's own sequence counter alone except
// for the number given, and must build identical bytes twice (no shared
// state between calls).
func TestRequestBuildersAreDeterministic(t *testing.T) {
	for i, build := range []func() ([]byte, error){
		func() ([]byte, error) { return wire(7)(pfcSetRequest("eth0", fixturePFC)) },
		func() ([]byte, error) { return wire(7)(etsSetRequest("eth0", fixtureETS)) },
		func() ([]byte, error) { return wire(7)(appRequest(CmdIEEESet, "eth0", fixtureApps)) },
		func() ([]byte, error) { return wire(7)(sdcbxRequest("eth0", 9)) },
	} {
		a, err1 := build()
		b, err2 := build()
		if err1 != nil || err2 != nil || !bytes.Equal(a, b) {
			t.Errorf("builder %d: %v %v\n%x\n%x", i, err1, err2, a, b)
		}
		if seq := binary.NativeEndian.Uint32(a[8:12]); seq != 7 {
			t.Errorf("builder %d: seq %d", i, seq)
		}
	}
}

// The IEEE nest of one DSCP APP entry: IEEE(len 16, flagged) APP_TABLE(len
// 12, flagged) IEEE_APP(len 8) {selector 5, prio 3, protocol 26}.
func TestAppSetRequestIEEENest(t *testing.T) {
	requireLittleEndian(t)
	b, err := wire(1)(appRequest(CmdIEEESet, "eth0", []App{{Selector: SelDSCP, Priority: 3, Protocol: 26}}))
	if err != nil {
		t.Fatal(err)
	}
	if got, want := fmt.Sprintf("% x", b[32:]), "10 00 0d 80 0c 00 03 80 08 00 01 00 05 03 1a 00"; got != want {
		t.Fatalf("IEEE nest %s, want %s", got, want)
	}
}
