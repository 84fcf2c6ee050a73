package apply

import (
	"github.com/rocectl/rocectl/host"
	"github.com/rocectl/rocectl/plan"
	"github.com/rocectl/rocectl/policy"
)

// planOf places d on h, reads h and plans, as Prepare does: the placed
// settings (what the transaction and a later observation compare) and
// the plan.
func planOf(h *host.Host, d *policy.Desired) (*policy.Desired, *policy.Plan) {
	d = host.Place(d)
	return d, plan.Build(d, h.Observe(d), h.ForPlan())
}
