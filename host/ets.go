package host

import (
	"strings"

	"github.com/rocectl/rocectl/policy"
)

// refuseZeroBandwidthETS refuses, at plan time, an ETS whose "ets" TCs
// include one at 0 % where the driver would not take it as written:
//
//   - bnxt_ets_validate rejects it when the ETS TCs' bandwidths sum to
//     100 ("rejecting ETS config starving a TC", -EINVAL);
//   - mlx5 shares 100 % among the 0 % TCs (mlx5e_build_tc_tx_bw) and
//     mlx5e_dcbnl_ieee_getets reports them as 0 only when a TC of the
//     other ETS group has less than 100 %: with the other ETS bandwidth
//     all on one TC, the 0 % TCs read back as their share, so read-back
//     fails after the write and the apply rolls back.
func (pl *planning) refuseZeroBandwidthETS() {
	ets := pl.d.Profile.QoS.ETS
	if ets == nil {
		return
	}
	zero, nonZero, full := false, 0, false
	for i, tsa := range ets.TCTSA {
		if tsa != "ets" {
			continue
		}
		switch bw := ets.TCBandwidth[i]; {
		case bw == 0:
			zero = true
		case bw == 100:
			full, nonZero = true, nonZero+1
		default:
			nonZero++
		}
	}
	if !zero {
		return
	}
	for i := range pl.plan.Changes {
		c := pl.plan.Changes[i]
		if c.Port == nil || (c.Kind != policy.KindETSTSA && c.Kind != policy.KindETSBandwidth && c.Kind != policy.KindETSPrioTC) {
			continue
		}
		var why string
		switch {
		case c.Port.Driver == "bnxt_en" && nonZero > 0:
			why = "bnxt_ets_validate rejects an ETS TC with 0 % bandwidth when the others sum to 100 % (\"rejecting ETS config starving a TC\"): give it a share or make it strict"
		case strings.HasPrefix(c.Port.Driver, "mlx5") && full && nonZero == 1:
			why = "mlx5 gives the 0 % ETS TCs a share of 100 % (mlx5e_build_tc_tx_bw) and reports them as 0 only when another ETS TC has less than 100 % (mlx5e_dcbnl_ieee_getets): written so, they read back as their share; give them a share or make them strict"
		default:
			continue
		}
		pl.plan.Refused = append(pl.plan.Refused, policy.PlanError{Key: c.Key, Want: c.Value, Port: c.Port, Error: why})
	}
}
