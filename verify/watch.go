package verify

import (
	"math"

	"github.com/rocectl/rocectl/doc"
)

// The rates of rocectl watch: two Samples make one interval's report,
// per port and priority the time paused (% of the interval) and pause
// frames/s each way, CNP/ECN and discards per second, the NIC's storm
// events. A pure function of the samples; cli lays the report out and
// -o json prints it (docs/watch.md).

// WatchSchemaVersion is the watch document's schema_version.
const WatchSchemaVersion = doc.SchemaVersion

// WatchReport is what one interval shows, and the -o json document (one
// per interval; docs/watch.md): package doc's Watch, so that the writer
// and report's reader share one type. Rates are per second over the
// interval; a value is absent (nil, "-" on screen) where the port has no
// such counter or the previous sample lacked it.
type (
	WatchRDMA      = doc.WatchRDMA
	WatchThrottled = doc.WatchThrottled
	WatchReport    = doc.Watch
	WatchPort      = doc.WatchPort
	WatchPrio      = doc.WatchPrio
	WatchPausePair = doc.WatchPausePair
	WatchPause     = doc.WatchPause
)

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
	rdma  [numCong]*uint64
	name  [numCong]string
}

func countersOf(ps *PortSample) *watchCounters {
	w := &watchCounters{cong: ps.Congestion()}
	for c := range CongCounter(numCong) {
		if v, ok := ps.Cong(c); ok {
			w.rdma[c], w.name[c] = &v, ps.CongName(c)
		}
	}
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
	for _, k := range watchRDMAOrder {
		if v := c.rdma[k]; v != nil {
			r := WatchRDMA{Key: RDMACounters[k].Key, Counter: c.name[k], Total: *v}
			if p.name[k] == c.name[k] {
				r.PerS = perSecond(p.rdma[k], v, secs)
				if pv := p.rdma[k]; pv != nil && *v < *pv && Wraps32(c.name[k]) && secs > 0 {
					if d, ok := Wrap32Delta(*pv, *v); ok {
						rate := float64(d) / secs
						r.PerS = &rate
					}
				}
			}
			w.RDMA = append(w.RDMA, r)
		}
	}
	throttledOf(&w, p, c, secs)
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

// watchRDMAOrder is the order of WatchPort.RDMA: what a person looks at
// first (loss on the transport) first.
var watchRDMAOrder = []CongCounter{OutOfSequence, PacketSeqErr, ImpliedNakSeqErr, LocalAckTimeout, OutOfBuffer, CNPIgnored,
	AdpRetrans, AdpRetransTimeout, SlowRestart, SlowRestartCNPs, SlowRestartTrans, CNPSent, CNPHandled, ECNMarked}

// throttledOf judges "throttled with no drops" over the interval: the
// pause shares are the rows' PausePct, the discards every discard
// counter both samples have.
func throttledOf(w *WatchPort, p, c *watchCounters, secs float64) {
	if c.pause == nil || secs <= 0 {
		return // a bond's row, or no interval yet
	}
	var growth uint64
	known := false
	add := func(a, b *uint64) {
		if a != nil && b != nil {
			growth += counterDiff(*a, *b)
			known = true
		}
	}
	add(p.disc.RX, c.disc.RX)
	add(p.disc.TX, c.disc.TX)
	for i := range 8 {
		add(p.disc.Prio[i], c.disc.Prio[i])
		add(p.disc.PrioBuffer[i], c.disc.PrioBuffer[i])
	}
	var shares []PauseShare
	one := func(prio int, dir string, wp *WatchPause) {
		if wp != nil && wp.PausePct != nil {
			shares = append(shares, PauseShare{Priority: prio, Direction: dir, HasDuration: true, Occupancy: *wp.PausePct / 100})
		}
	}
	for _, pr := range w.Priorities {
		one(pr.Priority, "rx", pr.RX)
		one(pr.Priority, "tx", pr.TX)
	}
	if g := w.GlobalPause; g != nil {
		one(GlobalPause, "rx", g.RX)
		one(GlobalPause, "tx", g.TX)
	}
	where, ok := ThrottledNoDrops(shares, growth, known, DefaultThrottleOccupancy)
	switch {
	case !ok:
		w.ThrottledNoDrops = "unknown"
	case len(where) > 0:
		w.ThrottledNoDrops = "yes"
	default:
		w.ThrottledNoDrops = "no"
	}
	for _, t := range where {
		w.ThrottledWhere = append(w.ThrottledWhere, WatchThrottled{Priority: t.Priority, Direction: t.Direction, PausePct: t.Occupancy * 100})
	}
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
