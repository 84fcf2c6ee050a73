package simstate

import (
	"github.com/rocectl/rocectl/nic/dcb"
	"github.com/rocectl/rocectl/nic/snapshot"
)

// Link is what a driver model sees of one link during a write or a read:
// its kernel state and the part of the Sim's state that is the kernel's
// or the NIC's rather than one driver's. Methods are called with the
// Sim's lock held.
type Link interface {
	// Name is the netdev.
	Name() string
	// State is the link's kernel state, which the write changes.
	State() *snapshot.LinkState
	// HardwareDSCP is the DSCP → priority table the NIC classifies by
	// (mlx5's firmware dscp2prio, bnxt's HWRM dscp2pri), made from the
	// APP table on first use; a model changes it in place.
	HardwareDSCP() map[int]int
	// ToggleLink takes the link down and up: counted (Sim.LinkToggles),
	// and a link that was up trains for the next Speed reads.
	ToggleLink()
	// Speed is the speed in Mb/s a driver finds now (PTYS's operational
	// protocol): 0 while the link trains after a toggle or is not up,
	// else what Sim.SetSpeed set (100000 by default).
	Speed() int
}

// Model is one driver's behaviour on the writes whose outcome depends on
// the driver. The Sim has already checked what the kernel checks before
// the driver is reached (the link exists, has the object, has dcbnl ops;
// for SetPFC and SetBuffer that the driver reports the object, for
// SetBuffer that prio2buffer is below 8, for SetDCBX that it reports a
// DCBX mode); d is l.State().DCB. Errors are bare errnos.
//
// A Sim makes one Model per link, by the link's driver name, and keeps it:
// a model may hold what its driver holds and no read shows.
type Model interface {
	// RefusePause is the driver's set_pauseparam refusal of a pause
	// write, before the kernel stores it; AfterPause runs after it
	// stored it.
	RefusePause(l Link, autoneg bool) error
	AfterPause(l Link)
	// SetPrivFlags is the driver's set_priv_flags for the named flags
	// (only names the driver has), before the kernel state holds them:
	// it may refuse, or change what the flags drive.
	SetPrivFlags(l Link, flags map[string]bool) error
	// Tunable is what the driver programs, and a read returns, for a
	// valid PFC storm prevention timeout of ms.
	Tunable(ms uint16) uint16
	// ReadDCB changes st, a copy of the link's dcbnl state read back, to
	// what the driver's get ops report.
	ReadDCB(l Link, st *dcb.State)

	SetDCBX(l Link, d *dcb.State, mode uint8) error
	SetETS(l Link, d *dcb.State, ets dcb.ETS) error
	SetPFC(l Link, d *dcb.State, pfc dcb.PFC) error
	SetBuffer(l Link, d *dcb.State, buf dcb.Buffer) error
	AddApps(l Link, d *dcb.State, apps []dcb.App) error
	DelApps(l Link, d *dcb.State, apps []dcb.App) error
}
