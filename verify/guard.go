package verify

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"
)

// The pause-storm guard watches the pause counters of every port after a
// change and calls a storm when a priority (or the whole link, 802.3x
// global pause) stays paused, as SONiC's pfcwd does, but measured over the
// detection window rather than poll by poll: a priority is stormed once
// its pause time grew by at least max_pause_occupancy of the time between
// the newest sample and the newest one at least detection_time older. One
// poll that reads a little low (scheduling jitter between the counter and
// the clock: 0.99-1.03 per poll in the Soft-RoCE lab for a 100 % storm)
// moves the window's figure by its share of the window, instead of
// resetting a per-poll count. A pause frame rate above the limit over the
// same window, or any new NIC storm event (mlx5
// tx_pause_storm_{warning,error}_events), is a storm too.
//
// Counter names and units are in counters.go (mlx5, bnxt_en, ice). A
// counter that appears or vanishes between polls (PFC just changed: mlx5
// creates the per-priority ones only for PFC-enabled priorities) starts
// its window over. One that goes backwards is a reset (the counters are
// 64-bit, they do not wrap) or a bad read, which only the next poll
// tells: no delta is taken across it; still below at the next poll, the
// window starts over at the reset, back up, the bad read is skipped and
// counted (PortWatch.BadSamples). A window that shows more pause than
// time (occupancy above MaxPlausibleOccupancy) holds a bad sample: it is
// counted and the window starts over, never a storm.

// CounterSource reads one port's ethtool statistics.
type CounterSource struct {
	// Port names the port in storms and reports: its netdev, or for a
	// slave of a bond SlavePort's "bond0/ens1f0np0".
	Port string
	Read func() (map[string]uint64, error)
}

// A bond (RoCE LAG) has no NIC counters of its own: pause, storm events
// and discards are counted by each physical port under it. The guard
// watches every slave as a port of its own, so a storm on one slave is a
// storm, named after the bond and the slave.

// SlavePort names the counters of one slave of a bond: "bond0/ens1f0np0".
func SlavePort(bond, slave string) string { return bond + "/" + slave }

// SplitPort undoes SlavePort: the bond ("" for a port under no bond) and
// the netdev whose counters port names. Netdev names never hold a '/'
// (the kernel's dev_valid_name refuses it), so the split is unambiguous.
func SplitPort(port string) (bond, netdev string) {
	if b, nd, ok := strings.Cut(port, "/"); ok {
		return b, nd
	}
	return "", port
}

// GuardConfig is [guard] plus the clock.
type GuardConfig struct {
	Soak                    time.Duration
	Poll                    time.Duration
	DetectionTime           time.Duration
	MaxPauseOccupancy       float64
	MaxPauseFramesPerSecond float64 // 0 = off
	// ThrottleOccupancy is the "throttled with no drops" threshold
	// (DefaultThrottleOccupancy when 0).
	ThrottleOccupancy float64
	// Progress, when non-nil, gets a one-line status each poll ("\r"
	// rewritten): give it a terminal, or nil to stay quiet.
	Progress io.Writer
	// RDMA, when set, reads the ports' RDMA hardware counters at the
	// soak's start and end: GuardReport.RDMA.
	RDMA *Sampler
	// Now and Sleep default to the real clock; tests drive them.
	Now   func() time.Time
	Sleep func(ctx context.Context, d time.Duration) error
}

// Storm describes what tripped the guard.
type Storm struct {
	Port     string `json:"port"`
	Priority int    `json:"priority"` // -1 for global pause and for port-wide NIC storm events
	// Global: 802.3x (link-level) pause, not one priority's PFC.
	Global    bool          `json:"global,omitempty"`
	Direction string        `json:"direction"`
	Occupancy float64       `json:"occupancy"`
	FrameRate float64       `json:"frames_per_second"`
	Paused    time.Duration `json:"paused_for"`
	Reason    string        `json:"reason"`
	At        time.Time     `json:"at"`
}

func (s *Storm) String() string {
	if s.Priority < 0 && !s.Global {
		return fmt.Sprintf("pause storm on %s: %s", s.Port, s.Reason)
	}
	return fmt.Sprintf("pause storm on %s %s: occupancy %.2f, %.0f pause frames/s, over %v: %s",
		s.Port, joinScope(s.Priority, s.Direction), s.Occupancy, s.FrameRate, s.Paused, s.Reason)
}

// GuardReport summarises a soak that ended without a storm.
type GuardReport struct {
	Polls         int               `json:"polls"`
	WorstOccupied float64           `json:"worst_occupancy"`
	WorstWhere    string            `json:"worst_where,omitempty"`
	Discards      map[string]uint64 `json:"discards,omitempty"` // growth of the discard counters (counters.go) per port
	ReadErrors    map[string]string `json:"read_errors,omitempty"`
	// BadSamples counts, over every port, pause counter readings the
	// guard could not use (PortWatch.BadSamples).
	BadSamples int `json:"bad_samples,omitempty"`
	// NotWatched says, per port the guard could not watch, why ("no
	// pause counters on <port>"): a quiet soak there proves nothing.
	NotWatched []string `json:"not_watched,omitempty"`
	// Ports is what the guard read on each port, global pause included,
	// for reports and metrics.
	Ports map[string]*PortWatch `json:"ports,omitempty"`
	// States is each port's storm state at the end of the soak (or at
	// its storm): operational, stormed, or unknown with the reason its
	// counters could not be used.
	States map[string]PortStorm `json:"storm_states,omitempty"`
	// RDMA is, per port with an RDMA device (a bond's is the bond's),
	// how its hardware counters moved over the soak, by
	// RDMACounters' Key; a counter that fell (a reset) is left out.
	RDMA map[string]map[string]uint64 `json:"rdma,omitempty"`
}

// PortWatch is one port's share of a soak.
type PortWatch struct {
	Watched bool `json:"watched"`
	// WorstOccupancy is the highest pause occupancy measured on the port
	// (over the window, or over what there was of it yet), WorstWhere
	// where ("priority 3 (rx)", "global pause (tx)").
	WorstOccupancy float64 `json:"worst_occupancy"`
	WorstWhere     string  `json:"worst_where,omitempty"`
	// Counters are the pause counters of the last sample.
	Counters []PauseCounter `json:"counters,omitempty"`
	// BadSamples counts the pause counter readings that were bad, not a
	// storm: one that fell and was back at the next poll, or one that
	// put more pause than time in the window (occupancy above
	// MaxPlausibleOccupancy).
	BadSamples int `json:"bad_samples,omitempty"`
	// Window is the time from the port's first reading to its last;
	// Pause what was paused over it, per priority and direction (rx
	// received, tx sent), resets and bad reads counted once.
	Window time.Duration `json:"window_ns"`
	Pause  []PauseShare  `json:"pause,omitempty"`
	// DiscardGrowth is how much the port's discard counters grew over
	// the window; DiscardsKnown that it had one at every reading.
	DiscardGrowth uint64 `json:"discard_growth"`
	DiscardsKnown bool   `json:"discards_known"`
	// Throttled is "yes", "no" or "unknown" (no discard counter to
	// judge by) for "throttled with no drops"; ThrottledNoDrops where.
	Throttled        string      `json:"throttled_no_drops"`
	ThrottledNoDrops []Throttled `json:"throttled_where,omitempty"`
}

// sample is one reading of a pause counter pair.
type sample struct {
	at          time.Time
	dur, frames uint64
}

// series is one pause counter pair's window: samples[0] is the newest
// sample at least DetectionTime older than the last (or the oldest there
// is).
type series struct {
	names   pauseAlt
	samples []sample
	// dip is a reading below the last, held (dipped) until the next one
	// tells a reset (still below: the window starts at the dip) from a
	// bad read (back up: the window goes on as if it had not been).
	dip    sample
	dipped bool
}

// MaxPlausibleOccupancy is the most pause per unit of time a window can
// show from a real counter. A 100 % storm reads a little above 1 (in the
// Soft-RoCE lab 0.99-1.03 per poll: the counter runs a little fast and
// is read a little stale), more on a loaded host whose reads lag their
// timestamps by a share of the window; a bad sample (a dip back up from
// near zero: "occupancy 24.6") reads far above. More than this is a bad
// sample, never a storm.
const MaxPlausibleOccupancy = 1.5

type seriesKey struct {
	port string
	spec int // index in pauseSpecs
}

// portState is what the detector keeps per port besides the windows.
type portState struct {
	coverage Coverage
	watch    PortWatch
	// hotOcc and hotFPS are the highest occupancy and frame rate over a
	// whole window in the last Observe (Hot).
	hotOcc, hotFPS float64
	// seen: the last Observe found a pause or storm event counter.
	seen bool
	// Pause attribution over everything observed: one accumulation per
	// pauseSpecs entry, from first to last; discard growth and whether
	// a discard counter was there at every reading.
	acc           []*pauseAcc
	first, last   time.Time
	discGrowth    uint64
	discSeen      bool
	discEveryTime bool
	readings      int
}

// Detector is the storm rule over successive counter samples. It is pure:
// samples and their times go in, a storm comes out, so tests feed it
// directly and Guard only adds the polling.
type Detector struct {
	cfg     GuardConfig
	series  map[seriesKey]*series
	ports   map[string]*portState
	order   []string
	Worst   float64
	WorstAt string
	disc    map[discKey]uint64
	mono    map[discKey]*Monotonic
}

// discKey is one port's discard counter (a struct key: a joined string
// would be built for every counter of every port on every poll).
type discKey struct{ port, name string }

// NewDetector returns a detector with cfg's thresholds.
func NewDetector(cfg GuardConfig) *Detector {
	return &Detector{cfg: cfg, series: map[seriesKey]*series{}, ports: map[string]*portState{}, disc: map[discKey]uint64{}, mono: map[discKey]*Monotonic{}}
}

// Observe feeds one sample of one port taken at t. It returns a storm as
// soon as the rule trips.
func (d *Detector) Observe(port string, t time.Time, cur map[string]uint64) *Storm {
	ps := d.ports[port]
	if ps == nil {
		ps = &portState{}
		d.ports[port] = ps
		d.order = append(d.order, port)
	}
	ps.hotOcc, ps.hotFPS, ps.seen = 0, 0, false
	if ps.readings == 0 {
		ps.first, ps.discEveryTime = t, true
	}
	ps.readings++
	ps.last = t
	// Events and discards through a Monotonic each: a reading that dips
	// and comes back adds nothing twice (a dip then 5 again is no 5 new
	// events), a reset adds what was counted since it.
	for _, ev := range stormEventNames {
		c, ok := trimmedStat(cur, ev)
		if !ok {
			continue
		}
		ps.seen = true
		if n, _ := d.track(port, ev, c); n > 0 {
			return &Storm{Port: port, Priority: -1, Direction: "tx", At: t,
				Reason: fmt.Sprintf("the NIC counted %d new %s (its own PFC storm watchdog fired)", n, ev)}
		}
	}
	anyDisc := false
	for _, name := range discardNames {
		if c, ok := cur[name]; ok {
			n, _ := d.track(port, name, c)
			d.disc[discKey{port, name}] += n
			ps.discGrowth += n
			anyDisc = true
		}
	}
	ps.discSeen = ps.discSeen || anyDisc
	ps.discEveryTime = ps.discEveryTime && anyDisc
	if !ps.coverage.StormEvents {
		for _, ev := range stormEventNames {
			if _, ok := trimmedStat(cur, ev); ok {
				ps.coverage.StormEvents = true
			}
		}
	}
	ps.watch.Counters = ps.watch.Counters[:0]
	for i := range pauseSpecs {
		spec := &pauseSpecs[i]
		c, ok := pick(spec, cur)
		k := seriesKey{port, i}
		if !ok {
			delete(d.series, k)
			continue
		}
		ps.watch.Counters = append(ps.watch.Counters, c)
		ps.seen = true
		if ps.acc == nil {
			ps.acc = make([]*pauseAcc, len(pauseSpecs))
		}
		if ps.acc[i] == nil {
			ps.acc[i] = &pauseAcc{}
		}
		ps.acc[i].add(c)
		if c.HasDuration {
			ps.coverage.Durations = true
		} else {
			ps.coverage.Frames = true
		}
		if s := d.window(k, c, t); s != nil {
			s.Port = port
			return s
		}
	}
	return nil
}

// track feeds one reading of a port's event or discard counter to its
// Monotonic.
func (d *Detector) track(port, name string, v uint64) (uint64, StepKind) {
	k := discKey{port, name}
	m := d.mono[k]
	if m == nil {
		m = &Monotonic{}
		d.mono[k] = m
	}
	return m.Next(v)
}

// window adds one reading to its series and applies the rule to the
// window that ends with it.
func (d *Detector) window(k seriesKey, c PauseCounter, t time.Time) *Storm {
	names := pauseAlt{frames: c.FramesName, duration: c.DurationName}
	now := sample{at: t, dur: c.DurationUs, frames: c.Frames}
	s := d.series[k]
	if s == nil || s.names != names {
		// New, or the driver's set changed (global pause just enabled):
		// start over.
		d.series[k] = &series{names: names, samples: []sample{now}}
		return nil
	}
	last := s.samples[len(s.samples)-1]
	if !t.After(last.at) {
		return nil
	}
	ps := d.ports[k.port]
	if s.dipped {
		switch {
		case now.dur >= last.dur && now.frames >= last.frames:
			// Back up: the dip was one bad read, skipped.
			s.dipped = false
			ps.watch.BadSamples++
		case now.dur >= s.dip.dur && now.frames >= s.dip.frames:
			// Still below, on from the dip: a reset at the dip, the
			// window's new start.
			s.dipped = false
			s.samples = append(s.samples[:0], s.dip)
			last = s.dip
		default:
			// Below the dip too: still undecided.
			s.dip = now
			return nil
		}
	}
	if now.dur < last.dur || now.frames < last.frames {
		// Below the last (64-bit counters do not wrap): a reset or a
		// bad read, which the next reading tells. No delta across it.
		s.dip, s.dipped = now, true
		return nil
	}
	s.samples = append(s.samples, now)
	// Keep one sample at or before t - DetectionTime: the window's start.
	cut := 0
	for cut+1 < len(s.samples) && !s.samples[cut+1].at.After(t.Add(-d.cfg.DetectionTime)) {
		cut++
	}
	if cut > 0 {
		s.samples = append(s.samples[:0], s.samples[cut:]...)
	}
	first := s.samples[0]
	span := t.Sub(first.at)
	var occ, fps float64
	if c.HasDuration {
		occ = float64(now.dur-first.dur) / float64(span.Microseconds())
		if occ > MaxPlausibleOccupancy {
			// More pause than time: a bad sample (this one, or the
			// window's start), never a storm. Start over from it.
			ps.watch.BadSamples++
			s.samples = append(s.samples[:0], now)
			return nil
		}
		if occ > ps.watch.WorstOccupancy {
			ps.watch.WorstOccupancy, ps.watch.WorstWhere = occ, joinScope(c.Priority, c.Direction)
		}
		if occ > d.Worst {
			d.Worst, d.WorstAt = occ, k.port+" "+joinScope(c.Priority, c.Direction)
		}
	}
	if c.FramesName != "" {
		fps = float64(now.frames-first.frames) / span.Seconds()
	}
	if span < d.cfg.DetectionTime {
		return nil // not a whole window yet
	}
	ps.hotOcc, ps.hotFPS = max(ps.hotOcc, occ), max(ps.hotFPS, fps)
	stormed := c.HasDuration && occ >= d.cfg.MaxPauseOccupancy
	tooMany := d.cfg.MaxPauseFramesPerSecond > 0 && c.FramesName != "" && fps > d.cfg.MaxPauseFramesPerSecond
	if !stormed && !tooMany {
		return nil
	}
	reason := fmt.Sprintf("paused %.0f%% of the last %v (limit %.0f%% over %v)", occ*100, span, d.cfg.MaxPauseOccupancy*100, d.cfg.DetectionTime)
	if !stormed {
		reason = fmt.Sprintf("%.0f pause frames/s over the last %v, above the limit of %.0f", fps, span, d.cfg.MaxPauseFramesPerSecond)
	}
	return &Storm{Priority: c.Priority, Global: c.Priority == GlobalPause, Direction: c.Direction,
		Occupancy: occ, FrameRate: fps, Paused: span, Reason: reason, At: t}
}

// throttle is the "throttled with no drops" threshold.
func (d *Detector) throttle() float64 {
	if d.cfg.ThrottleOccupancy > 0 {
		return d.cfg.ThrottleOccupancy
	}
	return DefaultThrottleOccupancy
}

// Hot says whether the last Observe of port showed, over a whole window,
// pause occupancy at or above occ or a frame rate above fps (fps 0: frame
// rates not judged): the storm machine's restore threshold.
func (d *Detector) Hot(port string, occ, fps float64) bool {
	ps := d.ports[port]
	if ps == nil {
		return false
	}
	return ps.hotOcc >= occ && occ > 0 || fps > 0 && ps.hotFPS > fps
}

// present says whether the last Observe of port found a pause counter or
// a storm event counter.
func (d *Detector) present(port string) bool {
	ps := d.ports[port]
	return ps != nil && ps.seen
}

// BadSamples is how many of port's pause readings were bad so far.
func (d *Detector) BadSamples(port string) int {
	if ps := d.ports[port]; ps != nil {
		return ps.watch.BadSamples
	}
	return 0
}

// Forget drops port's pause windows: its counters start over at the next
// reading (they vanished, or a reaction stopped them).
func (d *Detector) Forget(port string) {
	for k := range d.series {
		if k.port == port {
			delete(d.series, k)
		}
	}
}

// NotWatched lists, in the order the ports were first seen, why the guard
// watched nothing on a port ("no pause counters on ens1f0"), judged from
// every sample it had.
func (d *Detector) NotWatched() []string {
	var out []string
	for _, p := range d.order {
		if ok, why := d.ports[p].coverage.Watched(p, d.cfg.MaxPauseFramesPerSecond > 0); !ok {
			out = append(out, why)
		}
	}
	return out
}

// report fills rep's per-port parts.
func (d *Detector) report(rep *GuardReport) {
	rep.WorstOccupied, rep.WorstWhere = d.Worst, d.WorstAt
	rep.BadSamples = 0
	for _, p := range d.order {
		rep.BadSamples += d.ports[p].watch.BadSamples
	}
	for k, n := range d.disc {
		if n > 0 {
			rep.Discards[k.port+" "+k.name] = n
		}
	}
	rep.NotWatched = d.NotWatched()
	rep.Ports = map[string]*PortWatch{}
	for _, p := range d.order {
		ps := d.ports[p]
		w := ps.watch
		w.Counters = slices.Clone(ps.watch.Counters)
		w.Watched, _ = ps.coverage.Watched(p, d.cfg.MaxPauseFramesPerSecond > 0)
		w.Window = ps.last.Sub(ps.first)
		w.Pause = shares(ps.acc, w.Window)
		w.DiscardGrowth, w.DiscardsKnown = ps.discGrowth, ps.discSeen && ps.discEveryTime
		var known bool
		w.ThrottledNoDrops, known = ThrottledNoDrops(w.Pause, w.DiscardGrowth, w.DiscardsKnown, d.throttle())
		if !known {
			w.Throttled = "unknown"
		} else if len(w.ThrottledNoDrops) > 0 {
			w.Throttled = "yes"
		} else {
			w.Throttled = "no"
		}
		rep.Ports[p] = &w
	}
}

// Guard polls every port's counters for the soak window. It returns the
// first storm (nil when the window passes quietly) and a summary.
func Guard(ctx context.Context, ports []CounterSource, cfg GuardConfig) (*Storm, *GuardReport, error) {
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Sleep == nil {
		cfg.Sleep = func(ctx context.Context, d time.Duration) error {
			t := time.NewTimer(d)
			defer t.Stop()
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-t.C:
				return nil
			}
		}
	}
	// The soak's storm machine: its detector is the rule, and its states
	// (one per port: operational, stormed, or unknown with why) are the
	// report's. The soak ends at the first storm, so no port is restored
	// here: the caller's reaction (a rollback) follows.
	sm := NewStormMachine(StormConfig{Guard: cfg})
	det := sm.det
	rep := &GuardReport{Discards: map[string]uint64{}, ReadErrors: map[string]string{}}
	var rdma0 *Sample
	if cfg.RDMA != nil {
		rdma0 = cfg.RDMA.Sample()
	}
	rdmaEnd := func() {
		if rdma0 != nil {
			rep.RDMA = RDMADeltas(rdma0, cfg.RDMA.Sample())
		}
	}
	start := cfg.Now()
	end := start.Add(cfg.Soak)
	for {
		for _, p := range ports {
			c, err := p.Read()
			if err != nil {
				rep.ReadErrors[p.Port] = err.Error()
			}
			if s := sm.Observe(p.Port, cfg.Now(), c, err); s != nil {
				clearProgress(cfg.Progress)
				rep.States = sm.States()
				rdmaEnd()
				return s, rep, nil
			}
		}
		rep.Polls++
		now := cfg.Now()
		if cfg.Progress != nil {
			fmt.Fprintf(cfg.Progress, "\rsoak: %v left, worst pause occupancy %.2f %s   ", end.Sub(now).Round(time.Second), det.Worst, det.WorstAt)
		}
		if !now.Before(end) {
			break
		}
		wait := cfg.Poll
		if rest := end.Sub(now); rest < wait {
			wait = rest
		}
		if err := cfg.Sleep(ctx, wait); err != nil {
			clearProgress(cfg.Progress)
			return nil, rep, err
		}
	}
	clearProgress(cfg.Progress)
	det.report(rep)
	rep.States = sm.States()
	rdmaEnd()
	return nil, rep, nil
}

func clearProgress(w io.Writer) {
	if w != nil {
		fmt.Fprint(w, "\r\033[K")
	}
}
