package policy

import (
	"fmt"
	"strconv"
	"time"
)

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
	// Firmware is [firmware]: NVConfig, written to the next-boot value.
	Firmware Firmware
	NCCL     NCCL
	Classes  []Class // [classes.<name>], in profile order (classes.go)
	Verify   VerifySpec
	Guard    GuardSpec

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
// the vendor algorithms irdma offers (DCTCP, TIMELY), and bnxt_re's two
// DCQCN variants on its cc_mode (DCQCN-D, deterministic marking, and
// DCQCN-P, probabilistic). Which a port can take is its driver's
// (driver.Driver.CCModes), checked at plan time.
const (
	CCDCQCN  = "dcqcn"
	CCOff    = "off"
	CCDCTCP  = "dctcp"
	CCTimely = "timely"
	CCDCQCND = "dcqcn-d"
	CCDCQCNP = "dcqcn-p"
)

// CCModes are the values [ecn] mode takes.
var CCModes = []string{CCDCQCN, CCOff, CCDCTCP, CCTimely, CCDCQCND, CCDCQCNP}

// DCQCNParam is one congestion-control parameter by its mlx5 (OFED sysfs)
// name, e.g. rpg_min_dec_fac.
type DCQCNParam struct {
	Name  string
	Value int64
}

// Firmware is [firmware]: ConnectX non-volatile configuration (what
// mstconfig/mlxconfig set). A write changes the next-boot value only; the
// current value follows at the next firmware reset or reboot.
type Firmware struct {
	CCPriorities        *PrioSet // ROCE_CC_PRIO_MASK_P<port>: the priorities DCQCN acts on
	CNPDSCP             *int     // CNP_DSCP_P<port>, 0..63
	CNPPriority         *int     // CNP_802P_PRIO_P<port>, 0..7
	ATS                 *bool    // ATS_ENABLED (per device)
	AdvancedPCISettings *bool    // ADVANCED_PCI_SETTINGS (per device)
}

// FirmwareParam is one NVConfig parameter by its mstconfig name and value.
type FirmwareParam struct {
	Name  string
	Value uint64
}

// FirmwareSpec is one [firmware] key: the NVConfig parameter it sets
// (PerPort: with the port's _P<n> suffix) and how its value is written
// in a Setting (Codec: "Prio" a priority list "[3]" for a bit mask, "Int"
// the number, "Bool" on/off for 1/0).
type FirmwareSpec struct {
	Key     string // the profile key under [firmware]
	Param   string // the mstconfig name, without _P<n>
	PerPort bool
	Codec   string
	Max     uint64 // the largest value the firmware takes
}

// FirmwareSpecs lists the [firmware] keys in the order a plan writes them.
// The ranges are the firmware's (mlxconfig's tools_layouts: the mask is
// 8 bits, one per priority; CNP DSCP 6 bits; the 802.1p priority 3).
var FirmwareSpecs = []FirmwareSpec{
	{Key: "cc_priorities", Param: "ROCE_CC_PRIO_MASK", PerPort: true, Codec: "Prio", Max: 255},
	{Key: "cnp_dscp", Param: "CNP_DSCP", PerPort: true, Codec: "Int", Max: 63},
	{Key: "cnp_priority", Param: "CNP_802P_PRIO", PerPort: true, Codec: "Int", Max: 7},
	{Key: "ats", Param: "ATS_ENABLED", Codec: "Bool", Max: 1},
	{Key: "advanced_pci_settings", Param: "ADVANCED_PCI_SETTINGS", Codec: "Bool", Max: 1},
}

// FirmwareSpecByKey returns the spec of a [firmware] key.
func FirmwareSpecByKey(key string) (FirmwareSpec, bool) {
	for _, s := range FirmwareSpecs {
		if s.Key == key {
			return s, true
		}
	}
	return FirmwareSpec{}, false
}

// ParamFor is the parameter's mstconfig name on the firmware's port
// fwPort (1-based): NAME_P<n> for a per-port parameter, NAME otherwise.
func (s FirmwareSpec) ParamFor(fwPort int) string {
	if !s.PerPort {
		return s.Param
	}
	return fmt.Sprintf("%s_P%d", s.Param, fwPort)
}

// Format is the canonical Setting value of the firmware's number n.
func (s FirmwareSpec) Format(n uint64) string {
	switch s.Codec {
	case "Prio":
		if n <= 255 {
			return FormatPrioBitmap(uint8(n))
		}
	case "Bool":
		if n <= 1 {
			return FormatBool(n == 1)
		}
	}
	return strconv.FormatUint(n, 10)
}

// Parse is the firmware's number of a canonical Setting value.
func (s FirmwareSpec) Parse(v string) (uint64, error) {
	var n uint64
	switch s.Codec {
	case "Prio":
		b, err := ParsePrioBitmap(v)
		if err != nil {
			return 0, err
		}
		n = uint64(b)
	case "Bool":
		b, err := ParseBool(v)
		if err != nil {
			return 0, err
		}
		if b {
			n = 1
		}
	default:
		x, err := strconv.ParseUint(v, 10, 64)
		if err != nil {
			return 0, fmt.Errorf("%q is not a number", v)
		}
		n = x
	}
	if n > s.Max {
		return 0, fmt.Errorf("%s: %d is out of range (allowed: 0..%d)", s.Key, n, s.Max)
	}
	return n, nil
}

type firmwareSetting struct {
	spec  FirmwareSpec
	value string
}

// settings is what [firmware] sets, in FirmwareSpecs order, as canonical
// values.
func (f Firmware) settings() []firmwareSetting {
	var out []firmwareSetting
	for _, p := range f.Params(1) {
		for _, s := range FirmwareSpecs {
			if s.ParamFor(1) == p.Name {
				out = append(out, firmwareSetting{s, s.Format(p.Value)})
			}
		}
	}
	return out
}

// Params expands [firmware] for the port numbered port (1-based, the
// firmware's P<n>): per-port keys get its _P<n> suffix, per-device keys
// none; in FirmwareSpecs order.
func (f Firmware) Params(port int) []FirmwareParam {
	var out []FirmwareParam
	b := func(v bool) uint64 {
		if v {
			return 1
		}
		return 0
	}
	for _, s := range FirmwareSpecs {
		var v uint64
		switch {
		case s.Key == "cc_priorities" && f.CCPriorities != nil:
			v = uint64(*f.CCPriorities)
		case s.Key == "cnp_dscp" && f.CNPDSCP != nil:
			v = uint64(*f.CNPDSCP)
		case s.Key == "cnp_priority" && f.CNPPriority != nil:
			v = uint64(*f.CNPPriority)
		case s.Key == "ats" && f.ATS != nil:
			v = b(*f.ATS)
		case s.Key == "advanced_pci_settings" && f.AdvancedPCISettings != nil:
			v = b(*f.AdvancedPCISettings)
		default:
			continue
		}
		out = append(out, FirmwareParam{s.ParamFor(port), v})
	}
	return out
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
