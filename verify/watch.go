package verify

import (
	"math"
	"time"
)

// The rates of rocectl watch: two Samples make one interval's report,
// per port and priority the time paused (% of the interval) and pause
// frames/s each way, CNP/ECN and discards per second, the NIC's storm
// events. A pure function of the samples; cli lays the report out and
// -o json prints it (docs/watch.md).

// WatchSchemaVersion is the watch document's schema_version.
const WatchSchemaVersion = 1

// WatchReport is what one interval shows, and the -o json document (one
// per interval; docs/watch.md). Rates are per second over the interval;
// a value is absent (nil, "-" on screen) where the port has no such
// counter or the previous sample lacked it.
type WatchReport struct {
	SchemaVersion int         `json:"schema_version"`
	Time          time.Time   `json:"time"`
	IntervalS     float64     `json:"interval_s"`
	Ports         []WatchPort `json:"ports"`
}

// WatchPort is one row: a port, or a bond and then each of its slaves.
type WatchPort struct {
	Netdev string `json:"netdev"`
	// Bond is, on a slave's row, the bond it is under; Slaves, on a
	// bond's row, the slaves whose rows follow it (a bond has no NIC
	// counters: its row has the link and the RDMA counters only).
	Bond        string          `json:"bond,omitempty"`
	Slaves      []string        `json:"slaves,omitempty"`
	RDMADevice  string          `json:"rdma_device,omitempty"`
	Port        int             `json:"port,omitempty"`
	Link        string          `json:"link"`
	Error       string          `json:"error,omitempty"`
	Priorities  []WatchPrio     `json:"priorities"`
	GlobalPause *WatchPausePair `json:"global_pause,omitempty"`
	// CNPSentPerS: CNPs the notification point sent; CNPHandledPerS:
	// CNPs the reaction point received and slowed down for.
	CNPSentPerS    *float64 `json:"cnp_sent_per_s,omitempty"`
	CNPHandledPerS *float64 `json:"cnp_handled_per_s,omitempty"`
	ECNMarkedPerS  *float64 `json:"ecn_marked_per_s,omitempty"`
	RXDiscardsPerS *float64 `json:"rx_discards_per_s,omitempty"`
	TXDiscardsPerS *float64 `json:"tx_discards_per_s,omitempty"`
	// Storm*: the NIC's storm-prevention events, totals since the driver
	// loaded, and how many happened in this interval.
	StormWarningEvents *uint64 `json:"storm_warning_events,omitempty"`
	StormErrorEvents   *uint64 `json:"storm_error_events,omitempty"`
	StormEventsNew     *uint64 `json:"storm_events_new,omitempty"`
}

// WatchPrio is one priority that has pause counters on the port.
type WatchPrio struct {
	Priority             int         `json:"priority"`
	RX                   *WatchPause `json:"rx,omitempty"`
	TX                   *WatchPause `json:"tx,omitempty"`
	RXDiscardsPerS       *float64    `json:"rx_discards_per_s,omitempty"`
	RXBufferDiscardsPerS *float64    `json:"rx_buffer_discards_per_s,omitempty"`
}

// WatchPausePair is 802.3x global pause, each way.
type WatchPausePair struct {
	RX *WatchPause `json:"rx,omitempty"`
	TX *WatchPause `json:"tx,omitempty"`
}

// WatchPause is one direction of pause: rx is the link partner pausing
// this port, tx this port pausing the partner.
type WatchPause struct {
	// PausePct is the time paused as a percentage of the interval
	// (duration counter delta / elapsed), absent where the driver counts
	// frames only (ice, bnxt_en's 802.3x pause).
	PausePct   *float64 `json:"pause_pct,omitempty"`
	FramesPerS *float64 `json:"pause_frames_per_s,omitempty"`
	Frames     uint64   `json:"pause_frames"` // the driver's total
}

// counterDiff is cur-prev for a free-running 64-bit counter. A smaller
// value is a reset (driver reload, firmware reset; these counters are 64
// bits wide, so never a wrap), and what it counted since is cur.
func counterDiff(prev, cur uint64) uint64 {
	if cur < prev {
		return cur
	}
	return cur - prev
}

// perSecond is the counter's rate over secs, nil unless both samples
// have it.
func perSecond(prev, cur *uint64, secs float64) *float64 {
	if prev == nil || cur == nil || secs <= 0 {
		return nil
	}
	r := float64(counterDiff(*prev, *cur)) / secs
	return &r
}

// Rates turns two samples into the interval's report. Ports are matched
// by netdev; a port new in cur has totals but no rates yet.
func Rates(prev, cur *Sample) *WatchReport {
	secs := cur.At.Sub(prev.At).Seconds()
	rep := &WatchReport{SchemaVersion: WatchSchemaVersion, Time: cur.At, IntervalS: secs, Ports: []WatchPort{}}
	before := make(map[string]*watchCounters, len(prev.Ports))
	for i := range prev.Ports {
		if p := &prev.Ports[i]; p.Err == nil {
			before[p.Netdev] = countersOf(p)
		}
	}
	for i := range cur.Ports {
		c := &cur.Ports[i]
		p := before[c.Netdev]
		if p == nil {
			p = &watchCounters{}
		}
		rep.Ports = append(rep.Ports, portRates(p, c, secs))
	}
	return rep
}

// watchCounters are the counters of one PortSample the view shows.
type watchCounters struct {
	pause []PauseCounter
	cong  Congestion
	storm StormEvents
	disc  Discards
}

func countersOf(ps *PortSample) *watchCounters {
	w := &watchCounters{cong: ps.Congestion()}
	if ps.Stats != nil {
		w.pause = PauseCounters(ps.Stats)
		w.storm = StormEventCounters(ps.Stats)
		w.disc = DiscardCounters(ps.Stats)
	}
	return w
}

func portRates(p *watchCounters, cs *PortSample, secs float64) WatchPort {
	w := WatchPort{Netdev: cs.Netdev, Bond: cs.Bond, Slaves: cs.Slaves, RDMADevice: cs.RDMADevice, Port: cs.PortNum, Link: cs.Link,
		Priorities: []WatchPrio{}}
	if cs.Err != nil {
		w.Error = cs.Err.Error()
		return w
	}
	c := countersOf(cs)
	type key struct {
		prio int
		dir  string
	}
	prevPause := map[key]*PauseCounter{}
	for i := range p.pause {
		prevPause[key{p.pause[i].Priority, p.pause[i].Direction}] = &p.pause[i]
	}
	prios := map[int]*WatchPrio{}
	for _, pc := range c.pause {
		wp := pauseRate(prevPause[key{pc.Priority, pc.Direction}], pc, secs)
		if pc.Priority == GlobalPause {
			if w.GlobalPause == nil {
				w.GlobalPause = &WatchPausePair{}
			}
			setDir(&w.GlobalPause.RX, &w.GlobalPause.TX, pc.Direction, wp)
			continue
		}
		pr := prios[pc.Priority]
		if pr == nil {
			w.Priorities = append(w.Priorities, WatchPrio{Priority: pc.Priority})
			pr = &w.Priorities[len(w.Priorities)-1]
			prios[pc.Priority] = pr
		}
		setDir(&pr.RX, &pr.TX, pc.Direction, wp)
	}
	// prios points into w.Priorities: it is complete now and no longer
	// grows, so the pointers stay valid.
	for prio, pr := range prios {
		pr.RXDiscardsPerS = perSecond(p.disc.Prio[prio], c.disc.Prio[prio], secs)
		pr.RXBufferDiscardsPerS = perSecond(p.disc.PrioBuffer[prio], c.disc.PrioBuffer[prio], secs)
	}
	w.CNPSentPerS = perSecond(p.cong.CNPSent, c.cong.CNPSent, secs)
	w.CNPHandledPerS = perSecond(p.cong.CNPHandled, c.cong.CNPHandled, secs)
	w.ECNMarkedPerS = perSecond(p.cong.ECNMarked, c.cong.ECNMarked, secs)
	w.RXDiscardsPerS = perSecond(p.disc.RX, c.disc.RX, secs)
	w.TXDiscardsPerS = perSecond(p.disc.TX, c.disc.TX, secs)
	w.StormWarningEvents, w.StormErrorEvents = c.storm.Warning, c.storm.Error
	var fresh uint64
	seen := false
	for _, ev := range [][2]*uint64{{p.storm.Warning, c.storm.Warning}, {p.storm.Error, c.storm.Error}} {
		if ev[0] != nil && ev[1] != nil {
			fresh += counterDiff(*ev[0], *ev[1])
			seen = true
		}
	}
	if seen {
		w.StormEventsNew = &fresh
	}
	return w
}

func setDir(rx, tx **WatchPause, dir string, v *WatchPause) {
	if dir == "rx" {
		*rx = v
	} else {
		*tx = v
	}
}

// pauseRate is one pause counter pair over the interval: frames/s and,
// with a duration counter, occupancy = duration delta (µs) / elapsed,
// capped at 100 % (a counter updated a little after the sample was taken
// can overshoot).
func pauseRate(prev *PauseCounter, cur PauseCounter, secs float64) *WatchPause {
	w := &WatchPause{Frames: cur.Frames}
	if prev == nil || secs <= 0 {
		return w
	}
	if cur.FramesName != "" && prev.FramesName == cur.FramesName {
		w.FramesPerS = perSecond(&prev.Frames, &cur.Frames, secs)
	}
	if cur.HasDuration && prev.HasDuration && prev.DurationName == cur.DurationName {
		pct := float64(counterDiff(prev.DurationUs, cur.DurationUs)) / (secs * 1e6) * 100
		pct = math.Min(pct, 100)
		w.PausePct = &pct
	}
	return w
}
