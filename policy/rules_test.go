package policy

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/rocectl/rocectl/port"
)

func ptr[T any](v T) *T { return &v }

func prios(ps ...int) *PrioSet {
	var s PrioSet
	for _, p := range ps {
		s |= 1 << p
	}
	return &s
}

// ruleProfile is a profile as Load leaves it before the rules run: the
// [verify] and [guard] defaults and nothing else.
func ruleProfile(set func(p *Profile)) *Profile {
	p := &Profile{Verify: defaultVerify, Guard: defaultGuard}
	set(p)
	return p
}

// rendered is what a rule reports, without positions (checkRules is called
// here without a tree, so there are none to check; the corpus checks them).
func rendered(ds Diagnostics) []string {
	var out []string
	for _, d := range ds {
		sev := ""
		if d.Severity == SevWarning {
			sev = "warning: "
		}
		out = append(out, sev+d.Key+": "+d.Msg+" (allowed: "+d.Allowed+")")
	}
	return out
}

var ets4 = [8]string{"ets", "ets", "ets", "ets", "strict", "strict", "strict", "strict"}

func TestCrossFieldRules(t *testing.T) {
	for _, c := range []struct {
		name string
		set  func(p *Profile)
		want []string
	}{
		// CNPs must not share a PFC data priority.
		{"cnp priority in pfc set", func(p *Profile) {
			p.QoS.PFCPriorities, p.ECN.CNPPriority = prios(3, 6), ptr(6)
		}, []string{"ecn.cnp_priority: CNP priority 6 is also a PFC data priority (allowed: a priority not in qos.pfc_priorities [3, 6])"}},
		{"cnp priority outside pfc set", func(p *Profile) {
			p.QoS.PFCPriorities, p.ECN.CNPPriority = prios(3), ptr(6)
		}, nil},
		{"cnp priority without pfc", func(p *Profile) { p.ECN.CNPPriority = ptr(3) }, nil},
		{"pfc without cnp priority", func(p *Profile) { p.QoS.PFCPriorities = prios(3) }, nil},

		// mode = "off" is ECN off on the lossless priorities: a list
		// that turns it on there contradicts it (issue 35, item 1).
		{"cc off, rp list on a pfc priority", func(p *Profile) {
			p.QoS.PFCPriorities, p.ECN.Mode, p.ECN.RPPriorities = prios(3), ptr(CCOff), prios(3, 5)
		}, []string{`ecn.rp_priorities: mode = "off" turns ECN off on PFC priority 3, which this list turns on (allowed: the priorities without PFC only, or leave it out)`}},
		{"cc off, np list off the pfc priorities", func(p *Profile) {
			p.QoS.PFCPriorities, p.ECN.Mode, p.ECN.NPPriorities = prios(3), ptr(CCOff), prios(5)
		}, nil},
		{"cc off without pfc", func(p *Profile) { p.ECN.Mode = ptr(CCOff) }, []string{
			`warning: ecn.mode: mode = "off" turns congestion control off on the lossless priorities, and the profile has none: RoCE would run with neither (allowed: qos.pfc_priorities alongside it, or another mode)`}},
		{"cc off with dcqcn parameters", func(p *Profile) {
			p.QoS.PFCPriorities, p.ECN.Mode, p.ECN.DCQCN = prios(3), ptr(CCOff), []DCQCNParam{{"rpg_ai_rate", 5}}
		}, []string{`warning: ecn.dcqcn: DCQCN parameters tune an algorithm that mode = "off" turns off on the lossless priorities (allowed: leave [ecn.dcqcn] out)`}},
		{"cc dcqcn with a list", func(p *Profile) {
			p.QoS.PFCPriorities, p.ECN.Mode, p.ECN.RPPriorities = prios(3), ptr(CCDCQCN), prios(3)
		}, nil},

		// Global pause and PFC exclude each other.
		{"global pause with pfc", func(p *Profile) {
			p.QoS.GlobalPause, p.QoS.PFCPriorities = ptr(true), prios(3)
		}, []string{"qos.global_pause: global 802.3x pause and PFC are mutually exclusive on a port (allowed: false when qos.pfc_priorities is not empty)"}},
		{"global pause with pfc off", func(p *Profile) {
			p.QoS.GlobalPause, p.QoS.PFCPriorities = ptr(true), prios()
		}, nil},
		{"global pause, pfc unmanaged", func(p *Profile) { p.QoS.GlobalPause = ptr(true) }, nil},
		{"no global pause with pfc", func(p *Profile) {
			p.QoS.GlobalPause, p.QoS.PFCPriorities = ptr(false), prios(3)
		}, nil},

		// A DSCP map needs DSCP trust.
		{"dscp map without trust", func(p *Profile) { p.QoS.DSCPToPriority = defaultDSCPMap() },
			[]string{`qos.dscp_to_priority: a DSCP map has no effect unless the port trusts DSCP (allowed: qos.trust = "dscp" alongside it)`}},
		{"dscp map with trust pcp", func(p *Profile) { p.QoS.DSCPToPriority, p.QoS.Trust = defaultDSCPMap(), ptr("pcp") },
			[]string{`qos.dscp_to_priority: a DSCP map has no effect with trust = "pcp" (allowed: qos.trust = "dscp", or remove dscp_to_priority)`}},
		{"dscp map with trust dscp", func(p *Profile) { p.QoS.DSCPToPriority, p.QoS.Trust = defaultDSCPMap(), ptr("dscp") }, nil},

		// ETS bandwidth: 100 over the ETS TCs, 0 elsewhere.
		{"ets sums to 100", func(p *Profile) {
			p.QoS.ETS = &ETS{TCTSA: ets4, TCBandwidth: [8]int{10, 10, 10, 70}}
		}, nil},
		{"ets sums to 99", func(p *Profile) {
			p.QoS.ETS = &ETS{TCTSA: ets4, TCBandwidth: [8]int{10, 10, 10, 69}}
		}, []string{"qos.ets.tc_bandwidth: ETS traffic classes add up to 99% (allowed: ETS bandwidths that add up to 100)"}},
		{"ets sums to 101", func(p *Profile) {
			p.QoS.ETS = &ETS{TCTSA: ets4, TCBandwidth: [8]int{10, 10, 10, 71}}
		}, []string{"qos.ets.tc_bandwidth: ETS traffic classes add up to 101% (allowed: ETS bandwidths that add up to 100)"}},
		{"eight ets classes", func(p *Profile) {
			p.QoS.ETS = &ETS{TCTSA: [8]string{"ets", "ets", "ets", "ets", "ets", "ets", "ets", "ets"}, TCBandwidth: [8]int{13, 13, 13, 13, 12, 12, 12, 12}}
		}, nil},
		{"bandwidth on strict, vendor and cbs TCs", func(p *Profile) {
			p.QoS.ETS = &ETS{TCTSA: [8]string{"ets", "ets", "strict", "vendor", "cbs", "strict", "strict", "strict"}, TCBandwidth: [8]int{50, 50, 1, 2, 3}}
		}, []string{
			`qos.ets.tc_bandwidth[2]: TC 2 is "strict" but has bandwidth 1% (allowed: 0 for traffic classes that are not "ets")`,
			`qos.ets.tc_bandwidth[3]: TC 3 is "vendor" but has bandwidth 2% (allowed: 0 for traffic classes that are not "ets")`,
			`qos.ets.tc_bandwidth[4]: TC 4 is "cbs" but has bandwidth 3% (allowed: 0 for traffic classes that are not "ets")`,
		}},
		{"no ets class at all", func(p *Profile) {
			p.QoS.ETS = &ETS{TCTSA: [8]string{"strict", "strict", "strict", "strict", "strict", "strict", "strict", "vendor"}}
		}, nil},
		{"strict bandwidth and a bad sum together", func(p *Profile) {
			p.QoS.ETS = &ETS{TCTSA: ets4, TCBandwidth: [8]int{10, 10, 10, 60, 10}}
		}, []string{
			`qos.ets.tc_bandwidth[4]: TC 4 is "strict" but has bandwidth 10% (allowed: 0 for traffic classes that are not "ets")`,
			"qos.ets.tc_bandwidth: ETS traffic classes add up to 90% (allowed: ETS bandwidths that add up to 100)",
		}},

		// A PFC priority needs buffer space.
		{"pfc priority in an empty buffer", func(p *Profile) {
			p.QoS.PFCPriorities = prios(3)
			p.Buffers.PriorityToBuffer = &[8]int{0, 0, 0, 1}
			p.Buffers.BufferSize = &[8]Size{256 << 10}
		}, []string{"buffers.buffer_size[1]: PFC priority 3 uses buffer 1, whose size is 0 (allowed: a non-zero size for every buffer a PFC priority uses)"}},
		{"two pfc priorities in empty buffers", func(p *Profile) {
			p.QoS.PFCPriorities = prios(3, 4)
			p.Buffers.PriorityToBuffer = &[8]int{0, 0, 0, 1, 2}
			p.Buffers.BufferSize = &[8]Size{256 << 10}
		}, []string{
			"buffers.buffer_size[1]: PFC priority 3 uses buffer 1, whose size is 0 (allowed: a non-zero size for every buffer a PFC priority uses)",
			"buffers.buffer_size[2]: PFC priority 4 uses buffer 2, whose size is 0 (allowed: a non-zero size for every buffer a PFC priority uses)",
		}},
		{"pfc priority in a sized buffer, others in empty ones", func(p *Profile) {
			p.QoS.PFCPriorities = prios(3)
			p.Buffers.PriorityToBuffer = &[8]int{7, 7, 7, 1, 7, 7, 7, 7}
			p.Buffers.BufferSize = &[8]Size{0, 1}
		}, nil},
		{"buffers without pfc", func(p *Profile) {
			p.Buffers.PriorityToBuffer = &[8]int{0, 0, 0, 1}
			p.Buffers.BufferSize = &[8]Size{}
		}, nil},
		{"sizes without a priority map", func(p *Profile) {
			p.QoS.PFCPriorities = prios(3)
			p.Buffers.BufferSize = &[8]Size{}
		}, nil},

		// The guard must poll at least once per detection time.
		{"poll longer than detection time", func(p *Profile) {
			p.Guard.Poll, p.Guard.DetectionTime = 300*time.Millisecond, 200*time.Millisecond
		}, []string{"guard.poll: poll interval 300ms is longer than the detection time (allowed: at most guard.detection_time (200ms))"}},
		{"poll equal to detection time", func(p *Profile) {
			p.Guard.Poll, p.Guard.DetectionTime = time.Second, time.Second
		}, nil},
		{"the defaults", func(p *Profile) {}, nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			p := ruleProfile(c.set)
			got := rendered(checkRules(p, newTable()))
			if !reflect.DeepEqual(got, c.want) {
				t.Errorf("got  %q\nwant %q", got, c.want)
			}
		})
	}
}

func TestCrossFieldWarnings(t *testing.T) {
	lossless := func(p *Profile) {
		p.QoS.Trust, p.QoS.DSCPToPriority, p.QoS.PFCPriorities = ptr("dscp"), defaultDSCPMap(), prios(3)
	}
	for _, c := range []struct {
		name string
		set  func(p *Profile)
		want []string
	}{
		// TOS = DSCP << 2 | ECN: with congestion control on, ECN 00 and
		// 11 are named with the arithmetic (issue 37, item 2).
		{"TOS 104 with DCQCN", func(p *Profile) {
			lossless(p)
			p.ECN.RPPriorities, p.RoCE.DefaultTOS = prios(3), ptr(104)
		}, []string{"warning: roce.default_tos: TOS 104 = DSCP 26 << 2 | ECN 00: not ECN-capable, so congestion is never marked and DCQCN never reacts (allowed: 106 (DSCP 26 << 2 | ECN 10, ECT(0)))"}},
		{"TOS 107 with DCQCN", func(p *Profile) {
			lossless(p)
			p.ECN.Mode, p.RoCE.VerbsTrafficClass = ptr(CCDCQCN), ptr(107)
		}, []string{"warning: roce.verbs_traffic_class: TOS 107 = DSCP 26 << 2 | ECN 11: CE, every packet already reads as congestion experienced (allowed: 106 (DSCP 26 << 2 | ECN 10, ECT(0)))"}},
		{"TOS 104 PFC-only", func(p *Profile) {
			lossless(p)
			p.ECN.Mode, p.RoCE.DefaultTOS = ptr(CCOff), ptr(104)
		}, nil},
		{"TOS 106 is lossless", func(p *Profile) {
			lossless(p)
			p.RoCE.DefaultTOS, p.RoCE.VerbsTrafficClass = ptr(106), ptr(106)
		}, nil},
		{"TOS on another priority", func(p *Profile) {
			lossless(p)
			p.RoCE.DefaultTOS = ptr(0)
		}, []string{"warning: roce.default_tos: TOS 0 is DSCP 0, which maps to priority 0: not lossless (allowed: a TOS whose DSCP maps to a PFC priority [3])"}},
		{"the ECN bits do not matter", func(p *Profile) {
			lossless(p)
			p.RoCE.DefaultTOS, p.RoCE.VerbsTrafficClass = ptr(104), ptr(107) // DSCP 26, ECN 00 and 11
		}, nil},
		{"verbs traffic class on another priority", func(p *Profile) {
			lossless(p)
			p.RoCE.VerbsTrafficClass = ptr(255) // DSCP 63 -> priority 7
		}, []string{"warning: roce.verbs_traffic_class: TOS 255 is DSCP 63, which maps to priority 7: not lossless (allowed: a TOS whose DSCP maps to a PFC priority [3])"}},
		{"NCCL IB_TC on another priority, and different from default_tos", func(p *Profile) {
			lossless(p)
			p.RoCE.DefaultTOS = ptr(106)
			p.NCCL.Vars = []NCCLVar{{"IB_TC", "32"}}
		}, []string{
			"warning: nccl.IB_TC: TOS 32 is DSCP 8, which maps to priority 1: not lossless (allowed: a TOS whose DSCP maps to a PFC priority [3])",
			"warning: nccl.IB_TC: NCCL traffic class 32 differs from roce.default_tos 106 (allowed: the same value as roce.default_tos, or leave IB_TC unset to derive it)",
		}},
		{"NCCL IB_TC without default_tos", func(p *Profile) {
			lossless(p)
			p.NCCL.Vars = []NCCLVar{{"IB_TC", "106"}}
		}, nil},
		{"an explicit map that leaves the TOS out", func(p *Profile) {
			lossless(p)
			p.QoS.DSCPToPriority = &DSCPMap{Entries: map[int]int{24: 3}}
			p.RoCE.DefaultTOS = ptr(106)
		}, []string{"warning: roce.default_tos: TOS 106 is DSCP 26, which qos.dscp_to_priority does not map (allowed: a TOS whose DSCP (TOS >> 2) is in qos.dscp_to_priority)"}},
		{"trust dscp without a map uses the firmware's", func(p *Profile) {
			p.QoS.Trust, p.QoS.PFCPriorities = ptr("dscp"), prios(3)
			p.RoCE.DefaultTOS = ptr(160) // DSCP 40 -> 5
		}, []string{"warning: roce.default_tos: TOS 160 is DSCP 40, which maps to priority 5: not lossless (allowed: a TOS whose DSCP maps to a PFC priority [3])"}},
		{"trust pcp: no DSCP map, no TOS check", func(p *Profile) {
			p.QoS.Trust, p.QoS.PFCPriorities = ptr("pcp"), prios(3)
			p.RoCE.DefaultTOS = ptr(0)
		}, nil},
		{"PFC off: nothing is lossless, nothing to warn about", func(p *Profile) {
			lossless(p)
			p.QoS.PFCPriorities = prios()
			p.RoCE.DefaultTOS = ptr(0)
		}, nil},
		{"CNP DSCP on the CNP priority", func(p *Profile) {
			lossless(p)
			p.ECN.CNPDSCP, p.ECN.CNPPriority = ptr(48), ptr(6)
		}, nil},
		{"CNP DSCP elsewhere", func(p *Profile) {
			lossless(p)
			p.ECN.CNPDSCP, p.ECN.CNPPriority = ptr(40), ptr(6)
		}, []string{"warning: ecn.cnp_dscp: CNP DSCP 40 maps to priority 5 on receiving hosts, not to cnp_priority 6 (allowed: a DSCP that maps to cnp_priority 6)"}},
		{"CNP DSCP outside an explicit map", func(p *Profile) {
			lossless(p)
			p.QoS.DSCPToPriority = &DSCPMap{Entries: map[int]int{26: 3}}
			p.ECN.CNPDSCP, p.ECN.CNPPriority = ptr(48), ptr(6)
		}, nil},
		{"ECN on every PFC priority", func(p *Profile) {
			p.QoS.PFCPriorities = prios(3, 4)
			p.ECN.NPPriorities, p.ECN.RPPriorities = prios(3, 4, 5), prios(3, 4)
		}, nil},
		{"ECN missing a PFC priority", func(p *Profile) {
			p.QoS.PFCPriorities = prios(3, 4)
			p.ECN.NPPriorities, p.ECN.RPPriorities = prios(), prios(3)
		}, []string{
			"warning: ecn.np_priorities: PFC priority 3 has no ECN here: congestion on it is handled by pause frames alone (allowed: include every PFC priority [3, 4])",
			"warning: ecn.np_priorities: PFC priority 4 has no ECN here: congestion on it is handled by pause frames alone (allowed: include every PFC priority [3, 4])",
			"warning: ecn.rp_priorities: PFC priority 4 has no ECN here: congestion on it is handled by pause frames alone (allowed: include every PFC priority [3, 4])",
		}},
		{"ECN unmanaged", func(p *Profile) { p.QoS.PFCPriorities = prios(3) }, nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			p := ruleProfile(c.set)
			ds := checkRules(p, newTable())
			if errs := ds.Errors(); len(errs) > 0 {
				t.Errorf("unexpected errors: %v", errs)
			}
			if got := rendered(ds); !reflect.DeepEqual(got, c.want) {
				t.Errorf("got  %q\nwant %q", got, c.want)
			}
		})
	}
}

// profiles/rack-a12.toml over profiles/base.toml: the rack's values win key
// by key, everything else comes from the base.
func TestIncludeRackOverBase(t *testing.T) {
	p, err := Load("../profiles/rack-a12.toml", LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if p.Name != "rack-a12" || p.Description != "Fleet-wide lossless RoCE base" {
		t.Errorf("name %q, description %q", p.Name, p.Description)
	}
	if want := []string{"../profiles/rack-a12.toml", "../profiles/base.toml"}; !reflect.DeepEqual(p.Files, want) {
		t.Errorf("Files = %q, want %q", p.Files, want)
	}
	// Overridden by the rack file.
	if v := p.QoS.CableLengthM; v == nil || *v != 15 {
		t.Errorf("cable_length_m = %v, want 15", v)
	}
	if want := []DCQCNParam{{"rpg_min_dec_fac", 40}}; !reflect.DeepEqual(p.ECN.DCQCN, want) {
		t.Errorf("dcqcn = %v, want %v", p.ECN.DCQCN, want)
	}
	if !reflect.DeepEqual(p.Match, Match{Drivers: []string{"mlx5_core"}, Netdevs: []string{"ens1f*np*", "ens2f*np*"}}) {
		t.Errorf("match = %+v: the rack's netdevs are added to the base's drivers", p.Match)
	}
	// Kept from the base.
	if v := p.QoS.PFCPriorities; v == nil || *v != *prios(3) {
		t.Errorf("pfc_priorities = %v, want [3] from the base", v)
	}
	if v := p.QoS.Trust; v == nil || *v != "dscp" {
		t.Errorf("trust = %v", v)
	}
	if v := p.QoS.PFCStormPrevention; v == nil || !v.Auto {
		t.Errorf("pfc_storm_prevention = %+v", v)
	}
	if v := p.ECN.CNPPriority; v == nil || *v != 6 {
		t.Errorf("cnp_priority = %v", v)
	}
	if v := p.NCCL.Write; v == nil || *v != "/etc/nccl.conf" {
		t.Errorf("nccl.write = %v", v)
	}
	// [nccl] merged: the base's two variables, then the rack's.
	if want := []NCCLVar{{"IB_HCA", "auto"}, {"IB_GID_INDEX", "auto"}, {"IB_TIMEOUT", "20"}}; !reflect.DeepEqual(p.NCCL.Vars, want) {
		t.Errorf("nccl vars = %v, want %v", p.NCCL.Vars, want)
	}
	// Positions point where each value was written.
	for key, want := range map[string]string{
		"qos.cable_length_m":        "../profiles/rack-a12.toml:11:1",
		"qos.pfc_priorities":        "../profiles/base.toml:16:1",
		"ecn.dcqcn.rpg_min_dec_fac": "../profiles/rack-a12.toml:14:1",
	} {
		if pos, ok := p.PosOf(key); !ok || pos.String() != want {
			t.Errorf("PosOf(%s) = %v %v, want %s", key, pos, ok, want)
		}
	}
}

// includeTree writes files (name -> text) into a temp dir and loads the
// first one named.
func includeTree(t *testing.T, top string, files map[string]string) (*Profile, Diagnostics, string) {
	t.Helper()
	dir := t.TempDir()
	for name, text := range files {
		sub := filepath.Dir(filepath.Join(dir, name))
		if err := os.MkdirAll(sub, 0o755); err != nil {
			t.Fatal(err)
		}
		writeProfile(t, sub, filepath.Base(name), text, 0o600)
	}
	path := filepath.Join(dir, top)
	p, err := Load(path, LoadOptions{})
	if err != nil {
		pe, ok := err.(*ProfileError)
		if !ok {
			t.Fatalf("%T %v", err, err)
		}
		return nil, pe.Diags, dir
	}
	return p, p.Warnings, dir
}

func mustInclude(t *testing.T, top string, files map[string]string) *Profile {
	t.Helper()
	p, ds, _ := includeTree(t, top, files)
	if p == nil {
		t.Fatalf("load failed:\n%v", (&ProfileError{Diags: ds}).Error())
	}
	return p
}

func TestIncludeTablesMergeKeyByKey(t *testing.T) {
	p := mustInclude(t, "top.toml", map[string]string{
		"base.toml": "[qos]\ntrust = \"dscp\"\npfc_priorities = [3]\n[qos.ets]\npriority_to_tc = [0, 1, 2, 3, 4, 5, 6, 7]\n" +
			"tc_tsa = [\"ets\", \"ets\", \"ets\", \"ets\", \"strict\", \"strict\", \"strict\", \"strict\"]\ntc_bandwidth = [10, 10, 10, 70, 0, 0, 0, 0]\n",
		"top.toml": "include = [\"base.toml\"]\n[qos]\ncable_length_m = 3\n[qos.ets]\ntc_bandwidth = [25, 25, 25, 25, 0, 0, 0, 0]\n",
	})
	if p.QoS.Trust == nil || p.QoS.PFCPriorities == nil || p.QoS.CableLengthM == nil || *p.QoS.CableLengthM != 3 {
		t.Errorf("[qos] did not merge: %+v", p.QoS)
	}
	if p.QoS.ETS == nil || p.QoS.ETS.TCBandwidth != [8]int{25, 25, 25, 25} || p.QoS.ETS.TCTSA != ets4 {
		t.Errorf("[qos.ets] did not merge key by key: %+v", p.QoS.ETS)
	}
}

func TestIncludeArraysReplace(t *testing.T) {
	p := mustInclude(t, "top.toml", map[string]string{
		"base.toml": "[qos]\npfc_priorities = [3, 4]\n[match]\ndrivers = [\"mlx5_core\", \"bnxt_en\"]\n",
		"top.toml":  "include = [\"base.toml\"]\n[qos]\npfc_priorities = [5]\n[match]\ndrivers = [\"ice\"]\n",
	})
	if *p.QoS.PFCPriorities != *prios(5) {
		t.Errorf("pfc_priorities = %v: an array replaces, it is not merged", p.QoS.PFCPriorities.List())
	}
	if !reflect.DeepEqual(p.Match.Drivers, []string{"ice"}) {
		t.Errorf("drivers = %v", p.Match.Drivers)
	}
}

// Later includes win over earlier ones; the including file wins over all.
func TestIncludeOrder(t *testing.T) {
	files := map[string]string{
		"a.toml":   "[link]\nmtu = 1500\nrx_ring = 1024\ntx_ring = 1024\n",
		"b.toml":   "[link]\nmtu = 4200\nrx_ring = 2048\n",
		"top.toml": "include = [\"a.toml\", \"b.toml\"]\n[link]\nmtu = 9000\n",
	}
	p := mustInclude(t, "top.toml", files)
	if *p.Link.MTU != 9000 || *p.Link.RxRing != 2048 || *p.Link.TxRing != 1024 {
		t.Errorf("mtu %d rx %d tx %d, want 9000 (top) 2048 (b over a) 1024 (a)", *p.Link.MTU, *p.Link.RxRing, *p.Link.TxRing)
	}
	files["top.toml"] = "include = [\"b.toml\", \"a.toml\"]\n"
	p = mustInclude(t, "top.toml", files)
	if *p.Link.MTU != 1500 || *p.Link.RxRing != 1024 {
		t.Errorf("mtu %d rx %d, want a's 1500 and 1024 when a comes last", *p.Link.MTU, *p.Link.RxRing)
	}
}

// A value may replace a table and the other way round.
func TestIncludeTypeChangeReplaces(t *testing.T) {
	p := mustInclude(t, "top.toml", map[string]string{
		"base.toml": "[qos]\ntrust = \"dscp\"\n[qos.dscp_to_priority]\n26 = 3\n",
		"top.toml":  "include = [\"base.toml\"]\n[qos]\ndscp_to_priority = \"default\"\n",
	})
	if m := p.QoS.DSCPToPriority; m == nil || !m.Default || len(m.Entries) != 64 {
		t.Errorf("dscp_to_priority = %+v, want the default map", m)
	}
	p = mustInclude(t, "top.toml", map[string]string{
		"base.toml": "[qos]\ntrust = \"dscp\"\ndscp_to_priority = \"default\"\n",
		"top.toml":  "include = [\"base.toml\"]\n[qos.dscp_to_priority]\n26 = 3\n",
	})
	if m := p.QoS.DSCPToPriority; m == nil || m.Default || !reflect.DeepEqual(m.Entries, map[int]int{26: 3}) {
		t.Errorf("dscp_to_priority = %+v, want {26: 3}", m)
	}
}

// A relative include is relative to the file that names it, at every level.
func TestIncludePathsRelativeToIncludingFile(t *testing.T) {
	p, ds, dir := includeTree(t, "top.toml", map[string]string{
		"top.toml":         "include = [\"sub/mid.toml\"]\n[link]\nmtu = 9000\n",
		"sub/mid.toml":     "include = [\"leaf.toml\", \"../shared/x.toml\"]\n",
		"sub/leaf.toml":    "[qos]\ntrust = \"dscp\"\n",
		"shared/x.toml":    "[roce]\nmode = \"v2\"\n",
		"leaf.toml":        "[qos]\ntrust = \"pcp\"\n", // a decoy next to top.toml
		"shared/unused.md": "",
	})
	if p == nil {
		t.Fatalf("%v", ds)
	}
	if *p.QoS.Trust != "dscp" || p.RoCE.Mode == nil {
		t.Errorf("trust %q, mode %v: includes were resolved against the wrong directory", *p.QoS.Trust, p.RoCE.Mode)
	}
	want := []string{"top.toml", "sub/mid.toml", "sub/leaf.toml", "shared/x.toml"}
	for i := range want {
		want[i] = filepath.Join(dir, want[i])
	}
	if !reflect.DeepEqual(p.Files, want) {
		t.Errorf("Files = %q, want %q", p.Files, want)
	}
}

// The same file reached twice (not a cycle) is fine.
func TestIncludeDiamond(t *testing.T) {
	p := mustInclude(t, "top.toml", map[string]string{
		"common.toml": "[link]\nmtu = 9000\n",
		"a.toml":      "include = [\"common.toml\"]\n[qos]\ntrust = \"dscp\"\n",
		"b.toml":      "include = [\"common.toml\"]\n[roce]\nmode = \"v2\"\n",
		"top.toml":    "include = [\"a.toml\", \"b.toml\"]\n",
	})
	if p.Link.MTU == nil || p.QoS.Trust == nil || p.RoCE.Mode == nil {
		t.Errorf("diamond include lost something: %+v %+v %+v", p.Link, p.QoS, p.RoCE)
	}
}

func TestIncludeCycleThroughThreeFiles(t *testing.T) {
	_, ds, dir := includeTree(t, "a.toml", map[string]string{
		"a.toml": "include = [\"b.toml\"]\n[link]\nmtu = 9000\n",
		"b.toml": "include = [\"c.toml\"]\n",
		"c.toml": "include = [\"a.toml\"]\n",
	})
	if len(ds) != 1 {
		t.Fatalf("want one diagnostic, got %v", ds)
	}
	d := ds[0]
	if d.Pos != (Pos{filepath.Join(dir, "c.toml"), 1, 12}) || d.Msg != "include cycle: a.toml -> b.toml -> c.toml -> a.toml" {
		t.Errorf("got %s", d)
	}
}

// A name and description are merged like any other value: an overlay
// without a name takes its base's.
// The profile is the file named on the command line: an overlay without a
// name of its own is called after its file, while other keys (description)
// still come from the base.
func TestIncludeNameFromBase(t *testing.T) {
	p := mustInclude(t, "rack.toml", map[string]string{
		"base.toml": "name = \"fleet\"\ndescription = \"d\"\n[link]\nmtu = 9000\n",
		"rack.toml": "include = [\"base.toml\"]\n",
	})
	if p.Name != "rack" || p.Description != "d" {
		t.Errorf("name %q description %q", p.Name, p.Description)
	}
	p = mustInclude(t, "rack.toml", map[string]string{
		"base.toml": "[link]\nmtu = 9000\n",
		"rack.toml": "include = [\"base.toml\"]\n",
	})
	if p.Name != "rack" {
		t.Errorf("without any name the top file's name is used, got %q", p.Name)
	}
}

// A value an overlay replaces is never checked: the base may hold what the
// overlay fixes.
func TestIncludeOverriddenValueNotChecked(t *testing.T) {
	p := mustInclude(t, "top.toml", map[string]string{
		"base.toml": "[link]\nmtu = 99999\n",
		"top.toml":  "include = [\"base.toml\"]\n[link]\nmtu = 9000\n",
	})
	if *p.Link.MTU != 9000 {
		t.Errorf("mtu %d", *p.Link.MTU)
	}
}

// Rules see the merged profile: a rule broken across two files is reported
// at the value that was written last.
func TestIncludeRuleAcrossFiles(t *testing.T) {
	_, ds, dir := includeTree(t, "top.toml", map[string]string{
		"base.toml": "[qos]\ntrust = \"dscp\"\npfc_priorities = [3]\n",
		"top.toml":  "include = [\"base.toml\"]\n[qos]\nglobal_pause = true\n",
	})
	if len(ds) != 1 || ds[0].Key != "qos.global_pause" || ds[0].Pos != (Pos{filepath.Join(dir, "top.toml"), 3, 16}) {
		t.Errorf("got %v", ds)
	}
	if !strings.Contains(ds[0].String(), "global_pause = true") {
		t.Errorf("the quoted line is missing: %s", ds[0])
	}
}

// TestRulesBesideRangeErrors: one Load reports the range errors and the
// cross-field rules together (the "one pass, all problems"); a
// rule whose input failed to decode is skipped, not judged on a default.
func TestRulesBesideRangeErrors(t *testing.T) {
	_, err := Load("testdata/bad/multi-cross-rules-beside-range-errors.toml", corpusOpts)
	var pe *ProfileError
	if !errors.As(err, &pe) {
		t.Fatalf("Load: %v, want a *ProfileError", err)
	}
	got := map[string]string{}
	for _, d := range pe.Diags.Errors() {
		got[d.Key] = d.Msg
	}
	for key, want := range map[string]string{
		"qos.pfc_priorities[1]":   "9 is out of range",        // range
		"buffers.buffer_size[7]":  "99GiB is too large",       // range
		"qos.dscp_to_priority.99": `"99" is not a DSCP value`, // range
		"guard.poll":              "10s is out of range",      // range, and no poll/detection rule on the default
		"qos.global_pause":        "global 802.3x pause and PFC are mutually exclusive on a port",
		"ecn.cnp_priority":        "CNP priority 3 is also a PFC data priority",
		"buffers.buffer_size[1]":  "PFC priority 3 uses buffer 1, whose size is 0",
		"qos.dscp_to_priority":    `a DSCP map has no effect with trust = "pcp"`,
	} {
		if got[key] != want {
			t.Errorf("%s: got %q, want %q", key, got[key], want)
		}
	}
	if len(got) != 8 {
		t.Errorf("got %d errors, want 8: %v", len(got), got)
	}
}

// [match] roles selects by the port's place in the topology; without it
// every role matches.
func TestMatchRoles(t *testing.T) {
	pf := port.Port{Netdev: "ens1f0np0", Role: port.RolePF}
	vf := port.Port{Netdev: "enp7s2f2", Role: port.RoleVF, PF: "ens1f0np0"}
	bond := port.Port{Netdev: "bond0", Role: port.RoleBond}
	for _, c := range []struct {
		roles []string
		port  port.Port
		want  bool
	}{
		{nil, vf, true},
		{[]string{port.RolePF, port.RoleBond}, pf, true},
		{[]string{port.RolePF, port.RoleBond}, bond, true},
		{[]string{port.RolePF, port.RoleBond}, vf, false},
		{[]string{port.RoleVF}, vf, true},
		{[]string{port.RoleVF}, pf, false},
	} {
		if got := (Match{Roles: c.roles}).Matches(c.port); got != c.want {
			t.Errorf("roles %v on %s: %v, want %v", c.roles, c.port.Role, got, c.want)
		}
	}
}

// mode = "off" writes ECN reaction and notification off on each PFC
// priority and leaves the others, and the CNP settings, unmanaged.
func TestCCOffResolvesToTheLosslessPrioritiesOnly(t *testing.T) {
	p := ruleProfile(func(p *Profile) {
		p.QoS.PFCPriorities, p.ECN.Mode = prios(3, 4), ptr(CCOff)
	})
	d := Resolve(p, []port.Port{{Netdev: "eth0", RDMADevice: "mlx5_0", PortNum: 1, Driver: "mlx5_core"}})
	var got []string
	for _, s := range d.Ports[0].Settings {
		if s.Kind == KindECNEnable || s.Kind == KindECNParam {
			got = append(got, s.Key+"="+s.Value)
		}
	}
	want := []string{"mlx5_0.ecn.np.enable.3=off", "mlx5_0.ecn.np.enable.4=off", "mlx5_0.ecn.rp.enable.3=off", "mlx5_0.ecn.rp.enable.4=off"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("settings %v, want %v", got, want)
	}
}
