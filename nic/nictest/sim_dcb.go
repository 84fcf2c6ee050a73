package nictest

import (
	"syscall"

	"github.com/rocectl/rocectl/nic/dcb"
	"github.com/rocectl/rocectl/nic/snapshot"
)

// dcbnl writes. The Sim checks what dcbnl checks before a driver op is
// reached (net/dcb/dcbnl.c) and hands the rest to the link's DriverModel:
// dcbnl's own rules are simstate.Generic's, each driver's its model
// package's (mlx5sim for en_dcbnl.c, bnxtsim for bnxt_dcb.c).

// dcbWrite runs fn on the link's DCB state; a link without dcbnl_ops
// (veth, lo, or a DCB op recorded as failing) answers like the kernel.
func (s *Sim) dcbWrite(op, name string, fn func(m DriverModel, ls *snapshot.LinkState, d *dcb.State) error) error {
	return s.write(op, name, func(ls *snapshot.LinkState) error {
		if _, err := s.r.DCB(name); err != nil {
			return err // no dcbnl_ops, or a recorded failure
		}
		return fn(s.modelOf(name, ls), ls, ls.DCB)
	})
}

func (s *Sim) SetDCBX(name string, mode uint8) error {
	return s.dcbWrite(snapshot.OpSetDCBX, name, func(m DriverModel, ls *snapshot.LinkState, d *dcb.State) error {
		if d.DCBX == nil {
			return syscall.EOPNOTSUPP // no ops->setdcbx
		}
		return m.SetDCBX(s.link(name, ls), d, mode)
	})
}

func (s *Sim) SetETS(name string, ets dcb.ETS) error {
	return s.dcbWrite(snapshot.OpSetETS, name, func(m DriverModel, ls *snapshot.LinkState, d *dcb.State) error {
		return m.SetETS(s.link(name, ls), d, ets)
	})
}

func (s *Sim) SetPFC(name string, pfc dcb.PFC) error {
	return s.dcbWrite(snapshot.OpSetPFC, name, func(m DriverModel, ls *snapshot.LinkState, d *dcb.State) error {
		if d.PFC == nil {
			return nil // dcbnl skips a driver without ieee_setpfc
		}
		return m.SetPFC(s.link(name, ls), d, pfc)
	})
}

func (s *Sim) SetBuffer(name string, buf dcb.Buffer) error {
	return s.dcbWrite(snapshot.OpSetBuffer, name, func(m DriverModel, ls *snapshot.LinkState, d *dcb.State) error {
		for _, b := range buf.PrioBuffer {
			if b >= dcb.NumTCs {
				return syscall.EINVAL // dcbnl
			}
		}
		if d.Buffer == nil {
			return nil // dcbnl skips a driver without dcbnl_setbuffer
		}
		return m.SetBuffer(s.link(name, ls), d, buf)
	})
}

func (s *Sim) AddApps(name string, apps []dcb.App) error {
	return s.dcbWrite(snapshot.OpAddApps, name, func(m DriverModel, ls *snapshot.LinkState, d *dcb.State) error {
		s.hwDSCP(name, ls) // what the hardware held before the write
		return m.AddApps(s.link(name, ls), d, apps)
	})
}

func (s *Sim) DelApps(name string, apps []dcb.App) error {
	return s.dcbWrite(snapshot.OpDelApps, name, func(m DriverModel, ls *snapshot.LinkState, d *dcb.State) error {
		s.hwDSCP(name, ls) // what the hardware held before the write
		return m.DelApps(s.link(name, ls), d, apps)
	})
}
