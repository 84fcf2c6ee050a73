package nic

import (
	"github.com/rocectl/rocectl/nic/dcb"
)

// Kernel is everything rocectl asks the kernel that is not a file under
// /sys: rtnetlink, dcbnl, ethtool ioctls and devlink. It is the one seam where
// tests replace the kernel: the live implementation talks to the running
// kernel (in the caller's network namespace), the snapshot implementation
// answers from a capture, and the simulated one (tests, benchmarks) keeps
// state in memory.
//
// Errors keep the kernel's errno so that callers can test them with
// errors.Is(err, syscall.EOPNOTSUPP) and friends.
type Kernel interface {
	// rtnetlink
	Link(ifname string) (LinkInfo, error)
	SetMTU(ifname string, mtu int) error

	// ethtool ioctls
	DriverInfo(ifname string) (DriverInfo, error)
	Pause(ifname string) (Pause, error)
	SetPause(ifname string, p Pause) error
	Rings(ifname string) (Rings, error)
	SetRings(ifname string, r Rings) error
	PrivFlags(ifname string) (map[string]bool, error)
	SetPrivFlags(ifname string, flags map[string]bool) error
	Stats(ifname string) (map[string]uint64, error)
	// Speed is the link's speed in Mb/s (ETHTOOL_GLINKSETTINGS), 0 when
	// the driver does not know it: no carrier, or a link still training.
	Speed(ifname string) (int, error)
	// PFCPreventionTimeout is the ETHTOOL_PFC_PREVENTION_TOUT tunable in
	// milliseconds: 0 off, 0xffff auto, else 80..8000.
	PFCPreventionTimeout(ifname string) (uint16, error)
	SetPFCPreventionTimeout(ifname string, ms uint16) error

	// dcbnl
	DCB(ifname string) (*dcb.State, error)
	SetDCBX(ifname string, mode uint8) error
	SetETS(ifname string, ets dcb.ETS) error
	SetPFC(ifname string, pfc dcb.PFC) error
	SetBuffer(ifname string, buf dcb.Buffer) error
	AddApps(ifname string, apps []dcb.App) error
	DelApps(ifname string, apps []dcb.App) error

	// devlink; dev is "bus/name", e.g. "pci/0000:3b:00.0"
	DevlinkParams(dev string) ([]DevlinkParam, error)
	SetDevlinkParam(dev, name string, cmode uint8, value any) error
}

// LinkInfo is what rtnetlink says about a netdev.
type LinkInfo struct {
	Index     int    `json:"index"`
	MTU       int    `json:"mtu"`
	MinMTU    int    `json:"min_mtu,omitempty"`
	MaxMTU    int    `json:"max_mtu,omitempty"`
	OperState string `json:"operstate"` // "up", "down", "unknown", ...
	AdminUp   bool   `json:"admin_up"`
	MAC       string `json:"mac,omitempty"`
}

// DriverInfo is ETHTOOL_GDRVINFO.
type DriverInfo struct {
	Driver   string `json:"driver"`
	Version  string `json:"version,omitempty"`
	Firmware string `json:"firmware,omitempty"`
	BusInfo  string `json:"bus_info,omitempty"`
}

// Pause is ETHTOOL_GPAUSEPARAM: global 802.3x pause.
type Pause struct {
	Autoneg bool `json:"autoneg"`
	Rx      bool `json:"rx"`
	Tx      bool `json:"tx"`
}

// Rings is ETHTOOL_GRINGPARAM.
type Rings struct {
	Rx    uint32 `json:"rx"`
	Tx    uint32 `json:"tx"`
	RxMax uint32 `json:"rx_max"`
	TxMax uint32 `json:"tx_max"`
}

// Devlink parameter configuration modes (DEVLINK_PARAM_CMODE_*).
const (
	CmodeRuntime    uint8 = 0
	CmodeDriverinit uint8 = 1
	CmodePermanent  uint8 = 2
)

// DevlinkParam is one devlink device parameter with its value per cmode.
type DevlinkParam struct {
	Name    string              `json:"name"`
	Generic bool                `json:"generic"`
	Type    string              `json:"type"` // "u8", "u16", "u32", "string", "bool"
	Values  []DevlinkParamValue `json:"values"`
}

// DevlinkParamValue is a parameter's value in one configuration mode.
type DevlinkParamValue struct {
	Cmode uint8 `json:"cmode"`
	Value any   `json:"value"`
}
