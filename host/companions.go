package host

import (
	"slices"

	"github.com/rocectl/rocectl/driver"
	"github.com/rocectl/rocectl/driver/known"
	"github.com/rocectl/rocectl/driver/mlx5"
	"github.com/rocectl/rocectl/policy"
)

// Plan compares the host with d (policy.Diff) and adds the companions of
// the planned changes: settings the driver will change by itself, which
// the transaction must journal and restore; then what each driver needs
// (orderForDriver), what its DCBX mode means (planDCBX), and the buffer
// threshold recomputes an MTU change needs (planXoffRecompute, last: it
// places its changes around the MTU change itself).
func (h *Host) Plan(d *policy.Desired) *policy.Plan {
	return h.planObserved(d, h.Observe(d))
}

// planObserved is Plan once the host has been read (o), d placed: what
// BenchmarkPlanAfterObserve measures.
func (h *Host) planObserved(d *policy.Desired, o *policy.Observed) *policy.Plan {
	plan := policy.Diff(d, o)
	// The companions and the implied settings go in together, in one
	// copy of the plan: finding either reads no position in it.
	planned := plannedKeys(plan)
	added := h.companionChanges(plan, planned)
	added = append(added, h.impliedChanges(d, planned)...)
	plan.Changes = insertInOrder(plan.Changes, added)
	pl := &planning{h: h, d: d, plan: plan, at: indexChanges(plan.Changes), mlx5: map[string]mlx5Read{}}
	pl.orderForDriver()
	pl.refuseZeroBandwidthETS()
	pl.planBnxtLossless()
	pl.planDCBX()
	pl.planXoffRecompute()
	return plan
}

// planning is one Plan after Observe: the plan as it is being built, where
// each netdev's changes are in it, and what the driver planning read.
type planning struct {
	h    *Host
	d    *policy.Desired
	plan *policy.Plan
	at   changeIndex
	// mlx5 is each mlx5 netdev's buffer state as mlx5State read it:
	// the buffer checks and the xoff recomputes both need it, and on 64
	// ports reading it twice cost as much as the rest of the planning.
	// It lives as long as one Plan: a Plan after writes reads again.
	mlx5 map[string]mlx5Read
}

type mlx5Read struct {
	p  mlx5.Port
	ok bool
}

// changeIndex is where each netdev's changes are in the plan, in plan
// order (changes without a port are not indexed). The driver planning
// looks at one port's changes at a time: scanning the whole plan for each
// port made a 64-port plan (about 1,700 changes) cost ports × changes in
// every step. Positions hold while changes move only among their own
// netdev's positions (moveBuffersFirst); whatever inserts or shifts
// changes indexes the plan again.
type changeIndex map[string][]int

func indexChanges(cs []policy.Change) changeIndex {
	at := changeIndex{}
	// A port's changes mostly come together: one map access and one
	// allocation per run of them, not per change.
	for i := 0; i < len(cs); {
		if cs[i].Port == nil {
			i++
			continue
		}
		nd := cs[i].Port.Netdev
		j := i + 1
		for j < len(cs) && cs[j].Port != nil && cs[j].Port.Netdev == nd {
			j++
		}
		pos := slices.Grow(at[nd], j-i)
		for ; i < j; i++ {
			pos = append(pos, i)
		}
		at[nd] = pos
	}
	return at
}

// first is the position of netdev's first change that is, or -1.
func (pl *planning) first(netdev string, is func(policy.Change) bool) int {
	for _, i := range pl.at[netdev] {
		if is(pl.plan.Changes[i]) {
			return i
		}
	}
	return -1
}

// orderForDriver checks and orders the writes each port's driver checks
// against each other (the mlx5 buffers: buffers.go), and adds the writes
// a driver needs before a change, or refuses the change when the profile
// does not give what they need (driver.Driver.PFCNeedsETS: bnxt_en).
func (pl *planning) orderForDriver() {
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
			plan.Refused = append(plan.Refused, policy.PlanError{Key: c.Key, Want: c.Value, Port: c.Port, Error: refusal})
		}
	}
	if len(rewrites) > 0 {
		plan.Changes = insertInOrder(plan.Changes, rewrites)
		pl.at = indexChanges(plan.Changes)
	}
}

// companionChanges are the companions of the plan's changes, to put in it.
func (h *Host) companionChanges(plan *policy.Plan, planned map[string]bool) []policy.Change {
	readers := h.readers()
	var added []policy.Change
	for _, c := range plan.Changes {
		if c.Port == nil {
			continue
		}
		cps := known.For(c.Port.Driver).Companions(c)
		if len(cps) == 0 {
			continue
		}
		r := readers.of(c.Port)
		for _, cp := range cps {
			if ch, ok := companionChange(r, c.Setting, cp, "companion of ", planned); ok {
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
func (h *Host) impliedChanges(d *policy.Desired, planned map[string]bool) []policy.Change {
	readers := h.readers()
	var added []policy.Change
	for _, dp := range d.Ports {
		for _, s := range dp.Settings {
			if s.Port == nil {
				continue
			}
			r := readers.of(s.Port)
			for _, cp := range known.For(s.Port.Driver).Implied(s, r.facts()) {
				if ch, ok := companionChange(r, s, cp, "implied by ", planned); ok {
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
// plan, read through r (cause's port). There is none when the plan already
// has it (the profile manages it: journalled already), when it cannot be
// read (nothing to journal or restore; the plan reports the setting's own
// read errors if the profile asks for it), or when it already holds the
// value (the driver changes nothing). planned records what is added.
func companionChange(r *portReader, cause policy.Setting, cp driver.Companion, from string, planned map[string]bool) (policy.Change, bool) {
	s := policy.Setting{Key: cause.Scope + "." + cp.Name, Scope: cause.Scope, Name: cp.Name,
		Kind: cp.Kind, Arg: cp.Arg, Value: cp.Value, From: from + cause.Name, Port: cause.Port}
	if planned[s.Key] {
		return policy.Change{}, false
	}
	before, present, err := r.read(s, nil)
	if err != nil || (present && before == cp.Value) {
		return policy.Change{}, false
	}
	planned[s.Key] = true
	return policy.Change{Setting: s, Before: before, Absent: !present, Note: cp.Note}, true
}

// insertInOrder puts each change of add among its port's changes in cs,
// in write order (Kind.WriteOrder): a companion is written before the change that
// causes it, and so restored after that change is undone. A change goes
// into the first run of its netdev's changes (before the first of a later
// kind, else after the run), or after everything when its netdev has none,
// each as if the ones before it had been put in already; cs is copied
// once, however many are added (one copy per change made a 64-port plan
// copy its thousands of changes for each port).
func insertInOrder(cs []policy.Change, add []policy.Change) []policy.Change {
	if len(add) == 0 {
		return cs
	}
	// Each netdev's first run: where it starts and ends in cs.
	type span struct{ from, to int }
	runs := map[string]span{}
	for i := 0; i < len(cs); {
		j := i + 1
		if cs[i].Port != nil {
			nd := cs[i].Port.Netdev
			for j < len(cs) && cs[j].Port != nil && cs[j].Port.Netdev == nd {
				j++
			}
			if _, ok := runs[nd]; !ok {
				runs[nd] = span{i, j}
			}
		}
		i = j
	}
	// The runs that get changes, with them put in; netdevs without a
	// run get one of their own at the end, in the order they come.
	grown := map[string][]policy.Change{}
	var fresh []string
	for _, c := range add {
		nd := c.Port.Netdev
		run, ok := grown[nd]
		if !ok {
			if r, ok := runs[nd]; ok {
				run = slices.Clone(cs[r.from:r.to])
			} else {
				fresh = append(fresh, nd)
			}
		}
		at := slices.IndexFunc(run, func(x policy.Change) bool { return x.Kind.WriteOrder() > c.Kind.WriteOrder() })
		if at < 0 {
			at = len(run)
		}
		grown[nd] = slices.Insert(run, at, c)
	}
	// cs with the grown runs in place of theirs, copied a stretch at a
	// time.
	var replaced []span
	for nd := range grown {
		if r, ok := runs[nd]; ok {
			replaced = append(replaced, r)
		}
	}
	slices.SortFunc(replaced, func(x, y span) int { return x.from - y.from })
	out := make([]policy.Change, 0, len(cs)+len(add))
	from := 0 // cs[from:] is not in out yet
	for _, r := range replaced {
		out = append(out, cs[from:r.from]...)
		out = append(out, grown[cs[r.from].Port.Netdev]...)
		from = r.to
	}
	out = append(out, cs[from:]...)
	for _, nd := range fresh {
		out = append(out, grown[nd]...)
	}
	return out
}
