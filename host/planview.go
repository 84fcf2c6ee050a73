package host

import (
	"errors"

	"github.com/rocectl/rocectl/driver"
	"github.com/rocectl/rocectl/nic"
	"github.com/rocectl/rocectl/nic/dcb"
	"github.com/rocectl/rocectl/plan"
	"github.com/rocectl/rocectl/policy"
	"github.com/rocectl/rocectl/port"
)

// PlanView is the host as package plan reads it (plan.Host), through one
// reader per netdev for the whole plan: a plan reads each port's DCB
// state, ECN interface and the like once, as an observation does. It
// lives as long as one plan; a plan after writes takes a new one.
type PlanView struct {
	h       *Host
	readers portReaders
}

var _ plan.Host = (*PlanView)(nil)

// ForPlan is a fresh view of h for one plan.
func (h *Host) ForPlan() *PlanView { return &PlanView{h: h, readers: h.readers()} }

// Read reads s through its port's reader, keeping no notes.
func (v *PlanView) Read(s policy.Setting) (string, bool, error) {
	if s.Port == nil {
		return v.h.newPortReader(nil, "").read(s, nil)
	}
	return v.readers.of(s.Port).read(s, nil)
}

// Facts is what p's driver layer may ask, read through p's reader.
func (v *PlanView) Facts(p *port.Port) driver.Facts { return v.readers.of(p).facts() }

// DCB is the kernel's dcbnl state of netdev, read afresh: with the
// members a snapshot did not capture named, and nil in it.
func (v *PlanView) DCB(netdev string) (*dcb.State, []string, error) {
	st, err := v.h.K.DCB(netdev)
	var nc *nic.NotCapturedError
	if errors.As(err, &nc) && len(nc.Parts) > 0 && st != nil {
		return st, nc.Parts, nil
	}
	return st, nil, err
}

// DCBX is p's DCBX mode as an observation reads it (a snapshot that did
// not capture it answers not ok).
func (v *PlanView) DCBX(p *port.Port) (uint8, bool) {
	st, err := v.h.newPortReader(p, "").dcbPart("dcbx")
	if err != nil || st.DCBX == nil {
		return 0, false
	}
	return *st.DCBX, true
}

// Link is netdev's MTU, max MTU and operational state.
func (v *PlanView) Link(netdev string) (plan.Link, error) {
	li, err := v.h.K.Link(netdev)
	if err != nil {
		return plan.Link{}, err
	}
	return plan.Link{MTU: li.MTU, MaxMTU: li.MaxMTU, OperState: li.OperState}, nil
}

// Speed is netdev's link speed from sysfs, in Mb/s, 0 when unknown.
func (v *PlanView) Speed(netdev string) int { return v.h.linkSpeed(netdev) }

// GlobalPause says whether rx or tx 802.3x pause is on.
func (v *PlanView) GlobalPause(netdev string) (bool, error) {
	pa, err := v.h.K.Pause(netdev)
	return pa.Rx || pa.Tx, err
}
