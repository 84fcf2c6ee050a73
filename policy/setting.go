package policy

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/rocectl/rocectl/port"
)

// Kind says what a Setting is, and so which backend reads and writes it.
// The constants' values are only identities (journals name kinds by
// KindName, never by number); the order in which a plan writes them is
// each kind's WriteOrder, in kindTable below.
type Kind int

const (
	KindMTU Kind = iota
	KindRxRing
	KindTxRing
	KindPrivFlag
	KindGlobalPause
	KindDCBX
	KindTrust
	KindDSCPMap
	KindETSPrioTC
	KindETSTSA
	KindETSBandwidth
	KindPFC
	KindCableLength
	KindPrioBuffer
	KindBufferSize
	KindStormPrevention
	KindECNEnable
	KindECNParam
	KindRoCEMode
	KindRoCETOS
	KindTrafficClass
	KindDevlink
	// KindFirmware is a ConnectX NVConfig parameter ([firmware]): written
	// to the next-boot value, in effect after a firmware reset or reboot.
	KindFirmware
	KindNCCL
	// KindXoffRecompute is a driver action, not a setting: an identical
	// PFC write that makes mlx5 recompute its receive buffers' xoff/xon
	// thresholds for the port's MTU (plan/xoff.go). Its value is that MTU.
	KindXoffRecompute
	// KindLosslessRemap is a driver action too: an identical PFC write
	// that makes bnxt_en move the PFC priorities' traffic classes onto its
	// lossless queues for the ETS in force (plan/lossless.go). Its value is
	// those priorities.
	KindLosslessRemap
)

// kindTable is every kind's entry: the name journals, JSON and messages
// use (it never changes once shipped), and its write order. A plan writes
// a port's settings by WriteOrder, lowest first (reference §G), and a
// rollback undoes them in reverse: MTU first, global pause off before PFC,
// trust and the DSCP map before PFC, ETS before PFC (bnxt takes PFC only
// after ETS), buffers after PFC, then storm prevention, ECN, RoCE
// defaults, devlink and finally the NCCL file. The planner's driver
// actions (an identical PFC write that recomputes mlx5's thresholds or
// remaps bnxt's lossless queues) come after every setting; the planner
// places them itself. The orders leave room: a new kind takes a free
// number between its neighbours, and no other kind's order moves.
var kindTable = [...]struct {
	name  string
	order int
	// negotiated: a DCBX peer in willing mode can overwrite a setting of
	// this kind (PFC, ETS, the APP table).
	negotiated bool
}{
	KindMTU:             {"mtu", 100, false},
	KindRxRing:          {"rx_ring", 200, false},
	KindTxRing:          {"tx_ring", 210, false},
	KindPrivFlag:        {"private_flag", 300, false},
	KindGlobalPause:     {"global_pause", 400, false}, // off before PFC: 802.3x pause and PFC exclude each other
	KindDCBX:            {"dcbx", 500, false},         // host mode before the IEEE objects it unlocks (bnxt)
	KindTrust:           {"trust", 600, true},
	KindDSCPMap:         {"dscp_map", 610, true},
	KindETSPrioTC:       {"ets_priority_to_tc", 700, true}, // ETS before PFC (bnxt_hwrm_queue_pfc_cfg)
	KindETSTSA:          {"ets_tc_tsa", 710, true},
	KindETSBandwidth:    {"ets_tc_bandwidth", 720, true},
	KindPFC:             {"pfc", 800, true},
	KindCableLength:     {"cable_length", 810, false},
	KindPrioBuffer:      {"priority_to_buffer", 900, false}, // after PFC unless the mlx5 checks need them first
	KindBufferSize:      {"buffer_size", 910, false},
	KindStormPrevention: {"pfc_storm_prevention", 1000, false},
	KindECNEnable:       {"ecn_enable", 1100, false},
	KindECNParam:        {"ecn_param", 1110, false},
	KindRoCEMode:        {"roce_mode", 1200, false},
	KindRoCETOS:         {"roce_tos", 1210, false},
	KindTrafficClass:    {"traffic_class", 1220, false},
	KindDevlink:         {"devlink", 1300, false},
	KindFirmware:        {"firmware", 1350, false}, // last of a port's: nothing else waits on a value that takes effect only at the next boot
	KindNCCL:            {"nccl", 1400, false},
	KindXoffRecompute:   {"xoff_recompute", 1500, false},
	KindLosslessRemap:   {"lossless_remap", 1510, false},
}

// Kinds lists every Kind in write order.
func Kinds() []Kind {
	out := make([]Kind, len(kindTable))
	for i := range out {
		out[i] = Kind(i)
	}
	slices.SortStableFunc(out, func(a, b Kind) int { return a.WriteOrder() - b.WriteOrder() })
	return out
}

// WriteOrder is where a plan writes settings of kind k among a port's
// (kindTable): lower first.
func (k Kind) WriteOrder() int {
	if k >= 0 && int(k) < len(kindTable) {
		return kindTable[k].order
	}
	return 1 << 30
}

// DCBXNegotiated says whether a DCBX peer in willing mode can overwrite a
// setting of kind k.
func (k Kind) DCBXNegotiated() bool {
	return k >= 0 && int(k) < len(kindTable) && kindTable[k].negotiated
}

func (k Kind) String() string {
	if k >= 0 && int(k) < len(kindTable) {
		return kindTable[k].name
	}
	return "kind" + strconv.Itoa(int(k))
}

// Setting is one desired value with a stable key, e.g.
// "ens1f0np0.qos.pfc" = "[3]" or "mlx5_0.ecn.np.enable.3" = "on".
type Setting struct {
	Key   string // Scope + "." + Name
	Scope string // netdev, RDMA scope, or "host"
	Name  string // e.g. "qos.pfc", "ecn.np.enable.3"
	Kind  Kind
	Arg   string     // kind-specific: flag name, "rp/3", "np/cnp_dscp", devlink param, NCCL variable
	Value string     // canonical text; see the Format* functions
	From  string     // the profile key that asked for it, for messages
	Port  *port.Port // nil for host settings
}

// HostScope is the scope of settings that belong to the whole host.
const HostScope = "host"

// Canonical value forms. Backends format what they observe with the same
// functions, so desired and observed compare as plain strings.

// FormatBool is "on" or "off".
func FormatBool(b bool) string {
	if b {
		return "on"
	}
	return "off"
}

// ParseBool reads FormatBool's output.
func ParseBool(s string) (bool, error) {
	switch s {
	case "on":
		return true, nil
	case "off":
		return false, nil
	}
	return false, fmt.Errorf("%q is not on/off", s)
}

// Pause is a global_pause value: 802.3x pause in each direction.
type Pause struct{ Rx, Tx bool }

// On says whether pause is on in either direction.
func (p Pause) On() bool { return p.Rx || p.Tx }

// FormatPause is "on", "off", or "rx on, tx off" when the directions
// differ.
func FormatPause(p Pause) string {
	switch {
	case p.Rx && p.Tx:
		return "on"
	case !p.Rx && !p.Tx:
		return "off"
	}
	return fmt.Sprintf("rx %s, tx %s", FormatBool(p.Rx), FormatBool(p.Tx))
}

// ParsePause reads FormatPause's output.
func ParsePause(v string) (Pause, error) {
	switch v {
	case "on":
		return Pause{Rx: true, Tx: true}, nil
	case "off":
		return Pause{}, nil
	}
	var rx, tx string
	if _, err := fmt.Sscanf(v, "rx %s tx %s", &rx, &tx); err == nil {
		rx = strings.TrimSuffix(rx, ",")
		if (rx == "on" || rx == "off") && (tx == "on" || tx == "off") {
			return Pause{Rx: rx == "on", Tx: tx == "on"}, nil
		}
	}
	return Pause{}, fmt.Errorf("%q is not a pause setting", v)
}

// FormatPrioBitmap prints a priority bitmap as "[3]" or "[3,4]" or "[]".
func FormatPrioBitmap(b uint8) string { return formatInts(PrioSet(b).List()) }

// ParsePrioBitmap reads FormatPrioBitmap's output.
func ParsePrioBitmap(s string) (uint8, error) {
	ints, err := ParseInts(s)
	if err != nil {
		return 0, err
	}
	var b uint8
	for _, p := range ints {
		if p < 0 || p > 7 {
			return 0, fmt.Errorf("priority %d out of range", p)
		}
		b |= 1 << p
	}
	return b, nil
}

func formatInts(v []int) string {
	parts := make([]string, len(v))
	for i, x := range v {
		parts[i] = strconv.Itoa(x)
	}
	return "[" + strings.Join(parts, ",") + "]"
}

// FormatInts8 prints eight integers as "[0,1,2,3,4,5,6,7]".
func FormatInts8(v [8]int) string { return formatInts(v[:]) }

// ParseInts reads "[1,2,3]".
func ParseInts(s string) ([]int, error) {
	t := strings.TrimSpace(s)
	if !strings.HasPrefix(t, "[") || !strings.HasSuffix(t, "]") {
		return nil, fmt.Errorf("%q is not a list", s)
	}
	t = strings.TrimSpace(t[1 : len(t)-1])
	if t == "" {
		return nil, nil
	}
	var out []int
	for _, f := range strings.Split(t, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil {
			return nil, fmt.Errorf("%q is not a list of integers", s)
		}
		out = append(out, n)
	}
	return out, nil
}

// ParseInts8 reads exactly eight integers.
func ParseInts8(s string) ([8]int, error) {
	var out [8]int
	v, err := ParseInts(s)
	if err != nil {
		return out, err
	}
	if len(v) != 8 {
		return out, fmt.Errorf("%q does not have 8 values", s)
	}
	copy(out[:], v)
	return out, nil
}

// FormatStrings8 prints eight names as "[ets,ets,strict,...]".
func FormatStrings8(v [8]string) string { return "[" + strings.Join(v[:], ",") + "]" }

// ParseStrings8 reads FormatStrings8's output.
func ParseStrings8(s string) ([8]string, error) {
	var out [8]string
	t := strings.TrimSpace(s)
	if !strings.HasPrefix(t, "[") || !strings.HasSuffix(t, "]") {
		return out, fmt.Errorf("%q is not a list", s)
	}
	parts := strings.Split(t[1:len(t)-1], ",")
	if len(parts) != 8 {
		return out, fmt.Errorf("%q does not have 8 values", s)
	}
	copy(out[:], parts)
	return out, nil
}

// FormatSizes8 prints eight sizes as "[130KiB,0,...]".
func FormatSizes8(v [8]Size) string {
	parts := make([]string, 8)
	for i, s := range v {
		parts[i] = s.String()
	}
	return "[" + strings.Join(parts, ",") + "]"
}

// ParseSizes8 reads FormatSizes8's output.
func ParseSizes8(s string) ([8]Size, error) {
	var out [8]Size
	strs, err := ParseStrings8(s)
	if err != nil {
		return out, err
	}
	for i, x := range strs {
		if out[i], err = ParseSize(x); err != nil {
			return out, err
		}
	}
	return out, nil
}

// FormatDSCPMap prints DSCP→priority entries compactly, runs of consecutive
// DSCPs with the same priority joined: the firmware default reads
// "0-7:0,8-15:1,16-23:2,24-31:3,32-39:4,40-47:5,48-55:6,56-63:7".
func FormatDSCPMap(m map[int]int) string {
	if len(m) == 0 {
		return "(none)"
	}
	keys := slices.Sorted(maps.Keys(m))
	var parts []string
	for i := 0; i < len(keys); {
		j := i
		for j+1 < len(keys) && keys[j+1] == keys[j]+1 && m[keys[j+1]] == m[keys[i]] {
			j++
		}
		if j == i {
			parts = append(parts, fmt.Sprintf("%d:%d", keys[i], m[keys[i]]))
		} else {
			parts = append(parts, fmt.Sprintf("%d-%d:%d", keys[i], keys[j], m[keys[i]]))
		}
		i = j + 1
	}
	return strings.Join(parts, ",")
}

// ParseDSCPMap reads FormatDSCPMap's output.
func ParseDSCPMap(s string) (map[int]int, error) {
	m := map[int]int{}
	err := eachDSCPRange(s, func(lo, hi, prio int) {
		for d := lo; d <= hi; d++ {
			m[d] = prio
		}
	})
	if err != nil {
		return nil, err
	}
	return m, nil
}

// DSCPDomain is the set of DSCPs a FormatDSCPMap string maps: what
// ParseDSCPMap's keys say, without the map, for a reader that compares
// only those DSCPs (once per port of a host).
func DSCPDomain(s string) (domain [64]bool, err error) {
	err = eachDSCPRange(s, func(lo, hi, _ int) {
		for d := lo; d <= hi; d++ {
			domain[d] = true
		}
	})
	return domain, err
}

// eachDSCPRange calls fn for each "lo-hi:prio" or "dscp:prio" of a
// FormatDSCPMap string, in order; lo ≤ hi ≤ 63.
func eachDSCPRange(s string, fn func(lo, hi, prio int)) error {
	if s == "(none)" || s == "" {
		return nil
	}
	for part := range strings.SplitSeq(s, ",") {
		rng, prio, ok := strings.Cut(part, ":")
		p, err := strconv.Atoi(prio)
		if !ok || err != nil {
			return fmt.Errorf("%q is not dscp:priority", part)
		}
		lo, hi, isRange := strings.Cut(rng, "-")
		a, err1 := strconv.Atoi(lo)
		b := a
		var err2 error
		if isRange {
			b, err2 = strconv.Atoi(hi)
		}
		if err1 != nil || err2 != nil || a > b || a < 0 || b > 63 {
			return fmt.Errorf("%q is not a DSCP range", rng)
		}
		fn(a, b, p)
	}
	return nil
}

// FormatStorm prints the pfc-prevention-tout tunable: "off", "auto" or "<n>ms".
func FormatStorm(ms uint16) string {
	switch ms {
	case 0:
		return "off"
	case 0xffff:
		return "auto"
	}
	return fmt.Sprintf("%dms", ms)
}

// ParseStorm reads FormatStorm's output.
func ParseStorm(s string) (uint16, error) {
	switch s {
	case "off":
		return 0, nil
	case "auto":
		return 0xffff, nil
	}
	n, err := strconv.Atoi(strings.TrimSuffix(s, "ms"))
	if err != nil || n < 0 || n > 0xfffe {
		return 0, fmt.Errorf("%q is not a storm-prevention timeout", s)
	}
	return uint16(n), nil
}

func (s StormPrevention) canonical() string {
	switch {
	case s.Off:
		return "off"
	case s.Auto:
		return "auto"
	}
	return FormatStorm(uint16(s.MS))
}
