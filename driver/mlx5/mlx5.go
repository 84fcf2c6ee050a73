package mlx5

import (
	"strings"

	"github.com/rocectl/rocectl/driver"
	"github.com/rocectl/rocectl/nic/dcb"
	"github.com/rocectl/rocectl/policy"
)

// Driver is mlx5_core, DOCA-OFED's and mainline's alike; where the two
// differ (ECN through OFED sysfs or mainline debugfs) the answer depends
// on driver.Facts.
type Driver struct{ driver.Base }

func (Driver) Name() string { return "mlx5" }

// Companions: mlx5_set_port_pfc (mlx5/core/port.c) writes the PFCC
// register from a zeroed buffer with pptx_mask_n = 0, so setting PFC turns
// rx and tx global pause off; compare mlx5_set_port_stall_watermark, which
// sets the mask bits and keeps them. Rolling PFC back therefore leaves a
// host that had global pause on with no flow control at all, unless the
// pause setting is journalled and restored after PFC.
func (Driver) Companions(c policy.Change) []driver.Companion {
	if c.Kind != policy.KindPFC {
		return nil
	}
	return []driver.Companion{{Kind: policy.KindGlobalPause, Name: "qos.global_pause", Value: "off",
		Note: "mlx5 turns global pause off whenever it sets PFC (mlx5_set_port_pfc); journalled so that rollback restores it"}}
}

// Implied: upstream mlx5's np_cnp_prio_mode (hw/mlx5/cong.c,
// MLX5_IB_DBG_CC_NP_CNP_PRIO_MODE) decides where CNPs go: in mode 1 the
// CNP priority follows the data packet's, and np_cnp_prio is ignored, so
// an np_cnp_prio that reads "in sync" would not keep CNPs off the PFC
// priority. A managed CNP priority brings mode 0 with it. DOCA-OFED's
// sysfs has no such mode.
func (Driver) Implied(s policy.Setting, f driver.Facts) []driver.Companion {
	if s.Kind != policy.KindECNParam || s.Arg != "np/cnp_802p_prio" || f.ECN == nil || f.ECN() != driver.ECNUpstream {
		return nil
	}
	return []driver.Companion{{Kind: policy.KindECNParam, Name: "ecn.np.cnp_prio_mode", Arg: "np/cnp_prio_mode", Value: "0",
		Note: "upstream mlx5 ignores np_cnp_prio in mode 1 (CNPs follow the data priority; hw/mlx5/cong.c): mode 0 makes the CNP priority the one set here"}}
}

// RefuseETS: mlx5 shares 100 % among the 0 % TCs (mlx5e_build_tc_tx_bw)
// and mlx5e_dcbnl_ieee_getets reports them as 0 only when a TC of the
// other ETS group has less than 100 %: with the other ETS bandwidth all
// on one TC, the 0 % TCs read back as their share, so read-back fails
// after the write and the apply rolls back.
func (Driver) RefuseETS(ets *policy.ETS) string {
	zero, nonZero, full := driver.ZeroBandwidth(ets)
	if zero && full && nonZero == 1 {
		return "mlx5 gives the 0 % ETS TCs a share of 100 % (mlx5e_build_tc_tx_bw) and reports them as 0 only when another ETS TC has less than 100 % (mlx5e_dcbnl_ieee_getets): written so, they read back as their share; give them a share or make them strict"
	}
	return ""
}

// Disruptions of a write on an mlx5 port.
func (Driver) Disruptions(c *policy.Change) []string {
	switch {
	case c.Kind == policy.KindPFC:
		return []string{"link toggle: mlx5 takes the link down and up when PFC changes (mlx5e_dcbnl_ieee_setpfc)"}
	case c.Kind == policy.KindPrioBuffer || c.Kind == policy.KindBufferSize:
		return []string{"irreversible: manual buffer mode for good"}
	case c.Kind == policy.KindTrust && c.Port != nil && MayInlineL2(c.Port.HCAType):
		// mlx5e_set_trust_state switches the channels when DSCP trust
		// changes the minimum TX inline mode (L2 → IP), which only NICs
		// that inline L2 headers have.
		return []string{"channel reset on NICs that inline L2 headers (ConnectX-4, ConnectX-4 Lx): mlx5e_set_trust_state re-creates the queues when trust changes"}
	case strings.Contains(c.Note, WillingUndoNote):
		return []string{"irreversible: a rollback leaves the mlx5 firmware DCBX willing"}
	}
	return nil
}

// FirmwareLLDP: mlx5 in firmware DCBX mode (dcbnl DCBX mode without
// DCB_CAP_DCBX_HOST) runs the NIC's own LLDP agent, which consumes the
// switch's frames, and reports no peer through dcbnl.
func (Driver) FirmwareLLDP(f driver.LLDPFacts) string {
	if f.DCBX == nil {
		return ""
	}
	if mode := f.DCBX(); mode != nil && *mode&dcb.DCBXHost == 0 {
		return "mlx5 in firmware DCBX mode (qos.dcbx = firmware): the NIC's LLDP agent consumes the switch's LLDP and the host never sees it, and mlx5 reports no peer through dcbnl; read the peer with mlnx_qos or set qos.dcbx = \"host\""
	}
	return ""
}

// Caps: mlx5 checks its lossless receive buffers on every PFC and buffer
// write in manual buffer mode, and computes their thresholds only on
// those writes (buffers.go, xoff.go).
// It carries the cable length in ieee_pfc's delay field
// (mlx5e_dcbnl_ieee_setpfc), and toggles the link when PFC changes.
func (Driver) Caps() driver.Caps {
	return driver.Caps{BufferChecks: true, CableLength: true, PFCTogglesLink: true}
}

// PlanDCBX: a change to host DCBX carries what its rollback cannot undo.
func (Driver) PlanDCBX(want string, changed bool, _ func() (uint8, bool)) driver.DCBXPlan {
	if want == "host" && changed {
		return driver.DCBXPlan{Note: WillingUndoNote}
	}
	return driver.DCBXPlan{}
}

// WillingDCBX: outside host mode the firmware runs DCBX with willing set
// (mlx5e_dcbnl_set_dcbx_mode sets willing_admin for every non-host
// mode), so a switch advertising its own PFC/ETS/APP later overwrites
// what the host wrote. The writes themselves succeed.
func (Driver) WillingDCBX(negotiated []string) string {
	return "DCBX is left to the mlx5 firmware, which is willing (mlx5e_dcbnl_set_dcbx_mode sets willing_admin outside host mode): the switch can later overwrite " +
		strings.Join(negotiated, ", ") + `; set qos.dcbx = "host" to keep them`
}

// BufferCell: mlx5 programs buffer sizes in whole cells of the device's
// cell size (cell.go, InferCell).
func (Driver) BufferCell(sizes [8]uint32, total uint32) (int, string) {
	return InferCell(sizes, total)
}

// MayInlineL2 says whether an mlx5 NIC of hca_type may have the minimum
// TX inline mode L2 (wqe_inline_mode, mlx5_query_min_inline): the
// ConnectX-4 family (MT4115..MT4118, VFs included); later NICs need no
// inline. An unknown type may.
func MayInlineL2(hcaType string) bool {
	switch hcaType {
	case "", "MT4115", "MT4116", "MT4117", "MT4118":
		return true
	}
	return false
}

// WillingUndoNote is the note on a change to host DCBX: its rollback
// leaves the firmware willing (mlx5e_dcbnl_set_dcbx_mode), whatever it
// was, since no dcbnl read shows the bit.
const WillingUndoNote = "irreversible in part: a rollback to firmware DCBX also makes the firmware willing (mlx5e_dcbnl_set_dcbx_mode sets willing_admin outside host mode), whatever it was; no dcbnl read shows the bit"
