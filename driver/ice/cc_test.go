package ice

import (
	"slices"
	"strings"
	"testing"

	"github.com/rocectl/rocectl/driver"
	"github.com/rocectl/rocectl/policy"
)

// With irdma's configfs every mode runs; probed without it none, naming
// the mkdir; not probed, unknown.
func TestCCModesFollowIrdmaConfigfs(t *testing.T) {
	d := Driver{Module: "ice"}
	if modes, _, ok := d.CCModes(driver.PortFacts{ECN: driver.ECNIrdma}); !ok || !slices.Equal(modes, []string{"dcqcn", "dctcp", "timely", "off"}) {
		t.Errorf("with configfs: %v %v", modes, ok)
	}
	if modes, where, ok := d.CCModes(driver.PortFacts{ECN: driver.ECNAbsent}); !ok || modes != nil || !strings.Contains(where, "mkdir /sys/kernel/config/irdma/<dev>") {
		t.Errorf("absent: %v %q %v", modes, where, ok)
	}
	if _, _, ok := d.CCModes(driver.PortFacts{}); ok {
		t.Error("not probed: known")
	}
}

// A mode is its switch on and the other two off; nothing without the
// configfs group.
func TestCCSettingsAreTheSwitches(t *testing.T) {
	d := Driver{Module: "ice"}
	for mode, on := range map[string]string{"dcqcn": "roce_dcqcn_enable", "dctcp": "roce_dctcp_enable", "timely": "roce_timely_enable", "off": ""} {
		cps := d.CCSettings(mode, driver.PortFacts{ECN: driver.ECNIrdma})
		if len(cps) != 3 {
			t.Fatalf("%s: %+v", mode, cps)
		}
		for _, cp := range cps {
			want := "0"
			if strings.HasSuffix(cp.Arg, "/"+on) {
				want = "1"
			}
			if cp.Kind != policy.KindECNParam || !strings.HasPrefix(cp.Arg, "rp/roce_") || cp.Value != want || cp.Name != "ecn."+cp.Arg[:2]+"."+cp.Arg[3:] {
				t.Errorf("%s: %+v", mode, cp)
			}
		}
	}
	if cps := d.CCSettings("dcqcn", driver.PortFacts{ECN: driver.ECNAbsent}); cps != nil {
		t.Errorf("without configfs: %+v", cps)
	}
	if IrdmaValueProblem("roce_dcqcn_enable", 1) != "" || IrdmaValueProblem("roce_dcqcn_enable", 2) == "" || IrdmaValueProblem("cnp_dscp", 48) != "" {
		t.Error("IrdmaValueProblem")
	}
	c := &policy.Change{Setting: policy.Setting{Kind: policy.KindECNParam, Arg: "rp/roce_timely_enable"}}
	if ds := d.Disruptions(c); len(ds) != 1 || !strings.Contains(ds[0], "new QPs only") {
		t.Errorf("disruptions %v", ds)
	}
	flag := &policy.Change{Setting: policy.Setting{Kind: policy.KindPrivFlag, Arg: "fw-lldp-agent"}}
	if ds := d.Disruptions(flag); len(ds) != 1 || !strings.Contains(ds[0], "DCB reset") {
		t.Errorf("flag disruptions %v", ds)
	}
	if ds := d.Disruptions(&policy.Change{Setting: policy.Setting{Kind: policy.KindPrivFlag, Arg: "legacy-rx"}}); ds != nil {
		t.Errorf("another flag: %v", ds)
	}
}

// qos.dcbx host on ice is the agent's flag (the change leaves the plan);
// firmware is refused, naming the flag.
func TestPlanDCBXFollowsTheAgentFlag(t *testing.T) {
	d := Driver{Module: "ice"}
	if p := d.PlanDCBX("host", true, nil); !p.Drop || p.Note == "" {
		t.Errorf("host: %+v", p)
	}
	if p := d.PlanDCBX("firmware", true, nil); p.Refuse == "" || !strings.Contains(p.Refuse, "fw-lldp-agent = on") || strings.Count(p.Refuse, "\n") != 1 {
		t.Errorf("firmware: %+v", p)
	}
	if p := (Driver{Module: "i40e", DisableFlag: true}).PlanDCBX("firmware", true, nil); !strings.Contains(p.Refuse, "disable-fw-lldp = off") {
		t.Errorf("i40e firmware: %+v", p)
	}
	if p := d.PlanDCBX("host", false, nil); p != (driver.DCBXPlan{}) {
		t.Errorf("in sync: %+v", p)
	}
}
