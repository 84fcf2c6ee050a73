package simstate

import (
	"cmp"
	"slices"
	"syscall"

	"github.com/rocectl/rocectl/nic/dcb"
)

// Generic is the model of a driver that adds nothing to the kernel's own
// rules (net/dcb/dcbnl.c, ethtool core): what a write asks is what a read
// returns. The Sim uses it for any driver without a model of its own; the
// other models embed it and call it for what their driver leaves to
// dcbnl.
type Generic struct{}

var _ Model = Generic{}

// RefusePause refuses nothing.
func (Generic) RefusePause(Link, bool) error { return nil }

// AfterPause does nothing.
func (Generic) AfterPause(Link) {}

// SetPrivFlags takes any flag the driver has and changes nothing else.
func (Generic) SetPrivFlags(Link, map[string]bool) error { return nil }

// Tunable keeps ms.
func (Generic) Tunable(ms uint16) uint16 { return ms }

// ReadDCB reports the state as it is.
func (Generic) ReadDCB(Link, *dcb.State) {}

// SetDCBX: LLD_MANAGED or a mode without HOST fails (the driver answers
// 1, refused, not an errno; EINVAL stands in); any other mode is stored.
func (Generic) SetDCBX(_ Link, d *dcb.State, mode uint8) error {
	if mode&dcb.DCBXLLDManaged != 0 || mode&dcb.DCBXHost == 0 {
		return syscall.EINVAL
	}
	*d.DCBX = mode
	return nil
}

// CheckETS is dcbnl's check of an ETS write: EINVAL for prio_tc >= 8, ETS
// bandwidths not summing to 100 when any TC is ETS, or bandwidth on a
// non-ETS TC (newer kernels).
func CheckETS(ets dcb.ETS) error {
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
	return nil
}

// SetETS checks ets (CheckETS) and stores it, ets_cap staying the
// driver's; a driver that reports no ETS ignores it (dcbnl skips a
// driver without ieee_setets).
func (Generic) SetETS(_ Link, d *dcb.State, ets dcb.ETS) error {
	if err := CheckETS(ets); err != nil {
		return err
	}
	if d.ETS == nil {
		return nil
	}
	next := ets
	next.ETSCap = d.ETS.ETSCap // reported by the driver, not set
	*d.ETS = next
	return nil
}

// SetPFC stores pfc_en, mbc and delay (pfc_cap is the driver's).
func (Generic) SetPFC(_ Link, d *dcb.State, pfc dcb.PFC) error {
	d.PFC.Enable, d.PFC.MBC, d.PFC.Delay = pfc.Enable, pfc.MBC, pfc.Delay
	return nil
}

// SetBuffer: EINVAL for sizes over the port buffer's total; else the map
// and sizes are stored.
func (Generic) SetBuffer(_ Link, d *dcb.State, buf dcb.Buffer) error {
	var total uint64
	for _, sz := range buf.Size {
		total += uint64(sz)
	}
	if d.Buffer.TotalSize > 0 && total > uint64(d.Buffer.TotalSize) {
		return syscall.EINVAL // port buffer overcommitted
	}
	d.Buffer.PrioBuffer, d.Buffer.Size = buf.PrioBuffer, buf.Size
	return nil
}

// ValidSelector is dcbnl's attr/selector pairing check.
func ValidSelector(sel uint8) bool {
	return (sel >= dcb.SelEthertype && sel <= dcb.SelDSCP) || sel == dcb.SelPCP
}

// AddApps adds the entries in order (dcb_ieee_setapp): an invalid
// selector is EINVAL, an exact duplicate EEXIST; the first failure stops
// the rest, earlier ones staying applied.
func (Generic) AddApps(_ Link, d *dcb.State, apps []dcb.App) error {
	for _, a := range apps {
		if !ValidSelector(a.Selector) {
			return syscall.EINVAL // dcbnl: attr/selector pairing
		}
		if slices.Contains(d.Apps, a) {
			return syscall.EEXIST // dcb_ieee_setapp
		}
		d.Apps = append(d.Apps, a)
		SortApps(d.Apps)
	}
	return nil
}

// DelApps deletes the entries in order: exact match or ENOENT.
func (Generic) DelApps(_ Link, d *dcb.State, apps []dcb.App) error {
	for _, a := range apps {
		if err := DeleteApp(d, a); err != nil {
			return err
		}
	}
	TidyApps(d)
	return nil
}

// DeleteApp deletes the APP entry a, exactly matched, or is ENOENT.
func DeleteApp(d *dcb.State, a dcb.App) error {
	i := slices.Index(d.Apps, a)
	if i < 0 {
		return syscall.ENOENT
	}
	d.Apps = slices.Delete(d.Apps, i, i+1)
	return nil
}

// TidyApps makes an APP table left empty by a delete nil, as a read of
// it would be.
func TidyApps(d *dcb.State) {
	if len(d.Apps) == 0 {
		d.Apps = nil
	}
}

// SortApps keeps the simulated APP table in one order so that states
// compare and serialise deterministically.
func SortApps(apps []dcb.App) {
	slices.SortFunc(apps, func(a, b dcb.App) int {
		return cmp.Or(cmp.Compare(a.Selector, b.Selector), cmp.Compare(a.Protocol, b.Protocol), cmp.Compare(a.Priority, b.Priority))
	})
}
