package bnxt

import (
	"fmt"

	"github.com/rocectl/rocectl/policy"
)

// bnxt_re's congestion control, as the two drivers that expose it
// implement it (read in their sources; the simulator's model is
// nic/nictest/bnxtsim's CC):
//
//   - Broadcom's out-of-tree bnxt_re, configfs.c: one group per port,
//     /sys/kernel/config/bnxt_re/<dev>/ports/<n>/cc/. Each attribute's
//     store (ecn_enable_store, roce_prio_store, cnp_prio_store,
//     cnp_dscp_store, cc_mode_store, ...) parses hex (sscanf "%x") into
//     the driver's cached rdev->cc_param and sets a bit in its modify
//     mask; nothing reaches the firmware until apply_store is written
//     0x1, which sends every staged field in one bnxt_qplib_modify_cc
//     and clears the mask whether the firmware took it or not (EINVAL
//     then). Each show prints the cached field ("%#x"), so a value
//     staged but never applied, or refused by the firmware, reads back
//     as if it held: rocectl writes a port's CC files and its apply as
//     one step (Caps.CCCommit), and rollback writes the old values and
//     apply again.
//   - mainline bnxt_re (v6.14+), debugfs.c: /sys/kernel/debug/bnxt_re/
//     <pci>/cc_config/, one file per gen0 parameter (enable_cc, tos_dscp,
//     alt_vlan_pcp, alt_vlan_dscp, cc_mode, ...). bnxt_re_cc_config_set
//     parses with kstrtou32 (any base) and sends that one field at once
//     (bnxt_re_configure_cc → bnxt_qplib_modify_cc), ignoring the
//     firmware's answer; bnxt_re_cc_config_get queries the firmware
//     (decimal). No apply, no RoCE priority file: the per-priority
//     enable has no place there.

// Configfs store ranges (configfs.c): a value above the range is EINVAL
// for cnp_dscp/roce_dscp (> 0x3F) and cc_mode (> 1); roce_prio_store and
// cnp_prio_store check the *cached* value, not the new one, and keep
// val & 0x7, so a priority above 7 is not refused but silently becomes
// another one. rocectl refuses such a value before any write.
var configfsMax = map[string]int64{
	"cnp_dscp":   0x3F,
	"roce_dscp":  0x3F,
	"cnp_prio":   7,
	"roce_prio":  7,
	"cc_mode":    1,
	"ecn_enable": 1,
}

// CCValueProblem says why bnxt_re would refuse, or silently change, v
// written to its congestion-control attribute attr; "" when it takes it.
func CCValueProblem(attr string, v int64) string {
	max, ok := configfsMax[attr]
	if !ok || (v >= 0 && v <= max) {
		return ""
	}
	switch attr {
	case "cnp_prio", "roce_prio":
		return fmt.Sprintf("bnxt_re's %s takes 0-7: %s_store keeps only the low 3 bits of %d (it checks the old value, not the new one), so another priority would be written", attr, attr, v)
	}
	return fmt.Sprintf("bnxt_re's %s takes 0-%d: %s_store refuses %d (EINVAL)", attr, max, attr, v)
}

// HeldPrioProblem says why bnxt_re's configfs would refuse any write of
// the priority attribute attr (roce_prio, cnp_prio) while it holds held:
// roce_prio_store and cnp_prio_store test the cached value, not the new
// one, and answer EINVAL while it is above 7. "" when they take a write.
func HeldPrioProblem(attr string, held int64) string {
	if (attr != "roce_prio" && attr != "cnp_prio") || (held >= 0 && held <= 7) {
		return ""
	}
	return fmt.Sprintf("bnxt_re's %s holds %d, above 7: %s_store refuses every write while it does (EINVAL; it checks the value held, not the one written), so nothing of this step is written; reload bnxt_re to reset it", attr, held, attr)
}

// EnableNote is how the profile's per-priority ECN enable maps onto
// bnxt_re, for docs and errors.
const EnableNote = "bnxt_re has one port-wide ecn_enable and one RoCE priority (roce_prio) for congestion control, reaction and notification together (configfs.c ecn_enable_store, roce_prio_store)"

// RefuseECN says why bnxt_re cannot hold the profile's [ecn] priorities:
// it has one port-wide ecn_enable for reaction and notification
// together, and one RoCE priority (roce_prio), so the profile's
// rp_priorities and np_priorities must be the same set of at most one
// priority. "" when it can.
func (Driver) RefuseECN(ecn *policy.ECN) string {
	if ecn == nil || (ecn.RPPriorities == nil && ecn.NPPriorities == nil) {
		return ""
	}
	var rp, np policy.PrioSet
	if ecn.RPPriorities != nil {
		rp = *ecn.RPPriorities
	}
	if ecn.NPPriorities != nil {
		np = *ecn.NPPriorities
	}
	if ecn.RPPriorities == nil || ecn.NPPriorities == nil || rp != np {
		return EnableNote + ": set ecn.rp_priorities and ecn.np_priorities to the same priority"
	}
	if len(rp.List()) > 1 {
		return EnableNote + fmt.Sprintf(": ECN on priorities %v needs one priority", rp.List())
	}
	return ""
}

// EnableWrite is what bnxt_re's configfs holds for the per-priority ECN
// enables of a step: on, the values that are true, all on prio (ok false
// when they name more than one priority: RefuseECN refuses that profile
// at plan time).
func EnableWrite(prios []int, values []bool) (on bool, prio int, ok bool) {
	prio = -1
	for i, v := range values {
		if !v {
			continue
		}
		if prio >= 0 && prios[i] != prio {
			return false, 0, false
		}
		on, prio = true, prios[i]
	}
	return on, prio, true
}
