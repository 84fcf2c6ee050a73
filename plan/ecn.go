package plan

import (
	"github.com/rocectl/rocectl/driver/known"
	"github.com/rocectl/rocectl/policy"
)

// refuseECN refuses, at plan time, ECN priorities the port's driver
// cannot hold as written (driver.Driver.RefuseECN: bnxt_re has one
// port-wide enable and one RoCE priority), on each of the port's ECN
// enable changes, so that nothing of such a profile is written.
func (pl *planning) refuseECN() {
	ecn := &pl.d.Profile.ECN
	for i := range pl.plan.Changes {
		c := pl.plan.Changes[i]
		if c.Port == nil || c.Kind != policy.KindECNEnable {
			continue
		}
		if why := known.For(c.Port.Driver).RefuseECN(ecn); why != "" {
			pl.refuse(c, why)
		}
	}
}
