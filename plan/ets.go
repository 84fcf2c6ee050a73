package plan

import (
	"github.com/rocectl/rocectl/driver/known"
	"github.com/rocectl/rocectl/policy"
)

// refuseETS refuses, at plan time, an ETS the port's driver
// would not take as written (driver.Driver.RefuseETS: bnxt rejects a
// starved TC, mlx5 reads a 0 % TC back as its share), on each of the
// port's ETS changes.
func (pl *planning) refuseETS() {
	ets := pl.d.Profile.QoS.ETS
	if ets == nil {
		return
	}
	for i := range pl.plan.Changes {
		c := pl.plan.Changes[i]
		if c.Port == nil || (c.Kind != policy.KindETSTSA && c.Kind != policy.KindETSBandwidth && c.Kind != policy.KindETSPrioTC) {
			continue
		}
		if why := known.For(c.Port.Driver).RefuseETS(ets); why != "" {
			pl.refuse(c, why)
		}
	}
}
