package ice

import (
	"strings"
	"testing"

	"github.com/rocectl/rocectl/policy"
)

// A DCB change on ice brings the firmware LLDP agent's flag off with it;
// i40e's flag has the opposite sense; other kinds bring nothing.
func TestCompanionsStopTheFirmwareAgent(t *testing.T) {
	pfc := policy.Change{Setting: policy.Setting{Kind: policy.KindPFC}}
	cps := Driver{Module: "ice"}.Companions(pfc)
	if len(cps) != 1 || cps[0].Kind != policy.KindPrivFlag || cps[0].Arg != "fw-lldp-agent" || cps[0].Value != "off" ||
		cps[0].Name != "link.private_flags.fw-lldp-agent" || !strings.Contains(cps[0].Note, "ice_dcbnl_setets") {
		t.Errorf("ice: %+v", cps)
	}
	cps = Driver{Module: "i40e", DisableFlag: true}.Companions(pfc)
	if len(cps) != 1 || cps[0].Arg != "disable-fw-lldp" || cps[0].Value != "on" {
		t.Errorf("i40e: %+v", cps)
	}
	for _, k := range []policy.Kind{policy.KindMTU, policy.KindGlobalPause, policy.KindECNEnable, policy.KindPrivFlag} {
		if cps := (Driver{Module: "ice"}).Companions(policy.Change{Setting: policy.Setting{Kind: k}}); cps != nil {
			t.Errorf("%v: %+v", k, cps)
		}
	}
}

// The limits: TCs contiguous from TC0 (ice_dcb_get_num_tc), no more than
// ets_cap, PFC priorities on one TC (Intel's guide); two lines, the
// second naming what ice allows.
func TestLimitDCB(t *testing.T) {
	d := Driver{Module: "ice"}
	for _, tc := range []struct {
		prioTC [8]int
		pfc    []int
		maxTC  int
		want   string
	}{
		{[8]int{0, 0, 0, 1, 0, 0, 0, 0}, []int{3}, 8, ""},
		{[8]int{0, 1, 2, 3, 0, 0, 0, 0}, []int{3}, 4, ""},
		{[8]int{0, 0, 0, 2, 0, 0, 0, 0}, []int{3}, 8, "not contiguous from TC0"},
		{[8]int{0, 1, 2, 3, 4, 0, 0, 0}, nil, 4, "use 5 TCs, the port has 4"},
		{[8]int{0, 0, 0, 1, 2, 0, 0, 0}, []int{3, 4}, 8, "PFC priorities [3 4] are on TCs [1 2]"},
		{[8]int{0, 0, 0, 1, 1, 0, 0, 0}, []int{3, 4}, 8, ""},
	} {
		got := d.LimitDCB(tc.prioTC, tc.pfc, tc.maxTC)
		if (tc.want == "") != (got == "") || !strings.Contains(got, tc.want) {
			t.Errorf("%v pfc %v max %d: %q, want %q", tc.prioTC, tc.pfc, tc.maxTC, got, tc.want)
			continue
		}
		if got != "" {
			lines := strings.Split(got, "\n")
			if len(lines) != 2 || !strings.HasPrefix(lines[1], "ice allows: ") {
				t.Errorf("not two lines naming what ice allows: %q", got)
			}
		}
	}
	if !strings.Contains(d.PauseExcludesPFC(), "ice_set_pauseparam") {
		t.Error(d.PauseExcludesPFC())
	}
}
