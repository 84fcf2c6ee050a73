package lldp_test

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"net"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/rocectl/rocectl/lldp"
	"github.com/rocectl/rocectl/lldp/lldptest"
)

var update = flag.Bool("update", false, "rewrite the golden files")

// readHex reads a testdata frame written as hex bytes, whitespace free.
func readHex(t testing.TB, name string) []byte {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	b, err := hex.DecodeString(strings.Join(strings.Fields(string(raw)), ""))
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return b
}

var captures = []string{"cisco-nexus5k-cee", "juniper-qfx3500-cee", "juniper-qfx3500-ieee", "chelsio-cee",
	// Sent by lldpad on a veth and captured with tcpdump
	// (regen-lldpad.sh); the only frames with DSCP entries.
	"lldpad-ieee-dscp", "lldpad-ieee-dscp-differs", "lldpad-cee"}

// Each capture decodes to its golden structure (testdata/*.golden.json).
func TestCapturesGolden(t *testing.T) {
	for _, name := range captures {
		t.Run(name, func(t *testing.T) {
			f, err := lldp.DecodeFrame(readHex(t, name+".hex"))
			if err != nil {
				t.Fatal(err)
			}
			got, err := json.MarshalIndent(f, "", "  ")
			if err != nil {
				t.Fatal(err)
			}
			got = append(got, '\n')
			golden := filepath.Join("testdata", name+".golden.json")
			if *update {
				if err := os.WriteFile(golden, got, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, want) {
				t.Errorf("decoded %s differs from %s:\n%s", name, golden, got)
			}
		})
	}
}

// The values below are read off the capture bytes by hand (offsets in the
// comments), independently of the golden files.
func TestCaptureFields(t *testing.T) {
	t.Run("juniper IEEE", func(t *testing.T) {
		f, err := lldp.DecodeFrame(readHex(t, "juniper-qfx3500-ieee.hex"))
		if err != nil {
			t.Fatal(err)
		}
		if f.ChassisID != "84:18:88:d6:39:48" || f.PortID != "526" || f.TTL != 40 || f.CEE != nil {
			t.Errorf("header TLVs: %+v", f)
		}
		// fe 19 00 80 c2 09 | 03 | 77 77 77 77 | 00*7 64 | 02*8
		want := &lldp.IEEE{
			ETS:     &lldp.ETSConfig{MaxTCs: 3, PrioTC: [8]uint8{7, 7, 7, 7, 7, 7, 7, 7}, TCBandwidth: [8]uint8{7: 100}, TSA: [8]uint8{2, 2, 2, 2, 2, 2, 2, 2}},
			ETSReco: &lldp.ETSReco{PrioTC: [8]uint8{7, 7, 7, 7, 7, 7, 7, 7}, TCBandwidth: [8]uint8{7: 100}, TSA: [8]uint8{2, 2, 2, 2, 2, 2, 2, 2}},
			// fe 06 00 80 c2 0b | 08 00: not willing, 8 PFC TCs, none enabled
			PFC: &lldp.PFC{Cap: 8},
			// fe 0b 00 80 c2 0c 00 | 24 c3 51 | 44 c3 50
			App: []lldp.App{{Priority: 1, Selector: lldp.SelPort, Protocol: 50001}, {Priority: 2, Selector: lldp.SelPort, Protocol: 50000}},
		}
		if !reflect.DeepEqual(f.IEEE, want) {
			t.Errorf("IEEE = %+v, want %+v", f.IEEE, want)
		}
	})
	t.Run("cisco CEE behind an 802.1Q tag", func(t *testing.T) {
		f, err := lldp.DecodeFrame(readHex(t, "cisco-nexus5k-cee.hex"))
		if err != nil {
			t.Fatal(err)
		}
		if f.SystemName != "N5K-5-Lab3-3" || f.PortID != "Eth1/3" || f.PortDescription != "Ethernet1/3" || f.TTL != 120 || f.IEEE != nil {
			t.Errorf("header TLVs: %+v", f)
		}
		c := f.CEE
		// 06 06 | 00 00 80 00 08 08: enabled, not willing, PFC on priority 3
		if c.PFC == nil || c.PFC.Enable != 0x08 || !c.PFC.Enabled || c.PFC.Willing || c.PFC.NumTCs != 8 {
			t.Errorf("PFC = %+v", c.PFC)
		}
		// 04 11 | 00 00 80 00 | 00 01 00 00 | 32 32 00.. | 02
		if c.PG == nil || c.PG.PGID != [8]uint8{0, 0, 0, 1, 0, 0, 0, 0} || c.PG.Percent != [8]uint8{50, 50} || c.PG.NumTCs != 2 {
			t.Errorf("PG = %+v", c.PG)
		}
		// 08 0a | 00 00 80 00 | 89 06 00 1b 21 08: FCoE on priority 3
		if c.App == nil || !reflect.DeepEqual(c.App.Entries, []lldp.CEEAppEntry{{Protocol: 0x8906, Selector: lldp.CEESelEthertype, Priorities: 0x08}}) {
			t.Errorf("App = %+v", c.App)
		}
		if c.Control == nil || c.Control.Seq != 1 || c.Control.Ack != 1 {
			t.Errorf("Control = %+v", c.Control)
		}
	})
	t.Run("chelsio CEE willing", func(t *testing.T) {
		f, err := lldp.DecodeFrame(readHex(t, "chelsio-cee.hex"))
		if err != nil {
			t.Fatal(err)
		}
		c := f.CEE
		if f.PortID != "00:07:43:10:53:d0" || c.PFC == nil || !c.PFC.Willing || c.PFC.Enable != 0x08 {
			t.Errorf("frame %+v PFC %+v", f, c.PFC)
		}
		// 0c bc 01 1b 21 08: iSCSI, TCP port 3260, selector 1 in the OUI's low bits
		if c.App == nil || len(c.App.Entries) != 3 || c.App.Entries[1] != (lldp.CEEAppEntry{Protocol: 3260, Selector: lldp.CEESelPort, Priorities: 0x08}) || !c.App.Error {
			t.Errorf("App = %+v", c.App)
		}
		if c.PG.PGID != [8]uint8{0, 0, 0, 0, 1, 1, 1, 15} {
			t.Errorf("PGID = %v", c.PG.PGID)
		}
	})
}

// The frames lldpad sent (SOURCES.md), read off the bytes by hand: the
// 802.1Qaz Application Priority TLV with selector 5 (DSCP) entries as an
// implementation other than this package's encodes it.
func TestLLDPadFrames(t *testing.T) {
	// Chassis ID and Port ID are sw0's MAC (subtypes 4 and 3), System
	// Name the namespace's hostname, TTL 120.
	header := func(t *testing.T, f *lldp.Frame) {
		t.Helper()
		if f.ChassisIDSubtype != 4 || f.ChassisID != "02:dc:b0:00:00:01" || f.PortIDSubtype != 3 || f.PortID != "02:dc:b0:00:00:01" ||
			f.TTL != 120 || f.SystemName != "lldpad-netns" || f.PortDescription != "Interface   3 as sw0" {
			t.Errorf("header TLVs: %+v", f)
		}
	}
	// fe 19 00 80 c2 09 | 00: not willing, no CBS, max TCs 0 (= 8) |
	// 00 01 00 20: priority 3 in TC 1, 6 in TC 2, the rest in TC 0 |
	// 32 32 00*6: TC 0 and 1 50 % each | 02 02 00*6: ETS, ETS, strict...
	ets := &lldp.ETSConfig{PrioTC: [8]uint8{3: 1, 6: 2}, TCBandwidth: [8]uint8{50, 50}, TSA: [8]uint8{lldp.TSAETS, lldp.TSAETS}}
	// fe 06 00 80 c2 0b | 08 08: not willing, no MBC, 8 PFC TCs, PFC on 3
	pfc := &lldp.PFC{Cap: 8, Enable: 1 << 3}
	for _, c := range []struct {
		name string
		app  []lldp.App
		tlv  []byte
	}{
		// fe 0b 00 80 c2 0c 00 | 65 00 1a: priority 3, selector 5, DSCP 26 |
		// c5 00 30: priority 6, selector 5, DSCP 48
		{"lldpad-ieee-dscp", []lldp.App{{Priority: 3, Selector: lldp.SelDSCP, Protocol: 26}, {Priority: 6, Selector: lldp.SelDSCP, Protocol: 48}},
			[]byte{0xfe, 0x0b, 0x00, 0x80, 0xc2, 0x0c, 0x00, 0x65, 0x00, 0x1a, 0xc5, 0x00, 0x30}},
		// ... 00 | c5 00 30 | 85 00 1a: priority 4, selector 5, DSCP 26
		{"lldpad-ieee-dscp-differs", []lldp.App{{Priority: 6, Selector: lldp.SelDSCP, Protocol: 48}, {Priority: 4, Selector: lldp.SelDSCP, Protocol: 26}},
			[]byte{0xfe, 0x0b, 0x00, 0x80, 0xc2, 0x0c, 0x00, 0xc5, 0x00, 0x30, 0x85, 0x00, 0x1a}},
	} {
		t.Run(c.name, func(t *testing.T) {
			b := readHex(t, c.name+".hex")
			if !bytes.Contains(b, c.tlv) {
				t.Fatalf("frame lacks the APP TLV % x", c.tlv)
			}
			f, err := lldp.DecodeFrame(b)
			if err != nil {
				t.Fatal(err)
			}
			header(t, f)
			want := &lldp.IEEE{ETS: ets, PFC: pfc, App: c.app}
			if f.CEE != nil || !reflect.DeepEqual(f.IEEE, want) {
				t.Errorf("IEEE = %+v, CEE = %+v; want IEEE %+v", f.IEEE, f.CEE, want)
			}
		})
	}
	t.Run("lldpad-cee", func(t *testing.T) {
		f, err := lldp.DecodeFrame(readHex(t, "lldpad-cee.hex"))
		if err != nil {
			t.Fatal(err)
		}
		header(t, f)
		on := lldp.CEEFeature{Enabled: true}
		want := &lldp.CEE{
			// 02 0a | 00 00 | 00 00 00 01 | 00 00 00 00: seq 1, ack 0
			Control: &lldp.CEEControl{Seq: 1},
			// 04 11 | 00 00 80 00: enabled, not willing | 00 01 00 00:
			// priority 3 in group 1 | 32 32 00*6 | 08 TCs
			PG: &lldp.CEEPG{CEEFeature: on, PGID: [8]uint8{3: 1}, Percent: [8]uint8{50, 50}, NumTCs: 8},
			// 06 06 | 00 00 80 00 | 08 08: PFC on 3, 8 TCs
			PFC: &lldp.CEEPFC{CEEFeature: on, Enable: 1 << 3, NumTCs: 8},
			// 08 16 | 00 00 c0 00: enabled, willing | 89 06 00 1b 21 08:
			// FCoE on 3 | 0c bc 01 1b 21 10: TCP port 3260 (iSCSI), selector
			// 1 in the OUI's low bits, on 4 | 89 14 00 1b 21 08: FIP on 3
			App: &lldp.CEEApp{CEEFeature: lldp.CEEFeature{Enabled: true, Willing: true}, Entries: []lldp.CEEAppEntry{
				{Protocol: 0x8906, Selector: lldp.CEESelEthertype, Priorities: 0x08},
				{Protocol: 3260, Selector: lldp.CEESelPort, Priorities: 0x10},
				{Protocol: 0x8914, Selector: lldp.CEESelEthertype, Priorities: 0x08}}},
		}
		if f.IEEE != nil || !reflect.DeepEqual(f.CEE, want) {
			t.Errorf("CEE = %+v, IEEE = %+v\nwant CEE %+v", f.CEE, f.IEEE, want)
		}
	})
	// lldpad and this package's encoder agree byte for byte: the decoded
	// frame encodes back to exactly what lldpad sent, and the PFC and APP
	// TLVs of lldptest.RoCEFrame (the same settings) are lldpad's bytes.
	for _, name := range []string{"lldpad-ieee-dscp", "lldpad-ieee-dscp-differs", "lldpad-cee"} {
		b := readHex(t, name+".hex")
		f, err := lldp.DecodeFrame(b)
		if err != nil {
			t.Fatal(err)
		}
		enc, err := lldp.EncodeFrame(net.HardwareAddr(b[6:12]), f)
		if err != nil || !bytes.Equal(enc, b) {
			t.Errorf("%s: EncodeFrame(DecodeFrame(b)) = %v\n% x\nwant\n% x", name, err, enc, b)
		}
	}
	ours, err := lldp.Encode(lldptest.RoCEFrame())
	if err != nil {
		t.Fatal(err)
	}
	theirs := readHex(t, "lldpad-ieee-dscp.hex")
	for _, tlv := range [][]byte{{0xfe, 0x06, 0x00, 0x80, 0xc2, 0x0b}, {0xfe, 0x0b, 0x00, 0x80, 0xc2, 0x0c}} {
		i, j := bytes.Index(ours, tlv), bytes.Index(theirs, tlv)
		if i < 0 || j < 0 {
			t.Fatalf("TLV % x: at %d in ours, %d in lldpad's", tlv, i, j)
		}
		n := 2 + int(tlv[1])
		if !bytes.Equal(ours[i:i+n], theirs[j:j+n]) {
			t.Errorf("Encode: % x, lldpad: % x", ours[i:i+n], theirs[j:j+n])
		}
	}
}

// A frame built from the structures decodes back to them, byte layout
// included: the PFC TLV of Encode is exactly the 802.1Qaz bytes.
func TestEncodeRoundTrip(t *testing.T) {
	f := lldptest.RoCEFrame()
	b, err := lldp.Encode(f)
	if err != nil {
		t.Fatal(err)
	}
	pfc := []byte{0xfe, 0x06, 0x00, 0x80, 0xc2, 0x0b, 0x08, 0x08}
	if !bytes.Contains(b, pfc) {
		t.Errorf("encoded frame lacks the PFC TLV % x:\n% x", pfc, b)
	}
	app := []byte{0xfe, 0x0b, 0x00, 0x80, 0xc2, 0x0c, 0x00, 0x65, 0x00, 0x1a, 0xc5, 0x00, 0x30}
	if !bytes.Contains(b, app) {
		t.Errorf("encoded frame lacks the APP TLV % x:\n% x", app, b)
	}
	g, err := lldp.Decode(b)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(f, g) {
		t.Errorf("round trip:\n got %+v\nwant %+v", g, f)
	}
	for _, name := range captures {
		f, err := lldp.DecodeFrame(readHex(t, name+".hex"))
		if err != nil {
			t.Fatal(err)
		}
		b, err := lldp.Encode(f)
		if err != nil {
			t.Fatal(err)
		}
		g, err := lldp.Decode(b)
		if err != nil || !reflect.DeepEqual(f, g) {
			t.Errorf("%s: round trip: %v\n got %+v\nwant %+v", name, err, g, f)
		}
	}
}

func TestMalformed(t *testing.T) {
	good, err := lldp.Encode(lldptest.RoCEFrame())
	if err != nil {
		t.Fatal(err)
	}
	hdr := []byte{0x02, 0x07, 0x04, 1, 2, 3, 4, 5, 6, 0x04, 0x02, 0x07, 'x', 0x06, 0x02, 0x00, 0x78}
	with := func(tlvs ...byte) []byte { return append(append(append([]byte{}, hdr...), tlvs...), 0, 0) }
	cases := []struct {
		name, tlv, reason string
		b                 []byte
	}{
		{"empty", "Chassis ID", "missing", nil},
		{"header cut", "", "TLV header cut short", []byte{0x02}},
		{"truncated chassis", "Chassis ID", "runs past the end", []byte{0x02, 0x07, 0x04, 1, 2}},
		{"port id first", "Port ID", "TLV 1 of the frame must be Chassis ID", []byte{0x04, 0x02, 0x07, 'x'}},
		{"no ttl", "TTL", "missing", hdr[:13]},
		{"ttl too long", "TTL", "length 3, want 2", append(append([]byte{}, hdr[:13]...), 0x06, 0x03, 0, 0x78, 0)},
		{"end with data", "End", "length 1, want 0", append(append([]byte{}, hdr...), 0x00, 0x01, 0)},
		{"oversized PFC", "PFC Configuration", "length 7, want 6", with(0xfe, 0x07, 0x00, 0x80, 0xc2, 0x0b, 0x08, 0x08, 0x00)},
		{"short PFC", "PFC Configuration", "length 5, want 6", with(0xfe, 0x05, 0x00, 0x80, 0xc2, 0x0b, 0x08)},
		{"two PFC", "PFC Configuration", "sent twice", with(0xfe, 0x06, 0x00, 0x80, 0xc2, 0x0b, 0x08, 0x08, 0xfe, 0x06, 0x00, 0x80, 0xc2, 0x0b, 0x08, 0x10)},
		{"short ETS", "ETS Configuration", "length 24, want 25", with(append([]byte{0xfe, 0x18, 0x00, 0x80, 0xc2, 0x09}, make([]byte, 20)...)...)},
		{"APP partial entry", "Application Priority", "want 5 + 3 per entry", with(0xfe, 0x07, 0x00, 0x80, 0xc2, 0x0c, 0x00, 0x65, 0x00)},
		{"APP reserved selector", "Application Priority", "selector 0 is reserved", with(0xfe, 0x08, 0x00, 0x80, 0xc2, 0x0c, 0x00, 0x60, 0x00, 0x1a)},
		{"APP DSCP 64", "Application Priority", "not a DSCP", with(0xfe, 0x08, 0x00, 0x80, 0xc2, 0x0c, 0x00, 0x65, 0x00, 0x40)},
		{"org without subtype", "Organizationally Specific", "want at least 4", with(0xfe, 0x03, 0x00, 0x80, 0xc2)},
		{"CEE PFC wrong length", "CEE DCBX", "PFC sub-TLV length 5, want 6", with(0xfe, 0x0b, 0x00, 0x1b, 0x21, 0x02, 0x06, 0x05, 0, 0, 0x80, 0, 0x08)},
		{"CEE sub-TLV past end", "CEE DCBX", "runs past the TLV", with(0xfe, 0x08, 0x00, 0x1b, 0x21, 0x02, 0x06, 0x06, 0, 0)},
		{"oversized frame", "", "oversized: 1501 bytes", make([]byte, 1501)},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f, err := lldp.Decode(c.b)
			var de *lldp.DecodeError
			if !errors.As(err, &de) || !errors.Is(err, lldp.ErrMalformed) {
				t.Fatalf("Decode = %+v, %v; want a *DecodeError", f, err)
			}
			if de.TLV != c.tlv || !strings.Contains(de.Reason, c.reason) {
				t.Errorf("error %q: TLV %q reason %q, want TLV %q reason containing %q", err, de.TLV, de.Reason, c.tlv, c.reason)
			}
		})
	}
	if _, err := lldp.Decode(good); err != nil {
		t.Errorf("the good frame the cases start from: %v", err)
	}
	// Padding after End is ignored; a frame without End is accepted.
	if _, err := lldp.Decode(append(append([]byte{}, good...), 0xde, 0xad)); err != nil {
		t.Errorf("padding after End: %v", err)
	}
	if _, err := lldp.Decode(good[:len(good)-2]); err != nil {
		t.Errorf("no End TLV: %v", err)
	}
	if _, err := lldp.DecodeFrame(append([]byte{1, 0x80, 0xc2, 0, 0, 0xe, 1, 2, 3, 4, 5, 6, 0x08, 0x00}, good...)); !errors.Is(err, lldp.ErrMalformed) {
		t.Errorf("IPv4 EtherType: %v", err)
	}
}

// FuzzDecode: no input crashes the decoder, every failure is a
// *DecodeError, and whatever decodes re-encodes to something that decodes
// to the same frame.
func FuzzDecode(f *testing.F) {
	for _, name := range captures {
		b := readHex(f, name+".hex")
		f.Add(b[bytes.Index(b, []byte{0x88, 0xcc})+2:])
	}
	good, _ := lldp.Encode(lldptest.RoCEFrame())
	f.Add(good)
	f.Fuzz(func(t *testing.T, b []byte) {
		fr, err := lldp.Decode(b)
		if err != nil {
			var de *lldp.DecodeError
			if !errors.As(err, &de) {
				t.Fatalf("error %v is not a *DecodeError", err)
			}
			return
		}
		enc, err := lldp.Encode(fr)
		if err != nil {
			return // e.g. a binary ID that re-encodes longer as hex text
		}
		again, err := lldp.Decode(enc)
		if err != nil {
			t.Fatalf("re-encoded frame does not decode: %v\n% x", err, enc)
		}
		if again.IEEE != nil && fr.IEEE != nil && !reflect.DeepEqual(again.IEEE, fr.IEEE) {
			t.Fatalf("IEEE TLVs changed in a round trip:\n%+v\n%+v", fr.IEEE, again.IEEE)
		}
	})
}

func TestCheck(t *testing.T) {
	pfc3 := uint8(1 << 3)
	want := lldp.Expect{PFC: &pfc3, Trust: "dscp", DSCP: []lldp.DSCPUse{{26, 3, "RoCE data"}, {48, 6, "CNP"}}}
	cases := []struct {
		name   string
		change func(f *lldp.Frame)
		e      *lldp.Expect
		want   []lldp.Mismatch
	}{
		{"consistent", func(f *lldp.Frame) {}, nil, nil},
		{"pfc on 4", func(f *lldp.Frame) { f.IEEE.PFC.Enable = 1 << 4 }, nil,
			[]lldp.Mismatch{{"pfc", "priorities 4", "priorities 3"}}},
		{"willing", func(f *lldp.Frame) { f.IEEE.PFC.Willing = true }, nil, []lldp.Mismatch{{"willing", "willing (PFC)", "the switch decides: not willing"}}},
		{"dscp 26 to 4", func(f *lldp.Frame) { f.IEEE.App[0].Priority = 4 }, nil, []lldp.Mismatch{{"dscp 26 (RoCE data)", "priority 4", "priority 3"}}},
		{"no dscp entries", func(f *lldp.Frame) { f.IEEE.App = nil }, nil, []lldp.Mismatch{{"trust", "pcp (no DSCP → priority entry)", "dscp"}}},
		{"starved", func(f *lldp.Frame) { f.IEEE.ETS.TCBandwidth = [8]uint8{0: 100} }, nil,
			[]lldp.Mismatch{{"ets priority 3", "ets 0% (starved)", "a bandwidth share for the lossless class"}}},
		{"ets differs from profile", func(f *lldp.Frame) {}, &lldp.Expect{PFC: &pfc3, ETS: &lldp.ExpectETS{PrioTC: [8]int{3: 3}, TSA: [8]string{"ets", "ets", "ets", "ets", "strict", "strict", "strict", "strict"}, Bandwidth: [8]int{0: 30, 3: 70}}},
			[]lldp.Mismatch{{"ets priority 3", "ets 50%", "ets 70%"}}},
		{"CEE only", func(f *lldp.Frame) {
			f.IEEE = nil
			f.CEE = &lldp.CEE{PFC: &lldp.CEEPFC{CEEFeature: lldp.CEEFeature{Enabled: true}, Enable: 1 << 4}}
		}, nil, []lldp.Mismatch{{"pfc", "priorities 4", "priorities 3"}}},
		{"no DCBX", func(f *lldp.Frame) { f.IEEE = nil }, nil, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f := lldptest.RoCEFrame()
			c.change(f)
			e := want
			if c.e != nil {
				e = *c.e
			}
			got := lldp.Check(f, e)
			if !reflect.DeepEqual(got, c.want) {
				t.Errorf("Check = %+v\nwant %+v", got, c.want)
			}
		})
	}
}

// What a source cannot tell is not judged: a willing bit the source does
// not carry, or DSCP entries it cannot report, is neither a mismatch nor
// (for DSCP) the "no entry → pcp" verdict; everything else still is.
func TestCheckKnown(t *testing.T) {
	pfc3 := uint8(1 << 3)
	e := lldp.Expect{PFC: &pfc3, Trust: "dscp", DSCP: []lldp.DSCPUse{{26, 3, "RoCE data"}}}
	f := lldptest.RoCEFrame()
	f.IEEE.PFC.Willing, f.IEEE.ETS.Willing = true, true
	f.IEEE.App = nil
	f.IEEE.PFC.Enable = 1 << 4
	all := []lldp.Mismatch{{"pfc", "priorities 4", "priorities 3"}, {"willing", "willing (PFC, ETS)", "the switch decides: not willing"}, {"trust", "pcp (no DSCP → priority entry)", "dscp"}}
	if got := lldp.Check(f, e); !reflect.DeepEqual(got, all) {
		t.Fatalf("Check = %+v", got)
	}
	for _, c := range []struct {
		u    lldp.Unknown
		want []lldp.Mismatch
	}{
		{lldp.Unknown{PFCWilling: true}, []lldp.Mismatch{all[0], {"willing", "willing (ETS)", "the switch decides: not willing"}, all[2]}},
		{lldp.Unknown{PFCWilling: true, ETSWilling: true}, []lldp.Mismatch{all[0], all[2]}},
		{lldp.Unknown{PFCWilling: true, ETSWilling: true, DSCP: true}, []lldp.Mismatch{all[0]}},
	} {
		if got := lldp.CheckKnown(f, e, c.u); !reflect.DeepEqual(got, c.want) {
			t.Errorf("CheckKnown(%+v) = %+v\nwant %+v", c.u, got, c.want)
		}
	}
	// CEE: the priority group's willing bit is the ETS one.
	f.IEEE = nil
	f.CEE = &lldp.CEE{PFC: &lldp.CEEPFC{CEEFeature: lldp.CEEFeature{Enabled: true}, Enable: pfc3},
		PG: &lldp.CEEPG{CEEFeature: lldp.CEEFeature{Enabled: true, Willing: true}, Percent: [8]uint8{100}, PGID: [8]uint8{3: 15}}}
	if got := lldp.CheckKnown(f, e, lldp.Unknown{}); !reflect.DeepEqual(got, []lldp.Mismatch{{"willing", "willing (PG)", "the switch decides: not willing"}}) {
		t.Errorf("CEE PG willing: %+v", got)
	}
	if got := lldp.CheckKnown(f, e, lldp.Unknown{ETSWilling: true}); got != nil {
		t.Errorf("CEE PG willing unknown: %+v", got)
	}
}
