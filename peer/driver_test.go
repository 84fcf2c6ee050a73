package peer

import (
	"reflect"
	"strings"
	"testing"

	"github.com/rocectl/rocectl/lldp"
	"github.com/rocectl/rocectl/nic"
	"github.com/rocectl/rocectl/nic/dcb"
	"github.com/rocectl/rocectl/nic/nictest"
	"github.com/rocectl/rocectl/nic/snapshot"
)

func u8p(v uint8) *uint8 { return &v }

// driverHost is one port of the driver in DCBX mode, as the simulator's
// driver models report its peer.
func driverHost(driver string, mode uint8) *nictest.Sim {
	return nictest.NewSim(&snapshot.KernelState{Links: map[string]*snapshot.LinkState{
		"p0": {
			Link:   &nic.LinkInfo{Index: 4, MTU: 1500, OperState: "up", AdminUp: true},
			Driver: &nic.DriverInfo{Driver: driver},
			DCB:    &dcb.State{ETS: &dcb.ETS{ETSCap: 8}, PFC: &dcb.PFC{Cap: 8}, DCBX: u8p(mode)},
		},
	}})
}

// roceSwitch announces what the profile below wants: PFC on 3, priority 3
// in an ETS class with 50 %, DSCP 26 → 3.
func roceSwitch() *nictest.Partner {
	return &nictest.Partner{
		PFC: 1 << 3, PFCCap: 8, ETSCap: 8,
		PrioTC: [8]uint8{3: 1}, Bandwidth: [8]uint8{50, 50}, TSA: [8]uint8{dcb.TSAETS, dcb.TSAETS},
		Apps: []dcb.App{{Selector: dcb.SelDSCP, Priority: 3, Protocol: 26}},
	}
}

var expectRoCE = func() lldp.Expect {
	pfc3 := uint8(1 << 3)
	return lldp.Expect{PFC: &pfc3, Trust: "dscp", DSCP: []lldp.DSCPUse{{DSCP: 26, Priority: 3, Role: "RoCE data"}}}
}()

func judgeOn(t *testing.T, s *nictest.Sim, driver string) (Result, bool, string) {
	t.Helper()
	st, err := s.DCB("p0")
	if err != nil {
		t.Fatal(err)
	}
	r := Result{Netdev: "p0", Driver: driver}
	ok, why := JudgeDriver(&r, st, expectRoCE)
	return r, ok, why
}

func TestJudgeDriver(t *testing.T) {
	const ieeeFW, ceeFW = dcb.DCBXLLDManaged | dcb.DCBXVerIEEE, dcb.DCBXLLDManaged | dcb.DCBXVerCEE
	willingNote := "the switch's PFC willing bit (struct ieee_pfc carries none)"
	cases := []struct {
		name, driver string
		mode         uint8
		sw           func(p *nictest.Partner) // nil: nothing heard
		verdict      string
		dcbx         string
		mismatches   []lldp.Mismatch
		unchecked    []string // each must be (a prefix of) one entry
	}{
		{"qede agrees", snapshot.DriverQede, ieeeFW, func(*nictest.Partner) {}, Consistent, "ieee", nil,
			[]string{willingNote, "DSCP → priority and trust (qed_dcbnl_peer_getapptable reports every peer APP entry with selector 1"}},
		{"qede PFC on 4", snapshot.DriverQede, ieeeFW, func(p *nictest.Partner) { p.PFC = 1 << 4 }, Mismatch, "ieee",
			[]lldp.Mismatch{{Key: "pfc", Switch: "priorities 4", Profile: "priorities 3"}}, nil},
		{"qede ETS willing is the switch's", snapshot.DriverQede, ieeeFW, func(p *nictest.Partner) { p.ETSWilling = true }, Mismatch, "ieee",
			[]lldp.Mismatch{{Key: "willing", Switch: "willing (ETS)", Profile: "the switch decides: not willing"}}, nil},
		{"qede priority 3 starved", snapshot.DriverQede, ieeeFW, func(p *nictest.Partner) { p.Bandwidth = [8]uint8{100} }, Mismatch, "ieee",
			[]lldp.Mismatch{{Key: "ets priority 3", Switch: "ets 0% (starved)", Profile: "a bandwidth share for the lossless class"}}, nil},
		{"qede in CEE", snapshot.DriverQede, ceeFW, func(p *nictest.Partner) { p.PrioTC = [8]uint8{3: 1} }, Consistent, "cee", nil,
			[]string{"the switch's PFC willing bit (qede's cee_peer_getpfc does not set it)"}},
		{"cxgb4: DSCP entries unusable", snapshot.DriverCxgb4, ieeeFW, func(*nictest.Partner) {}, Consistent, "ieee", nil,
			[]string{willingNote, "the switch's ETS willing bit (cxgb4_ieee_read_ets", "DSCP → priority and trust (cxgb4_getpeer_app counts 8"}},
		{"cxgb4 PFC on 4", snapshot.DriverCxgb4, ieeeFW, func(p *nictest.Partner) { p.PFC = 1 << 4 }, Mismatch, "ieee",
			[]lldp.Mismatch{{Key: "pfc", Switch: "priorities 4", Profile: "priorities 3"}}, nil},
		{"cxgb4 in CEE: its PG willing bit is its own", snapshot.DriverCxgb4, ceeFW, func(*nictest.Partner) {}, Consistent, "cee", nil,
			[]string{"the switch's priority group willing bit (cxgb4_cee_peer_getpg"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := driverHost(c.driver, c.mode)
			p := roceSwitch()
			c.sw(p)
			s.SetPartner("p0", p)
			r, ok, why := judgeOn(t, s, c.driver)
			if !ok || why != "" {
				t.Fatalf("no usable peer: %q", why)
			}
			if r.Verdict != c.verdict || r.Source != SourceDCBNL || r.DCBX != c.dcbx || r.DriverPeer == nil || r.Frame != nil ||
				!reflect.DeepEqual(r.Mismatches, c.mismatches) {
				t.Errorf("result %+v\nmismatches %+v", r, r.Mismatches)
			}
			for _, want := range c.unchecked {
				found := false
				for _, u := range r.Unchecked {
					found = found || strings.HasPrefix(u, want)
				}
				if !found {
					t.Errorf("unchecked %q lacks %q", r.Unchecked, want)
				}
			}
			if r.SourceText() != "from the driver's DCBX (dcbnl)" || r.Switch() != "link partner" {
				t.Errorf("source %q, switch %q", r.SourceText(), r.Switch())
			}
		})
	}
}

// A driver that passes DSCP entries through (not qede, not cxgb4's broken
// count): they are judged; without any DSCP entry the trust mode is not.
func TestJudgeDriverGenericDSCP(t *testing.T) {
	st := &dcb.State{DCBX: u8p(dcb.DCBXLLDManaged | dcb.DCBXVerIEEE), Peer: &dcb.Peer{
		PFC: &dcb.PFC{Cap: 8, Enable: 1 << 3},
		App: &dcb.PeerApp{Entries: []dcb.App{{Selector: dcb.SelDSCP, Priority: 4, Protocol: 26}}},
	}}
	r := Result{Netdev: "p0", Driver: "somenic"}
	if ok, _ := JudgeDriver(&r, st, expectRoCE); !ok || !reflect.DeepEqual(r.Mismatches, []lldp.Mismatch{{Key: "dscp 26 (RoCE data)", Switch: "priority 4", Profile: "priority 3"}}) {
		t.Errorf("DSCP entry: %+v", r)
	}
	st.Peer.App.Entries = []dcb.App{{Selector: dcb.SelDgram, Priority: 3, Protocol: 4791}}
	r = Result{Netdev: "p0", Driver: "somenic"}
	if ok, _ := JudgeDriver(&r, st, expectRoCE); !ok || r.Verdict != Consistent || !strings.Contains(strings.Join(r.Unchecked, "|"), "has no DSCP entry") {
		t.Errorf("no DSCP entry: %+v", r)
	}
}

// Nothing heard yet: the driver's zeroed objects are no verdict, and say
// why; a driver without peer ops says nothing.
func TestJudgeDriverNoPeer(t *testing.T) {
	for _, drv := range []string{snapshot.DriverQede, snapshot.DriverCxgb4} {
		_, ok, why := judgeOn(t, driverHost(drv, dcb.DCBXLLDManaged|dcb.DCBXVerIEEE), drv)
		if ok || !strings.HasPrefix(why, drv+" reports the switch's DCBX through dcbnl but has heard none yet") {
			t.Errorf("%s: ok %v, why %q", drv, ok, why)
		}
	}
	s := driverHost(snapshot.DriverMLX5, dcb.DCBXHost|dcb.DCBXVerIEEE)
	s.SetPartner("p0", roceSwitch())
	if _, ok, why := judgeOn(t, s, snapshot.DriverMLX5); ok || why != "" {
		t.Errorf("mlx5: ok %v, why %q", ok, why)
	}
}
