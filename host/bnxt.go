package host

import (
	"fmt"
	"slices"

	"github.com/rocectl/rocectl/nic/dcb"
	"github.com/rocectl/rocectl/policy"
)

// bnxt_en's lossless traffic classes (bnxt_dcb.c, the simulator's model
// in nic/nictest/sim_bnxt.go). bnxt_hwrm_queue_pfc_cfg, the only place
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
//     at plan time (refuseBnxtLossless);
//   - an ETS change that moves priorities between TCs brings a PFC write of
//     the port's own priorities after it, journalled as
//     qos.pfc_lossless_remap, when the plan writes no PFC after it anyway;
//   - rollback undoes a port's ETS before its PFC writes (UndoOrder): the
//     PFC undo is read through the ETS in force, so undone first, the old
//     PFC would be read through the new ETS, counted against max_lltc (and
//     refused) or remapped onto the new TCs.

// losslessRemapNote says why, in the plan.
const losslessRemapNote = "bnxt_en moves the PFC priorities' traffic classes onto its lossless queues only when PFC is written (bnxt_hwrm_queue_pfc_cfg → bnxt_queue_remap), not when ETS is: after an ETS change alone a PFC priority on another TC could sit on a lossy queue; a PFC write of the port's own priorities (nothing else changes) remaps them, and its undo remaps them again once rollback has restored ETS"

// planBnxtLossless refuses what bnxt's ETS or PFC write would refuse or
// leave unpaused, and adds the remap an ETS change needs, on every bnxt
// port: a port of its own, or each slave of a bond (Place has put the
// bond's settings on them).
func (pl *planning) planBnxtLossless() {
	var remaps []policy.Change
	for _, dp := range pl.d.Ports {
		for _, p := range buffersReachedByMTU(dp, &dp.Port) {
			if p.Driver != "bnxt_en" {
				continue
			}
			if remap, ok := pl.planBnxtPort(dp.Settings, p.Netdev); ok {
				remaps = append(remaps, remap)
			}
		}
	}
	if len(remaps) > 0 {
		pl.plan.Changes = insertInOrder(pl.plan.Changes, remaps)
		pl.at = indexChanges(pl.plan.Changes)
	}
}

// planBnxtPort is planBnxtLossless for one bnxt netdev, whose settings are
// among ss; it returns the remap to add, if any.
func (pl *planning) planBnxtPort(ss []policy.Setting, netdev string) (policy.Change, bool) {
	plan := pl.plan
	etsAt := pl.first(netdev, func(c policy.Change) bool { return c.Kind == policy.KindETSPrioTC })
	pfcAt := pl.first(netdev, func(c policy.Change) bool { return c.Kind == policy.KindPFC })
	anyETS := pl.first(netdev, func(c policy.Change) bool {
		return c.Kind == policy.KindETSPrioTC || c.Kind == policy.KindETSTSA || c.Kind == policy.KindETSBandwidth
	})
	if anyETS < 0 && pfcAt < 0 {
		return policy.Change{}, false
	}
	st, err := pl.h.K.DCB(netdev)
	if err != nil || st.ETS == nil || st.PFC == nil || st.ETS.ETSCap == 0 {
		return policy.Change{}, false // the settings' own read errors are in the plan
	}
	refuse := func(at int, why string) {
		c := plan.Changes[at]
		plan.Refused = append(plan.Refused, policy.PlanError{Key: c.Key, Want: c.Value, Port: c.Port, Error: why})
	}
	if anyETS >= 0 {
		if why := bnxtETSProblem(ss, netdev, st.ETS.ETSCap); why != "" {
			refuse(anyETS, why)
			return policy.Change{}, false
		}
	}
	prioTC, pfcEn, ok := finalBnxtPFC(ss, netdev, st)
	if !ok {
		return policy.Change{}, false
	}
	at := pfcAt // the write the driver would refuse
	if at < 0 {
		at = etsAt
	}
	if at < 0 {
		return policy.Change{}, false // ETS bandwidths alone: nothing moves between TCs
	}
	if why := bnxtLosslessProblem(prioTC, pfcEn, st.ETS.ETSCap, st.PFC.Cap); why != "" {
		refuse(at, why)
		return policy.Change{}, false
	}
	if etsAt < 0 || pfcAt >= 0 || pfcEn == 0 {
		return policy.Change{}, false
	}
	ets := plan.Changes[etsAt]
	if ets.Before == ets.Value {
		return policy.Change{}, false
	}
	v := policy.FormatPrioBitmap(pfcEn)
	return policy.Change{Setting: policy.Setting{Key: netdev + ".qos.pfc_lossless_remap", Scope: netdev,
		Name: "qos.pfc_lossless_remap", Kind: policy.KindLosslessRemap, Value: v, From: "qos.ets.priority_to_tc", Port: ets.Port},
		Before: v, Note: losslessRemapNote}, true
}

// bnxtETSProblem says why bnxt_ets_validate would refuse the profile's ETS
// for netdev (among ss), "" when it takes it: a priority on a TC above
// bp->max_tc (ets_cap), or a TC above it that is not strict at 0 %.
func bnxtETSProblem(ss []policy.Setting, netdev string, maxTC uint8) string {
	for _, s := range ss {
		if s.Port == nil || s.Port.Netdev != netdev {
			continue
		}
		switch s.Kind {
		case policy.KindETSPrioTC:
			v, err := policy.ParseInts8(s.Value)
			if err != nil {
				return ""
			}
			for pri, tc := range v {
				if tc > int(maxTC) {
					return fmt.Sprintf("priority %d is on traffic class %d, above bnxt_en's %d (ets_cap): bnxt_ets_validate refuses it (\"priority to TC mapping exceeds TC count\", EINVAL)", pri, tc, maxTC)
				}
			}
		case policy.KindETSTSA:
			v, _ := policy.ParseStrings8(s.Value)
			for tc := int(maxTC) + 1; tc < len(v); tc++ {
				if v[tc] != policy.TSAStrict {
					return bnxtTCAboveMax(tc, maxTC)
				}
			}
		case policy.KindETSBandwidth:
			v, _ := policy.ParseInts8(s.Value)
			for tc := int(maxTC) + 1; tc < len(v); tc++ {
				if v[tc] != 0 {
					return bnxtTCAboveMax(tc, maxTC)
				}
			}
		}
	}
	return ""
}

func bnxtTCAboveMax(tc int, maxTC uint8) string {
	return fmt.Sprintf("traffic class %d is above bnxt_en's %d (ets_cap) and must stay strict at 0 %%: bnxt_ets_validate refuses it (EINVAL)", tc, maxTC)
}

// finalBnxtPFC is the priority-to-TC map and PFC priorities that netdev
// holds once the profile's settings (ss) are written over st.
func finalBnxtPFC(ss []policy.Setting, netdev string, st *dcb.State) (prioTC [dcb.NumTCs]uint8, pfcEn uint8, ok bool) {
	prioTC, pfcEn = st.ETS.PrioTC, st.PFC.Enable
	for _, s := range ss {
		if s.Port == nil || s.Port.Netdev != netdev {
			continue
		}
		switch s.Kind {
		case policy.KindETSPrioTC:
			v, err := policy.ParseInts8(s.Value)
			if err != nil {
				return prioTC, pfcEn, false
			}
			for i := range v {
				prioTC[i] = uint8(v[i])
			}
		case policy.KindPFC:
			b, err := policy.ParsePrioBitmap(s.Value)
			if err != nil {
				return prioTC, pfcEn, false
			}
			pfcEn = b
		}
	}
	return prioTC, pfcEn, true
}

// bnxtLosslessProblem says why bnxt_hwrm_queue_pfc_cfg would refuse pfcEn
// over prioTC, or leave one of its priorities unpaused; "" when it takes
// them. maxTC and maxLLTC are what the driver reports as ets_cap and
// pfc_cap (bp->max_tc, bp->max_lltc).
func bnxtLosslessProblem(prioTC [dcb.NumTCs]uint8, pfcEn, maxTC, maxLLTC uint8) string {
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

// UndoOrder is the order rollback undoes a journal's steps in: the
// reverse of the apply, a LAG step one slave at a time (the last written
// first), except that on bnxt a port's ETS is undone before the steps
// that write its ieee_pfc (PFC, the lossless remap), which bnxt reads
// through the ETS in force (see above). A journal on disk carries all
// this needs: each change's port and driver.
func UndoOrder(steps []Step) []Step {
	var out []Step
	for i := len(steps) - 1; i >= 0; i-- {
		parts := steps[i].Parts()
		for k := len(parts) - 1; k >= 0; k-- {
			out = append(out, parts[k])
		}
	}
	for e := 0; e < len(out); e++ {
		nd, ok := bnxtStep(out[e], objETS)
		if !ok {
			continue
		}
		first := slices.IndexFunc(out[:e], func(st Step) bool {
			n, pfc := bnxtStep(st, objPFC)
			if !pfc {
				n, pfc = bnxtStep(st, objLosslessRemap)
			}
			return pfc && n == nd
		})
		if first < 0 {
			continue
		}
		ets := out[e]
		copy(out[first+1:e+1], out[first:e])
		out[first] = ets
	}
	return out
}

// bnxtStep says whether st writes obj on a bnxt port, and which.
func bnxtStep(st Step, obj *object) (string, bool) {
	if len(st.Changes) == 0 {
		return "", false
	}
	c := st.Changes[0]
	k, err := kindOf(c.Kind)
	if err != nil || k.obj != obj || c.Port == nil || c.Port.Driver != "bnxt_en" {
		return "", false
	}
	return c.Port.Netdev, true
}
