package icesim

import (
	"slices"
	"syscall"

	"github.com/rocectl/rocectl/nic/dcb"
	"github.com/rocectl/rocectl/nic/nictest/simstate"
)

// Driver is the driver name ice reports (ethtool -i), which picks this
// model.
const Driver = "ice"

// FWLLDPAgent is ice's private flag that runs the firmware's LLDP agent
// (ice_gstrings_priv_flags, ICE_FLAG_FW_LLDP_AGENT).
const FWLLDPAgent = "fw-lldp-agent"

// Model is one ice link's driver: what it keeps of the firmware's DCB
// configuration while the host owns DCB, which no dcbnl read shows.
// Rules the driver leaves to dcbnl are simstate.Generic's.
type Model struct {
	simstate.Generic
	// firmware is the DCB state the firmware's agent held when ice
	// stopped it: starting the agent again brings it back (the agent
	// keeps its MIB; with no DCBX peer its own configuration).
	firmware *dcb.State
}

var _ simstate.Model = (*Model)(nil)

// New is a freshly loaded ice link.
func New() *Model { return &Model{} }

// hostIEEE: ice_dcbnl_setets, ice_dcbnl_setpfc, ice_dcbnl_setapp and
// ice_dcbnl_delapp answer EINVAL when pf->dcbx_cap has
// DCB_CAP_DCBX_LLD_MANAGED or lacks DCB_CAP_DCBX_VER_IEEE.
func hostIEEE(d *dcb.State) bool {
	return d.DCBX != nil && *d.DCBX&dcb.DCBXLLDManaged == 0 && *d.DCBX&dcb.DCBXVerIEEE != 0
}

// agentOn says whether the firmware LLDP agent runs (the private flag).
func agentOn(l simstate.Link) bool {
	return l.State().PrivFlags[FWLLDPAgent]
}

// SetDCBX is ice_dcbnl_setdcbx: nothing changes while the firmware LLDP
// agent runs (ICE_FLAG_FW_LLDP_AGENT: ICE_DCB_NO_HW_CHG); LLD_MANAGED,
// CEE with IEEE, or a mode without HOST are refused the same way; else
// the mode becomes dcbx_cap. The driver answers a refusal with 1, not an
// errno; EINVAL stands in.
func (m *Model) SetDCBX(l simstate.Link, d *dcb.State, mode uint8) error {
	if agentOn(l) || mode&dcb.DCBXLLDManaged != 0 || mode&dcb.DCBXHost == 0 ||
		(mode&dcb.DCBXVerIEEE != 0 && mode&dcb.DCBXVerCEE != 0) {
		return syscall.EINVAL
	}
	*d.DCBX = mode
	return nil
}

// SetETS is ice_dcbnl_setets: host IEEE DCBX needed; the priority table
// is counted by ice_dcb_get_num_tc, which takes TCs contiguous from TC0
// only ("Non-contiguous TCs - Disabling DCB": one TC), and
// ice_dcb_bwchk gives TC0 all the bandwidth when there is one TC and
// refuses ETS bandwidths of the counted TCs that do not sum to 100.
func (m *Model) SetETS(l simstate.Link, d *dcb.State, ets dcb.ETS) error {
	if !hostIEEE(d) {
		return syscall.EINVAL
	}
	if err := simstate.CheckETS(ets); err != nil {
		return err
	}
	n := NumTC(ets.PrioTC)
	if n == 1 {
		ets.TCTxBW[0] = 100 // ice_dcb_bwchk, num_tc == 1
	} else {
		total := 0
		for i := range n {
			total += int(ets.TCTxBW[i])
		}
		if total != 100 && total != 0 {
			return syscall.EINVAL // ice_dcb_bwchk: "total bandwidth must equal 100"
		}
		if total == 0 {
			ets.TCTxBW[0] = 100
		}
	}
	if d.ETS != nil {
		ets.ETSCap = d.ETS.ETSCap // maxtc, reported by the driver
		*d.ETS = ets
	}
	return nil
}

// NumTC is ice_dcb_get_num_tc: the number of TCs the priority table
// uses when they are contiguous from TC0, else 1.
func NumTC(prioTC [8]uint8) int {
	var used uint8
	for _, tc := range prioTC {
		used |= 1 << tc
	}
	n, gap := 0, false
	for i := range dcb.NumTCs {
		switch {
		case used&(1<<i) == 0:
			gap = true
		case gap:
			return 1
		default:
			n++
		}
	}
	return max(n, 1)
}

// SetPFC is ice_dcbnl_setpfc: host IEEE DCBX needed; pfc_en is kept
// (pfc_cap stays maxtc).
func (m *Model) SetPFC(l simstate.Link, d *dcb.State, pfc dcb.PFC) error {
	if !hostIEEE(d) {
		return syscall.EINVAL
	}
	return m.Generic.SetPFC(l, d, pfc)
}

// AddApps is ice_dcbnl_setapp: host IEEE DCBX needed, then dcbnl's.
func (m *Model) AddApps(l simstate.Link, d *dcb.State, apps []dcb.App) error {
	if !hostIEEE(d) {
		return syscall.EINVAL
	}
	return m.Generic.AddApps(l, d, apps)
}

// DelApps is ice_dcbnl_delapp: host IEEE DCBX needed, then dcbnl's.
func (m *Model) DelApps(l simstate.Link, d *dcb.State, apps []dcb.App) error {
	if !hostIEEE(d) {
		return syscall.EINVAL
	}
	return m.Generic.DelApps(l, d, apps)
}

// RefusePause is ice_set_pauseparam: EOPNOTSUPP for a write whose
// autoneg differs from the PHY's ("To change autoneg please use: ethtool
// -s <dev> autoneg <on|off>"), and for any link flow control write while
// PFC is enabled ("Priority flow control enabled. Cannot set link flow
// control."). (ice_get_pauseparam's report of LFC off while PFC is
// enabled is not modelled: the Sim's pause read is the kernel's.)
func (m *Model) RefusePause(l simstate.Link, autoneg bool) error {
	ls := l.State()
	if ls.Pause != nil && autoneg != ls.Pause.Autoneg {
		return syscall.EOPNOTSUPP
	}
	if d := ls.DCB; d != nil && d.PFC != nil && d.PFC.Enable != 0 {
		return syscall.EOPNOTSUPP
	}
	return nil
}

// SetPrivFlags is ice_set_priv_flags for fw-lldp-agent. Off: the agent
// stops (ice_aq_stop_lldp), DCB is set up again in software
// (ice_init_pf_dcb(pf, true) → ice_dcb_sw_dflt_cfg: every priority on
// TC0, TC0 ETS at 100 %, no PFC) and dcbx_cap trades LLD_MANAGED for
// HOST. On: refused while the port is in DSCP QoS mode (a DSCP APP entry:
// "QoS in L3 DSCP mode, FW Agent not allowed to start", EOPNOTSUPP);
// else the agent starts (ice_aq_start_lldp, ice_aq_start_stop_dcbx),
// dcbx_cap trades HOST for LLD_MANAGED, and DCB is the firmware's again.
// (ice_dcb_sw_dflt_cfg's FCoE APP entry is not modelled.)
func (m *Model) SetPrivFlags(l simstate.Link, flags map[string]bool) error {
	on, ok := flags[FWLLDPAgent]
	ls := l.State()
	if !ok || on == ls.PrivFlags[FWLLDPAgent] || ls.DCB == nil || ls.DCB.DCBX == nil {
		return nil
	}
	d := ls.DCB
	if !on {
		fw := &dcb.State{Apps: slices.Clone(d.Apps)}
		if d.ETS != nil {
			e := *d.ETS
			fw.ETS = &e
		}
		if d.PFC != nil {
			p := *d.PFC
			fw.PFC = &p
		}
		m.firmware = fw
		*d.DCBX = *d.DCBX&^dcb.DCBXLLDManaged | dcb.DCBXHost
		if d.ETS != nil {
			*d.ETS = dcb.ETS{ETSCap: d.ETS.ETSCap, TCTSA: [8]uint8{dcb.TSAETS}, TCTxBW: [8]uint8{100}}
		}
		if d.PFC != nil {
			*d.PFC = dcb.PFC{Cap: d.PFC.Cap}
		}
		return nil
	}
	for _, a := range d.Apps {
		if a.Selector == dcb.SelDSCP {
			return syscall.EOPNOTSUPP
		}
	}
	*d.DCBX = *d.DCBX&^dcb.DCBXHost | dcb.DCBXLLDManaged
	if fw := m.firmware; fw != nil {
		if fw.ETS != nil && d.ETS != nil {
			*d.ETS = *fw.ETS
		}
		if fw.PFC != nil && d.PFC != nil {
			*d.PFC = *fw.PFC
		}
		d.Apps = slices.Clone(fw.Apps)
	}
	return nil
}
