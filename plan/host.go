package plan

import (
	"github.com/rocectl/rocectl/driver"
	"github.com/rocectl/rocectl/nic/dcb"
	"github.com/rocectl/rocectl/policy"
	"github.com/rocectl/rocectl/port"
)

// Host is what planning reads of the host beyond the observed values:
// the before-values of the settings a driver changes by itself, and the
// state its checks depend on. package host implements it (Host.ForPlan);
// tests may give their own. Every read happens before the first write:
// a plan describes the host as it is.
type Host interface {
	// Read reads s as an observation would: its canonical value, whether
	// the host has one at all, or why it cannot be read.
	Read(s policy.Setting) (v string, present bool, err error)
	// Facts is what p's driver layer may ask of the host.
	Facts(p *port.Port) driver.Facts
	// DCB is netdev's dcbnl state. When a snapshot captured only some
	// of its members, it is what was captured (the others nil), named in
	// missing (snapshot.DCBParts' names); err is for a state of which
	// nothing can be read.
	DCB(netdev string) (st *dcb.State, missing []string, err error)
	// DCBX is p's dcbnl DCBX mode; ok is false when it cannot be read.
	DCBX(p *port.Port) (mode uint8, ok bool)
	// Link is netdev's MTU, largest MTU and operational state.
	Link(netdev string) (Link, error)
	// Speed is netdev's link speed in Mb/s, 0 when unknown.
	Speed(netdev string) int
	// GlobalPause says whether rx or tx 802.3x pause is on.
	GlobalPause(netdev string) (on bool, err error)
}

// Link is what planning needs of a netdev's link.
type Link struct {
	MTU, MaxMTU int    // MaxMTU 0: unknown
	OperState   string // IFLA_OPERSTATE: "up", "down", ...
}
