package bnxtsim

import (
	"syscall"

	"github.com/rocectl/rocectl/nic/dcb"
)

// bnxt_en's lossless queues (bnxt_dcb.c). The firmware pauses the
// priorities of one PFC bitmap (HWRM_QUEUE_PFCENABLE_CFG) and keeps the
// traffic of a paused priority only when its traffic class sits on a
// lossless queue (bp->tc_to_qidx, q_info[].queue_profile). The driver
// sets both in bnxt_hwrm_queue_pfc_cfg, and only there:
//
//   - It maps pfc_en through the ETS the driver holds (bp->ieee_ets): a
//     priority whose TC is not below bp->max_tc (reported as ets_cap) is
//     left out of the firmware's bitmap, and more TCs with a PFC priority
//     than bp->max_lltc (reported as pfc_cap) is -EINVAL.
//   - When a TC of the bitmap is not on a lossless queue it moves the
//     bitmap's TCs onto the lossless queues (bnxt_queue_remap; older
//     kernels reprogram the queue profiles, bnxt_hwrm_queue_cfg, to the
//     same end).
//
// bnxt_dcbnl_ieee_setets changes the priority-to-TC map and remaps
// nothing: after an ETS write alone, a PFC priority moved to another TC
// is paused by the firmware and may sit on a lossy queue. And
// bnxt_dcbnl_ieee_setpfc keeps the request whole for getpfc (memcpy to
// bp->ieee_pfc): dcbnl reads back what was asked, not what the firmware
// took.

// queues is one bnxt link's firmware PFC state.
type queues struct {
	priMask  uint8 // the priorities the firmware pauses
	lossless uint8 // the TCs on lossless queues
}

// queuesOf is the link's firmware PFC state, taken the first time it is
// needed from the state the snapshot recorded (d, before any write the
// simulation makes): the firmware then held the PFC and ETS it reported.
func (m *Model) queuesOf(d *dcb.State) *queues {
	if m.q != nil {
		return m.q
	}
	q := &queues{}
	if d.PFC != nil && d.ETS != nil {
		q.priMask, q.lossless = PFCMasks(d.PFC.Enable, d.ETS)
	}
	m.q = q
	return q
}

// PFCMasks is bnxt_hwrm_queue_pfc_cfg's reading of pfcEn through ets:
// the priorities the firmware is to pause and their TCs.
func PFCMasks(pfcEn uint8, ets *dcb.ETS) (priMask, tcMask uint8) {
	for tc := uint8(0); tc < ets.ETSCap && tc < dcb.NumTCs; tc++ {
		for pri := range dcb.NumTCs {
			if pfcEn&(1<<pri) != 0 && ets.PrioTC[pri] == tc {
				priMask |= 1 << pri
				tcMask |= 1 << tc
			}
		}
	}
	return priMask, tcMask
}

// pfcConfig is bnxt_hwrm_queue_pfc_cfg for pfcEn, the driver holding the
// ETS in d (ETSSet has been checked).
func (m *Model) pfcConfig(d *dcb.State, pfcEn uint8) error {
	q := m.queuesOf(d)
	priMask, tcMask := PFCMasks(pfcEn, d.ETS)
	n := 0
	for tc := range dcb.NumTCs {
		if tcMask&(1<<tc) != 0 {
			n++
		}
	}
	if n > int(d.PFC.Cap) {
		return syscall.EINVAL // lltc_count > bp->max_lltc
	}
	if tcMask&^q.lossless != 0 {
		q.lossless = tcMask // bnxt_queue_remap: the bitmap's TCs get the lossless queues
	}
	q.priMask = priMask
	return nil
}

// TCBeyondMax is bnxt_ets_validate's refusal of what lies above
// bp->max_tc (ets_cap): a priority on such a TC ("priority to TC mapping
// exceeds TC count"), or such a TC with a bandwidth or a TSA other than
// strict (0). A priority on TC max_tc itself passes, and PFCMasks
// then leaves it unpaused.
func TCBeyondMax(ets dcb.ETS, maxTC uint8) bool {
	for i, tc := range ets.PrioTC {
		if tc > maxTC || (i > int(maxTC) && (ets.TCTxBW[i] != 0 || ets.TCTSA[i] != dcb.TSAStrict)) {
			return true
		}
	}
	return false
}

// SetQueueCaps makes the firmware of the link whose dcbnl state is d offer
// maxTC traffic classes and maxLLTC lossless queues (bp->max_tc and
// bp->max_lltc, from HWRM_QUEUE_QPORTCFG), which the driver reports as
// ets_cap and pfc_cap. The fixtures record no real bnxt's values. A state
// without ETS or PFC is left as it is.
func SetQueueCaps(d *dcb.State, maxTC, maxLLTC uint8) {
	if d != nil && d.ETS != nil && d.PFC != nil {
		d.ETS.ETSCap, d.PFC.Cap = maxTC, maxLLTC
	}
}

// UnprotectedPFC lists the priorities that dcbnl reports PFC-enabled (in
// d, the link's dcbnl state) but that the firmware does not keep
// lossless: left out of its pause bitmap, or on a TC (of the ETS in
// force) without a lossless queue. It is what a test checks after an
// apply or a rollback: dcbnl's read-back cannot show it.
func (m *Model) UnprotectedPFC(d *dcb.State) []int {
	if d == nil || d.PFC == nil || d.ETS == nil {
		return nil
	}
	q := m.queuesOf(d)
	var out []int
	for pri := range dcb.NumTCs {
		if d.PFC.Enable&(1<<pri) == 0 {
			continue
		}
		if tc := d.ETS.PrioTC[pri]; q.priMask&(1<<pri) == 0 || tc >= dcb.NumTCs || q.lossless&(1<<tc) == 0 {
			out = append(out, pri)
		}
	}
	return out
}
