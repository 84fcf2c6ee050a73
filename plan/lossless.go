package plan

import (
	"github.com/rocectl/rocectl/driver/bnxt"
	"github.com/rocectl/rocectl/driver/known"
	"github.com/rocectl/rocectl/nic/dcb"
	"github.com/rocectl/rocectl/policy"
)

// The lossless queues of a driver like bnxt_en (driver/bnxt says why):
// the planner refuses what its ETS or PFC write would refuse or leave
// unpaused, adds the remap an ETS change needs, and rollback undoes a
// port's ETS before its PFC writes (UndoOrder).

// losslessQueues refuses what bnxt's ETS or PFC write would refuse or
// leave unpaused, and adds the remap an ETS change needs, on every bnxt
// port: a port of its own, or each slave of a bond (Place has put the
// bond's settings on them).
func (pl *planning) losslessQueues() {
	var remaps []policy.Change
	for _, dp := range pl.d.Ports {
		for _, p := range buffersReachedByMTU(dp, &dp.Port) {
			if !known.For(p.Driver).Caps().LosslessQueues {
				continue
			}
			if remap, ok := pl.planBnxtPort(dp.Settings, p.Netdev); ok {
				remaps = append(remaps, remap)
			}
		}
	}
	pl.insert(remaps)
}

// planBnxtPort is losslessQueues for one bnxt netdev, whose settings are
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
	st, _, err := pl.h.DCB(netdev)
	if err != nil || st.ETS == nil || st.PFC == nil || st.ETS.ETSCap == 0 {
		return policy.Change{}, false // the settings' own read errors are in the plan
	}
	refuse := func(at int, why string) {
		c := plan.Changes[at]
		pl.refuse(c, why)
	}
	if anyETS >= 0 {
		ets, err := profileETS(ss, netdev)
		if err != nil {
			pl.undecodable(plan.Changes[anyETS], err)
			return policy.Change{}, false
		}
		if why := bnxt.ETSProblem(ets, st.ETS.ETSCap); why != "" {
			refuse(anyETS, why)
			return policy.Change{}, false
		}
	}
	prioTC, pfcEn, err := finalBnxtPFC(ss, netdev, st)
	if err != nil {
		at := max(pfcAt, anyETS)
		pl.undecodable(plan.Changes[at], err)
		return policy.Change{}, false
	}
	at := pfcAt // the write the driver would refuse
	if at < 0 {
		at = etsAt
	}
	if at < 0 {
		return policy.Change{}, false // ETS bandwidths alone: nothing moves between TCs
	}
	if why := bnxt.LosslessProblem(prioTC, pfcEn, st.ETS.ETSCap, st.PFC.Cap); why != "" {
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
		Before: v, Note: bnxt.RemapNote}, true
}

// profileETS is the ETS the profile's settings (ss) ask of netdev.
func profileETS(ss []policy.Setting, netdev string) (bnxt.ETS, error) {
	var ets bnxt.ETS
	for _, s := range ss {
		if s.Port == nil || s.Port.Netdev != netdev {
			continue
		}
		switch s.Kind {
		case policy.KindETSPrioTC, policy.KindETSBandwidth:
			v, err := policy.Ints8Codec.Parse(s.Value)
			if err != nil {
				return ets, err
			}
			if s.Kind == policy.KindETSPrioTC {
				ets.PrioTC = &v
			} else {
				ets.BW = &v
			}
		case policy.KindETSTSA:
			v, err := policy.Strings8Codec.Parse(s.Value)
			if err != nil {
				return ets, err
			}
			ets.TSA = &v
		}
	}
	return ets, nil
}

// finalBnxtPFC is the priority-to-TC map and PFC priorities that netdev
// holds once the profile's settings (ss) are written over st.
func finalBnxtPFC(ss []policy.Setting, netdev string, st *dcb.State) (prioTC [dcb.NumTCs]uint8, pfcEn uint8, err error) {
	prioTC, pfcEn = st.ETS.PrioTC, st.PFC.Enable
	for _, s := range ss {
		if s.Port == nil || s.Port.Netdev != netdev {
			continue
		}
		switch s.Kind {
		case policy.KindETSPrioTC:
			v, err := policy.Ints8Codec.Parse(s.Value)
			if err != nil {
				return prioTC, pfcEn, err
			}
			for i := range v {
				prioTC[i] = uint8(v[i])
			}
		case policy.KindPFC:
			b, err := policy.PrioCodec.Parse(s.Value)
			if err != nil {
				return prioTC, pfcEn, err
			}
			pfcEn = b
		}
	}
	return prioTC, pfcEn, nil
}
