package verify

import (
	"fmt"
	"strings"
)

// The pause counters the guard reads, by driver, as `ethtool -S` names
// them. docs/drivers.md ("Counters the guard reads") lists them with their
// sources; the short version:
//
//   - mlx5 (en_stats.c, pport_per_prio_pfc_stats_desc): per priority with
//     PFC enabled (rx or tx) {rx,tx}_prio<p>_pause (frames) and
//     {rx,tx}_prio<p>_pause_duration (µs, PRM); while rx or tx global pause
//     is on, the same five counters with "global" for "prio<p>"
//     ({rx,tx}_global_pause, {rx,tx}_global_pause_duration). The 802.3
//     group's {rx,tx}_pause_ctrl_phy (a_pause_mac_ctrl_frames_*) count
//     802.3x PAUSE frames and are always there. All are read with
//     MLX5E_READ_CTR64_BE: 64 bits. Fixture
//     mlx5-cx6dx-ethtool-S-k5.15-txpause.txt: a host sending global pause
//     (tx_pause_ctrl_phy 5745055, tx_global_pause_duration 771103810).
//   - bnxt_en (bnxt_ethtool.c, bnxt_port_stats_ext_arr and
//     bnxt_tx_port_stats_ext_arr): pfc_pri<p>_{rx,tx}_duration_us (µs) and
//     pfc_pri<p>_{rx,tx}_transitions for all eight priorities; frames in
//     bnxt_port_stats_arr as {rx,tx}_pfc_ena_frames_pri<p>, 802.3x pause as
//     {rx,tx}_pause_frames (no duration). u64 in the driver. Fixture
//     bnxt_en-showmax-ethtool-S.txt.
//   - ice (ice_ethtool.c): frames only, {rx,tx}_priority_<p>_xoff.nic and
//     link_xoff_{rx,tx}.nic. No duration: only a frame-rate limit watches
//     an ice port. Fixture ice-e810-ethtool-S-grep-prio-intel-doc.txt.
//
// Every one of these is a 64-bit counter as ethtool reports it: a value
// smaller than the last one is a reset (driver reload, firmware reset,
// `ethtool` stats clear), never a wrap, and the guard starts over from it.

// GlobalPause is the Priority of 802.3x (global, link-level) pause.
const GlobalPause = -1

// pauseAlt is one driver's names for one pause counter pair; duration is
// empty where the driver counts frames only.
type pauseAlt struct{ frames, duration string }

// pauseSpec is one thing the guard watches on a port: a priority's (or
// global) pause in one direction, with each driver's names, first match
// wins (a duration counter before a frames-only one).
type pauseSpec struct {
	prio int // 0-7, or GlobalPause
	dir  string
	alts []pauseAlt
}

var directions = [2]string{"rx", "tx"}

// pauseSpecs are built once: the detector looks them up for every port on
// every poll.
var pauseSpecs = func() []pauseSpec {
	var out []pauseSpec
	for p := 0; p < 8; p++ {
		for _, d := range directions {
			out = append(out, pauseSpec{prio: p, dir: d, alts: []pauseAlt{
				{frames: fmt.Sprintf("%s_prio%d_pause", d, p), duration: fmt.Sprintf("%s_prio%d_pause_duration", d, p)},         // mlx5
				{frames: fmt.Sprintf("%s_pfc_ena_frames_pri%d", d, p), duration: fmt.Sprintf("pfc_pri%d_%s_duration_us", p, d)}, // bnxt_en
				{frames: fmt.Sprintf("%s_priority_%d_xoff.nic", d, p)},                                                          // ice
			}})
		}
	}
	for _, d := range directions {
		out = append(out, pauseSpec{prio: GlobalPause, dir: d, alts: []pauseAlt{
			{frames: d + "_global_pause", duration: d + "_global_pause_duration"}, // mlx5, while global pause is on
			{frames: d + "_pause_ctrl_phy"},                                       // mlx5 802.3 group, always
			{frames: d + "_pause_frames"},                                         // bnxt_en
			{frames: "link_xoff_" + d + ".nic"},                                   // ice
		}})
	}
	return out
}()

// stormEventNames are mlx5's PFC stall counters (device_stall_{minor,
// critical}_watermark_cnt), present with PCAM pfcc_mask and stall_detect.
// One public en_stats.c (knneth/mlnx-ofa_kernel) spells the warning one
// "tx_pause_storm_warning_events " with a trailing space: trimmedStat
// looks both spellings up.
var stormEventNames = []string{"tx_pause_storm_error_events", "tx_pause_storm_warning_events"}

// discardNames are the drop counters the soak reports growth of (a
// lossless priority that drops is misconfigured even without a storm), and
// that "throttled with no drops" needs flat: mlx5's rx_discards_phy (RFC
// 2863 if_in_discards) and tx_discards_phy, rx_prio<p>_discards
// (per-priority traffic group, newer kernels; the txpause fixture has
// rx_prio0_discards 58591314012) and rx_prio<p>_buf_discard (per-TC
// no_buffer_discard_uc, with the sbcam_reg cap); bnxt_en's
// rx_discard_packets_cos<q> (per CoS queue, not per priority).
var discardNames = func() []string {
	n := []string{"rx_discards_phy", "tx_discards_phy"}
	for p := 0; p < 8; p++ {
		n = append(n, fmt.Sprintf("rx_prio%d_discards", p), fmt.Sprintf("rx_prio%d_buf_discard", p),
			fmt.Sprintf("rx_discard_packets_cos%d", p))
	}
	return n
}()

// counterDelta is cur-prev for a 64-bit free-running counter, and false
// when the counter went backwards: a reset, after which the caller starts
// over from cur. Reading a reset as a wrap would turn 5,000,000 -> 0 into
// a 4-billion-µs jump.
func counterDelta(prev, cur uint64) (uint64, bool) {
	if cur < prev {
		return 0, false
	}
	return cur - prev, true
}

// Monotonic follows one free-running 64-bit counter from reading to
// reading. A reading below the last is either a reset (driver reload,
// firmware recovery: the counter restarted from zero) or one bad read (a
// counter that dips for one poll and comes back); which, only the next
// reading tells. So no delta is taken across a dip: it is held, and the
// next reading settles it. Back at or above the value before the dip: the
// dip was a bad read, and the growth counts from the value before it,
// once. Still below but at or above the dip: a reset at the dip, counted
// from zero. Below the dip too: still undecided, held again. Either way
// the dip's difference is never counted twice.
type Monotonic struct {
	last            uint64
	dip             uint64
	started, dipped bool
	// Wrap32 marks a counter the firmware keeps in 32 bits (mlx5's
	// RDMA q counters, Wraps32): a reading just past 2^32 from one just
	// below it is a wrap (Wrap32Delta), counted at once.
	Wrap32 bool
}

// wrapBand is how near 2^32 a 32-bit counter must be, and how far past 0
// it may be, for a fall to be a wrap rather than a reset: 16 Mi events
// between two readings, far more than any loss counter moves in a poll,
// far less than the distance of a reset from the top.
const wrapBand = 1 << 24

// Wrap32Delta is cur-prev for a 32-bit counter that fell from just below
// 2^32 to just above 0, and false for any other fall (a reset).
func Wrap32Delta(prev, cur uint64) (uint64, bool) {
	const top = 1 << 32
	if cur < prev && prev < top && prev >= top-wrapBand && cur < wrapBand {
		return cur + (top - prev), true
	}
	return 0, false
}

// Wraps32 says whether a driver's hw_counters file is a 32-bit counter
// that wraps: mlx5's q counters (query_q_counter_out fields, 32 bits in
// firmware, widened to u64 by the driver without a carry; reference
// §A4.2). mlx5's congestion counters are 64-bit; bnxt_re's and irdma's
// values are 64-bit accumulations by their drivers.
func Wraps32(name string) bool {
	switch name {
	case "out_of_sequence", "packet_seq_err", "implied_nak_seq_err", "local_ack_timeout_err", "out_of_buffer",
		"roce_adp_retrans", "roce_adp_retrans_to", "roce_slow_restart", "roce_slow_restart_cnps", "roce_slow_restart_trans":
		return true
	}
	return false
}

// StepKind says what a reading was to a Monotonic.
type StepKind int

const (
	// Rise: at or above the last reading; Delta is the growth.
	Rise StepKind = iota
	// Dip: below the last; nothing counted until the next reading.
	Dip
	// BadRead: the reading before (a dip) was a bad read; Delta is the
	// growth since the reading before the dip.
	BadRead
	// Reset: the reading before (a dip) was a reset; Delta is what was
	// counted since the reset, from zero.
	Reset
	// Wrap: a Wrap32 counter went past 2^32; Delta counts across it.
	Wrap
)

// Next takes one reading and returns what it adds and what it was. The
// first reading is the baseline: Rise with no Delta.
func (m *Monotonic) Next(v uint64) (delta uint64, kind StepKind) {
	if m.Wrap32 && m.started && !m.dipped && v < m.last {
		if d, ok := Wrap32Delta(m.last, v); ok {
			m.last = v
			return d, Wrap
		}
	}
	switch {
	case !m.started:
		m.started, m.last = true, v
		return 0, Rise

	case m.dipped && v >= m.last:
		// Back up: the dip was a bad read; the growth counts once,
		// from before it.
		m.dipped = false
		delta, m.last = v-m.last, v
		return delta, BadRead
	case m.dipped && v >= m.dip:
		// Still below, and on from the dip: a reset at the dip, and
		// all it shows was counted since.
		m.dipped = false
		m.last = v
		return v, Reset
	case v < m.last || m.dipped:
		// Below the last (or below the dip as well: neither tells yet):
		// held until the next reading.
		m.dipped, m.dip = true, v
		return 0, Dip
	}
	delta, m.last = v-m.last, v
	return delta, Rise
}

// PauseCounter is one pause counter pair of a port as the guard reads it,
// whatever the driver calls it: for metrics and reports.
type PauseCounter struct {
	Priority  int    `json:"priority"` // 0-7, or GlobalPause (-1)
	Direction string `json:"direction"`
	// Frames and FramesName: pause frames (XOFF frames on ice).
	Frames     uint64 `json:"frames"`
	FramesName string `json:"frames_counter,omitempty"`
	// DurationUs and DurationName: time paused in µs, when the driver
	// counts it (HasDuration).
	DurationUs   uint64 `json:"duration_us,omitempty"`
	DurationName string `json:"duration_counter,omitempty"`
	HasDuration  bool   `json:"has_duration"`
}

// Scope names the counter's priority for people: "priority 3" or "global
// pause".
func (c PauseCounter) Scope() string {
	if c.Priority == GlobalPause {
		return "global pause"
	}
	return fmt.Sprintf("priority %d", c.Priority)
}

// PauseCounters reads every pause counter pair one `ethtool -S` sample of
// a port has, in priority order (global last), rx before tx. An exporter
// gets mlx5's, bnxt_en's and ice's counters under one shape, global
// (802.3x) pause included.
func PauseCounters(stats map[string]uint64) []PauseCounter {
	var out []PauseCounter
	for i := range pauseSpecs {
		if c, ok := pick(&pauseSpecs[i], stats); ok {
			out = append(out, c)
		}
	}
	return out
}

// pick is the first of spec's alternatives the sample has: one with a
// duration counter, else one with frames only.
func pick(spec *pauseSpec, stats map[string]uint64) (PauseCounter, bool) {
	c := PauseCounter{Priority: spec.prio, Direction: spec.dir}
	for _, a := range spec.alts {
		if a.duration == "" {
			continue
		}
		if d, ok := stats[a.duration]; ok {
			c.DurationUs, c.DurationName, c.HasDuration = d, a.duration, true
			c.Frames, c.FramesName = stats[a.frames], a.frames
			if _, ok := stats[a.frames]; !ok {
				c.FramesName = ""
			}
			return c, true
		}
	}
	for _, a := range spec.alts {
		if f, ok := stats[a.frames]; ok {
			c.Frames, c.FramesName = f, a.frames
			return c, true
		}
	}
	return c, false
}

// Coverage is what the guard can watch on a port, judged from one sample
// of its counters.
type Coverage struct {
	// Durations: pause time counters, or a driver known to create them
	// with PFC or global pause (mlx5, before the apply that enables them).
	Durations bool
	// Frames: pause frame counters only (ice): a frame-rate limit is the
	// only thing that watches them.
	Frames bool
	// StormEvents: the NIC's own PFC storm watchdog counters.
	StormEvents bool
}

// CoverageOf looks at one sample. mlx5 creates its per-priority duration
// counters only for priorities with PFC on, and the global ones only while
// global pause is on (en_stats.c, mlx5e_grp_per_prio_pfc_get_num_stats),
// so before an apply an mlx5 port may have none yet: its always-present
// 802.3 group counter rx_pause_ctrl_phy marks it as a driver that will.
func CoverageOf(stats map[string]uint64) Coverage {
	var cv Coverage
	for _, c := range PauseCounters(stats) {
		if c.HasDuration {
			cv.Durations = true
		} else {
			cv.Frames = true
		}
	}
	if _, mlx5 := stats["rx_pause_ctrl_phy"]; mlx5 {
		cv.Durations = true
	}
	for _, n := range stormEventNames {
		if _, ok := trimmedStat(stats, n); ok {
			cv.StormEvents = true
		}
	}
	return cv
}

// Watched says whether the guard watches anything with this coverage, and
// when not, why, as "not watched: ..." finishes the sentence.
func (cv Coverage) Watched(port string, frameLimit bool) (bool, string) {
	switch {
	case cv.Durations || cv.StormEvents || (cv.Frames && frameLimit):
		return true, ""
	case cv.Frames:
		return false, fmt.Sprintf("no pause duration counters on %s (pause frames only: set [guard] max_pause_frames_per_second to watch them)", port)
	default:
		return false, "no pause counters on " + port
	}
}

// spacedStormEventNames are stormEventNames with the trailing space, built
// once (the lookup runs for every port on every poll).
var spacedStormEventNames = func() map[string]string {
	m := map[string]string{}
	for _, n := range stormEventNames {
		m[n] = n + " "
	}
	return m
}()

// trimmedStat reads a storm event counter, also under the trailing-space
// spelling.
func trimmedStat(stats map[string]uint64, name string) (uint64, bool) {
	if v, ok := stats[name]; ok {
		return v, true
	}
	v, ok := stats[spacedStormEventNames[name]]
	return v, ok
}

// joinScope is "priority 3 (rx)" or "global pause (tx)".
func joinScope(prio int, dir string) string {
	return strings.TrimSpace(PauseCounter{Priority: prio}.Scope()) + " (" + dir + ")"
}

// PauseDelta is how one pause counter pair of a netdev moved over a test:
// Frames and DurationUs are the changes, not the counters' values.
type PauseDelta struct {
	Netdev string `json:"netdev"`
	PauseCounter
}

// pauseDeltas are the changes from before to after of every pause counter
// pair both samples have under the same names. A pair that went backwards
// was reset during the test: its change is unknown, and it is left out
// rather than guessed.
func pauseDeltas(netdev string, before, after map[string]uint64) []PauseDelta {
	var out []PauseDelta
	for i := range pauseSpecs {
		b, okb := pick(&pauseSpecs[i], before)
		a, oka := pick(&pauseSpecs[i], after)
		if !okb || !oka || b.FramesName != a.FramesName || b.DurationName != a.DurationName {
			continue // absent, or it appeared during the test (PFC turned on)
		}
		frames, okf := counterDelta(b.Frames, a.Frames)
		dur, okd := counterDelta(b.DurationUs, a.DurationUs)
		if !okf || !okd {
			continue
		}
		a.Frames, a.DurationUs = frames, dur
		out = append(out, PauseDelta{Netdev: netdev, PauseCounter: a})
	}
	return out
}
