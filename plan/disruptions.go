package plan

import (
	"strings"

	"github.com/rocectl/rocectl/driver/known"
	"github.com/rocectl/rocectl/policy"
)

// Disruptions says, per port, what applying the plan will disturb: link
// toggles, channel resets, changes that cannot be undone.
func Disruptions(plan *policy.Plan) map[string][]string {
	out := map[string][]string{}
	type said struct{ netdev, what string }
	seen := map[said]bool{}
	add := func(nd, what string) {
		if !seen[said{nd, what}] {
			seen[said{nd, what}] = true
			out[nd] = append(out[nd], what)
		}
	}
	for i := range plan.Changes {
		c := &plan.Changes[i]
		if c.Port == nil {
			continue
		}
		nd := c.Port.Netdev
		switch {
		case c.Kind == policy.KindMTU && len(c.Port.Slaves()) > 0:
			// A bond has no queues: it sets the MTU of every slave
			// (bond_change_mtu), and their queues are re-created.
			for _, m := range c.Port.Slaves() {
				add(m.Netdev, "channel reset: an MTU change re-creates the NIC's queues (set through "+nd+")")
			}
		case c.Kind == policy.KindMTU:
			add(nd, "channel reset: an MTU change re-creates the NIC's queues")
		default:
			ds := known.For(c.Port.Driver).Disruptions(c)
			for _, d := range ds {
				add(nd, d)
			}
			if len(ds) == 0 && strings.Contains(c.Note, "devlink dev reload") {
				add(nd, "needs a devlink reload to take effect")
			}
		}
	}
	return out
}
