package verify

import (
	"context"
	"fmt"
	"io"
	"math"
	"time"
)

// The pause-storm guard watches per-priority PFC counters after a change and
// calls a storm when a priority stays paused, as SONiC's pfcwd does: a
// priority is "stormed" on a poll when its pause duration grew by at least
// max_pause_occupancy of the measured poll time; stormed polls accumulate,
// any healthy poll resets the sum, and a storm is declared once the sum
// reaches detection_time. A pause frame rate above the limit, or any new
// NIC storm event (mlx5 tx_pause_storm_{warning,error}_events), is a storm
// too.
//
// Counters are mlx5's names (reference §A4.1): {rx,tx}_prio<p>_pause (frames)
// and {rx,tx}_prio<p>_pause_duration (µs). mlx5 creates them only for
// PFC-enabled priorities, so a counter that appears or vanishes between
// polls (PFC just changed) is skipped for that poll, not read as a jump.

// CounterSource reads one port's ethtool statistics.
type CounterSource struct {
	Port string
	Read func() (map[string]uint64, error)
}

// GuardConfig is [guard] plus the clock.
type GuardConfig struct {
	Soak                    time.Duration
	Poll                    time.Duration
	DetectionTime           time.Duration
	MaxPauseOccupancy       float64
	MaxPauseFramesPerSecond float64 // 0 = off
	// Progress, when non-nil, gets a one-line status each poll ("\r"
	// rewritten): give it a terminal, or nil to stay quiet.
	Progress io.Writer
	// Now and Sleep default to the real clock; tests drive them.
	Now   func() time.Time
	Sleep func(ctx context.Context, d time.Duration) error
}

// Storm describes what tripped the guard.
type Storm struct {
	Port      string        `json:"port"`
	Priority  int           `json:"priority"` // -1 for port-wide NIC storm events
	Direction string        `json:"direction"`
	Occupancy float64       `json:"occupancy"`
	FrameRate float64       `json:"frames_per_second"`
	Paused    time.Duration `json:"paused_for"`
	Reason    string        `json:"reason"`
	At        time.Time     `json:"at"`
}

func (s *Storm) String() string {
	if s.Priority < 0 {
		return fmt.Sprintf("pause storm on %s: %s", s.Port, s.Reason)
	}
	return fmt.Sprintf("pause storm on %s priority %d (%s): occupancy %.2f, %.0f pause frames/s, paused %v: %s",
		s.Port, s.Priority, s.Direction, s.Occupancy, s.FrameRate, s.Paused, s.Reason)
}

// GuardReport summarises a soak that ended without a storm.
type GuardReport struct {
	Polls         int               `json:"polls"`
	WorstOccupied float64           `json:"worst_occupancy"`
	WorstWhere    string            `json:"worst_where,omitempty"`
	Discards      map[string]uint64 `json:"discards,omitempty"` // growth of rx_discards_phy / rx_prio<p>_buf_discard per port
	ReadErrors    map[string]string `json:"read_errors,omitempty"`
}

type guardKey struct {
	port string
	prio int
	dir  string
}

// Detector is the storm rule over successive counter samples. It is separate
// from Guard's polling loop so tests can feed it samples directly.
type Detector struct {
	cfg     GuardConfig
	prev    map[string]map[string]uint64
	prevAt  map[string]time.Time
	paused  map[guardKey]time.Duration
	Worst   float64
	WorstAt string
	disc    map[string]uint64
}

// NewDetector returns a detector with cfg's thresholds.
func NewDetector(cfg GuardConfig) *Detector {
	return &Detector{cfg: cfg, prev: map[string]map[string]uint64{}, prevAt: map[string]time.Time{},
		paused: map[guardKey]time.Duration{}, disc: map[string]uint64{}}
}

// counterDelta is cur-prev for a free-running counter. mlx5 keeps some
// counters in 32 bits in firmware: a smaller value after a value that fits in
// 32 bits is a wrap; otherwise it is a reset, and the new value is the delta.
func counterDelta(prev, cur uint64) uint64 {
	if cur >= prev {
		return cur - prev
	}
	if prev <= math.MaxUint32 {
		return cur + (1 << 32) - prev
	}
	return cur
}

// Observe feeds one sample of one port taken at t. It returns a storm as
// soon as the rule trips.
func (d *Detector) Observe(port string, t time.Time, cur map[string]uint64) *Storm {
	prev, had := d.prev[port]
	prevAt := d.prevAt[port]
	d.prev[port], d.prevAt[port] = cur, t
	if !had {
		return nil
	}
	dt := t.Sub(prevAt)
	if dt <= 0 {
		return nil
	}
	for _, ev := range []string{"tx_pause_storm_error_events", "tx_pause_storm_warning_events"} {
		c, ok1 := cur[ev]
		p, ok2 := prev[ev]
		if ok1 && ok2 && counterDelta(p, c) > 0 {
			return &Storm{Port: port, Priority: -1, Direction: "tx", At: t,
				Reason: fmt.Sprintf("the NIC counted %d new %s (its own PFC storm watchdog fired)", counterDelta(p, c), ev)}
		}
	}
	for _, name := range discardNames {
		if c, ok := cur[name]; ok {
			if p, ok := prev[name]; ok {
				d.disc[port+" "+name] += counterDelta(p, c)
			}
		}
	}
	for prio := 0; prio < 8; prio++ {
		for di, dir := range directions {
			k := guardKey{port, prio, dir}
			durName, frmName := pauseNames[di][prio].duration, pauseNames[di][prio].frames
			cd, ok1 := cur[durName]
			pd, ok2 := prev[durName]
			if !ok1 || !ok2 {
				// PFC was just switched on or off for this priority: the
				// counter is new or gone, not a jump.
				delete(d.paused, k)
				continue
			}
			occ := float64(counterDelta(pd, cd)) / float64(dt.Microseconds())
			var fps float64
			if cf, ok := cur[frmName]; ok {
				if pf, ok := prev[frmName]; ok {
					fps = float64(counterDelta(pf, cf)) / dt.Seconds()
				}
			}
			if occ > d.Worst {
				d.Worst, d.WorstAt = occ, fmt.Sprintf("%s prio %d %s", port, prio, dir)
			}
			stormed := occ >= d.cfg.MaxPauseOccupancy
			if d.cfg.MaxPauseFramesPerSecond > 0 && fps > d.cfg.MaxPauseFramesPerSecond {
				stormed = true
			}
			if !stormed {
				delete(d.paused, k)
				continue
			}
			d.paused[k] += dt
			if d.paused[k] >= d.cfg.DetectionTime {
				reason := fmt.Sprintf("paused ≥ %.0f%% of the time for %v (limit %v)", d.cfg.MaxPauseOccupancy*100, d.paused[k], d.cfg.DetectionTime)
				if occ < d.cfg.MaxPauseOccupancy {
					reason = fmt.Sprintf("%.0f pause frames/s above the limit of %.0f for %v", fps, d.cfg.MaxPauseFramesPerSecond, d.paused[k])
				}
				return &Storm{Port: port, Priority: prio, Direction: dir, Occupancy: occ, FrameRate: fps, Paused: d.paused[k], Reason: reason, At: t}
			}
		}
	}
	return nil
}

var directions = [2]string{"rx", "tx"}

// pauseNames are mlx5's per-priority pause counter names, built once: the
// detector looks them up for every port on every poll.
var pauseNames = func() (n [2][8]struct{ frames, duration string }) {
	for di, dir := range directions {
		for p := 0; p < 8; p++ {
			n[di][p].frames = fmt.Sprintf("%s_prio%d_pause", dir, p)
			n[di][p].duration = n[di][p].frames + "_duration"
		}
	}
	return n
}()

var discardNames = func() []string {
	n := []string{"rx_discards_phy"}
	for p := 0; p < 8; p++ {
		n = append(n, fmt.Sprintf("rx_prio%d_buf_discard", p))
	}
	return n
}()

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
	det := NewDetector(cfg)
	rep := &GuardReport{Discards: map[string]uint64{}, ReadErrors: map[string]string{}}
	start := cfg.Now()
	end := start.Add(cfg.Soak)
	for {
		for _, p := range ports {
			c, err := p.Read()
			if err != nil {
				rep.ReadErrors[p.Port] = err.Error()
				continue
			}
			if s := det.Observe(p.Port, cfg.Now(), c); s != nil {
				clearProgress(cfg.Progress)
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
	rep.WorstOccupied, rep.WorstWhere = det.Worst, det.WorstAt
	for k, n := range det.disc {
		if n > 0 {
			rep.Discards[k] = n
		}
	}
	return nil, rep, nil
}

func clearProgress(w io.Writer) {
	if w != nil {
		fmt.Fprint(w, "\r\033[K")
	}
}
