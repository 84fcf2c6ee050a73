package bnxt

import (
	"slices"
	"strings"
	"testing"

	"github.com/rocectl/rocectl/driver"
	"github.com/rocectl/rocectl/nic/dcb"
	"github.com/rocectl/rocectl/policy"
)

func TestETSProblemFollowsBnxtETSValidate(t *testing.T) {
	onTC := func(tc int) *[8]int { v := [8]int{0, 0, 0, tc}; return &v }
	for _, tc := range []struct {
		ets   ETS
		maxTC uint8
		want  string // part of the refusal, "" for none
	}{
		{ETS{PrioTC: onTC(1)}, 2, ""},
		// TC max_tc itself passes bnxt_ets_validate (it checks "> max_tc").
		{ETS{PrioTC: onTC(2)}, 2, ""},
		{ETS{PrioTC: onTC(3)}, 2, "priority 3 is on traffic class 3, above bnxt_en's 2"},
		{ETS{TSA: &[8]string{"ets", "ets", "strict", "ets", "strict", "strict", "strict", "strict"}}, 2, "traffic class 3 is above"},
		{ETS{BW: &[8]int{50, 40, 0, 10}}, 2, "traffic class 3 is above"},
		{ETS{}, 0, ""},
	} {
		got := ETSProblem(tc.ets, tc.maxTC)
		if (tc.want == "") != (got == "") || !strings.Contains(got, tc.want) {
			t.Errorf("%+v max_tc %d: %q, want %q", tc.ets, tc.maxTC, got, tc.want)
		}
	}
}

func TestLosslessProblemFollowsBnxtHwrmQueuePFCCfg(t *testing.T) {
	prioTC := [dcb.NumTCs]uint8{0, 1, 2, 3, 0, 0, 0, 0}
	for _, tc := range []struct {
		pfcEn, maxTC, maxLLTC uint8
		want                  string
	}{
		{1 << 3, 8, 1, ""},
		{1<<3 | 1<<2, 8, 1, "on 2 traffic classes [2 3], and bnxt_en has 1 lossless queue"},
		{1<<3 | 1<<2, 8, 2, ""},
		// A priority on a TC not below max_tc is left unpaused.
		{1 << 3, 3, 8, "PFC priority 3 is on traffic class 3"},
		{0, 1, 0, ""},
	} {
		got := LosslessProblem(prioTC, tc.pfcEn, tc.maxTC, tc.maxLLTC)
		if (tc.want == "") != (got == "") || !strings.Contains(got, tc.want) {
			t.Errorf("pfc %#x max_tc %d max_lltc %d: %q, want %q", tc.pfcEn, tc.maxTC, tc.maxLLTC, got, tc.want)
		}
	}
}

func TestDCBXModeAndPlan(t *testing.T) {
	d := Driver{}
	reads := 0
	reported := func() uint8 { reads++; return dcb.DCBXHost | dcb.DCBXVerIEEE | dcb.DCBXVerCEE }
	if m := d.DCBXMode(true, reported); m != dcb.DCBXHost|dcb.DCBXVerIEEE || reads != 0 {
		t.Errorf("host mode is IEEE only, unread: %#x after %d reads", m, reads)
	}
	if m := d.DCBXMode(false, reported); m != dcb.DCBXVerIEEE|dcb.DCBXVerCEE {
		t.Errorf("firmware clears HOST only: %#x", m)
	}
	mode := func(m uint8, ok bool) func() (uint8, bool) { return func() (uint8, bool) { return m, ok } }
	lld := uint8(dcb.DCBXLLDManaged | dcb.DCBXVerIEEE)
	ieee := uint8(dcb.DCBXVerIEEE)
	for _, tc := range []struct {
		want    string
		changed bool
		mode    func() (uint8, bool)
		plan    driver.DCBXPlan
	}{
		{"host", true, mode(lld, true), driver.DCBXPlan{Refuse: LLDManagedRefusal}},
		{"firmware", false, mode(lld, true), driver.DCBXPlan{}},
		{"firmware", true, mode(ieee, true), driver.DCBXPlan{Note: FirmwareDCBXNote}},
		{"firmware", false, mode(ieee, true), driver.DCBXPlan{Warning: FirmwareDCBXNote}},
		{"host", true, mode(ieee, true), driver.DCBXPlan{}},
		{"host", false, nil, driver.DCBXPlan{}}, // nothing to say: not read
		{"firmware", true, mode(0, false), driver.DCBXPlan{}},
	} {
		if got := d.PlanDCBX(tc.want, tc.changed, tc.mode); got != tc.plan {
			t.Errorf("%s changed=%v: %+v, want %+v", tc.want, tc.changed, got, tc.plan)
		}
	}
}

func TestHiddenDCBIsHostModePlaceholder(t *testing.T) {
	d := Driver{}
	host, fw := uint8(dcb.DCBXHost|dcb.DCBXVerIEEE), uint8(dcb.DCBXVerIEEE)
	placeholder := &dcb.ETS{ETSCap: 8}
	if n := d.HiddenDCB(&dcb.State{DCBX: &host, ETS: placeholder}); n != HiddenNote {
		t.Errorf("host mode, zeroed ETS: %q", n)
	}
	if n := d.HiddenDCB(&dcb.State{DCBX: &fw, ETS: placeholder}); n != "" {
		t.Errorf("firmware mode reports what it queried: %q", n)
	}
	set := &dcb.ETS{ETSCap: 8, TCTxBW: [dcb.NumTCs]uint8{100}}
	if n := d.HiddenDCB(&dcb.State{DCBX: &host, ETS: set}); n != "" {
		t.Errorf("ETS set: %q", n)
	}
}

func TestOrderAndDisruptions(t *testing.T) {
	d := Driver{}
	for _, k := range []policy.Kind{policy.KindETSPrioTC, policy.KindETSTSA, policy.KindETSBandwidth} {
		if got := d.UndoBefore(k); !slices.Contains(got, policy.KindPFC) || !slices.Contains(got, policy.KindLosslessRemap) {
			t.Errorf("%v undone before %v", k, got)
		}
	}
	if got := d.UndoBefore(policy.KindPFC); got != nil {
		t.Errorf("PFC: %v", got)
	}
	if !d.DeleteAppFirst() {
		t.Error("bnxt deletes an APP entry before adding its new one")
	}
	if note, refusal := d.PFCNeedsETS(); note == "" || refusal == "" {
		t.Error("bnxt needs ETS before PFC")
	}
	ds := d.Disruptions(&policy.Change{Setting: policy.Setting{Kind: policy.KindPFC}, Note: HiddenNote})
	if len(ds) != 2 || !strings.HasPrefix(ds[0], "irreversible") || !strings.Contains(ds[1], "bnxt_queue_remap") {
		t.Errorf("PFC over the placeholder: %v", ds)
	}
	if ds := d.Disruptions(&policy.Change{Setting: policy.Setting{Kind: policy.KindETSPrioTC}}); len(ds) != 1 || !strings.Contains(ds[0], "bnxt_setup_mq_tc") {
		t.Errorf("ETS map: %v", ds)
	}
	strict := [8]string{"ets", "ets", "strict", "strict", "strict", "strict", "strict", "strict"}
	if why := d.RefuseETS(&policy.ETS{TCTSA: strict, TCBandwidth: [8]int{100, 0}}); why == "" {
		t.Error("a starved ETS TC must be refused")
	}
	if why := d.RefuseETS(&policy.ETS{TCTSA: strict, TCBandwidth: [8]int{60, 40}}); why != "" {
		t.Errorf("shares refused: %s", why)
	}
}
