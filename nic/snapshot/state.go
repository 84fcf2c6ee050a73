package snapshot

import (
	"github.com/rocectl/rocectl/nic"
	"github.com/rocectl/rocectl/nic/dcb"
)

// Format is the value of Meta.Format this package writes and accepts.
const Format = "rocectl-snapshot/1"

// File names inside a snapshot directory.
const (
	MetaFile   = "snapshot.json"
	KernelFile = "kernel.json"
	SysDir     = "sys" // host /sys is DIR/sys
)

// Meta is snapshot.json.
type Meta struct {
	Format         string `json:"format"`
	CapturedAt     string `json:"captured_at"` // RFC 3339
	Hostname       string `json:"hostname"`
	Kernel         string `json:"kernel"` // uname -r
	RocectlVersion string `json:"rocectl_version"`
	Source         string `json:"source"` // free text: where the data came from
	// Unreadable lists host paths that failed to read at capture time, as
	// "PATH: ERRNO" (e.g. "/sys/class/infiniband/mlx5_0/ports/1/gid_attrs/types/7: EINVAL"),
	// sorted. Such files are absent from sys/.
	Unreadable []string `json:"unreadable"`
	// NotCaptured lists host paths (e.g. "/sys/class/net/eth0/ecn") under
	// which the snapshot holds no files because nobody captured them,
	// as a snapshot imported from text dumps says: a setting read there
	// is unknown, not unsupported. Sorted.
	NotCaptured []string `json:"not_captured,omitempty"`
}

// KernelState is kernel.json: what came from netlink and ioctls.
type KernelState struct {
	Links   map[string]*LinkState         `json:"links"`             // by netdev name
	Devlink map[string][]nic.DevlinkParam `json:"devlink,omitempty"` // by "pci/<bdf>"
	// Firmware holds, by PCI address (0000:3b:00.0), the text of an
	// `mstconfig -e -d <pci> q` (or mlxconfig q) of the device: its
	// NVConfig with default, current and next-boot values, parsed by
	// nic/nvconfig when read. A device without one was not captured.
	Firmware map[string]string `json:"firmware,omitempty"`
	// Errors records failures that are not tied to one link, by op
	// ("devlink"), as errno names ("EOPNOTSUPP").
	Errors map[string]string `json:"errors,omitempty"`
	// NotCaptured lists the ops not tied to one link ("devlink") that
	// nobody asked the host about: unknown, not refused.
	NotCaptured []string `json:"not_captured,omitempty"`
	// RDMA is the kernel's RDMA netlink view of the host's RDMA device
	// ports, when the capture had one; nil when the host's discovery
	// read sysfs (Errors[OpRDMANetlink] then holds the errno, if the
	// socket or a dump failed with one). Discovery of the snapshot uses
	// the same view as discovery of the host did.
	RDMA *RDMAState `json:"rdma,omitempty"`
}

// RDMAState is what RDMA netlink said: every device port, with its state
// and netdev (`rdma link show`).
type RDMAState struct {
	Links []nic.RDMALink `json:"links"`
}

// LinkState is one netdev in kernel.json. A nil member means "no data";
// the op then fails with the errno in Errors, with nic.ErrNotCaptured when
// NotCaptured lists it, or EOPNOTSUPP when neither does (what a full
// capture means by a missing member).
type LinkState struct {
	Link                 *nic.LinkInfo     `json:"link,omitempty"`
	Driver               *nic.DriverInfo   `json:"driver,omitempty"`
	Pause                *nic.Pause        `json:"pause,omitempty"`
	Rings                *nic.Rings        `json:"rings,omitempty"`
	PrivFlags            map[string]bool   `json:"priv_flags,omitempty"`
	Stats                map[string]uint64 `json:"stats,omitempty"`
	PFCPreventionTimeout *uint16           `json:"pfc_prevention_tout,omitempty"`
	DCB                  *dcb.State        `json:"dcb,omitempty"`
	// Errors maps an op (OpLink, OpPause, ...) to the errno name it failed
	// with at capture time.
	Errors map[string]string `json:"errors,omitempty"`
	// NotCaptured lists the ops (and DCB members, "dcb.apps", ...) whose
	// data the snapshot does not have because nobody captured it, e.g.
	// a snapshot imported from a few text dumps. Reading them answers
	// nic.ErrNotCaptured: the value is unknown, not unsupported.
	NotCaptured []string `json:"not_captured,omitempty"`
	// Inferred holds, by op, what the snapshot's other data implies about
	// an op it does not hold (an import's `ethtool -S` counters about the
	// pause setting). It is no value: reading the op still answers
	// nic.ErrNotCaptured, which carries the inference so that audit can
	// show it, labelled as such.
	Inferred map[string]*Inference `json:"inferred,omitempty"`
}

// Inference is what a snapshot's data implies about an op it lacks.
type Inference struct {
	// Value is the conclusion the data supports ("in use"); Note a weaker
	// observation that is no value ("was used at some time"). One of the
	// two is set.
	Value string `json:"value,omitempty"`
	Note  string `json:"note,omitempty"`
	// From lists where the data came from, in order ("a.txt:37").
	From []string `json:"from"`
}

// Read operations: the keys of LinkState.Errors and KernelState.Errors.
const (
	OpLink      = "link"
	OpDriver    = "driver"
	OpPause     = "pause"
	OpRings     = "rings"
	OpPrivFlags = "privflags"
	OpStats     = "stats"
	OpTunable   = "tunable"
	OpDCB       = "dcb"
	OpDevlink   = "devlink"
	// OpRDMANetlink is the RDMA netlink port dump (KernelState.RDMA).
	OpRDMANetlink = "rdma_netlink"
)

// DCB members a snapshot may hold without the others: "dcb." + the
// member's JSON name is a NotCaptured entry.
const (
	DCBPartETS      = "ets"
	DCBPartPFC      = "pfc"
	DCBPartApps     = "apps"
	DCBPartBuffer   = "buffer"
	DCBPartMaxrate  = "maxrate"
	DCBPartAppTrust = "app_trust"
	DCBPartDCBX     = "dcbx"
)

// DCBParts lists every DCB member, in dcb.State order.
var DCBParts = []string{DCBPartETS, DCBPartPFC, DCBPartApps, DCBPartBuffer, DCBPartMaxrate, DCBPartAppTrust, DCBPartDCBX}

// ReadOps lists the per-link read ops, in kernel.json order.
var ReadOps = []string{OpLink, OpDriver, OpPause, OpRings, OpPrivFlags, OpStats, OpTunable, OpDCB}

// Write operations, as kernel.json names them: the Op of a refused write's
// *OpError (ErrReadOnly from a snapshot), and the ops the test simulator
// (nic/nictest) logs.
const (
	OpSetMTU          = "set_mtu"
	OpSetPause        = "set_pause"
	OpSetRings        = "set_rings"
	OpSetPrivFlags    = "set_privflags"
	OpSetTunable      = "set_tunable"
	OpSetDCBX         = "set_dcbx"
	OpSetETS          = "set_ets"
	OpSetPFC          = "set_pfc"
	OpSetBuffer       = "set_buffer"
	OpAddApps         = "add_apps"
	OpDelApps         = "del_apps"
	OpSetDevlinkParam = "set_devlink_param"
)

// Driver names (DriverInfo.Driver) whose behaviour the fixture hosts and
// the test simulator (nic/nictest) model.
const (
	DriverMLX5  = "mlx5_core"
	DriverBnxt  = "bnxt_en"
	DriverQede  = "qede"  // QLogic FastLinQ: the peer's DCBX through dcbnl (nic/nictest/peersim)
	DriverCxgb4 = "cxgb4" // Chelsio T4-T6: likewise
)
