package policy

import "time"

// Profile is a loaded, validated profile: what the operator wants every
// matched RoCE port of a host to look like. Optional values are pointers (or
// nil maps) so that "not set" differs from zero: only what a profile sets is
// compared and changed.
type Profile struct {
	Name        string
	Description string
	Files       []string // the profile file first, then every included file, as loaded
	Hash        string   // of every file's bytes as parsed: journals name the exact profile

	Match   Match
	Link    Link
	QoS     QoS
	Buffers Buffers
	ECN     ECN
	RoCE    RoCE
	Devlink []DevlinkParam
	NCCL    NCCL
	Classes []Class // [classes.<name>], in profile order (classes.go)
	Verify  VerifySpec
	Guard   GuardSpec

	// Warnings found while validating; errors never reach a Profile.
	Warnings Diagnostics

	pos map[string]Pos // dotted key -> where it was set, for later messages
	// failed: the keys the decoder reported errors for, so that the
	// cross-field rules skip a default standing in for a broken value.
	failed []string
}

// NeedsGID reports whether resolving or verifying the profile needs each
// port's RoCE v2 GID index: NCCL_IB_GID_INDEX = "auto" in an NCCL file
// rocectl writes, or verbs traffic. Without [nccl] write the derived value
// is only printed by `rocectl nccl-env`, which scans the GIDs itself; audit
// and apply then skip the scan (three reads per GID entry, and a port has
// one entry per address).
func (p *Profile) NeedsGID() bool {
	v, _ := p.NCCL.Var("IB_GID_INDEX")
	return (v == "auto" && p.NCCL.Write != nil) || p.Verify.Loopback
}

// PosOf returns where key was set ("qos.pfc_priorities"), if known.
func (p *Profile) PosOf(key string) (Pos, bool) {
	pos, ok := p.pos[key]
	return pos, ok
}

// Match selects the ports a profile applies to. Each list is a set of shell
// globs; every list that is given must match (empty lists match anything).
type Match struct {
	Drivers     []string
	Netdevs     []string
	RDMADevices []string
	PCI         []string
	// Roles selects by the port's place in the topology: "pf", "vf",
	// "bond" (a RoCE LAG), "virtual" (rxe on a veth). Naming "vf" is also
	// what lets a profile configure VFs at all (host.Place).
	Roles []string
}

// Link holds netdev-level settings.
type Link struct {
	MTU          *int
	RxRing       *int
	TxRing       *int
	PrivateFlags []Flag // in profile order
}

// Flag is one ethtool private flag.
type Flag struct {
	Name  string
	Value bool
}

// QoS holds the DCB settings: trust, DSCP map, PFC, ETS and friends.
type QoS struct {
	DCBX               *string // "host" | "firmware"
	Trust              *string // "pcp" | "dscp"
	DSCPToPriority     *DSCPMap
	PFCPriorities      *PrioSet
	GlobalPause        *bool
	PFCStormPrevention *StormPrevention
	CableLengthM       *int
	ETS                *ETS
}

// DSCPMap is qos.dscp_to_priority: "default" (priority = DSCP >> 3, the
// firmware's map) or an explicit table.
type DSCPMap struct {
	Default bool
	Entries map[int]int // DSCP -> priority; every DSCP 0..63 when Default
}

// Priority returns the priority a DSCP maps to, and whether the map says.
func (m *DSCPMap) Priority(dscp int) (int, bool) {
	if m == nil {
		return 0, false
	}
	p, ok := m.Entries[dscp]
	return p, ok
}

// PrioSet is a set of priorities 0..7 kept as a bitmap, bit p = priority p.
type PrioSet uint8

// Has reports whether priority p is in the set.
func (s PrioSet) Has(p int) bool { return p >= 0 && p < 8 && s&(1<<p) != 0 }

// List returns the priorities in ascending order.
func (s PrioSet) List() []int {
	var out []int
	for p := 0; p < 8; p++ {
		if s.Has(p) {
			out = append(out, p)
		}
	}
	return out
}

// StormPrevention is the mlx5 pfc-prevention-tout tunable: Off, Auto, or a
// timeout in milliseconds (80..8000).
type StormPrevention struct {
	Auto bool
	Off  bool
	MS   int
}

// ETS is [qos.ets]: the full priority→TC map and per-TC scheduling.
type ETS struct {
	PriorityToTC [8]int
	TCTSA        [8]string // "strict" | "ets" | "vendor" | "cbs"
	TCBandwidth  [8]int    // percent; sums to 100 over ETS TCs, 0 elsewhere
}

// Buffers is [buffers]: mlx5 manual receive buffer configuration.
type Buffers struct {
	PriorityToBuffer *[8]int
	BufferSize       *[8]Size
}

// ECN is [ecn]: per-priority ECN reaction/notification points, the CNP
// marking and the DCQCN parameters.
type ECN struct {
	// Mode is the congestion-control mode (CCModes): nil leaves the
	// algorithm alone, as profiles did before the key.
	Mode         *string
	RPPriorities *PrioSet
	NPPriorities *PrioSet
	CNPDSCP      *int
	CNPPriority  *int
	DCQCN        []DCQCNParam // in profile order
}

// The congestion-control modes a profile can ask for ([ecn] mode):
// DCQCN (ECN marking answered by CNPs and rate limiting, what mlx5 and
// bnxt_re run by default), off (PFC-only: no ECN reaction or
// notification on the lossless priorities; large AI fabrics run so), and
// the vendor algorithms irdma offers (DCTCP, TIMELY). Which a port can
// take is its driver's (driver.Driver.CCModes), checked at plan time.
const (
	CCDCQCN  = "dcqcn"
	CCOff    = "off"
	CCDCTCP  = "dctcp"
	CCTimely = "timely"
)

// CCModes are the values [ecn] mode takes.
var CCModes = []string{CCDCQCN, CCOff, CCDCTCP, CCTimely}

// DCQCNParam is one congestion-control parameter by its mlx5 (OFED sysfs)
// name, e.g. rpg_min_dec_fac.
type DCQCNParam struct {
	Name  string
	Value int64
}

// RoCE is [roce]: rdma_cm defaults and the verbs traffic class.
type RoCE struct {
	Mode              *string // "v1" | "v2"
	DefaultTOS        *int
	VerbsTrafficClass *int
}

// DevlinkParam is one [devlink] parameter, e.g. enable_roce = true.
type DevlinkParam struct {
	Name  string
	Value any // bool, int64 or string
}

// NCCL is [nccl]: the NCCL defaults rocectl derives and writes.
type NCCL struct {
	Write *string // path of the config file to manage, e.g. /etc/nccl.conf
	// Vars in profile order, by NCCL variable name without the NCCL_
	// prefix (IB_TC, IB_HCA, ...). Values are kept as written ("auto" or a
	// number as text) and resolved per host.
	Vars  []NCCLVar
	Extra []NCCLVar // [nccl.extra]: free NCCL_* variables
	// Generation is the oldest NCCL the fleet runs, as far as rocectl
	// cares: NCCLModern ("2.21+", the default) selects the GID per
	// device when NCCL_IB_GID_INDEX is -1; NCCLPre221 ("pre-2.21") has
	// no such selection and needs one pinned index.
	Generation string
	// Rails are [nccl.rails]: the rail and plane of each RDMA device,
	// written into NCCL_IB_HCA as dev:port:rail:plane (NCCL 2.30).
	Rails []NCCLRail
}

// NCCL generations ([nccl] generation).
const (
	NCCLModern = "2.21+"
	NCCLPre221 = "pre-2.21"
)

// DynamicGID reports whether the fleet's NCCL selects the GID index per
// device by itself (NCCL_IB_GID_INDEX = -1, NCCL 2.21 and later).
func (c *NCCL) DynamicGID() bool { return c.AtLeast(21) }

// NCCLVar is one NCCL variable.
type NCCLVar struct {
	Name  string // without the NCCL_ prefix
	Value string
}

// VerifySpec is [verify].
type VerifySpec struct {
	Loopback         bool
	MinBandwidthGbps float64
	Retries          int
	RetryInterval    time.Duration
	Duration         time.Duration
	MessageSize      Size
}

// GuardSpec is [guard]: the pause-storm guard run after apply.
type GuardSpec struct {
	Enabled                 bool
	Soak                    time.Duration
	Poll                    time.Duration
	DetectionTime           time.Duration
	MaxPauseOccupancy       float64
	MaxPauseFramesPerSecond float64
}

// Defaults for sections the profile leaves out.
var (
	defaultVerify = VerifySpec{Loopback: false, Retries: 5, RetryInterval: time.Second, Duration: 2 * time.Second, MessageSize: 64 << 10}
	defaultGuard  = GuardSpec{Enabled: true, Soak: 60 * time.Second, Poll: 200 * time.Millisecond, DetectionTime: 200 * time.Millisecond, MaxPauseOccupancy: 0.99}
)
