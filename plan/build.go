package plan

import (
	"github.com/rocectl/rocectl/driver"
	"github.com/rocectl/rocectl/driver/known"
	"github.com/rocectl/rocectl/driver/mlx5"
	"github.com/rocectl/rocectl/policy"
)

// Build is the plan that takes a host from o (what h observed of d's
// settings) to d. d must be placed (host.Place: a bond's settings on its
// slaves). The passes, in order:
//
//  1. diff: policy.Diff, every setting whose value differs;
//  2. companions: what the drivers change by themselves when those are
//     written, and what managed settings imply (driver.Driver.Companions,
//     Implied), journalled so that rollback restores them;
//  3. driverOrder: the mlx5 buffer checks and write order, and the ETS
//     write bnxt needs before PFC;
//  4. refuseETS, refuseECN: ETS values and ECN priorities a driver would
//     not take as written; refusePauseUnderPFC, limitDCB: link flow
//     control under PFC, and the TC and PFC-class limits (ice);
//  5. losslessQueues: bnxt's lossless-queue limits and remap;
//  6. dcbx: what each port's DCBX mode means on its driver;
//  7. recomputes: the buffer-threshold recomputes an MTU change or a PFC
//     link toggle needs on mlx5 (last: they go around changes already
//     placed).
//
// What the plan disturbs is Disruptions(plan), asked separately.
func Build(d *policy.Desired, o *policy.Observed, h Host) *policy.Plan {
	pl := &planning{h: h, d: d, plan: policy.Diff(d, o), mlx5: map[string]mlx5Read{}, mtuAfterBuffers: map[string]bool{}, mtuLast: map[string]bool{}, bondMTUAfter: map[string]bool{}}
	pl.at = indexChanges(pl.plan.Changes)
	pl.addCompanions()
	pl.driverOrder()
	pl.refuseETS()
	pl.refuseECN()
	pl.refusePauseUnderPFC()
	pl.limitDCB()
	pl.losslessQueues()
	pl.dcbx()
	pl.ccMode()
	pl.recomputes()
	return pl.plan
}

// addCompanions puts the companions and the implied settings in the plan
// together, in one copy of it: finding either reads no position in it.
func (pl *planning) addCompanions() {
	planned := plannedKeys(pl.plan)
	added := pl.companionChanges(planned)
	added = append(added, pl.impliedChanges(planned)...)
	pl.insert(added)
}

// planning is one plan being built: the plan, where each netdev's
// changes are in it, and what the driver passes read.
type planning struct {
	h    Host
	d    *policy.Desired
	plan *policy.Plan
	at   changeIndex
	// mlx5 is each mlx5 netdev's buffer state as mlx5State read it:
	// the buffer checks and the xoff recomputes both need it, and on 64
	// ports reading it twice cost as much as the rest of the planning.
	// It lives as long as one Plan: a Plan after writes reads again.
	mlx5 map[string]mlx5Read
	// mtuAfterBuffers marks the netdevs whose buffer path writes the MTU
	// after its first buffer step (placePath): mtuFirst leaves it there.
	mtuAfterBuffers map[string]bool
	// mtuLast marks the netdevs whose buffer path writes their MTU
	// after every PFC and buffer write (mlx5.MTULast): their PFC
	// recomputes are for the MTU of before, and their MTU change has
	// a recompute of its own after it.
	mtuLast map[string]bool
	// bondMTUAfter marks the bonds whose MTU change every slave's path
	// writes after its first buffer write (planMLX5Buffers).
	bondMTUAfter map[string]bool
}

type mlx5Read struct {
	p  mlx5.Port
	ok bool
	// why is what kept the state from being read, "" when it was, or
	// when the driver has no buffers to check (nothing to say).
	why string
}

// driverOrder checks and orders the writes each port's driver checks
// against each other (the mlx5 buffers: mlx5buffers.go), and adds the writes
// a driver needs before a change, or refuses the change when the profile
// does not give what they need (driver.Driver.PFCNeedsETS: bnxt_en).
func (pl *planning) driverOrder() {
	plan := pl.plan
	// The ETS rewrites go in once every port has been planned: each
	// lands among its own port's changes, which no other port's planning
	// reads, and the index holds until then.
	var rewrites []policy.Change
	for _, dp := range pl.d.Ports {
		p := dp.Port
		drv := known.For(p.Driver)
		if drv.Caps().BufferChecks {
			pl.planMLX5Buffers(&p, dp.Settings)
		}
		note, refusal := drv.PFCNeedsETS()
		if note == "" {
			continue
		}
		pfc, ets := -1, false
		for _, i := range pl.at[p.Netdev] {
			switch plan.Changes[i].Kind {
			case policy.KindPFC:
				pfc = i
			case policy.KindETSPrioTC, policy.KindETSTSA, policy.KindETSBandwidth:
				ets = true
			}
		}
		if pfc < 0 || ets {
			continue
		}
		n := len(rewrites)
		for _, s := range dp.Settings {
			switch s.Kind {
			case policy.KindETSPrioTC, policy.KindETSTSA, policy.KindETSBandwidth:
				rewrites = append(rewrites, policy.Change{Setting: s, Before: s.Value, Note: note})
			}
		}
		if len(rewrites) == n {
			c := plan.Changes[pfc]
			pl.refuse(c, refusal)
		}
	}
	pl.insert(rewrites)
}

// companionChanges are the companions of the plan's changes, to put in it.
func (pl *planning) companionChanges(planned map[string]bool) []policy.Change {
	var added []policy.Change
	for _, c := range pl.plan.Changes {
		if c.Port == nil {
			continue
		}
		cps := known.For(c.Port.Driver).Companions(c)
		if len(cps) == 0 {
			continue
		}
		for _, cp := range cps {
			if ch, ok := pl.companionChange(c.Setting, cp, "companion of ", planned); ok {
				added = append(added, ch)
			}
		}
	}
	return added
}

// impliedChanges are the settings that managing a setting implies on this
// driver (driver.Driver.Implied), to put in the plan whenever the profile
// manages it, changed or not: the implied setting is what makes the
// managed one mean what it says.
func (pl *planning) impliedChanges(planned map[string]bool) []policy.Change {
	var added []policy.Change
	for _, dp := range pl.d.Ports {
		for _, s := range dp.Settings {
			if s.Port == nil {
				continue
			}
			for _, cp := range known.For(s.Port.Driver).Implied(s, pl.h.Facts(s.Port)) {
				if ch, ok := pl.companionChange(s, cp, "implied by ", planned); ok {
					added = append(added, ch)
				}
			}
		}
	}
	return added
}

// plannedKeys is the set of the plan's keys, which companionChange keeps
// up to date as it adds changes.
func plannedKeys(plan *policy.Plan) map[string]bool {
	planned := make(map[string]bool, len(plan.Changes))
	for _, c := range plan.Changes {
		planned[c.Key] = true
	}
	return planned
}

// companionChange is cp, which cause brings with it, as a change of the
// plan, read on cause's port. There is none when the plan already
// has it (the profile manages it: journalled already), when it cannot be
// read (nothing to journal or restore; the plan reports the setting's own
// read errors if the profile asks for it), or when it already holds the
// value (the driver changes nothing). planned records what is added.
func (pl *planning) companionChange(cause policy.Setting, cp driver.Companion, from string, planned map[string]bool) (policy.Change, bool) {
	s := policy.Setting{Key: cause.Scope + "." + cp.Name, Scope: cause.Scope, Name: cp.Name,
		Kind: cp.Kind, Arg: cp.Arg, Value: cp.Value, From: from + cause.Name, Port: cause.Port}
	if planned[s.Key] {
		return policy.Change{}, false
	}
	before, present, err := pl.h.Read(s)
	if err != nil || (present && before == cp.Value) {
		return policy.Change{}, false
	}
	planned[s.Key] = true
	return policy.Change{Setting: s, Before: before, Absent: !present, Note: cp.Note}, true
}
