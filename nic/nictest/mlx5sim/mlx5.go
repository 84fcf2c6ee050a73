package mlx5sim

import (
	"fmt"
	"slices"
	"syscall"

	"github.com/rocectl/rocectl/nic/dcb"
	"github.com/rocectl/rocectl/nic/nictest/simstate"
)

// Model is one mlx5_core link's driver: what it holds that no dcbnl read
// shows (manual buffer mode, PBMC's lossy bits and thresholds, the
// firmware DCBX's willing bit). Rules the driver leaves to dcbnl are
// simstate.Generic's.
type Model struct {
	simstate.Generic
	// notWilling: the firmware DCBX is not willing (FirmwareWilling).
	notWilling bool
	// manual: the port is in manual buffer mode (ManualBuffer).
	manual bool
	// pbmc is the PBMC state, made when the port enters manual buffer
	// mode (pbmcOf).
	pbmc *pbmc
}

var _ simstate.Model = (*Model)(nil)

// New is a freshly loaded mlx5_core link: automatic buffer mode, firmware
// DCBX willing.
func New() *Model { return &Model{} }

// RefusePause: mlx5e_ethtool_set_pauseparam refuses autoneg.
func (m *Model) RefusePause(_ simstate.Link, autoneg bool) error {
	if autoneg {
		return syscall.EINVAL // mlx5e_ethtool_set_pauseparam
	}
	return nil
}

// AfterPause: the *_global_pause* counters exist only while rx or tx
// pause is on.
func (m *Model) AfterPause(l simstate.Link) { globalPauseCounters(l.State()) }

// autoTimeout is MLX5E_PFC_PREVEN_AUTO_TOUT_MSEC.
const autoTimeout = 100

// Tunable: mlx5 programs the 100 ms critical watermark for "auto"
// (0xffff) and reads the watermark back, never 0xffff.
func (m *Model) Tunable(ms uint16) uint16 {
	if ms == 0xffff {
		return autoTimeout
	}
	return ms
}

// ReadDCB: the PFC requests and indications are the tx/rx per-priority
// pause counters (mlx5e_dcbnl_ieee_getpfc), so scripted counters show up
// there too.
func (m *Model) ReadDCB(l simstate.Link, st *dcb.State) {
	if st.PFC == nil {
		return
	}
	ls := l.State()
	for p := range dcb.NumTCs {
		st.PFC.Requests[p] = ls.Stats[fmt.Sprintf("tx_prio%d_pause", p)]
		st.PFC.Indications[p] = ls.Stats[fmt.Sprintf("rx_prio%d_pause", p)]
	}
}

// SetDCBX is mlx5e_dcbnl_setdcbx: mode 0 returns to firmware (AUTO) DCBX
// and, through mlx5e_dcbnl_set_dcbx_mode, sets willing_admin; other modes
// as dcbnl's generic rule.
func (m *Model) SetDCBX(l simstate.Link, d *dcb.State, mode uint8) error {
	if mode&dcb.DCBXLLDManaged != 0 {
		return syscall.EINVAL
	}
	if mode == 0 {
		*d.DCBX &^= dcb.DCBXHost // back to firmware (AUTO) DCBX
		// Outside host mode it also sets willing_admin, which no dcbnl
		// read shows.
		m.notWilling = false
		return nil
	}
	return m.Generic.SetDCBX(l, d, mode)
}

// FirmwareWilling says whether the firmware DCBX is willing (dcbx_param
// willing_admin), which no dcbnl read shows: a NIC starts willing unless
// SetFirmwareNotWilling (an NVM setting) says not.
func (m *Model) FirmwareWilling() bool { return !m.notWilling }

// SetFirmwareNotWilling makes the firmware DCBX not willing, as an NVM
// configuration can.
func (m *Model) SetFirmwareNotWilling() { m.notWilling = true }

// SetETS: dcbnl's checks, then mlx5e_dcbnl_ieee_getets reports what the
// port holds: 100 % for strict and vendor TCs, nothing for the rx and
// recommendation halves, and the shares of ETS TCs written at 0 %
// (ZeroBandwidthShares).
func (m *Model) SetETS(_ simstate.Link, d *dcb.State, ets dcb.ETS) error {
	if err := simstate.CheckETS(ets); err != nil {
		return err
	}
	if d.ETS == nil {
		return nil // dcbnl skips a driver without ieee_setets
	}
	next := dcb.ETS{ETSCap: d.ETS.ETSCap, TCTSA: ets.TCTSA, PrioTC: ets.PrioTC}
	for i := range dcb.NumTCs {
		next.TCTxBW[i] = 100
		if ets.TCTSA[i] == dcb.TSAETS {
			next.TCTxBW[i] = ets.TCTxBW[i]
		}
	}
	ZeroBandwidthShares(ets, &next)
	*d.ETS = next
	return nil
}

// ZeroBandwidthShares is what mlx5 reads back for ETS TCs written at 0 %:
// mlx5e_build_tc_tx_bw gives each 100 / their number (the last one the
// remainder) in a group of their own, and mlx5e_dcbnl_ieee_getets reports
// that group as 0 only when a TC of the other ETS group has less than
// 100 %.
func ZeroBandwidthShares(ets dcb.ETS, next *dcb.ETS) {
	var zero []int
	otherBelow100 := false
	for i := range dcb.NumTCs {
		if ets.TCTSA[i] != dcb.TSAETS {
			continue
		}
		if ets.TCTxBW[i] == 0 {
			zero = append(zero, i)
		} else if ets.TCTxBW[i] < 100 {
			otherBelow100 = true
		}
	}
	if len(zero) == 0 || otherBelow100 {
		return
	}
	for _, i := range zero {
		next.TCTxBW[i] = uint8(100 / len(zero))
	}
	next.TCTxBW[zero[len(zero)-1]] += uint8(100 % len(zero))
}

// MaxDSCP is MLX5E_MAX_DSCP.
const MaxDSCP = 64

// AddApps is mlx5e_dcbnl_ieee_setapp: DSCP entries with protocol < 64
// only (EINVAL), a new entry replacing the DSCP's old one, and the
// firmware's dscp2prio[d] set (mlx5e_set_dscp2prio). Entries apply in
// order; the first failure stops the rest.
func (m *Model) AddApps(l simstate.Link, d *dcb.State, apps []dcb.App) error {
	hw := l.HardwareDSCP()
	for _, a := range apps {
		if !simstate.ValidSelector(a.Selector) {
			return syscall.EINVAL // dcbnl: attr/selector pairing
		}
		if a.Selector != dcb.SelDSCP || a.Protocol >= MaxDSCP {
			return syscall.EINVAL
		}
		// mlx5e_dcbnl_ieee_setapp deletes the DSCP's old entry.
		d.Apps = slices.DeleteFunc(d.Apps, func(o dcb.App) bool {
			return o.Selector == a.Selector && o.Protocol == a.Protocol
		})
		d.Apps = append(d.Apps, a)
		simstate.SortApps(d.Apps)
		hw[int(a.Protocol)] = int(a.Priority) // mlx5e_set_dscp2prio
	}
	return nil
}

// DelApps is mlx5e_dcbnl_ieee_delapp: the entry's priority must match the
// firmware's dscp2prio (else ENOENT), which is then reset to 0.
func (m *Model) DelApps(l simstate.Link, d *dcb.State, apps []dcb.App) error {
	hw := l.HardwareDSCP()
	for _, a := range apps {
		if a.Selector != dcb.SelDSCP || a.Protocol >= MaxDSCP {
			return syscall.EINVAL
		}
		if hw[int(a.Protocol)] != int(a.Priority) {
			return syscall.ENOENT // "Check if the entry matches fw setting"
		}
		if err := simstate.DeleteApp(d, a); err != nil {
			return err
		}
		hw[int(a.Protocol)] = 0 // "Reset the priority mapping back to zero"
	}
	simstate.TidyApps(d)
	return nil
}
