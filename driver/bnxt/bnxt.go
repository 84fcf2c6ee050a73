package bnxt

import (
	"fmt"
	"slices"
	"strings"

	"github.com/rocectl/rocectl/driver"
	"github.com/rocectl/rocectl/nic/dcb"
	"github.com/rocectl/rocectl/policy"
)

// Driver is bnxt_en (drivers/net/ethernet/broadcom/bnxt/bnxt_dcb.c).
type Driver struct{ driver.Base }

func (Driver) Name() string { return "bnxt" }

// Caps: bnxt_en keeps PFC priorities lossless only on the traffic classes
// it has moved onto its lossless queues (LosslessProblem, RemapNote);
// bnxt_re's configfs takes congestion-control writes only on apply
// (cc.go).
func (Driver) Caps() driver.Caps { return driver.Caps{LosslessQueues: true, CCCommit: true} }

// RefuseETS: bnxt_ets_validate rejects an ETS TC at 0 % when the ETS
// TCs' bandwidths sum to 100 ("rejecting ETS config starving a TC",
// -EINVAL).
func (Driver) RefuseETS(ets *policy.ETS) string {
	if zero, nonZero, _ := driver.ZeroBandwidth(ets); zero && nonZero > 0 {
		return "bnxt_ets_validate rejects an ETS TC with 0 % bandwidth when the others sum to 100 % (\"rejecting ETS config starving a TC\"): give it a share or make it strict"
	}
	return ""
}

// PFCNeedsETS: bnxt_en takes PFC only after ETS has been set since the
// driver loaded: bnxt_hwrm_queue_pfc_cfg returns -EINVAL while
// bp->ieee_ets is NULL, and only bnxt_dcbnl_ieee_setets sets it (getets
// does not, whatever it reports). So a PFC change goes with an ETS write
// in the same apply: the profile's own ETS change, or its ETS settings
// written again when they are already in sync; with no [qos.ets] the
// change is refused.
func (Driver) PFCNeedsETS() (rewriteNote, refusal string) {
	return "written again: bnxt_en takes PFC only after ETS is set (bnxt_hwrm_queue_pfc_cfg)",
		"bnxt_en takes PFC only after ETS has been set (bnxt_hwrm_queue_pfc_cfg returns EINVAL without it): add [qos.ets] to the profile"
}

// DeleteAppFirst: bnxt's APP delete is keyed by the DSCP alone in
// hardware (bnxt_dcbnl_ieee_delapp → bnxt_hwrm_queue_dscp2pri_cfg with
// mask 0), so deleting the old entry after adding the new one would wipe
// the mapping just installed while dcbnl's table still showed it.
func (Driver) DeleteAppFirst() bool { return true }

// UndoBefore: rollback undoes a port's ETS before the steps that write
// its ieee_pfc (PFC and cable length, the lossless remap), which bnxt
// reads through the ETS in force: undone first, the old PFC would be
// read through the new ETS, counted against max_lltc (and refused) or
// remapped onto the new TCs.
func (Driver) UndoBefore(k policy.Kind) []policy.Kind {
	switch k {
	case policy.KindETSPrioTC, policy.KindETSTSA, policy.KindETSBandwidth:
		return []policy.Kind{policy.KindPFC, policy.KindCableLength, policy.KindLosslessRemap}
	}
	return nil
}

// DCBXMode: a host mode is IEEE only (bnxt_dcbnl_setdcbx refuses CEE);
// any other mode, 0 included, simply becomes dcbx_cap, so "firmware"
// clears HOST from the mode the port reports, and a rollback restores
// dcbx_cap byte for byte.
func (Driver) DCBXMode(host bool, reported func() uint8) uint8 {
	if host {
		return dcb.DCBXHost | dcb.DCBXVerIEEE
	}
	return reported() &^ dcb.DCBXHost
}

// FirmwareDCBXNote is what "firmware" DCBX is on bnxt_en.
const FirmwareDCBXNote = "bnxt_en's 'firmware' DCBX only clears the host flag in dcbx_cap (bnxt_dcbnl_setdcbx); no firmware agent takes over"

// LLDManagedRefusal is why a DCBX change on a bnxt port whose firmware
// agent manages DCBX cannot be made.
const LLDManagedRefusal = "bnxt_dcbnl_setdcbx refuses any change while the firmware agent manages DCBX (dcbx_cap has LLD_MANAGED; the agent's settings live in the NIC's NVRAM)"

// PlanDCBX: bnxt_dcbnl_setdcbx only stores the mode in dcbx_cap; clearing
// HOST hands nothing to a firmware agent, it only makes the IEEE set ops
// refuse. A port whose firmware does run the DCBX agent reports
// LLD_MANAGED, and then setdcbx refuses every change ("All firmware DCBX
// settings are set in NVRAM").
func (Driver) PlanDCBX(want string, changed bool, reported func() (uint8, bool)) driver.DCBXPlan {
	if !changed && want != "firmware" {
		return driver.DCBXPlan{}
	}
	mode, ok := reported()
	if !ok {
		return driver.DCBXPlan{} // the plan reports the setting's own read error
	}
	switch {
	case mode&dcb.DCBXLLDManaged != 0 && changed:
		return driver.DCBXPlan{Refuse: LLDManagedRefusal}
	case mode&dcb.DCBXLLDManaged != 0, want != "firmware":
		return driver.DCBXPlan{} // in sync: here a firmware agent does manage DCBX
	case changed:
		return driver.DCBXPlan{Note: FirmwareDCBXNote}
	}
	return driver.DCBXPlan{Warning: FirmwareDCBXNote}
}

// HiddenNote is the note on an ETS or PFC value bnxt hides.
const HiddenNote = "bnxt reports this placeholder in host DCBX mode until ETS is set through dcbnl (bnxt_dcbnl_ieee_getets/getpfc): the firmware's own ETS and PFC are not readable, and a rollback writes the placeholder (every priority on TC 0, strict, PFC off), not them"

// HiddenDCB says whether st is what bnxt reports in host DCBX mode before
// anything set ETS since the driver loaded: bnxt_dcbnl_ieee_getets
// returns at once when bp->ieee_ets is NULL and dcbx_cap has HOST,
// leaving dcbnl's zeroed struct (every priority on TC 0, strict, no
// bandwidth) with ets_cap only; bnxt_dcbnl_ieee_getpfc does the same for
// PFC, which cannot have been set without ETS (bnxt_hwrm_queue_pfc_cfg
// needs bp->ieee_ets). What the firmware does is not readable then: the
// note (HiddenNote) says so.
func (Driver) HiddenDCB(st *dcb.State) string {
	if st.DCBX == nil || *st.DCBX&dcb.DCBXHost == 0 || st.ETS == nil {
		return ""
	}
	e := st.ETS
	if e.PrioTC == [dcb.NumTCs]uint8{} && e.TCTSA == [dcb.NumTCs]uint8{} && e.TCTxBW == [dcb.NumTCs]uint8{} {
		return HiddenNote
	}
	return ""
}

// Disruptions of a write on a bnxt port.
func (Driver) Disruptions(c *policy.Change) []string {
	var out []string
	switch {
	case c.Kind == policy.KindETSPrioTC:
		out = append(out, "channel reset when the number of TCs changes: bnxt_dcbnl_ieee_setets closes and reopens the NIC (bnxt_setup_mq_tc)")
	case strings.Contains(c.Note, HiddenNote):
		out = append(out, "irreversible: bnxt's firmware ETS and PFC are not readable in host DCBX mode; a rollback writes bnxt's placeholder, not them")
	}
	if c.Kind == policy.KindPFC || c.Kind == policy.KindLosslessRemap {
		out = append(out, "channel reset when a PFC priority's TC is not on a lossless queue yet: bnxt_hwrm_queue_pfc_cfg closes and reopens the NIC to remap the queues (bnxt_queue_remap; older kernels stop TX while they reprogram the queues)")
	}
	return out
}

// FirmwareLLDP: a DCBX mode with LLD_MANAGED says the firmware runs DCBX,
// whose LLDP agent may take the switch's frames.
func (Driver) FirmwareLLDP(f driver.LLDPFacts) string {
	return driver.LLDManagedLLDP("bnxt_en", f)
}

// bnxt_en's lossless traffic classes (bnxt_dcb.c, the simulator's model
// in nic/nictest/bnxtsim). bnxt_hwrm_queue_pfc_cfg, the only place
// the driver programs the firmware's PFC, reads pfc_en through the ETS it
// holds:
//
//   - the PFC priorities may sit on at most bp->max_lltc traffic classes
//     (reported as pfc_cap), or the write is -EINVAL;
//   - a priority on a TC that is not below bp->max_tc (ets_cap) is left
//     unpaused, though getpfc reports it enabled (the request is kept
//     whole);
//   - the PFC priorities' TCs are moved onto the lossless queues
//     (bnxt_queue_remap) then, and only then: an ETS write does not.
//
// So on bnxt:
//
//   - a profile whose PFC priorities would exceed either limit is refused
//     at plan time (ETSProblem, LosslessProblem);
//   - an ETS change that moves priorities between TCs brings a PFC write
//     of the port's own priorities after it, journalled as
//     qos.pfc_lossless_remap, when the plan writes no PFC after it anyway
//     (RemapNote);
//   - rollback undoes a port's ETS before its PFC writes (UndoBefore).

// RemapNote says why, in the plan.
const RemapNote = "bnxt_en moves the PFC priorities' traffic classes onto its lossless queues only when PFC is written (bnxt_hwrm_queue_pfc_cfg → bnxt_queue_remap), not when ETS is: after an ETS change alone a PFC priority on another TC could sit on a lossy queue; a PFC write of the port's own priorities (nothing else changes) remaps them, and its undo remaps them again once rollback has restored ETS"

// ETS is the ETS a profile asks of a port; a nil field is not managed.
type ETS struct {
	PrioTC *[8]int
	TSA    *[8]string
	BW     *[8]int
}

// ETSProblem says why bnxt_ets_validate would refuse ets, "" when it
// takes it: a priority on a TC above bp->max_tc (ets_cap), or a TC above
// it that is not strict at 0 %.
func ETSProblem(ets ETS, maxTC uint8) string {
	if ets.PrioTC != nil {
		for pri, tc := range ets.PrioTC {
			if tc > int(maxTC) {
				return fmt.Sprintf("priority %d is on traffic class %d, above bnxt_en's %d (ets_cap): bnxt_ets_validate refuses it (\"priority to TC mapping exceeds TC count\", EINVAL)", pri, tc, maxTC)
			}
		}
	}
	if ets.TSA != nil {
		for tc := int(maxTC) + 1; tc < len(ets.TSA); tc++ {
			if ets.TSA[tc] != policy.TSAStrict {
				return tcAboveMax(tc, maxTC)
			}
		}
	}
	if ets.BW != nil {
		for tc := int(maxTC) + 1; tc < len(ets.BW); tc++ {
			if ets.BW[tc] != 0 {
				return tcAboveMax(tc, maxTC)
			}
		}
	}
	return ""
}

func tcAboveMax(tc int, maxTC uint8) string {
	return fmt.Sprintf("traffic class %d is above bnxt_en's %d (ets_cap) and must stay strict at 0 %%: bnxt_ets_validate refuses it (EINVAL)", tc, maxTC)
}

// LosslessProblem says why bnxt_hwrm_queue_pfc_cfg would refuse pfcEn
// over prioTC, or leave one of its priorities unpaused; "" when it takes
// them. maxTC and maxLLTC are what the driver reports as ets_cap and
// pfc_cap (bp->max_tc, bp->max_lltc).
func LosslessProblem(prioTC [dcb.NumTCs]uint8, pfcEn, maxTC, maxLLTC uint8) string {
	var tcs []int
	for pri := range dcb.NumTCs {
		if pfcEn&(1<<pri) == 0 {
			continue
		}
		tc := prioTC[pri]
		if tc >= maxTC {
			return fmt.Sprintf("PFC priority %d is on traffic class %d, and bnxt_en pauses only the priorities of its first %d traffic classes (ets_cap): it would report PFC on for priority %d while its firmware leaves it off (bnxt_hwrm_queue_pfc_cfg); put it on a lower class in qos.ets.priority_to_tc", pri, tc, maxTC, pri)
		}
		if !slices.Contains(tcs, int(tc)) {
			tcs = append(tcs, int(tc))
		}
	}
	if len(tcs) > int(maxLLTC) {
		slices.Sort(tcs)
		return fmt.Sprintf("the PFC priorities %s are on %d traffic classes %v, and bnxt_en has %d lossless queue(s) (pfc_cap, bp->max_lltc): bnxt_hwrm_queue_pfc_cfg would refuse the PFC write (EINVAL); put the PFC priorities on at most %d class(es) in qos.ets.priority_to_tc",
			policy.FormatPrioBitmap(pfcEn), len(tcs), tcs, maxLLTC, maxLLTC)
	}
	return ""
}
