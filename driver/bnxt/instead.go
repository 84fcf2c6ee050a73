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
// in main.c) in one of two variants its cc group's cc_mode selects
// (configfs.c cc_mode_store, which refuses anything above 1; the mode
// names are configfs.c's mode_name_p5: 0 DCQCN-D, deterministic
// marking, 1 DCQCN-P, probabilistic). "dcqcn" leaves cc_mode as it is;
// "off" clears the port-wide ecn_enable. With no cc group (probed), only
// "dcqcn", the firmware's own; not probed, unknown.
func (Driver) CCModes(f driver.PortFacts) ([]string, string, bool) {
	switch f.ECN {
	case driver.ECNBnxtConfigfs, driver.ECNBnxtDebugfs:
		return []string{policy.CCDCQCN, policy.CCDCQCND, policy.CCDCQCNP, policy.CCOff}, bnxtCCElsewhere, true
	case driver.ECNUnknown:
		return nil, "", false
	}
	return []string{policy.CCDCQCN}, "bnxt_re's cc group, which holds ecn_enable and cc_mode, is absent (Broadcom's bnxt_re configfs after `mkdir /sys/kernel/config/bnxt_re/<dev>`, or mainline bnxt_re's debugfs cc_config, v6.14+)", true
}

// bnxtCCElsewhere: what bnxt_re's cc_mode does not offer.
const bnxtCCElsewhere = "bnxt_re's cc_mode holds DCQCN-D (0) and DCQCN-P (1) on Thor and later (P5+); DCTCP and TIMELY are not bnxt_re's (on older NetXtreme-E chips cc_mode 1 is a TCP-like mode rocectl does not set)"

// CCSettings: dcqcn-d and dcqcn-p are the cc group's cc_mode, written in
// the port's congestion-control step (Caps.CCCommit) with its apply;
// the other modes are made of the ECN enables alone.
func (Driver) CCSettings(mode string, f driver.PortFacts) []driver.Companion {
	if f.ECN != driver.ECNBnxtConfigfs && f.ECN != driver.ECNBnxtDebugfs {
		return nil
	}
	v := map[string]string{policy.CCDCQCND: "0", policy.CCDCQCNP: "1"}[mode]
	if v == "" {
		return nil
	}
	return []driver.Companion{{Kind: policy.KindECNParam, Name: "ecn.rp.cc_mode", Arg: "rp/cc_mode", Value: v,
		Note: "bnxt_re's congestion-control variant for [ecn] mode = \"" + mode + "\" (configfs.c cc_mode_store; 0 DCQCN-D, 1 DCQCN-P on P5+ chips, mode_name_p5)"}}
}
