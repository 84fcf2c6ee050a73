package nictest

import (
	"cmp"
	"slices"
	"syscall"

	"github.com/rocectl/rocectl/nic/dcb"
	"github.com/rocectl/rocectl/nic/snapshot"
)

// dcbnl writes. Rules marked "dcbnl" hold for every driver (net/dcb/dcbnl.c),
// the others for the driver named (en_dcbnl.c for mlx5, bnxt_dcb.c).

// dcbWrite runs fn on the link's DCB state; a link without dcbnl_ops
// (veth, lo, or a DCB op recorded as failing) answers like the kernel.
func (s *Sim) dcbWrite(op, name string, fn func(ls *snapshot.LinkState, d *dcb.State) error) error {
	return s.write(op, name, func(ls *snapshot.LinkState) error {
		if _, err := s.r.DCB(name); err != nil {
			return err // no dcbnl_ops, or a recorded failure
		}
		return fn(ls, ls.DCB)
	})
}

func (s *Sim) SetDCBX(name string, mode uint8) error {
	return s.dcbWrite(snapshot.OpSetDCBX, name, func(ls *snapshot.LinkState, d *dcb.State) error {
		if d.DCBX == nil {
			return syscall.EOPNOTSUPP // no ops->setdcbx
		}
		// The driver answers 1 (refused), not an errno; EINVAL stands in.
		if driverOf(ls) == snapshot.DriverBnxt {
			return bnxtSetDCBX(d, mode)
		}
		if mode&dcb.DCBXLLDManaged != 0 {
			return syscall.EINVAL
		}
		if mode == 0 && driverOf(ls) == snapshot.DriverMLX5 {
			*d.DCBX &^= dcb.DCBXHost // back to firmware (AUTO) DCBX
			// mlx5e_dcbnl_set_dcbx_mode: outside host mode it also sets
			// willing_admin, which no dcbnl read shows.
			s.notWilling[name] = false
			return nil
		}
		if mode&dcb.DCBXHost == 0 {
			return syscall.EINVAL
		}
		*d.DCBX = mode
		return nil
	})
}

// bnxtSetDCBX is bnxt_dcbnl_setdcbx as recent kernels have it: nothing
// changes while the firmware agent manages DCBX ("All firmware DCBX
// settings are set in NVRAM"); a mode with HOST must be IEEE only; any
// other mode, 0 included, simply becomes dcbx_cap. No firmware agent takes
// over when HOST goes: the IEEE set ops just refuse from then on. (Older
// kernels refused every mode without VER_IEEE, 0 included, and did not
// look at LLD_MANAGED; the VF and firmware-LLDP-agent refusals of HOST are
// not modelled: the Sim has neither.)
func bnxtSetDCBX(d *dcb.State, mode uint8) error {
	if *d.DCBX&dcb.DCBXLLDManaged != 0 {
		return syscall.EINVAL
	}
	if mode&dcb.DCBXHost != 0 && (mode&dcb.DCBXVerCEE != 0 || mode&dcb.DCBXVerIEEE == 0) {
		return syscall.EINVAL // "only support IEEE"
	}
	*d.DCBX = mode
	return nil
}

func (s *Sim) SetETS(name string, ets dcb.ETS) error {
	return s.dcbWrite(snapshot.OpSetETS, name, func(ls *snapshot.LinkState, d *dcb.State) error {
		if driverOf(ls) == snapshot.DriverBnxt && !bnxtHostIEEE(d) {
			return syscall.EINVAL // bnxt_dcbnl_ieee_setets
		}
		if driverOf(ls) == snapshot.DriverBnxt && bnxtStarves(ets) {
			return syscall.EINVAL // bnxt_ets_validate: "rejecting ETS config starving a TC"
		}
		if driverOf(ls) == snapshot.DriverBnxt && d.ETS != nil && bnxtTCBeyondMax(ets, d.ETS.ETSCap) {
			return syscall.EINVAL // bnxt_ets_validate: "priority to TC mapping exceeds TC count"
		}
		if driverOf(ls) == snapshot.DriverBnxt {
			s.bnxtQueuesOf(name, d) // the firmware's state before this write
		}
		haveETS, sum := false, 0
		for i := range dcb.NumTCs {
			if ets.PrioTC[i] >= dcb.NumTCs {
				return syscall.EINVAL
			}
			if ets.TCTSA[i] == dcb.TSAETS {
				haveETS = true
				sum += int(ets.TCTxBW[i])
			} else if ets.TCTxBW[i] != 0 {
				return syscall.EINVAL // dcbnl, newer kernels
			}
		}
		if haveETS && sum != 100 {
			return syscall.EINVAL
		}
		if d.ETS == nil {
			return nil // dcbnl skips a driver without ieee_setets
		}
		next := ets
		next.ETSCap = d.ETS.ETSCap // reported by the driver, not set
		if driverOf(ls) == snapshot.DriverMLX5 {
			// mlx5e_dcbnl_ieee_getets reports what the port holds: 100 %
			// for strict and vendor TCs, nothing for the rx and
			// recommendation halves.
			next = dcb.ETS{ETSCap: d.ETS.ETSCap, TCTSA: ets.TCTSA, PrioTC: ets.PrioTC}
			for i := range dcb.NumTCs {
				next.TCTxBW[i] = 100
				if ets.TCTSA[i] == dcb.TSAETS {
					next.TCTxBW[i] = ets.TCTxBW[i]
				}
			}
			mlx5ZeroBandwidthShares(ets, &next)
		}
		*d.ETS = next
		if driverOf(ls) == snapshot.DriverBnxt {
			s.etsSet[name] = true // bp->ieee_ets
		}
		return nil
	})
}

// bnxtStarves is bnxt_ets_validate's refusal of an ETS TC at 0 % while
// the ETS bandwidths sum to 100.
func bnxtStarves(ets dcb.ETS) bool {
	zero, total := false, 0
	for i := range dcb.NumTCs {
		if ets.TCTSA[i] == dcb.TSAETS {
			total += int(ets.TCTxBW[i])
			zero = zero || ets.TCTxBW[i] == 0
		}
	}
	return zero && total == 100
}

// mlx5ZeroBandwidthShares is what mlx5 reads back for ETS TCs written at
// 0 %: mlx5e_build_tc_tx_bw gives each 100 / their number (the last one
// the remainder) in a group of their own, and mlx5e_dcbnl_ieee_getets
// reports that group as 0 only when a TC of the other ETS group has less
// than 100 %.
func mlx5ZeroBandwidthShares(ets dcb.ETS, next *dcb.ETS) {
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

// bnxtHostIEEE: bnxt's IEEE set ops need DCBX HOST and VER_IEEE.
func bnxtHostIEEE(d *dcb.State) bool {
	return d.DCBX != nil && *d.DCBX&dcb.DCBXHost != 0 && *d.DCBX&dcb.DCBXVerIEEE != 0
}

// bnxtETSSet says whether the bnxt driver holds an ETS configuration:
// bp->ieee_ets is set only by bnxt_dcbnl_ieee_setets since the driver
// loaded (bnxt_dcbnl_ieee_getets does not keep what it queries), so a
// fresh simulation starts without one, whatever ETS the link reports.
func (s *Sim) bnxtETSSet(name string) bool { return s.etsSet[name] }

// FirmwareWilling says whether the mlx5 firmware DCBX of link name is
// willing (dcbx_param willing_admin), which no dcbnl read shows: a NIC
// starts willing unless SetFirmwareNotWilling (an NVM setting) says not.
func (s *Sim) FirmwareWilling(name string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return !s.notWilling[name]
}

// SetFirmwareNotWilling makes link name's firmware DCBX not willing, as
// an NVM configuration can.
func (s *Sim) SetFirmwareNotWilling(name string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.notWilling[name] = true
}

// bnxtHidden makes st what bnxt reports in host DCBX mode for what its
// driver does not hold since it loaded: bnxt_dcbnl_ieee_getets and
// bnxt_dcbnl_ieee_getpfc return at once, when bp->ieee_ets (ieee_pfc) is
// NULL and dcbx_cap has DCB_CAP_DCBX_HOST, leaving dcbnl's zeroed struct
// with only ets_cap (pfc_cap) filled in: every priority on TC 0, strict,
// no PFC, whatever the firmware does. Outside host mode they query the
// firmware (bnxt_hwrm_queue_cos2bw_qcfg/pri2cos_qcfg, pfc_qcfg): the
// snapshot's values.
func (s *Sim) bnxtHidden(name string, ls *snapshot.LinkState, st *dcb.State) {
	if driverOf(ls) != snapshot.DriverBnxt || st.DCBX == nil || *st.DCBX&dcb.DCBXHost == 0 {
		return
	}
	if st.ETS != nil && !s.etsSet[name] {
		st.ETS = &dcb.ETS{ETSCap: st.ETS.ETSCap}
	}
	if st.PFC != nil && !s.pfcSet[name] {
		st.PFC = &dcb.PFC{Cap: st.PFC.Cap}
	}
}

// mlx5MaxCableLen is MLX5E_MAX_CABLE_LENGTH: delay must be below it.
const mlx5MaxCableLen = 1000

func (s *Sim) SetPFC(name string, pfc dcb.PFC) error {
	return s.dcbWrite(snapshot.OpSetPFC, name, func(ls *snapshot.LinkState, d *dcb.State) error {
		if d.PFC == nil {
			return nil // dcbnl skips a driver without ieee_setpfc
		}
		switch driverOf(ls) {
		case snapshot.DriverMLX5:
			return s.mlx5SetPFC(name, ls, d, pfc)
		case snapshot.DriverBnxt:
			if !bnxtHostIEEE(d) {
				return syscall.EINVAL // bnxt_dcbnl_ieee_setpfc
			}
			if !s.bnxtETSSet(name) {
				return syscall.EINVAL // bnxt_hwrm_queue_pfc_cfg: no bp->ieee_ets
			}
			if err := s.bnxtPFCConfig(name, d, pfc.Enable); err != nil {
				return err
			}
			// bnxt_dcbnl_ieee_setpfc keeps the request whole (memcpy to
			// bp->ieee_pfc), which getpfc reports: not what the firmware
			// took.
			d.PFC.Enable, d.PFC.MBC, d.PFC.Delay = pfc.Enable, pfc.MBC, pfc.Delay
			s.pfcSet[name] = true // bp->ieee_pfc
		default:
			d.PFC.Enable, d.PFC.MBC, d.PFC.Delay = pfc.Enable, pfc.MBC, pfc.Delay
		}
		return nil
	})
}

func (s *Sim) SetBuffer(name string, buf dcb.Buffer) error {
	return s.dcbWrite(snapshot.OpSetBuffer, name, func(ls *snapshot.LinkState, d *dcb.State) error {
		for _, b := range buf.PrioBuffer {
			if b >= dcb.NumTCs {
				return syscall.EINVAL // dcbnl
			}
		}
		if d.Buffer == nil {
			return nil // dcbnl skips a driver without dcbnl_setbuffer
		}
		if driverOf(ls) == snapshot.DriverMLX5 {
			return s.mlx5SetBuffer(name, ls, d, buf)
		}
		var total uint64
		for _, sz := range buf.Size {
			total += uint64(sz)
		}
		if d.Buffer.TotalSize > 0 && total > uint64(d.Buffer.TotalSize) {
			return syscall.EINVAL // port buffer overcommitted
		}
		d.Buffer.PrioBuffer, d.Buffer.Size = buf.PrioBuffer, buf.Size
		return nil
	})
}

// mlx5MaxDSCP is MLX5E_MAX_DSCP.
const mlx5MaxDSCP = 64

func validSelector(sel uint8) bool {
	return (sel >= dcb.SelEthertype && sel <= dcb.SelDSCP) || sel == dcb.SelPCP
}

func (s *Sim) AddApps(name string, apps []dcb.App) error {
	return s.dcbWrite(snapshot.OpAddApps, name, func(ls *snapshot.LinkState, d *dcb.State) error {
		drv := driverOf(ls)
		mlx5 := drv == snapshot.DriverMLX5
		hw := s.hwDSCP(name, ls)
		for _, a := range apps {
			if !validSelector(a.Selector) {
				return syscall.EINVAL // dcbnl: attr/selector pairing
			}
			if mlx5 {
				if a.Selector != dcb.SelDSCP || a.Protocol >= mlx5MaxDSCP {
					return syscall.EINVAL
				}
				// mlx5e_dcbnl_ieee_setapp deletes the DSCP's old entry.
				d.Apps = slices.DeleteFunc(d.Apps, func(o dcb.App) bool {
					return o.Selector == a.Selector && o.Protocol == a.Protocol
				})
			} else if slices.Contains(d.Apps, a) {
				return syscall.EEXIST // dcb_ieee_setapp
			}
			d.Apps = append(d.Apps, a)
			sortApps(d.Apps)
			if a.Selector == dcb.SelDSCP && (mlx5 || drv == snapshot.DriverBnxt) {
				// mlx5e_set_dscp2prio; bnxt_hwrm_queue_dscp2pri_cfg(add)
				hw[int(a.Protocol)] = int(a.Priority)
			}
		}
		return nil
	})
}

func (s *Sim) DelApps(name string, apps []dcb.App) error {
	return s.dcbWrite(snapshot.OpDelApps, name, func(ls *snapshot.LinkState, d *dcb.State) error {
		drv := driverOf(ls)
		mlx5 := drv == snapshot.DriverMLX5
		hw := s.hwDSCP(name, ls)
		for _, a := range apps {
			if mlx5 && (a.Selector != dcb.SelDSCP || a.Protocol >= mlx5MaxDSCP) {
				return syscall.EINVAL
			}
			if mlx5 && hw[int(a.Protocol)] != int(a.Priority) {
				return syscall.ENOENT // "Check if the entry matches fw setting"
			}
			i := slices.Index(d.Apps, a)
			if i < 0 {
				return syscall.ENOENT
			}
			d.Apps = slices.Delete(d.Apps, i, i+1)
			switch {
			case mlx5:
				hw[int(a.Protocol)] = 0 // "Reset the priority mapping back to zero"
			case drv == snapshot.DriverBnxt && a.Selector == dcb.SelDSCP:
				delete(hw, int(a.Protocol)) // dscp2pri_cfg(add=false): mask 0
			}
		}
		if len(d.Apps) == 0 {
			d.Apps = nil
		}
		return nil
	})
}

// sortApps keeps the simulated APP table in one order so State() compares
// and serialises deterministically.
func sortApps(apps []dcb.App) {
	slices.SortFunc(apps, func(a, b dcb.App) int {
		return cmp.Or(cmp.Compare(a.Selector, b.Selector), cmp.Compare(a.Protocol, b.Protocol), cmp.Compare(a.Priority, b.Priority))
	})
}
