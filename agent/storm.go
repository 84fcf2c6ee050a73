package agent

import (
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/rocectl/rocectl/policy"
	"github.com/rocectl/rocectl/verify"
)

// The agent's storm states: one verify.StormMachine over every watched
// port, fed by the counter poller (every CounterInterval, when metrics
// are served) and by the guard of the agent's own applies. A storm the
// guard found and rolled back is a reacted storm: the port is restored on
// the clock (its PFC counters stopped with the rollback), and until then
// the agent does not apply the profile again, which would bring the same
// storm straight back (the loop SONiC's pfcwd flapped in). Each storm
// that returns within the settle time doubles the wait.

// storms is the machine and its lock: the poller, the loop and /metrics
// use it from their own goroutines. A nil *storms (a loop built without
// a profile's thresholds) watches nothing and holds nothing.
type storms struct {
	mu sync.Mutex
	m  *verify.StormMachine
}

// stormConfig is the profile's [guard] thresholds with the default
// restoration times.
func stormConfig(g policy.GuardSpec) verify.StormConfig {
	return verify.StormConfig{Guard: verify.GuardConfig{Poll: g.Poll, DetectionTime: g.DetectionTime,
		MaxPauseOccupancy: g.MaxPauseOccupancy, MaxPauseFramesPerSecond: g.MaxPauseFramesPerSecond}}
}

func newStorms(g policy.GuardSpec) *storms {
	return &storms{m: verify.NewStormMachine(stormConfig(g))}
}

// observe feeds one poll's reading of a port (verify.Source.Name).
func (s *storms) observe(port string, at time.Time, stats map[string]uint64, err error) *verify.Storm {
	if s == nil {
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.m.Observe(port, at, stats, err)
}

// trip records the guard's storm; reacted when the apply was rolled back.
func (s *storms) trip(st *verify.Storm, reacted bool) {
	if s == nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.m.Trip(st, reacted)
}

// tick restores on the clock.
func (s *storms) tick(now time.Time) {
	if s == nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.m.Tick(now)
}

// held lists the ports still stormed after a tick at now, and the earliest
// restore: while there is one, the agent applies nothing.
func (s *storms) held(now time.Time) ([]string, time.Time) {
	if s == nil {
		return nil, time.Time{}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.m.Tick(now)
	return s.m.AnyStormed()
}

// keep forgets every port not in names.
func (s *storms) keep(names map[string]bool) {
	if s == nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, p := range s.m.Ports() {
		if !names[p] {
			s.m.Remove(p)
		}
	}
}

func (s *storms) state(port string) verify.PortStorm {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.m.State(port)
}

var (
	descStormState = prometheus.NewDesc("rocectl_storm_state",
		"The port's pause-storm state: 1 on its state, 0 on the others. unknown: no usable counter reading yet; operational: watched, no storm; "+
			"stormed: a storm detected and not yet restored (the agent applies nothing meanwhile); restored: quiet (or, after a rollback, waited) for the restoration time since.",
		[]string{"device", "state"}, nil)
	descStormsDetected = prometheus.NewDesc("rocectl_storms_detected_total",
		"Transitions of the port into the stormed state (by the agent's counter poll or its guard).", []string{"device"}, nil)
	descStormsRestored = prometheus.NewDesc("rocectl_storms_restored_total",
		"Transitions of the port from stormed to restored.", []string{"device"}, nil)
	descStormDetectedAt = prometheus.NewDesc("rocectl_storm_last_detected_timestamp_seconds",
		"Time the port's last storm was detected (absent before the first).", []string{"device"}, nil)
	descStormRestoredAt = prometheus.NewDesc("rocectl_storm_last_restored_timestamp_seconds",
		"Time the port's last storm was restored (absent before the first restore).", []string{"device"}, nil)
	descStormDetection = prometheus.NewDesc("rocectl_storm_detection_window_seconds",
		"The window over which the port's last storm was detected (the profile's detection_time, or more when polls were late).", []string{"device"}, nil)
	descStormRestoration = prometheus.NewDesc("rocectl_storm_restoration_seconds",
		"How long the port's last restored storm lasted, detection to restore.", []string{"device"}, nil)
	descStormRestoreAfter = prometheus.NewDesc("rocectl_storm_restore_after_seconds",
		"The restoration time of the port's current or last storm, backoff included (doubles for each storm that follows a restore within the settle time).", []string{"device"}, nil)
	descStormBadReadings = prometheus.NewDesc("rocectl_storm_bad_readings_total",
		"Counter readings the storm machine could not use: unreadable, vanished, not a number, or a dip, reset or implausible value (never a storm).", []string{"device"}, nil)
)

var stormDescs = []*prometheus.Desc{descStormState, descStormsDetected, descStormsRestored, descStormDetectedAt, descStormRestoredAt,
	descStormDetection, descStormRestoration, descStormRestoreAfter, descStormBadReadings}

// collect serves one port's state; device is its netdev.
func (s *storms) collect(ch chan<- prometheus.Metric, port, device string) {
	st := s.state(port)
	for i, name := range verify.StormStates {
		ch <- prometheus.MustNewConstMetric(descStormState, prometheus.GaugeValue, boolFloat(int(st.State) == i), device, name)
	}
	ch <- prometheus.MustNewConstMetric(descStormsDetected, prometheus.CounterValue, float64(st.Detected), device)
	ch <- prometheus.MustNewConstMetric(descStormsRestored, prometheus.CounterValue, float64(st.Restored), device)
	ch <- prometheus.MustNewConstMetric(descStormBadReadings, prometheus.CounterValue, float64(st.BadReadings), device)
	if !st.DetectedAt.IsZero() {
		ch <- prometheus.MustNewConstMetric(descStormDetectedAt, prometheus.GaugeValue, unixSeconds(st.DetectedAt), device)
		ch <- prometheus.MustNewConstMetric(descStormDetection, prometheus.GaugeValue, st.DetectionTime.Seconds(), device)
		ch <- prometheus.MustNewConstMetric(descStormRestoreAfter, prometheus.GaugeValue, st.RestoreAfter.Seconds(), device)
	}
	if !st.RestoredAt.IsZero() {
		ch <- prometheus.MustNewConstMetric(descStormRestoredAt, prometheus.GaugeValue, unixSeconds(st.RestoredAt), device)
		ch <- prometheus.MustNewConstMetric(descStormRestoration, prometheus.GaugeValue, st.RestorationTime.Seconds(), device)
	}
}
