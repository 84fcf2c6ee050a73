package bnxtsim

import (
	"syscall"

	"github.com/rocectl/rocectl/nic/dcb"
	"github.com/rocectl/rocectl/nic/nictest/simstate"
)

// Model is one bnxt_en link's driver: what it holds since it loaded
// (bp->ieee_ets, bp->ieee_pfc) and its firmware's PFC state, which no
// dcbnl read shows. Rules the driver leaves to dcbnl are
// simstate.Generic's.
type Model struct {
	simstate.Generic
	// etsSet: the driver holds an ETS configuration (bp->ieee_ets),
	// which its PFC write needs; pfcSet: it holds a PFC one
	// (bp->ieee_pfc). In host DCBX mode it reports nothing (zeros) for
	// what it does not hold (Hidden).
	etsSet, pfcSet bool
	// q is the PFC state its firmware holds (queues.go), taken from the
	// state the snapshot recorded on first use.
	q *queues
}

var _ simstate.Model = (*Model)(nil)

// New is a freshly loaded bnxt_en link: it holds neither ETS nor PFC,
// whatever the link reports.
func New() *Model { return &Model{} }

// HostIEEE: bnxt's IEEE set ops need DCBX HOST and VER_IEEE.
func HostIEEE(d *dcb.State) bool {
	return d.DCBX != nil && *d.DCBX&dcb.DCBXHost != 0 && *d.DCBX&dcb.DCBXVerIEEE != 0
}

// SetDCBX is bnxt_dcbnl_setdcbx as recent kernels have it: nothing
// changes while the firmware agent manages DCBX ("All firmware DCBX
// settings are set in NVRAM"); a mode with HOST must be IEEE only; any
// other mode, 0 included, simply becomes dcbx_cap. No firmware agent takes
// over when HOST goes: the IEEE set ops just refuse from then on. (Older
// kernels refused every mode without VER_IEEE, 0 included, and did not
// look at LLD_MANAGED; the VF and firmware-LLDP-agent refusals of HOST are
// not modelled: the Sim has neither.) The driver answers 1 (refused), not
// an errno; EINVAL stands in.
func (m *Model) SetDCBX(_ simstate.Link, d *dcb.State, mode uint8) error {
	if *d.DCBX&dcb.DCBXLLDManaged != 0 {
		return syscall.EINVAL
	}
	if mode&dcb.DCBXHost != 0 && (mode&dcb.DCBXVerCEE != 0 || mode&dcb.DCBXVerIEEE == 0) {
		return syscall.EINVAL // "only support IEEE"
	}
	*d.DCBX = mode
	return nil
}

// SetETS is bnxt_dcbnl_ieee_setets: host IEEE DCBX needed, then
// bnxt_ets_validate (Starves, TCBeyondMax), then dcbnl's rules; a taken
// ETS is what the driver holds from then on (bp->ieee_ets). It remaps no
// queue.
func (m *Model) SetETS(l simstate.Link, d *dcb.State, ets dcb.ETS) error {
	if !HostIEEE(d) {
		return syscall.EINVAL // bnxt_dcbnl_ieee_setets
	}
	if Starves(ets) {
		return syscall.EINVAL // bnxt_ets_validate: "rejecting ETS config starving a TC"
	}
	if d.ETS != nil && TCBeyondMax(ets, d.ETS.ETSCap) {
		return syscall.EINVAL // bnxt_ets_validate: "priority to TC mapping exceeds TC count"
	}
	m.queuesOf(d) // the firmware's state before this write
	if err := m.Generic.SetETS(l, d, ets); err != nil || d.ETS == nil {
		return err
	}
	m.etsSet = true // bp->ieee_ets
	return nil
}

// Starves is bnxt_ets_validate's refusal of an ETS TC at 0 % while the
// ETS bandwidths sum to 100.
func Starves(ets dcb.ETS) bool {
	zero, total := false, 0
	for i := range dcb.NumTCs {
		if ets.TCTSA[i] == dcb.TSAETS {
			total += int(ets.TCTxBW[i])
			zero = zero || ets.TCTxBW[i] == 0
		}
	}
	return zero && total == 100
}

// ETSSet says whether the driver holds an ETS configuration: bp->ieee_ets
// is set only by bnxt_dcbnl_ieee_setets since the driver loaded
// (bnxt_dcbnl_ieee_getets does not keep what it queries), so a fresh
// simulation starts without one, whatever ETS the link reports.
func (m *Model) ETSSet() bool { return m.etsSet }

// SetPFC is bnxt_dcbnl_ieee_setpfc: host IEEE DCBX needed, ETS set since
// the driver loaded (bnxt_hwrm_queue_pfc_cfg returns -EINVAL without
// bp->ieee_ets), then the firmware's bitmap and queues (pfcConfig); the
// request is kept whole for getpfc.
func (m *Model) SetPFC(_ simstate.Link, d *dcb.State, pfc dcb.PFC) error {
	if !HostIEEE(d) {
		return syscall.EINVAL // bnxt_dcbnl_ieee_setpfc
	}
	if !m.ETSSet() {
		return syscall.EINVAL // bnxt_hwrm_queue_pfc_cfg: no bp->ieee_ets
	}
	if err := m.pfcConfig(d, pfc.Enable); err != nil {
		return err
	}
	// bnxt_dcbnl_ieee_setpfc keeps the request whole (memcpy to
	// bp->ieee_pfc), which getpfc reports: not what the firmware took.
	d.PFC.Enable, d.PFC.MBC, d.PFC.Delay = pfc.Enable, pfc.MBC, pfc.Delay
	m.pfcSet = true // bp->ieee_pfc
	return nil
}

// ReadDCB is bnxt_dcbnl_ieee_getets and bnxt_dcbnl_ieee_getpfc: the
// placeholder in host mode for what the driver does not hold (Hidden);
// outside host mode getpfc keeps what it queried (bp->ieee_pfc = my_pfc),
// which host mode reports later.
func (m *Model) ReadDCB(_ simstate.Link, st *dcb.State) {
	m.Hidden(st)
	if st.PFC != nil && (st.DCBX == nil || *st.DCBX&dcb.DCBXHost == 0) {
		m.pfcSet = true
	}
}

// Hidden makes st what bnxt reports in host DCBX mode for what its driver
// does not hold since it loaded: bnxt_dcbnl_ieee_getets and
// bnxt_dcbnl_ieee_getpfc return at once, when bp->ieee_ets (ieee_pfc) is
// NULL and dcbx_cap has DCB_CAP_DCBX_HOST, leaving dcbnl's zeroed struct
// with only ets_cap (pfc_cap) filled in: every priority on TC 0, strict,
// no PFC, whatever the firmware does. Outside host mode they query the
// firmware (bnxt_hwrm_queue_cos2bw_qcfg/pri2cos_qcfg, pfc_qcfg): the
// snapshot's values.
func (m *Model) Hidden(st *dcb.State) {
	if st.DCBX == nil || *st.DCBX&dcb.DCBXHost == 0 {
		return
	}
	if st.ETS != nil && !m.etsSet {
		st.ETS = &dcb.ETS{ETSCap: st.ETS.ETSCap}
	}
	if st.PFC != nil && !m.pfcSet {
		st.PFC = &dcb.PFC{Cap: st.PFC.Cap}
	}
}

// AddApps is dcbnl's, and bnxt_dcbnl_ieee_setapp sets the HWRM dscp2pri
// entry of each DSCP entry (bnxt_hwrm_queue_dscp2pri_cfg, add).
func (m *Model) AddApps(l simstate.Link, d *dcb.State, apps []dcb.App) error {
	hw := l.HardwareDSCP()
	for _, a := range apps {
		if err := m.Generic.AddApps(l, d, []dcb.App{a}); err != nil {
			return err
		}
		if a.Selector == dcb.SelDSCP {
			hw[int(a.Protocol)] = int(a.Priority)
		}
	}
	return nil
}

// DelApps is dcbnl's, and bnxt_dcbnl_ieee_delapp clears the DSCP's
// dscp2pri entry whatever priority is deleted
// (bnxt_hwrm_queue_dscp2pri_cfg with mask 0).
func (m *Model) DelApps(l simstate.Link, d *dcb.State, apps []dcb.App) error {
	hw := l.HardwareDSCP()
	for _, a := range apps {
		if err := simstate.DeleteApp(d, a); err != nil {
			return err
		}
		if a.Selector == dcb.SelDSCP {
			delete(hw, int(a.Protocol)) // dscp2pri_cfg(add=false): mask 0
		}
	}
	simstate.TidyApps(d)
	return nil
}
