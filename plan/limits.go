package plan

import (
	"github.com/rocectl/rocectl/driver/known"
	"github.com/rocectl/rocectl/policy"
)

// refusePauseUnderPFC refuses a global pause change on a port whose
// driver refuses link flow control writes while PFC is enabled
// (driver.Driver.PauseExcludesPFC: ice, i40e) when PFC is enabled there
// now: a plan writes pause before PFC (policy's write order), so the
// driver would see the PFC the port has. A port whose PFC cannot be read
// is left to the write.
func (pl *planning) refusePauseUnderPFC() {
	for i := range pl.plan.Changes {
		c := pl.plan.Changes[i]
		if c.Port == nil || c.Kind != policy.KindGlobalPause {
			continue
		}
		why := known.For(c.Port.Driver).PauseExcludesPFC()
		if why == "" {
			continue
		}
		st, _, err := pl.h.DCB(c.Port.Netdev)
		if err != nil || st == nil || st.PFC == nil || st.PFC.Enable == 0 {
			continue
		}
		pl.refuse(c, why+"\nPFC is enabled on "+c.Port.Netdev+" now: set qos.pfc_priorities = [] in a first apply, then global_pause")
	}
}

// limitDCB asks each port's driver whether it takes the priority table
// and PFC priorities the plan leaves it with (driver.Driver.LimitDCB),
// once per port with an ETS or PFC change: what the profile sets, else
// what the port has.
func (pl *planning) limitDCB() {
	prof := pl.d.Profile
	for _, dp := range pl.d.Ports {
		p := dp.Port
		first := -1
		for _, i := range pl.at[p.Netdev] {
			switch pl.plan.Changes[i].Kind {
			case policy.KindETSPrioTC, policy.KindETSTSA, policy.KindETSBandwidth, policy.KindPFC:
				if first < 0 {
					first = i
				}
			}
		}
		if first < 0 {
			continue
		}
		st, _, _ := pl.h.DCB(p.Netdev)
		var prioTC [8]int
		maxTC := 0
		if st != nil && st.ETS != nil {
			for i, tc := range st.ETS.PrioTC {
				prioTC[i] = int(tc)
			}
			maxTC = int(st.ETS.ETSCap)
		}
		if prof != nil && prof.QoS.ETS != nil {
			prioTC = prof.QoS.ETS.PriorityToTC
		}
		var pfc []int
		switch {
		case prof != nil && prof.QoS.PFCPriorities != nil:
			pfc = prof.QoS.PFCPriorities.List()
		case st != nil && st.PFC != nil:
			pfc = policy.PrioSet(st.PFC.Enable).List()
		}
		if why := known.For(p.Driver).LimitDCB(prioTC, pfc, maxTC); why != "" {
			pl.refuse(pl.plan.Changes[first], why)
		}
	}
}
