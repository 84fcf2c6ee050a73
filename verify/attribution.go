package verify

import (
	"fmt"
	"time"
)

// Pause attribution: per port, priority and direction, how much pause was
// received (rx: the link partner paused this port) and sent (tx: this
// port paused the partner), in frames and time, over a window: the soak
// (GuardReport), one interval of watch, one poll of the agent. And the
// named condition an 802.3x stream that ate a fifth of a 400G link went
// unseen under: "throttled with no drops", a port paused for a large
// share of the window while every discard counter it has stayed flat.
// Nothing is lost, so nothing alarms; the port is slow all the same, and
// the pause comes from somewhere (a receiver that cannot keep up, a
// switch buffer that is too small, a NIC sending 802.3x it should not).

// DefaultThrottleOccupancy is the share of a window a priority (or global
// pause) must be paused for "throttled with no drops": a tenth, half the
// fifth of the case that named it, and far above the fractions of a
// percent a healthy lossless class shows.
const DefaultThrottleOccupancy = 0.10

// PauseShare is one priority's (or global pause's) pause in one direction
// over a window: the changes of its counters, not their values.
type PauseShare struct {
	Priority  int    `json:"priority"` // 0-7, or GlobalPause (-1)
	Direction string `json:"direction"`
	// Frames: pause frames in the window; DurationUs: time paused, µs,
	// where the driver counts it (HasDuration).
	Frames      uint64 `json:"frames"`
	DurationUs  uint64 `json:"duration_us,omitempty"`
	HasDuration bool   `json:"has_duration"`
	// Occupancy is DurationUs over the window (0 without a duration).
	Occupancy float64 `json:"occupancy"`
}

// Throttled is one place of a port that was "throttled with no drops".
type Throttled struct {
	Priority  int     `json:"priority"`
	Direction string  `json:"direction"`
	Occupancy float64 `json:"occupancy"`
}

func (t Throttled) String() string {
	return fmt.Sprintf("%s paused %.0f%% with every discard counter flat", joinScope(t.Priority, t.Direction), t.Occupancy*100)
}

// ThrottledNoDrops judges one window of a port: every share paused at
// least threshold of it, when the port's discard counters were read over
// the whole window (discardsKnown) and did not grow. known is false when
// the discards could not be judged: then the condition is unknown, never
// "no".
func ThrottledNoDrops(shares []PauseShare, discardGrowth uint64, discardsKnown bool, threshold float64) (out []Throttled, known bool) {
	if !discardsKnown {
		return nil, false
	}
	if discardGrowth > 0 {
		return nil, true
	}
	for _, s := range shares {
		if s.HasDuration && s.Occupancy >= threshold {
			out = append(out, Throttled{Priority: s.Priority, Direction: s.Direction, Occupancy: s.Occupancy})
		}
	}
	return out, true
}

// pauseAcc accumulates one pause counter pair of a port over a window,
// through a Monotonic each, so that a reset or a bad read inside the
// window counts what was paused, once.
type pauseAcc struct {
	names       pauseAlt
	frames, dur Monotonic
	f, d        uint64
	hasDur      bool
}

func (a *pauseAcc) add(c PauseCounter) {
	names := pauseAlt{frames: c.FramesName, duration: c.DurationName}
	if a.names != names {
		// Another counter (the driver's set changed): a new baseline.
		a.names, a.frames, a.dur = names, Monotonic{}, Monotonic{}
	}
	df, _ := a.frames.Next(c.Frames)
	a.f += df
	if c.HasDuration {
		dd, _ := a.dur.Next(c.DurationUs)
		a.d += dd
		a.hasDur = true
	}
}

// shares lists a port's accumulations in pauseSpecs order over window.
func shares(accs []*pauseAcc, window time.Duration) []PauseShare {
	var out []PauseShare
	for i, a := range accs {
		if a == nil {
			continue
		}
		s := PauseShare{Priority: pauseSpecs[i].prio, Direction: pauseSpecs[i].dir, Frames: a.f, DurationUs: a.d, HasDuration: a.hasDur}
		if a.hasDur && window > 0 {
			s.Occupancy = float64(a.d) / float64(window.Microseconds())
		}
		out = append(out, s)
	}
	return out
}

// RDMADeltas is how each source's RDMA hardware counters moved from
// before to after, by source name and RDMACounters' Key. Counters both
// samples have are listed, zeros included. A 32-bit mlx5 q counter that
// fell from just below 2^32 to just above 0 wrapped (Wrap32Delta); one
// that fell otherwise was reset, and is left out rather than guessed.
func RDMADeltas(before, after *Sample) map[string]map[string]uint64 {
	prev := make(map[string]*PortSample, len(before.Ports))
	for i := range before.Ports {
		prev[before.Ports[i].Name()] = &before.Ports[i]
	}
	out := map[string]map[string]uint64{}
	for i := range after.Ports {
		a := &after.Ports[i]
		b := prev[a.Name()]
		if b == nil {
			continue
		}
		for c := range CongCounter(numCong) {
			va, oka := a.Cong(c)
			vb, okb := b.Cong(c)
			if !oka || !okb || a.CongName(c) != b.CongName(c) {
				continue
			}
			d := va - vb
			if va < vb {
				w, ok := Wrap32Delta(vb, va)
				if !ok || !Wraps32(a.CongName(c)) {
					continue
				}
				d = w
			}
			m := out[a.Name()]
			if m == nil {
				m = map[string]uint64{}
				out[a.Name()] = m
			}
			m[RDMACounters[c].Key] = d
		}
	}
	if len(out) == 0 {
		return nil
	}
	return out
}
