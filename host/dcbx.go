package host

import (
	"slices"
	"strings"

	"github.com/rocectl/rocectl/nic/dcb"
	"github.com/rocectl/rocectl/policy"
	"github.com/rocectl/rocectl/port"
)

// The DCBX mode decides who owns a port's PFC, ETS and APP table: the host
// (what rocectl writes stays) or a DCBX agent that may overwrite it. What
// "firmware" means differs by driver, so the planner says it per driver:
//
//   - mlx5: outside host mode the firmware runs DCBX with willing set
//     (mlx5e_dcbnl_set_dcbx_mode sets willing_admin for every non-host
//     mode), so a switch advertising its own PFC/ETS/APP later overwrites
//     what the host wrote. The writes themselves succeed.
//   - bnxt_en: setdcbx only stores the mode in dcbx_cap
//     (bnxt_dcbnl_setdcbx); clearing HOST hands nothing to a firmware
//     agent, it only makes the IEEE set ops refuse. A port whose firmware
//     does run the DCBX agent reports LLD_MANAGED, and then setdcbx
//     refuses every change ("All firmware DCBX settings are set in NVRAM").

// bnxtFirmwareDCBXNote is what "firmware" DCBX is on bnxt_en.
const bnxtFirmwareDCBXNote = "bnxt_en's 'firmware' DCBX only clears the host flag in dcbx_cap (bnxt_dcbnl_setdcbx); no firmware agent takes over"

// bnxtLLDManagedRefusal is why a DCBX change on a bnxt port whose firmware
// agent manages DCBX cannot be made.
const bnxtLLDManagedRefusal = "bnxt_dcbnl_setdcbx refuses any change while the firmware agent manages DCBX (dcbx_cap has LLD_MANAGED; the agent's settings live in the NIC's NVRAM)"

// isDCBXNegotiated says whether a setting of kind k is one a DCBX peer can
// overwrite in willing mode (its registry entry's dcbxNegotiated).
func isDCBXNegotiated(k policy.Kind) bool {
	e, err := kindOf(k)
	return err == nil && e.dcbxNegotiated
}

// dcbxPort is what one physical port's desired settings say about DCBX.
type dcbxPort struct {
	port       *port.Port
	dcbx       *policy.Setting // the profile's qos.dcbx, if it sets one
	negotiated []string        // the managed PFC/ETS/APP setting names
}

// planDCBX adds what the ports' DCBX mode means for the plan: a warning on
// an mlx5 port left in (or put into) firmware DCBX while the profile
// manages PFC/ETS/APP; on bnxt_en, what its "firmware" mode really is, and
// a refusal of any DCBX change while its firmware agent manages DCBX.
// d must be placed (Observe has run): a bond's settings are its slaves'.
func (pl *planning) planDCBX() {
	var order []string
	ports := map[string]*dcbxPort{}
	for _, dp := range pl.d.Ports {
		for i, s := range dp.Settings {
			if s.Port == nil || (s.Kind != policy.KindDCBX && !isDCBXNegotiated(s.Kind)) {
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
		switch {
		case strings.HasPrefix(p.port.Driver, "mlx5"):
			pl.h.warnMLX5WillingDCBX(pl.plan, p)
			pl.noteMLX5DCBXUndo(p)
		case p.port.Driver == "bnxt_en" && p.dcbx != nil:
			pl.planBnxtDCBX(p)
		}
	}
}

// warnMLX5WillingDCBX: a profile that manages PFC/ETS/APP on an mlx5 port
// that stays in firmware DCBX, or that asks for firmware DCBX, gets a
// warning: the firmware is willing, and the switch has the last word.
func (h *Host) warnMLX5WillingDCBX(plan *policy.Plan, p *dcbxPort) {
	if len(p.negotiated) == 0 {
		return
	}
	switch {
	case p.dcbx != nil && p.dcbx.Value == "host":
		return // the plan switches it to host mode, or it is there
	case p.dcbx == nil:
		st, err := h.newPortReader(p.port, "").dcbPart("dcbx")
		if err != nil || st.DCBX == nil || *st.DCBX&dcb.DCBXHost != 0 {
			return // unreadable (the plan says so where it matters), or host mode
		}
	}
	plan.Warnings = append(plan.Warnings, policy.Warning{Key: p.port.Netdev + ".qos.dcbx", Port: p.port,
		Message: "DCBX is left to the mlx5 firmware, which is willing (mlx5e_dcbnl_set_dcbx_mode sets willing_admin outside host mode): the switch can later overwrite " +
			strings.Join(p.negotiated, ", ") + `; set qos.dcbx = "host" to keep them`})
}

// noteMLX5DCBXUndo notes on a change of an mlx5 port to host DCBX what its
// rollback cannot undo: mlx5e_dcbnl_set_dcbx_mode sets the firmware's
// willing bit whenever it leaves host mode, and no dcbnl read shows the
// bit, so a firmware configured not willing comes back willing.
func (pl *planning) noteMLX5DCBXUndo(p *dcbxPort) {
	if p.dcbx == nil || p.dcbx.Value != "host" {
		return
	}
	for _, i := range pl.at[p.dcbx.Port.Netdev] {
		if c := &pl.plan.Changes[i]; c.Key == p.dcbx.Key {
			c.Note = joinNote(c.Note, mlx5WillingUndoNote)
		}
	}
}

// mlx5WillingUndoNote is the note on an mlx5 change to host DCBX.
const mlx5WillingUndoNote = "irreversible in part: a rollback to firmware DCBX also makes the firmware willing (mlx5e_dcbnl_set_dcbx_mode sets willing_admin outside host mode), whatever it was; no dcbnl read shows the bit"

// planBnxtDCBX: "firmware" on bnxt_en is said for what it is, and a DCBX
// change on a port whose firmware agent manages DCBX is refused.
func (pl *planning) planBnxtDCBX(p *dcbxPort) {
	h, plan := pl.h, pl.plan
	// The change of a setting is on the setting's port.
	change := -1
	for _, i := range pl.at[p.dcbx.Port.Netdev] {
		if plan.Changes[i].Key == p.dcbx.Key {
			change = i
		}
	}
	if change < 0 && p.dcbx.Value != "firmware" {
		return
	}
	st, err := h.newPortReader(p.port, "").dcbPart("dcbx")
	if err != nil || st.DCBX == nil {
		return // the plan reports the setting's own read error
	}
	if *st.DCBX&dcb.DCBXLLDManaged != 0 {
		if change >= 0 {
			c := plan.Changes[change]
			plan.Refused = append(plan.Refused, policy.PlanError{Key: c.Key, Want: c.Value, Port: c.Port, Error: bnxtLLDManagedRefusal})
		}
		return // in sync: here a firmware agent does manage DCBX
	}
	switch {
	case p.dcbx.Value != "firmware":
	case change >= 0:
		plan.Changes[change].Note = bnxtFirmwareDCBXNote
	default:
		plan.Warnings = append(plan.Warnings, policy.Warning{Key: p.dcbx.Key, Port: p.port, Message: bnxtFirmwareDCBXNote})
	}
}
