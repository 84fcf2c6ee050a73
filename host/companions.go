package host

import (
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
	h.addCompanions(plan)
	h.addImplied(d, plan)
	h.orderForDriver(d, plan)
	h.planDCBX(d, plan)
	h.planXoffRecompute(d, plan)
	return plan
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
func (h *Host) orderForDriver(d *policy.Desired, plan *policy.Plan) {
	for _, dp := range d.Ports {
		p := dp.Port
		if strings.HasPrefix(p.Driver, "mlx5") {
			h.planMLX5Buffers(plan, &p, dp.Settings)
		}
		if p.Driver != "bnxt_en" {
			continue
		}
		pfc, ets := -1, false
		for i, c := range plan.Changes {
			if c.Port == nil || c.Port.Netdev != p.Netdev {
				continue
			}
			switch c.Kind {
			case policy.KindPFC:
				pfc = i
			case policy.KindETSPrioTC, policy.KindETSTSA, policy.KindETSBandwidth:
				ets = true
			}
		}
		if pfc < 0 || ets {
			continue
		}
		var rewrite []policy.Change
		for _, s := range dp.Settings {
			switch s.Kind {
			case policy.KindETSPrioTC, policy.KindETSTSA, policy.KindETSBandwidth:
				rewrite = append(rewrite, policy.Change{Setting: s, Before: s.Value,
					Note: "written again: bnxt_en takes PFC only after ETS is set (bnxt_hwrm_queue_pfc_cfg)"})
			}
		}
		if len(rewrite) == 0 {
			c := plan.Changes[pfc]
			plan.Refused = append(plan.Refused, policy.PlanError{Key: c.Key, Want: c.Value, Port: c.Port,
				Error: "bnxt_en takes PFC only after ETS has been set (bnxt_hwrm_queue_pfc_cfg returns EINVAL without it): add [qos.ets] to the profile"})
			continue
		}
		for _, c := range rewrite {
			plan.Changes = insertInOrder(plan.Changes, c)
		}
	}
}

func (h *Host) addCompanions(plan *policy.Plan) {
	planned := plannedKeys(plan)
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
	for _, c := range added {
		plan.Changes = insertInOrder(plan.Changes, c)
	}
}

// addImplied adds the settings that managing a setting implies on this
// driver (cnpPrioCompanions), whenever the profile manages it, changed or
// not: the implied setting is what makes the managed one mean what it says.
func (h *Host) addImplied(d *policy.Desired, plan *policy.Plan) {
	planned := plannedKeys(plan)
	readers := h.readers()
	for _, dp := range d.Ports {
		for _, s := range dp.Settings {
			k, err := kindOf(s.Kind)
			if err != nil || k.implied == nil || s.Port == nil {
				continue
			}
			r := readers.of(s.Port)
			for _, cp := range k.implied(r, s) {
				if ch, ok := companionChange(r, s, cp, "implied by ", planned); ok {
					plan.Changes = insertInOrder(plan.Changes, ch)
				}
			}
		}
	}
}

func plannedKeys(plan *policy.Plan) map[string]bool {
	planned := map[string]bool{}
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

// insertInOrder puts c among its port's changes in apply order (by kind):
// the companion is written before the change that causes it, and so
// restored after that change is undone.
func insertInOrder(cs []policy.Change, c policy.Change) []policy.Change {
	at, seen := len(cs), false
	for i, x := range cs {
		if x.Port == nil || x.Port.Netdev != c.Port.Netdev {
			if seen {
				at = i
				break
			}
			continue
		}
		seen = true
		if x.Kind > c.Kind {
			at = i
			break
		}
	}
	return append(cs[:at], append([]policy.Change{c}, cs[at:]...)...)
}
