package ice

import (
	"fmt"
	"slices"
	"strings"

	"github.com/rocectl/rocectl/driver"
	"github.com/rocectl/rocectl/policy"
)

// What ice does with a DCB write, as mainline ice has it (read in
// drivers/net/ethernet/intel/ice; the simulator's model is
// nic/nictest/icesim):
//
//   - ice_dcbnl_setets, ice_dcbnl_setpfc and ice_dcbnl_setapp answer
//     EINVAL while pf->dcbx_cap has DCB_CAP_DCBX_LLD_MANAGED, and
//     ice_dcbnl_setdcbx changes nothing while ICE_FLAG_FW_LLDP_AGENT is
//     set: the firmware's LLDP agent owns DCB. ice_set_priv_flags turning
//     fw-lldp-agent off stops the agent (ice_aq_stop_lldp), re-inits DCB
//     in software (ice_init_pf_dcb(pf, true): the default config, every
//     priority on TC0) and makes dcbx_cap HOST instead of LLD_MANAGED;
//     turning it on starts the agent again (ice_aq_start_lldp,
//     ice_aq_start_stop_dcbx) and gives it DCB back. i40e has the same
//     agent behind disable-fw-lldp, with the opposite sense.
//   - ice_set_pauseparam refuses any link flow control write while PFC
//     is enabled (dcbx_cfg->pfc.pfcena): EOPNOTSUPP, "Priority flow
//     control enabled. Cannot set link flow control."
//   - ice_dcb_get_num_tc counts the TCs of the priority table only when
//     they are contiguous from TC0 ("Non-contiguous TCs - Disabling
//     DCB"): otherwise one TC, and ice_dcb_bwchk then gives TC0 all the
//     bandwidth, so the write is taken but reads back otherwise.

// fwLLDPFlag is the private flag that runs the firmware's LLDP agent,
// and the value that stops it.
func (d Driver) fwLLDPFlag() (name, off string) {
	if d.DisableFlag {
		return "disable-fw-lldp", policy.FormatBool(true)
	}
	return "fw-lldp-agent", policy.FormatBool(false)
}

// Companions: a DCB write on ice needs the firmware LLDP agent stopped
// (the set ops refuse while it runs DCBX), so the plan turns the private
// flag off first, journalled: the flag's write order (policy's
// KindPrivFlag) is before every DCB kind, so rollback undoes the DCB
// steps first and starts the agent again last. Nothing is added when the
// flag is already off (companionChange reads it).
func (d Driver) Companions(c policy.Change) []driver.Companion {
	if !driver.IsDCB(c.Kind) || (c.Kind == policy.KindDCBX && c.Value != "host") {
		return nil
	}
	name, off := d.fwLLDPFlag()
	return []driver.Companion{{Kind: policy.KindPrivFlag, Name: "link.private_flags." + name, Arg: name, Value: off,
		Note: d.Module + "'s DCB set ops refuse while the firmware LLDP agent runs DCBX (ice_dcbnl_setets/setpfc/setapp: DCB_CAP_DCBX_LLD_MANAGED); stopping it (" + d.Module + "_set_priv_flags) hands DCB to the host; journalled so that rollback starts it again after the DCB writes are undone"}}
}

// PauseExcludesPFC: ice_set_pauseparam (i40e_set_pauseparam alike)
// refuses every link flow control write while PFC is enabled.
func (d Driver) PauseExcludesPFC() string {
	return d.Module + " refuses link flow control writes while PFC is enabled (" + d.Module + "_set_pauseparam: \"Priority flow control enabled. Cannot set link flow control.\", EOPNOTSUPP)"
}

// LimitDCB: the TC and PFC limits of ice for RDMA. ice takes a priority
// table only with its TCs contiguous from TC0 (ice_dcb_get_num_tc,
// else one TC), at most maxTC of them (the ets_cap the driver reports:
// hw.func_caps.common_cap.maxtc; Intel's 800 Series flow-control guide:
// eight TCs on a card of up to four ports, four on more), and RDMA runs
// one PFC traffic class per port (the guide's QoS/Flow Control
// Limitations). The refusal is two lines: what is wrong, and what ice
// allows.
func (d Driver) LimitDCB(prioTC [8]int, pfc []int, maxTC int) string {
	var problems []string
	used := map[int]bool{}
	top := 0
	for _, tc := range prioTC {
		used[tc] = true
		top = max(top, tc)
	}
	if len(used) != top+1 {
		var tcs []int
		for tc := range used {
			tcs = append(tcs, tc)
		}
		slices.Sort(tcs)
		problems = append(problems, fmt.Sprintf("the priorities use TCs %v, not contiguous from TC0: %s takes such a table as one TC (ice_dcb_get_num_tc: \"Non-contiguous TCs - Disabling DCB\")", tcs, d.Module))
	}
	if maxTC > 0 && top+1 > maxTC {
		problems = append(problems, fmt.Sprintf("the priorities use %d TCs, the port has %d (ets_cap)", top+1, maxTC))
	}
	pfcTCs := map[int]bool{}
	for _, p := range pfc {
		if p >= 0 && p < 8 {
			pfcTCs[prioTC[p]] = true
		}
	}
	if len(pfcTCs) > 1 {
		var tcs []int
		for tc := range pfcTCs {
			tcs = append(tcs, tc)
		}
		slices.Sort(tcs)
		problems = append(problems, fmt.Sprintf("PFC priorities %v are on TCs %v: RDMA on %s runs one PFC traffic class per port (Intel 800 Series flow-control guide, QoS/Flow Control Limitations)", pfc, tcs, d.Module))
	}
	if len(problems) == 0 {
		return ""
	}
	allows := "up to " + fmt.Sprint(maxTC) + " TCs"
	if maxTC <= 0 {
		allows = "as many TCs as its ets_cap"
	}
	return strings.Join(problems, "; ") + "\n" + d.Module + " allows: " + allows + ", numbered from TC0 without gaps, with every PFC priority on one TC"
}

// PlanDCBX: on ice the DCBX mode follows the firmware LLDP agent's
// private flag (ice_set_priv_flags: off makes dcbx_cap HOST, on
// LLD_MANAGED), and ice_dcbnl_setdcbx refuses LLD_MANAGED and any mode
// without HOST. "host" is therefore the flag off, which the change's
// companion writes: the change leaves the plan (Drop). "firmware" only
// the flag on brings back.
func (d Driver) PlanDCBX(want string, changed bool, _ func() (uint8, bool)) driver.DCBXPlan {
	if !changed {
		return driver.DCBXPlan{}
	}
	name, off := d.fwLLDPFlag()
	if want == "host" {
		return driver.DCBXPlan{Drop: true, Note: "this also makes qos.dcbx host: " + d.Module + " takes DCBX from the firmware's agent to the host when the agent stops (" + d.Module + "_set_priv_flags)"}
	}
	on := policy.FormatBool(off == policy.FormatBool(false))
	return driver.DCBXPlan{Refuse: d.Module + "'s firmware DCBX is its firmware LLDP agent, which only the private flag starts (" + d.Module + "_dcbnl_setdcbx refuses a mode without HOST)\nset link.private_flags." + name + " = " + on + " instead, with no DCB setting in the profile"}
}
