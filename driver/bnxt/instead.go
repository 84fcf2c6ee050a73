package bnxt

import (
	"github.com/rocectl/rocectl/driver"
	"github.com/rocectl/rocectl/policy"
)

// Instead says where a bnxt setting lives when the interface rocectl
// reads has none of it. bnxt_en has no dcbnl buffer ops (bnxt_dcb.c
// registers ieee_{get,set}{ets,pfc,app} and the DCBX ops only): the
// firmware sizes the receive buffers, and nothing takes a cable length.
// It has no pfc-prevention-tout tunable (bnxt_ethtool.c). Congestion
// control is bnxt_re's: one port-wide switch and the RoCE priority in
// its cc group, not a switch per priority.
func (Driver) Instead(k policy.Kind, _ driver.PortFacts) string {
	switch k {
	case policy.KindPrioBuffer, policy.KindBufferSize, policy.KindCableLength:
		return "bnxt_en's firmware sizes the receive buffers itself (bnxt_dcb.c has no dcbnl buffer ops); Broadcom's NVM tools are the only other way in"
	case policy.KindStormPrevention:
		return "the switch's PFC watchdog is the guard left (bnxt_ethtool.c has no such tunable)"
	case policy.KindECNEnable:
		return "bnxt_re's port-wide cc ecn_enable with roce_prio (the vendor driver's configfs, or mainline debugfs cc_config)"
	case policy.KindECNParam:
		return "bnxt_re's DCQCN has parameters of its own, under other names, in its cc group (the vendor driver's configfs, or mainline debugfs cc_config); this one keeps the firmware's value"
	case policy.KindTrafficClass:
		return driver.PerConnectionTC
	}
	return ""
}

// CCModes: bnxt_re runs DCQCN (its firmware's default, bnxt_re_setup_cc
// in main.c); its cc group's port-wide ecn_enable and cc_mode are not
// managed by rocectl yet.
func (Driver) CCModes(driver.PortFacts) ([]string, string, bool) {
	return []string{policy.CCDCQCN}, "bnxt_re's cc group (ecn_enable, cc_mode; vendor configfs or mainline debugfs cc_config) holds the others, not managed by rocectl yet", true
}
