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

// planBnxtLossless refuses what bnxt's PFC write would refuse or leave
// unpaused, and adds the remap an ETS change needs, on every bnxt port.
func (pl *planning) planBnxtLossless() {
	var remaps []policy.Change
	for _, dp := range pl.d.Ports {
		p := dp.Port
		if p.Driver != "bnxt_en" {
			continue
		}
		etsAt := pl.first(p.Netdev, func(c policy.Change) bool { return c.Kind == policy.KindETSPrioTC })
		pfcAt := pl.first(p.Netdev, func(c policy.Change) bool { return c.Kind == policy.KindPFC })
		if etsAt < 0 && pfcAt < 0 {
			continue
		}
		st, err := pl.h.K.DCB(p.Netdev)
		if err != nil || st.ETS == nil || st.PFC == nil || st.ETS.ETSCap == 0 {
			continue // the settings' own read errors are in the plan
		}
		prioTC, pfcEn, ok := finalBnxtPFC(dp.Settings, p.Netdev, st)
		if !ok {
			continue
		}
		at := pfcAt // the write the driver would refuse
		if at < 0 {
			at = etsAt
		}
		if why := bnxtLosslessProblem(prioTC, pfcEn, st.ETS.ETSCap, st.PFC.Cap); why != "" {
			c := pl.plan.Changes[at]
			pl.plan.Refused = append(pl.plan.Refused, policy.PlanError{Key: c.Key, Want: c.Value, Port: c.Port, Error: why})
			continue
		}
		if etsAt < 0 || pfcAt >= 0 || pfcEn == 0 {
			continue
		}
		if ets := pl.plan.Changes[etsAt]; ets.Before != ets.Value {
			v := policy.FormatPrioBitmap(pfcEn)
			remaps = append(remaps, policy.Change{Setting: policy.Setting{Key: p.Netdev + ".qos.pfc_lossless_remap", Scope: p.Netdev,
				Name: "qos.pfc_lossless_remap", Kind: policy.KindLosslessRemap, Value: v, From: "qos.ets.priority_to_tc", Port: ets.Port},
				Before: v, Note: losslessRemapNote})
		}
	}
	if len(remaps) > 0 {
		pl.plan.Changes = insertInOrder(pl.plan.Changes, remaps)
		pl.at = indexChanges(pl.plan.Changes)
	}
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
