package host

import (
	"slices"

	"github.com/rocectl/rocectl/driver/known"

	"github.com/rocectl/rocectl/policy"
)

// UndoOrder is the order rollback undoes a journal's steps in: the
// reverse of the apply, a LAG step one slave at a time (the last written
// first), except that a step whose driver must undo it before steps the
// apply wrote after it (driver.Driver.UndoBefore: on bnxt a port's ETS
// before the steps that write its ieee_pfc, which bnxt reads through the
// ETS in force) moves ahead of the first of them. A journal on disk
// carries all this needs: each change's port and driver.
func UndoOrder(steps []Step) []Step {
	var out []Step
	for i := len(steps) - 1; i >= 0; i-- {
		parts := steps[i].Parts()
		for k := len(parts) - 1; k >= 0; k-- {
			out = append(out, parts[k])
		}
	}
	for e := 0; e < len(out); e++ {
		c, ok := firstChange(out[e])
		if !ok {
			continue
		}
		before := known.For(c.Port.Driver).UndoBefore(c.Kind)
		if len(before) == 0 {
			continue
		}
		first := slices.IndexFunc(out[:e], func(st Step) bool {
			o, ok := firstChange(st)
			return ok && o.Port.Netdev == c.Port.Netdev && slices.Contains(before, o.Kind)
		})
		if first < 0 {
			continue
		}
		st := out[e]
		copy(out[first+1:e+1], out[first:e])
		out[first] = st
	}
	return out
}

// firstChange is st's first change, which names the step's kind and
// port; ok is false for a step without one.
func firstChange(st Step) (policy.Change, bool) {
	if len(st.Changes) == 0 || st.Changes[0].Port == nil {
		return policy.Change{}, false
	}
	return st.Changes[0], true
}
