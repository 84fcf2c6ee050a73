package host

import (
	"slices"
	"strings"

	"github.com/rocectl/rocectl/nic"
	"github.com/rocectl/rocectl/policy"
)

// companion is a setting a driver changes by itself as a side effect of a
// write: the plan carries it as a change of its own, so that its
// before-value is journalled and rollback puts it back, and the operator
// sees it before applying.
type companion struct {
	kind  policy.Kind
	name  string // the setting's name, as policy names it
	arg   string // the setting's kind-specific argument, as policy.Setting.Arg
	value string // what the setting must hold (what the driver leaves it at)
	note  string // why, citing the driver function
}

// pfcCompanions: mlx5_set_port_pfc (mlx5/core/port.c) writes the PFCC
// register from a zeroed buffer with pptx_mask_n = 0, so setting PFC turns
// rx and tx global pause off; compare mlx5_set_port_stall_watermark, which
// sets the mask bits and keeps them. Rolling PFC back therefore leaves a
// host that had global pause on with no flow control at all, unless the
// pause setting is journalled and restored after PFC.
func pfcCompanions(r *portReader, _ policy.Change) []companion {
	if !strings.HasPrefix(r.driver, "mlx5") {
		return nil
	}
	return []companion{{kind: policy.KindGlobalPause, name: "qos.global_pause", value: "off",
		note: "mlx5 turns global pause off whenever it sets PFC (mlx5_set_port_pfc); journalled so that rollback restores it"}}
}

// cnpPrioCompanions: upstream mlx5's np_cnp_prio_mode (hw/mlx5/cong.c,
// MLX5_IB_DBG_CC_NP_CNP_PRIO_MODE) decides where CNPs go: in mode 1 the
// CNP priority follows the data packet's, and np_cnp_prio is ignored, so
// an np_cnp_prio that reads "in sync" would not keep CNPs off the PFC
// priority. A managed CNP priority brings mode 0 with it. DOCA-OFED's
// sysfs has no such mode.
func cnpPrioCompanions(r *portReader, c policy.Setting) []companion {
	if c.Arg != "np/cnp_802p_prio" {
		return nil
	}
	if e, err := r.ecnOf(); err != nil || e.Kind != nic.ECNUpstreamMlx5 {
		return nil
	}
	return []companion{{kind: policy.KindECNParam, name: "ecn.np.cnp_prio_mode", arg: "np/cnp_prio_mode", value: "0",
		note: "upstream mlx5 ignores np_cnp_prio in mode 1 (CNPs follow the data priority; hw/mlx5/cong.c): mode 0 makes the CNP priority the one set here"}}
}

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
	p  mlx5Port
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

// orderForDriver adds the writes a driver needs before a change, or
// refuses the change when the profile does not give what they need.
//
// bnxt_en takes PFC only after ETS has been set since the driver loaded:
// bnxt_hwrm_queue_pfc_cfg returns -EINVAL while bp->ieee_ets is NULL, and
// only bnxt_dcbnl_ieee_setets sets it (getets does not, whatever it
// reports). So a PFC change on bnxt goes with an ETS write in the same
// apply: the profile's own ETS change, or its ETS settings written again
// when they are already in sync; with no [qos.ets] the change is refused.
func (pl *planning) orderForDriver() {
	plan := pl.plan
	// The ETS rewrites go in once every port has been planned: each
	// lands among its own port's changes, which no other port's planning
	// reads, and the index holds until then.
	var rewrites []policy.Change
	for _, dp := range pl.d.Ports {
		p := dp.Port
		if strings.HasPrefix(p.Driver, "mlx5") {
			pl.planMLX5Buffers(&p, dp.Settings)
		}
		if p.Driver != "bnxt_en" {
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
				rewrites = append(rewrites, policy.Change{Setting: s, Before: s.Value,
					Note: "written again: bnxt_en takes PFC only after ETS is set (bnxt_hwrm_queue_pfc_cfg)"})
			}
		}
		if len(rewrites) == n {
			c := plan.Changes[pfc]
			plan.Refused = append(plan.Refused, policy.PlanError{Key: c.Key, Want: c.Value, Port: c.Port,
				Error: "bnxt_en takes PFC only after ETS has been set (bnxt_hwrm_queue_pfc_cfg returns EINVAL without it): add [qos.ets] to the profile"})
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
		k, err := kindOf(c.Kind)
		if err != nil || k.companions == nil || c.Port == nil {
			continue
		}
		r := readers.of(c.Port)
		for _, cp := range k.companions(r, c) {
			if ch, ok := companionChange(r, c.Setting, cp, "companion of ", planned); ok {
				added = append(added, ch)
			}
		}
	}
	return added
}

// impliedChanges are the settings that managing a setting implies on this
// driver (cnpPrioCompanions), to put in the plan whenever the profile
// manages it, changed or not: the implied setting is what makes the
// managed one mean what it says.
func (h *Host) impliedChanges(d *policy.Desired, planned map[string]bool) []policy.Change {
	readers := h.readers()
	var added []policy.Change
	for _, dp := range d.Ports {
		for _, s := range dp.Settings {
			k, err := kindOf(s.Kind)
			if err != nil || k.implied == nil || s.Port == nil {
				continue
			}
			r := readers.of(s.Port)
			for _, cp := range k.implied(r, s) {
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
func companionChange(r *portReader, cause policy.Setting, cp companion, from string, planned map[string]bool) (policy.Change, bool) {
	s := policy.Setting{Key: cause.Scope + "." + cp.name, Scope: cause.Scope, Name: cp.name,
		Kind: cp.kind, Arg: cp.arg, Value: cp.value, From: from + cause.Name, Port: cause.Port}
	if planned[s.Key] {
		return policy.Change{}, false
	}
	before, present, err := r.read(s, nil)
	if err != nil || (present && before == cp.value) {
		return policy.Change{}, false
	}
	planned[s.Key] = true
	return policy.Change{Setting: s, Before: before, Absent: !present, Note: cp.note}, true
}

// insertInOrder puts each change of add among its port's changes in cs,
// in apply order (by kind): a companion is written before the change that
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
		at := slices.IndexFunc(run, func(x policy.Change) bool { return x.Kind > c.Kind })
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
