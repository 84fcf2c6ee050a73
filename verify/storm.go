package verify

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"time"
)

// The storm state machine: per port, operational → stormed → restored
// (→ stormed again), with the time and count of every transition, for the
// guard's soak and for the agent, which watches every port between
// applies.
//
// Detection is the Detector's window rule. Restoration is where SONiC's
// pfcwd flapped (170 times in 20 minutes): it restored when the pause
// counter stopped rising, but its own reaction (dropping the queue,
// turning PFC off) is what stopped it; restored, the storm was back at
// once. Here the restore decision reads only evidence the reaction leaves
// alone:
//
//   - A port whose storm was reacted to (the guard rolled the change
//     back, turning PFC off) is restored on the clock alone: its pause
//     counters are not read again until it is restored. mlx5 removes the
//     per-priority counters of a priority whose PFC goes off (en_stats.c,
//     mlx5e_grp_per_prio_pfc_get_num_stats) and a counter that stays would
//     freeze: either would read as "quiet" for a reason that says nothing
//     about the storm.
//   - A port not reacted to (the agent watching, watch) is restored once
//     every window it has stayed below the restore threshold (half the
//     storm threshold: hysteresis) for the restoration time. A port whose
//     counters vanished or cannot be read shows no evidence either way:
//     it is not restored by them, only by the clock, and its Reading says
//     why.
//
// Each storm within the settle time after a restore doubles the next
// restoration time (up to MaxRestorationTime): a cause that outlives the
// reaction storms at a falling rate, never at the poll rate.
//
// Bad input (a counter that resets, dips for one read, wraps, holds a
// non-number, or a port whose counters vanish) is never a storm: the
// Detector starts its window over or skips the sample, and the port's
// Reading names it.

// StormState is one port's state in the storm machine.
type StormState int

const (
	// StormUnknown: no usable counter reading yet.
	StormUnknown StormState = iota
	// Operational: watched, no storm seen.
	Operational
	// Stormed: a storm was detected and not yet restored.
	Stormed
	// Restored: a storm was detected earlier; the port has been quiet
	// (or, after a reaction, waited) for the restoration time.
	Restored
)

var stormStateNames = [...]string{"unknown", "operational", "stormed", "restored"}

// StormStates are the states' names, in order (metrics label values).
var StormStates = stormStateNames[:]

func (s StormState) String() string {
	if int(s) < len(stormStateNames) {
		return stormStateNames[s]
	}
	return fmt.Sprintf("StormState(%d)", int(s))
}

// MarshalText writes the state's name.
func (s StormState) MarshalText() ([]byte, error) { return []byte(s.String()), nil }

// Reading says what the port's last counter reading was to the machine.
type Reading string

const (
	ReadingNone       Reading = ""             // not read yet
	ReadingOK         Reading = "ok"           // read and used
	ReadingUnreadable Reading = "unreadable"   // the read failed (ethtool -S unanswered)
	ReadingVanished   Reading = "vanished"     // the port or all its pause counters are gone
	ReadingBad        Reading = "bad_sample"   // a counter dipped, reset or read implausibly: skipped
	ReadingNotNumber  Reading = "not_a_number" // a counter file held a non-number
)

// StormConfig is the detection thresholds (GuardConfig's) and the
// restoration times.
type StormConfig struct {
	Guard GuardConfig
	// RestorationTime is the least time between a storm and its restore
	// (DefaultRestorationTime when 0); MaxRestorationTime the most the
	// backoff makes of it (16 × RestorationTime when 0).
	RestorationTime    time.Duration
	MaxRestorationTime time.Duration
}

// DefaultRestorationTime is the restoration time where none is given: a
// minute, the guard's default soak. Long against a 200 ms poll, so that a
// storm that comes back after a restore does so a handful of times an
// hour, not hundreds.
const DefaultRestorationTime = time.Minute

// PortStorm is one port's storm state, for reports and metrics.
type PortStorm struct {
	State StormState `json:"state"`
	// Since is when the port entered State.
	Since time.Time `json:"since,omitzero"`
	// Detected and Restored count the transitions into Stormed and
	// Restored.
	Detected int `json:"storms_detected"`
	Restored int `json:"storms_restored"`
	// DetectedAt and RestoredAt are the last transitions' times;
	// DetectionTime is the window that detected the last storm,
	// RestorationTime how long the last storm lasted until restored.
	DetectedAt      time.Time     `json:"detected_at,omitzero"`
	RestoredAt      time.Time     `json:"restored_at,omitzero"`
	DetectionTime   time.Duration `json:"detection_time_ns,omitempty"`
	RestorationTime time.Duration `json:"restoration_time_ns,omitempty"`
	// RestoreAfter is the restoration time the current (or last) storm
	// waits, backoff included.
	RestoreAfter time.Duration `json:"restore_after_ns,omitempty"`
	// Reacted: the current storm was reacted to (rolled back); its
	// pause counters are not read until it is restored.
	Reacted bool `json:"reacted,omitempty"`
	// Storm is what tripped the last storm.
	Storm *Storm `json:"storm,omitempty"`
	// Reading is what the last reading was; BadReadings counts readings
	// that were not ok.
	Reading     Reading `json:"reading"`
	ReadingNote string  `json:"reading_note,omitempty"`
	BadReadings int     `json:"bad_readings,omitempty"`
}

// portMachine is a port's PortStorm and what the machine keeps to decide.
type portMachine struct {
	PortStorm
	// lastHot is the last time the port's live counters showed a storm
	// at or above the restore threshold.
	lastHot time.Time
	streak  int // storms since the port last stayed settled
	bad     int // the detector's bad samples seen so far
}

// StormMachine is the per-port state machine over counter readings. Pure:
// readings and their times go in, states come out; tests drive it with a
// fake clock.
type StormMachine struct {
	cfg   StormConfig
	det   *Detector
	ports map[string]*portMachine
	order []string
}

// NewStormMachine returns a machine with cfg's thresholds and times.
func NewStormMachine(cfg StormConfig) *StormMachine {
	if cfg.RestorationTime <= 0 {
		cfg.RestorationTime = DefaultRestorationTime
	}
	if cfg.MaxRestorationTime < cfg.RestorationTime {
		cfg.MaxRestorationTime = 16 * cfg.RestorationTime
	}
	// A zero threshold would call every window a storm: the profile's
	// defaults (policy refuses less than 0.01 and 100 ms).
	if cfg.Guard.MaxPauseOccupancy <= 0 {
		cfg.Guard.MaxPauseOccupancy = 0.99
	}
	if cfg.Guard.DetectionTime <= 0 {
		cfg.Guard.DetectionTime = 200 * time.Millisecond
	}
	return &StormMachine{cfg: cfg, det: NewDetector(cfg.Guard), ports: map[string]*portMachine{}}
}

func (m *StormMachine) port(p string) *portMachine {
	pm := m.ports[p]
	if pm == nil {
		pm = &portMachine{}
		m.ports[p] = pm
		m.order = append(m.order, p)
	}
	return pm
}

// Observe feeds one reading of a port at t: its counters, or the error
// that kept them from being read. It returns the storm when this reading
// made the port Stormed. A reading never restores a reacted port by its
// counters; Tick restores on the clock.
func (m *StormMachine) Observe(port string, t time.Time, cur map[string]uint64, err error) *Storm {
	pm := m.port(port)
	switch {
	case err != nil:
		r := ReadingUnreadable
		if _, ok := errors.AsType[*strconv.NumError](err); ok {
			r = ReadingNotNumber
		}
		m.note(pm, r, err.Error())
		m.tick(pm, t)
		return nil
	case pm.Reacted:
		// The reaction stopped these counters (or removed them): they
		// say nothing about the storm until it is restored.
		if !hasPause(cur) && !hasStormEvents(cur) {
			m.note(pm, ReadingVanished, "no pause counters in this reading")
		} else {
			m.note(pm, ReadingOK, "not read: reacted to")
		}
		m.tick(pm, t)
		return nil
	}
	s := m.det.Observe(port, t, cur)
	if !m.det.present(port) {
		// Gone (a driver reload, PFC off on every priority, a port that
		// left): no evidence either way; the detector dropped the
		// windows, which start over when the counters return, and
		// noted what it covers (nothing: the soak's NotWatched).
		m.note(pm, ReadingVanished, "no pause counters in this reading")
		m.tick(pm, t)
		return nil
	}
	hot := s != nil || m.det.Hot(port, m.cfg.Guard.MaxPauseOccupancy/2, m.cfg.Guard.MaxPauseFramesPerSecond/2)
	if bad := m.det.BadSamples(port); bad > pm.bad {
		pm.bad = bad
		m.note(pm, ReadingBad, "a counter dipped, reset or read more pause than time: sample skipped")
	} else {
		m.note(pm, ReadingOK, "")
	}
	if pm.State == StormUnknown {
		m.enter(pm, Operational, t)
	}
	if hot {
		pm.lastHot = t
	}
	if s != nil && pm.State != Stormed {
		m.storm(pm, s, t)
		return s
	}
	m.tick(pm, t)
	return nil
}

// Trip records a storm found elsewhere (the guard's soak) on its port,
// and, with reacted, that the reaction (a rollback) stops its counters:
// the restore then goes by the clock.
func (m *StormMachine) Trip(s *Storm, reacted bool) {
	pm := m.port(s.Port)
	if pm.State != Stormed {
		m.storm(pm, s, s.At)
	}
	if reacted {
		pm.Reacted = true
		m.det.Forget(s.Port)
	}
}

// Tick moves every port on the clock: a stormed port whose restoration
// time has passed is restored.
func (m *StormMachine) Tick(t time.Time) {
	for _, p := range m.order {
		m.tick(m.ports[p], t)
	}
}

// Remove forgets a port (it left the profile or the host).
func (m *StormMachine) Remove(port string) {
	delete(m.ports, port)
	m.det.Forget(port)
	m.order = slices.DeleteFunc(m.order, func(p string) bool { return p == port })
}

// State is a port's state (StormUnknown with an empty Reading for a port
// never seen).
func (m *StormMachine) State(port string) PortStorm {
	if pm := m.ports[port]; pm != nil {
		return pm.PortStorm
	}
	return PortStorm{}
}

// States is every port's state, by port.
func (m *StormMachine) States() map[string]PortStorm {
	out := make(map[string]PortStorm, len(m.ports))
	for p, pm := range m.ports {
		out[p] = pm.PortStorm
	}
	return out
}

// Ports lists the ports in the order first seen.
func (m *StormMachine) Ports() []string { return slices.Clone(m.order) }

// AnyStormed lists the ports now Stormed, and the earliest time one of
// them may be restored.
func (m *StormMachine) AnyStormed() (ports []string, until time.Time) {
	for _, p := range m.order {
		pm := m.ports[p]
		if pm.State != Stormed {
			continue
		}
		ports = append(ports, p)
		if u := pm.DetectedAt.Add(pm.RestoreAfter); until.IsZero() || u.Before(until) {
			until = u
		}
	}
	return ports, until
}

func (m *StormMachine) note(pm *portMachine, r Reading, why string) {
	pm.Reading, pm.ReadingNote = r, why
	if r != ReadingOK {
		pm.BadReadings++
	}
}

func (m *StormMachine) enter(pm *portMachine, s StormState, t time.Time) {
	pm.State, pm.Since = s, t
}

// storm makes the port Stormed at t, with the backoff's restoration time.
func (m *StormMachine) storm(pm *portMachine, s *Storm, t time.Time) {
	// A storm within the settle time (the longest restoration time)
	// after the last restore continues the streak: the cause outlived
	// the reaction, and the next restore waits twice as long.
	if pm.Restored > 0 && t.Sub(pm.RestoredAt) < m.cfg.MaxRestorationTime {
		pm.streak++
	} else {
		pm.streak = 0
	}
	after := m.cfg.RestorationTime
	for i := 0; i < pm.streak && after < m.cfg.MaxRestorationTime; i++ {
		after *= 2
	}
	pm.RestoreAfter = min(after, m.cfg.MaxRestorationTime)
	m.enter(pm, Stormed, t)
	pm.Detected++
	pm.DetectedAt, pm.lastHot = t, t
	pm.DetectionTime = s.Paused
	pm.Reacted = false
	pm.Storm = s
}

// tick restores a stormed port whose time has come: reacted, on the clock
// since detection; otherwise once its live counters have not shown the
// storm (even at half its threshold) for the restoration time.
func (m *StormMachine) tick(pm *portMachine, t time.Time) {
	if pm.State != Stormed {
		return
	}
	since := pm.DetectedAt
	if !pm.Reacted && pm.lastHot.After(since) {
		since = pm.lastHot
	}
	if t.Sub(since) < pm.RestoreAfter {
		return
	}
	m.enter(pm, Restored, t)
	pm.Restored++
	pm.RestoredAt = t
	pm.RestorationTime = t.Sub(pm.DetectedAt)
	pm.Reacted = false
	// The counters come back (the next apply turns PFC on again) from
	// wherever they stood: windows start afresh.
	for _, p := range m.order {
		if m.ports[p] == pm {
			m.det.Forget(p)
		}
	}
}

func hasPause(cur map[string]uint64) bool {
	for i := range pauseSpecs {
		if _, ok := pick(&pauseSpecs[i], cur); ok {
			return true
		}
	}
	return false
}

func hasStormEvents(cur map[string]uint64) bool {
	for _, n := range stormEventNames {
		if _, ok := trimmedStat(cur, n); ok {
			return true
		}
	}
	return false
}
