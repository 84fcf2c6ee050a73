package agent

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/rocectl/rocectl/statedir"
	"github.com/rocectl/rocectl/verify"
)

// Continuous probing (opt-in): the agent keeps small verbs probes going to
// configured peers — the rack sweep's pairs, each peer an agent serving
// probes — at a low, bounded rate, and marks a pair degraded when its
// probes fail or its latency or bandwidth leaves its own baseline. One-off
// tests miss what breaks in service; a probe every half minute does not.
//
// Bounds: one probe at a time (the peers take turns, one every
// Interval/len(Peers)), each one RC QP pair on each end for a few hundred
// messages (verify.DefaultProbeSpec) within its timeout; the server serves
// one probe at a time and refuses a larger test. A probe never runs while
// an apply or a verify runs on this host: both hold the state dir's
// traffic lock while they write or measure (statedir.Store.Traffic), and a
// probe, either end, runs only when it can take that lock at once; a
// probe that cannot is "busy", neither a success nor a loss.

// ProbeConfig turns probing on (Config.Probe).
type ProbeConfig struct {
	// Peers are the probe servers to probe, HOST:PORT.
	Peers []string
	// Listen, when set, serves probes on this address.
	Listen string
	// Interval is the time between two probes of one peer.
	Interval time.Duration
	// Spec is one probe's size (zero: verify.DefaultProbeSpec).
	Spec verify.ProbeSpec
}

// Probe bounds.
const (
	MinProbeInterval     = 10 * time.Second
	DefaultProbeInterval = 30 * time.Second
	MaxProbePeers        = 64
)

// Check says what is wrong with c, every problem at once.
func (c *ProbeConfig) Check() error {
	var errs []error
	if len(c.Peers) > MaxProbePeers {
		errs = append(errs, fmt.Errorf("--probe-peer: at most %d peers, not %d (probing is a sample of the sweep's pairs, not a mesh)", MaxProbePeers, len(c.Peers)))
	}
	seen := map[string]bool{}
	for _, p := range c.Peers {
		if _, _, err := net.SplitHostPort(p); err != nil {
			errs = append(errs, fmt.Errorf("--probe-peer %q: not HOST:PORT (%v)", p, err))
		}
		if seen[p] {
			errs = append(errs, fmt.Errorf("--probe-peer %q given twice", p))
		}
		seen[p] = true
	}
	if c.Listen != "" {
		if _, _, err := net.SplitHostPort(c.Listen); err != nil {
			errs = append(errs, fmt.Errorf("--probe-listen %q: not ADDR:PORT (%v)", c.Listen, err))
		}
	}
	if c.Interval != 0 && c.Interval < MinProbeInterval {
		errs = append(errs, fmt.Errorf("--probe-interval %v: at least %v (probing is a low, bounded rate)", c.Interval, MinProbeInterval))
	}
	if c.Spec != (verify.ProbeSpec{}) {
		if err := c.Spec.Check(); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// Degradation: a pair is degraded after failedToDegrade probes in a row
// fail, or slowToDegrade in a row are slower (latency p50 above
// slowFactor × its baseline, or write bandwidth below its baseline ÷
// slowFactor); it is healthy again after goodToRestore good probes in a
// row. The baseline is the median of the pair's first baselineProbes good
// probes. Busy probes count for nothing. lossWindow probes make the loss
// ratio.
const (
	failedToDegrade = 2
	slowToDegrade   = 3
	goodToRestore   = 3
	slowFactor      = 3
	baselineProbes  = 5
	lossWindow      = 20
)

// PairState is what the agent says of a pair.
type PairState string

const (
	PairUnknown  PairState = "unknown" // no probe has succeeded or failed yet
	PairHealthy  PairState = "healthy"
	PairDegraded PairState = "degraded"
)

// probeOutcome is one probe's result for the state machine.
type probeOutcome struct {
	at     time.Time
	budget bool  // skipped: this agent's probing CPU budget is spent
	busy   bool  // skipped: an apply or verify ran (here or at the peer)
	err    error // failed
	p50    time.Duration
	p99    time.Duration
	bps    float64 // RDMA WRITE bandwidth, bytes per second
}

// pairHealth is one peer's probe history and state.
type pairHealth struct {
	peer  string
	state PairState
	since time.Time
	why   string // why degraded

	ok, failed, busy uint64
	budget           uint64
	last             probeOutcome
	lastOK           time.Time
	recent           []bool // the last lossWindow probes, true = failed
	failRun, slowRun int
	goodRun          int
	baseP50          []time.Duration // the first good probes' p50
	baseBps          []float64
	// the last good probe's measurement: kept apart from last, so that
	// a failed probe does not zero the latency and bandwidth series
	goodP50, goodP99 time.Duration
	goodBps          float64
}

func newPairHealth(peer string) *pairHealth { return &pairHealth{peer: peer, state: PairUnknown} }

func median[T float64 | time.Duration](v []T) T {
	s := slices.Clone(v)
	slices.Sort(s)
	return s[len(s)/2]
}

// record takes one outcome and says whether the pair's state changed.
func (h *pairHealth) record(o probeOutcome) (changed bool) {
	if o.budget {
		h.budget++
		return false
	}
	h.last = o
	if o.busy {
		h.busy++
		return false
	}
	h.recent = append(h.recent, o.err != nil)
	if len(h.recent) > lossWindow {
		h.recent = h.recent[1:]
	}
	bad, why := false, ""
	if o.err != nil {
		h.failed++
		h.failRun++
		h.slowRun = 0
		if h.failRun >= failedToDegrade {
			bad, why = true, fmt.Sprintf("%d probes in a row failed, the last: %v", h.failRun, o.err)
		}
	} else {
		h.ok++
		h.failRun = 0
		h.lastOK = o.at
		h.goodP50, h.goodP99, h.goodBps = o.p50, o.p99, o.bps
		slow := ""
		if len(h.baseP50) >= baselineProbes {
			if b := median(h.baseP50); o.p50 > slowFactor*b {
				slow = fmt.Sprintf("latency p50 %v, more than %d× its baseline %v", o.p50, slowFactor, b)
			}
			if b := median(h.baseBps); b > 0 && o.bps < b/slowFactor {
				slow = fmt.Sprintf("write bandwidth %.0f B/s, under 1/%d of its baseline %.0f B/s", o.bps, slowFactor, b)
			}
		} else {
			h.baseP50 = append(h.baseP50, o.p50)
			h.baseBps = append(h.baseBps, o.bps)
		}
		if slow != "" {
			h.slowRun++
			if h.slowRun >= slowToDegrade {
				bad, why = true, fmt.Sprintf("%d probes in a row slow, the last: %s", h.slowRun, slow)
			}
		} else {
			h.slowRun = 0
		}
	}
	if bad {
		h.goodRun = 0
		if h.state != PairDegraded {
			h.state, h.since, h.why = PairDegraded, o.at, why
			return true
		}
		h.why = why
		return false
	}
	if o.err != nil || h.slowRun > 0 {
		// One failed or slow probe says nothing yet, either way.
		h.goodRun = 0
		return false
	}
	h.goodRun++
	switch {
	case h.state == PairUnknown:
		h.state, h.since = PairHealthy, o.at
		return true
	case h.state == PairDegraded && h.goodRun >= goodToRestore:
		h.state, h.since, h.why = PairHealthy, o.at, ""
		return true
	}
	return false
}

// lossRatio is the share of failed probes among the last lossWindow that
// ran.
func (h *pairHealth) lossRatio() float64 {
	if len(h.recent) == 0 {
		return 0
	}
	n := 0
	for _, f := range h.recent {
		if f {
			n++
		}
	}
	return float64(n) / float64(len(h.recent))
}

// probeFunc runs one probe against peer.
type probeFunc func(ctx context.Context, peer string) (*verify.LoopbackResult, error)

// prober probes the configured peers in turn and keeps their health.
type prober struct {
	cfg  ProbeConfig
	log  *slog.Logger
	run  probeFunc
	gate func() (release func(), err error)
	// budget holds the probes' CPU to ProbeCPUShare of a core: a probe
	// runs only with credit left, and spends what it took (cpu).
	budget *cpuBudget
	cpu    func() time.Duration
	mu     sync.Mutex
	pairs  []*pairHealth
	next   int
}

func newProber(cfg ProbeConfig, log *slog.Logger, run probeFunc, gate func() (func(), error)) *prober {
	if cfg.Interval == 0 {
		cfg.Interval = DefaultProbeInterval
	}
	if cfg.Spec == (verify.ProbeSpec{}) {
		cfg.Spec = verify.DefaultProbeSpec
	}
	p := &prober{cfg: cfg, log: log, run: run, gate: gate, budget: newCPUBudget(ProbeCPUShare, time.Now()), cpu: processCPU}
	for _, peer := range cfg.Peers {
		p.pairs = append(p.pairs, newPairHealth(peer))
	}
	return p
}

// step is the time between two probes: the peers take turns.
func (p *prober) step() time.Duration { return p.cfg.Interval / time.Duration(max(1, len(p.pairs))) }

// loop probes until ctx ends, one peer every step.
func (p *prober) loop(ctx context.Context) {
	if len(p.pairs) == 0 {
		return
	}
	t := time.NewTicker(p.step())
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case now := <-t.C:
			p.probeNext(ctx, now)
		}
	}
}

// probeNext probes the next peer in turn and records the outcome.
func (p *prober) probeNext(ctx context.Context, now time.Time) {
	p.mu.Lock()
	h := p.pairs[p.next]
	p.next = (p.next + 1) % len(p.pairs)
	p.mu.Unlock()
	o := probeOutcome{at: now}
	if !p.budget.allow(now) {
		o.budget = true
		p.log.Debug("probe: skipped, the probing CPU budget is spent", "peer", h.peer)
		p.mu.Lock()
		h.record(o)
		p.mu.Unlock()
		return
	}
	release, err := p.gate()
	if err != nil {
		o.busy = true
		p.log.Debug("probe: skipped, the host is busy", "peer", h.peer, "why", err)
	} else {
		cpu0 := p.cpu()
		res, err := p.run(ctx, h.peer)
		p.budget.spend(p.cpu() - cpu0)
		release()
		if ctx.Err() != nil {
			return // shutting down: not the pair's fault
		}
		switch {
		case err != nil && strings.Contains(err.Error(), verify.ErrProbeBusy.Error()):
			o.busy = true
			p.log.Debug("probe: skipped, the peer is busy", "peer", h.peer, "why", err)
		case err != nil:
			o.err = err
		default:
			o.p50, o.p99 = res.LatP50, res.LatP99
			o.bps = res.WriteGbps * 1e9 / 8
		}
	}
	p.mu.Lock()
	changed := h.record(o)
	state, why := h.state, h.why
	p.mu.Unlock()
	if changed {
		if state == PairDegraded {
			p.log.Warn("probe: pair degraded", "peer", h.peer, "why", why)
		} else {
			p.log.Info("probe: pair healthy", "peer", h.peer)
		}
	}
}

// PairStatus is one pair as the agent reports it (metrics, logs, tests).
type PairStatus struct {
	Peer               string
	State              PairState
	Since              time.Time
	Why                string
	OK, Failed, Busy   uint64
	Budget             uint64 // skipped for the CPU budget
	LossRatio          float64
	LatP50, LatP99     time.Duration
	WriteBytesPerSec   float64
	LastSuccess        time.Time
	LastError          string
	HasLastMeasurement bool
}

// Status is every pair's state, in the order of the peers.
func (p *prober) Status() []PairStatus {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := make([]PairStatus, 0, len(p.pairs))
	for _, h := range p.pairs {
		s := PairStatus{Peer: h.peer, State: h.state, Since: h.since, Why: h.why, OK: h.ok, Failed: h.failed, Busy: h.busy, Budget: h.budget,
			LossRatio: h.lossRatio(), LastSuccess: h.lastOK}
		if h.ok > 0 {
			s.HasLastMeasurement = true
			s.LatP50, s.LatP99, s.WriteBytesPerSec = h.goodP50, h.goodP99, h.goodBps
		}
		if h.last.err != nil {
			s.LastError = h.last.err.Error()
		}
		out = append(out, s)
	}
	return out
}

var (
	descProbeRuns = prometheus.NewDesc("rocectl_probe_runs_total",
		"Probes of a peer by result: ok, failed (the pair lost it), busy (skipped: an apply or verify ran on either end, or the peer's probe CPU budget was spent), budget (skipped: this agent's probe CPU budget was spent).", []string{"peer", "result"}, nil)
	descProbeLatency = prometheus.NewDesc("rocectl_probe_latency_seconds",
		"Half the SEND/RECV round trip of the last good probe of a peer, at the quantile.", []string{"peer", "quantile"}, nil)
	descProbeBandwidth = prometheus.NewDesc("rocectl_probe_write_bytes_per_second",
		"RDMA WRITE bandwidth of the last good probe of a peer (a small sample, not the link's capacity).", []string{"peer"}, nil)
	descProbeLoss = prometheus.NewDesc("rocectl_probe_loss_ratio",
		"Share of a peer's last 20 probes that failed.", []string{"peer"}, nil)
	descProbeDegraded = prometheus.NewDesc("rocectl_probe_degraded",
		"1 while the pair is degraded (probes failing, or latency or bandwidth away from its baseline), 0 when healthy or not yet known.", []string{"peer"}, nil)
	descProbeLastSuccess = prometheus.NewDesc("rocectl_probe_last_success_timestamp_seconds",
		"Unix time of a peer's last good probe; absent before the first.", []string{"peer"}, nil)
)

func (p *prober) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descProbeRuns, descProbeLatency, descProbeBandwidth, descProbeLoss, descProbeDegraded, descProbeLastSuccess} {
		ch <- d
	}
}

func (p *prober) Collect(ch chan<- prometheus.Metric) {
	for _, s := range p.Status() {
		ch <- prometheus.MustNewConstMetric(descProbeRuns, prometheus.CounterValue, float64(s.OK), s.Peer, "ok")
		ch <- prometheus.MustNewConstMetric(descProbeRuns, prometheus.CounterValue, float64(s.Failed), s.Peer, "failed")
		ch <- prometheus.MustNewConstMetric(descProbeRuns, prometheus.CounterValue, float64(s.Busy), s.Peer, "busy")
		ch <- prometheus.MustNewConstMetric(descProbeRuns, prometheus.CounterValue, float64(s.Budget), s.Peer, "budget")
		ch <- prometheus.MustNewConstMetric(descProbeLoss, prometheus.GaugeValue, s.LossRatio, s.Peer)
		ch <- prometheus.MustNewConstMetric(descProbeDegraded, prometheus.GaugeValue, boolFloat(s.State == PairDegraded), s.Peer)
		if s.HasLastMeasurement {
			ch <- prometheus.MustNewConstMetric(descProbeLatency, prometheus.GaugeValue, s.LatP50.Seconds(), s.Peer, "0.5")
			ch <- prometheus.MustNewConstMetric(descProbeLatency, prometheus.GaugeValue, s.LatP99.Seconds(), s.Peer, "0.99")
			ch <- prometheus.MustNewConstMetric(descProbeBandwidth, prometheus.GaugeValue, s.WriteBytesPerSec, s.Peer)
			ch <- prometheus.MustNewConstMetric(descProbeLastSuccess, prometheus.GaugeValue, unixSeconds(s.LastSuccess), s.Peer)
		}
	}
}

// trafficGate is the gate of both ends: the state dir's traffic lock, at
// once or not at all.
func trafficGate(store statedir.Store, who string) func() (func(), error) {
	return func() (func(), error) {
		l, err := store.TryTraffic(who)
		if err != nil {
			return nil, err
		}
		return func() { _ = l.Release() }, nil
	}
}

// probe is the prober's probeFunc: one probe from the port the last check
// matched.
func (l *loop) probe(ctx context.Context, peer string) (*verify.LoopbackResult, error) {
	cfg, err := l.probeConfig()
	if err != nil {
		return nil, err
	}
	return verify.Probe(ctx, peer, cfg, l.cfg.Probe.specOrDefault())
}

// probeConfig is the verbs configuration of the probed port.
func (l *loop) probeConfig() (verify.LoopbackConfig, error) {
	l.st.mu.Lock()
	p, tc := l.st.probePort, l.st.traffic
	l.st.mu.Unlock()
	if p == nil {
		return verify.LoopbackConfig{}, errors.New("no RoCE port matched the profile at the last check")
	}
	return tc.PortConfig(*p)
}

func (c *ProbeConfig) specOrDefault() verify.ProbeSpec {
	if c.Spec == (verify.ProbeSpec{}) {
		return verify.DefaultProbeSpec
	}
	return c.Spec
}

// startProbing starts the prober and, with Listen, the probe server on the
// port the first check matched; both end with ctx.
func (l *loop) startProbing(ctx context.Context, wg *sync.WaitGroup, prb *prober) error {
	if ln := l.cfg.Probe.Listen; ln != "" {
		cfg, err := l.probeConfig()
		if err != nil {
			return fmt.Errorf("--probe-listen: %w", err)
		}
		lis, err := (&net.ListenConfig{}).Listen(ctx, "tcp", ln)
		if err != nil {
			return fmt.Errorf("--probe-listen: %w", err)
		}
		cfg.Log = l.log
		l.log.Info("serving probes", "addr", lis.Addr().String(), "device", cfg.Device, "port", cfg.Port)
		gate := budgetGate(newCPUBudget(ProbeCPUShare, time.Now()), processCPU, time.Now, trafficGate(l.cfg.Store.Store, "agent probe server"))
		wg.Go(func() {
			if err := verify.ServeProbes(ctx, lis, cfg, gate); err != nil {
				l.log.Error("probe server stopped", "err", err)
			}
		})
	}
	if len(prb.pairs) > 0 {
		l.log.Info("probing", "peers", strings.Join(l.cfg.Probe.Peers, " "), "every", prb.cfg.Interval)
		wg.Go(func() { prb.loop(ctx) })
	}
	return nil
}

// ProbingBuiltIn is nil when this build can send probes (verbs), else
// verify's ErrVerbsNotBuiltIn.
func ProbingBuiltIn() error {
	if !verify.VerbsBuiltIn() {
		return verify.ErrVerbsNotBuiltIn
	}
	return nil
}

// ProbeCPUShare is the share of one core each end of probing may use: the
// probes an agent sends, and, apart, the probes it serves. Together they
// stay within the 1 % of a core whatever a probe costs on the
// host (a NIC's QP setup is cheap; Soft-RoCE under emulation is not): a
// costly probe only makes probing slower.
const ProbeCPUShare = 0.005

// probeCPUBurst caps the credit saved while idle: one costly probe may
// run at once, but a long idle time does not buy a burst of them.
const probeCPUBurst = time.Second

// cpuBudget is a token bucket of CPU time: credit grows at share of the
// wall time, up to probeCPUBurst, and each probe spends what it took.
type cpuBudget struct {
	mu     sync.Mutex
	share  float64
	credit time.Duration
	last   time.Time
}

func newCPUBudget(share float64, now time.Time) *cpuBudget {
	return &cpuBudget{share: share, credit: probeCPUBurst, last: now}
}

// allow says whether a probe may run at now: credit is left.
func (b *cpuBudget) allow(now time.Time) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	if d := now.Sub(b.last); d > 0 {
		b.credit = min(probeCPUBurst, b.credit+time.Duration(float64(d)*b.share))
		b.last = now
	}
	return b.credit > 0
}

// spend takes a probe's CPU time off the credit (into debt, which the
// next probes wait out).
func (b *cpuBudget) spend(d time.Duration) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if d > 0 {
		b.credit -= d
	}
}

// processCPU is the user and system time this process has used; around a
// probe it also counts the agent's other work meanwhile, so the budget
// errs on the safe side.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// budgetGate is a probe server's gate: next (the traffic lock) behind a
// CPU budget of its own, spent by each probe served.
func budgetGate(b *cpuBudget, cpu func() time.Duration, now func() time.Time, next func() (func(), error)) func() (func(), error) {
	return func() (func(), error) {
		if !b.allow(now()) {
			return nil, errors.New("the probe CPU budget of this agent is spent for now")
		}
		release, err := next()
		if err != nil {
			return nil, err
		}
		cpu0 := cpu()
		return func() {
			b.spend(cpu() - cpu0)
			release()
		}, nil
	}
}
