package bnxt

import (
	"strings"
	"testing"

	"github.com/rocectl/rocectl/policy"
)

// cnp_prio_store and roce_prio_store check the cached value, not the new
// one, and keep val & 7: 9 would become priority 1 with no error. The
// DSCP stores and cc_mode_store do refuse (EINVAL).
func TestCCValueProblem(t *testing.T) {
	for _, tc := range []struct {
		attr string
		v    int64
		want string
	}{
		{"cnp_prio", 7, ""},
		{"cnp_prio", 9, "low 3 bits"},
		{"roce_prio", 8, "low 3 bits"},
		{"cnp_dscp", 63, ""},
		{"cnp_dscp", 64, "EINVAL"},
		{"cc_mode", 2, "EINVAL"},
		{"g", 1 << 20, ""}, // not range-checked by rocectl
	} {
		got := CCValueProblem(tc.attr, tc.v)
		if (tc.want == "") != (got == "") || !strings.Contains(got, tc.want) {
			t.Errorf("CCValueProblem(%s, %d) = %q, want %q", tc.attr, tc.v, got, tc.want)
		}
	}
}

func TestRefuseECN(t *testing.T) {
	set := func(p ...int) *policy.PrioSet {
		var s policy.PrioSet
		for _, x := range p {
			s |= 1 << x
		}
		return &s
	}
	for _, tc := range []struct {
		rp, np *policy.PrioSet
		refuse bool
	}{
		{nil, nil, false},
		{set(3), set(3), false},
		{set(), set(), false}, // ECN off
		{set(3), set(4), true},
		{set(3), nil, true},
		{set(3, 4), set(3, 4), true},
	} {
		got := Driver{}.RefuseECN(&policy.ECN{RPPriorities: tc.rp, NPPriorities: tc.np})
		if (got != "") != tc.refuse {
			t.Errorf("RefuseECN(rp %v, np %v) = %q, want refused %v", tc.rp, tc.np, got, tc.refuse)
		}
	}
}

func TestEnableWrite(t *testing.T) {
	if on, prio, ok := EnableWrite([]int{3, 3}, []bool{true, true}); !on || prio != 3 || !ok {
		t.Errorf("both enables of priority 3: %v %d %v", on, prio, ok)
	}
	if on, _, ok := EnableWrite([]int{3, 3}, []bool{false, false}); on || !ok {
		t.Errorf("both off: on %v ok %v", on, ok)
	}
	if _, _, ok := EnableWrite([]int{3, 4}, []bool{true, true}); ok {
		t.Error("two priorities on: ok")
	}
}

func TestHeldPrioProblem(t *testing.T) {
	if HeldPrioProblem("roce_prio", 7) != "" || HeldPrioProblem("cnp_dscp", 9) != "" {
		t.Error("refused a priority in range, or a DSCP")
	}
	if !strings.Contains(HeldPrioProblem("roce_prio", 9), "refuses every write") {
		t.Error("roce_prio holding 9 not refused")
	}
}
