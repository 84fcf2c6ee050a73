package ice

import (
	"github.com/rocectl/rocectl/driver"
	"github.com/rocectl/rocectl/policy"
)

// Instead says where an ice/i40e setting lives when the interface
// rocectl reads has none of it. ice registers no dcbnl buffer ops
// (ice_dcb_nl.c): the firmware sizes the receive buffers. Its DCB set
// operations refuse while the firmware LLDP agent runs DCBX
// (ice_dcbnl_setets and the others check DCB_CAP_DCBX_LLD_MANAGED).
// Congestion control is irdma's, through its configfs.
func (d Driver) Instead(k policy.Kind, _ driver.PortFacts) string {
	switch k {
	case policy.KindPrioBuffer, policy.KindBufferSize, policy.KindCableLength:
		return d.Module + "'s firmware sizes the receive buffers itself (no dcbnl buffer ops)"
	case policy.KindECNEnable:
		return "[ecn] mode, which sets " + irdmaGroup + " for the whole device"
	case policy.KindECNParam:
		return "irdma's DCQCN parameters are module parameters of Intel's out-of-tree irdma; its configfs holds the algorithm switches ([ecn] mode)"
	case policy.KindTrafficClass:
		return driver.PerConnectionTC
	case policy.KindStormPrevention:
		return "the switch's PFC watchdog is the guard left (" + d.Module + "_ethtool.c has no pfc-prevention-tout tunable)"
	}
	if driver.IsDCB(k) {
		return "the driver's dcbnl once the firmware LLDP agent is off, which rocectl plans itself (ice: private flag fw-lldp-agent off; i40e: disable-fw-lldp on); while it runs, the switch's DCBX sets DCB"
	}
	return ""
}
