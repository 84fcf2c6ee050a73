package plan_test

import (
	"github.com/rocectl/rocectl/host"
	"github.com/rocectl/rocectl/plan"
	"github.com/rocectl/rocectl/policy"
)

// buildPlan places d on h, reads h and plans, as apply.Prepare does.
func buildPlan(h *host.Host, d *policy.Desired) *policy.Plan {
	d = host.Place(d)
	return plan.Build(d, h.Observe(d), h.ForPlan())
}
