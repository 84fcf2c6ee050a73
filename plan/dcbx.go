package plan

import (
	"slices"

	"github.com/rocectl/rocectl/driver"
	"github.com/rocectl/rocectl/driver/known"
	"github.com/rocectl/rocectl/nic/dcb"
	"github.com/rocectl/rocectl/policy"
	"github.com/rocectl/rocectl/port"
)

// The DCBX mode decides who owns a port's PFC, ETS and APP table: the host
// (what rocectl writes stays) or a DCBX agent that may overwrite it. What
// "firmware" means differs by driver, so the planner asks the port's
// driver (driver.Driver.PlanDCBX, WillingDCBX).

// dcbxPort is what one physical port's desired settings say about DCBX.
type dcbxPort struct {
	port       *port.Port
	dcbx       *policy.Setting // the profile's qos.dcbx, if it sets one
	negotiated []string        // the managed PFC/ETS/APP setting names
}

// dcbx adds what the ports' DCBX mode means for the plan: a warning on
// an mlx5 port left in (or put into) firmware DCBX while the profile
// manages PFC/ETS/APP; on bnxt_en, what its "firmware" mode really is, and
// a refusal of any DCBX change while its firmware agent manages DCBX.
// d must be placed (Observe has run): a bond's settings are its slaves'.
func (pl *planning) dcbx() {
	var order []string
	ports := map[string]*dcbxPort{}
	for _, dp := range pl.d.Ports {
		for i, s := range dp.Settings {
			if s.Port == nil || (s.Kind != policy.KindDCBX && !s.Kind.DCBXNegotiated()) {
				continue
			}
			p := ports[s.Port.Netdev]
			if p == nil {
				p = &dcbxPort{port: s.Port}
				ports[s.Port.Netdev] = p
				order = append(order, s.Port.Netdev)
			}
			if s.Kind == policy.KindDCBX {
				p.dcbx = &dp.Settings[i]
			} else if !slices.Contains(p.negotiated, s.Name) {
				p.negotiated = append(p.negotiated, s.Name)
			}
		}
	}
	for _, nd := range order {
		p := ports[nd]
		drv := known.For(p.port.Driver)
		if msg := drv.WillingDCBX(p.negotiated); msg != "" {
			pl.warnWillingDCBX(p, msg)
		}
		if p.dcbx != nil {
			pl.planPortDCBX(p, drv)
		}
	}
}

// warnWillingDCBX: a profile that manages PFC/ETS/APP on a port whose
// driver's firmware is willing (msg), and that stays in firmware DCBX or
// that asks for firmware DCBX, gets a warning: the switch has the last
// word.
func (pl *planning) warnWillingDCBX(p *dcbxPort, msg string) {
	plan := pl.plan
	if len(p.negotiated) == 0 {
		return
	}
	switch {
	case p.dcbx != nil && p.dcbx.Value == "host":
		return // the plan switches it to host mode, or it is there
	case p.dcbx == nil:
		if mode, ok := pl.h.DCBX(p.port); !ok || mode&dcb.DCBXHost != 0 {
			return // unreadable (the plan says so where it matters), or host mode
		}
	}
	plan.Warnings = append(plan.Warnings, policy.Warning{Key: p.port.Netdev + ".qos.dcbx", Port: p.port, Message: msg})
}

// planPortDCBX adds what the port's driver says of its qos.dcbx: a
// refusal or a note on its change, or a warning when it is in sync.
func (pl *planning) planPortDCBX(p *dcbxPort, drv driver.Driver) {
	plan := pl.plan
	// The change of a setting is on the setting's port.
	change := -1
	for _, i := range pl.at[p.dcbx.Port.Netdev] {
		if plan.Changes[i].Key == p.dcbx.Key {
			change = i
		}
	}
	// Unreadable: the plan reports the setting's own read error.
	reported := func() (uint8, bool) { return pl.h.DCBX(p.port) }
	dp := drv.PlanDCBX(p.dcbx.Value, change >= 0, reported)
	switch {
	case dp.Drop && change >= 0:
		pl.dropForCompanion(change, dp.Note)
	case dp.Refuse != "" && change >= 0:
		c := plan.Changes[change]
		pl.refuse(c, dp.Refuse)
	case dp.Note != "" && change >= 0:
		plan.Changes[change].Note = joinNote(plan.Changes[change].Note, dp.Note)
	case dp.Warning != "":
		plan.Warnings = append(plan.Warnings, policy.Warning{Key: p.dcbx.Key, Port: p.port, Message: dp.Warning})
	}
}

// dropForCompanion takes change i out of the plan: a companion of it
// makes it (driver.DCBXPlan.Drop), and note goes on that companion's
// change, or becomes a warning when the plan has none.
func (pl *planning) dropForCompanion(i int, note string) {
	plan := pl.plan
	c := plan.Changes[i]
	from := "companion of " + c.Name
	placed := false
	for j := range plan.Changes {
		if plan.Changes[j].Port == c.Port && plan.Changes[j].From == from {
			plan.Changes[j].Note = joinNote(plan.Changes[j].Note, note)
			placed = true
		}
	}
	if !placed {
		plan.Warnings = append(plan.Warnings, policy.Warning{Key: c.Key, Port: c.Port, Message: note})
	}
	plan.Changes = slices.Delete(plan.Changes, i, i+1)
	pl.at = indexChanges(plan.Changes)
}
