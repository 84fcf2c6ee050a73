package agent

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/rocectl/rocectl/statedir"
	"github.com/rocectl/rocectl/verify"
)

var t0 = time.Date(2026, 12, 4, 4, 0, 0, 0, time.UTC)

// outcomes builds a probe sequence: "g" good (p50 10µs, 1 GB/s), "s" slow
// (p50 100µs), "n" narrow (0.1 GB/s), "f" failed, "b" busy; 30 s apart.
func outcomes(seq string) []probeOutcome {
	var out []probeOutcome
	for i, c := range seq {
		o := probeOutcome{at: t0.Add(time.Duration(i) * 30 * time.Second), p50: 10 * time.Microsecond, p99: 20 * time.Microsecond, bps: 1e9}
		switch c {
		case 's':
			o.p50, o.p99 = 100*time.Microsecond, 200*time.Microsecond
		case 'n':
			o.bps = 1e8
		case 'f':
			o = probeOutcome{at: o.at, err: errors.New("two-host: RDMA WRITE failed: IBV_WC_RETRY_EXC_ERR")}
		case 'b':
			o = probeOutcome{at: o.at, busy: true}
		}
		out = append(out, o)
	}
	return out
}

// The pair state machine on recorded probe sequences: one bad probe never
// degrades a pair, two failures in a row or three slow probes do, three
// good ones restore it, busy probes count for nothing, and the state never
// flaps on an alternating sequence.
func TestPairHealthSequences(t *testing.T) {
	for _, tc := range []struct {
		name, seq   string
		want        PairState
		transitions int // state changes along the sequence
		why         string
	}{
		{"healthy from the first good probe", "ggg", PairHealthy, 1, ""},
		{"one failure is not degraded", "gggggfg", PairHealthy, 1, ""},
		{"two failures in a row degrade", "gggggff", PairDegraded, 2, "2 probes in a row failed"},
		{"a dead peer from the start", "ff", PairDegraded, 1, "IBV_WC_RETRY_EXC_ERR"},
		{"three good probes restore", "gggggffggg", PairHealthy, 3, ""},
		{"two good probes do not restore yet", "gggggffgg", PairDegraded, 2, ""},
		{"alternating failures never flap", "gggggfgfgfgfgfgfg", PairHealthy, 1, ""},
		{"busy probes are neither loss nor health", "gggggfbbbbf", PairDegraded, 2, "2 probes in a row failed"},
		{"busy from the start is unknown", "bbbb", PairUnknown, 0, ""},
		{"slow after the baseline degrades", "gggggsss", PairDegraded, 2, "latency p50 100µs, more than 3× its baseline 10µs"},
		{"two slow probes are not enough", "gggggssg", PairHealthy, 1, ""},
		{"narrow bandwidth degrades", "gggggnnn", PairDegraded, 2, "write bandwidth"},
		{"slow probes during the baseline are the baseline", "sssss", PairHealthy, 1, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newPairHealth("10.0.0.2:18516")
			n := 0
			for _, o := range outcomes(tc.seq) {
				if h.record(o) {
					n++
				}
			}
			if h.state != tc.want || n != tc.transitions || !strings.Contains(h.why, tc.why) {
				t.Fatalf("%s: state %s after %d changes (why %q), want %s after %d (why containing %q)", tc.seq, h.state, n, h.why, tc.want, tc.transitions, tc.why)
			}
		})
	}
}

func TestPairLossRatioOverTheLastProbes(t *testing.T) {
	h := newPairHealth("p")
	for _, o := range outcomes(strings.Repeat("f", 10) + strings.Repeat("g", 15) + "bb") {
		h.record(o)
	}
	// the last 20 that ran: 5 failed, 15 good
	if got := h.lossRatio(); got != 0.25 {
		t.Fatalf("loss ratio %v, want 0.25", got)
	}
	if h.ok != 15 || h.failed != 10 || h.busy != 2 {
		t.Fatalf("ok %d failed %d busy %d", h.ok, h.failed, h.busy)
	}
}

// The prober takes the peers in turn, one probe at a time; a probe that
// cannot take the traffic lock does not run and is busy; a peer that
// answers busy is busy too; a probe cut short by shutdown is not recorded.
func TestProberTurnsGateAndBusyPeers(t *testing.T) {
	var ran []string
	run := func(ctx context.Context, peer string) (*verify.LoopbackResult, error) {
		ran = append(ran, peer)
		switch peer {
		case "b:1":
			return nil, fmt.Errorf("%w: %w: another rocectl is changing this host", verify.ErrPeerFailed, verify.ErrProbeBusy)
		case "c:1":
			return nil, errors.New("two-host: cannot reach c:1: connection refused")
		}
		return &verify.LoopbackResult{LatP50: 12 * time.Microsecond, LatP99: 30 * time.Microsecond, WriteGbps: 8}, nil
	}
	store := statedir.Store{Dir: t.TempDir()}
	p := newProber(ProbeConfig{Peers: []string{"a:1", "b:1", "c:1"}}, slog.New(slog.NewTextHandler(io.Discard, nil)), run, trafficGate(store, "agent probe"))
	ctx := context.Background()
	for i := range 6 {
		p.probeNext(ctx, t0.Add(time.Duration(i)*10*time.Second))
	}
	if got := strings.Join(ran, " "); got != "a:1 b:1 c:1 a:1 b:1 c:1" {
		t.Fatalf("probes ran %q", got)
	}
	// An apply holds the traffic lock: the next probe does not run.
	apply, err := store.Traffic(ctx, "apply")
	if err != nil {
		t.Fatal(err)
	}
	p.probeNext(ctx, t0.Add(time.Minute))
	apply.Release()
	if len(ran) != 6 {
		t.Fatalf("a probe ran while the traffic lock was held: %v", ran)
	}
	st := p.Status()
	want := []struct {
		state            PairState
		ok, failed, busy uint64
	}{{PairHealthy, 2, 0, 1}, {PairUnknown, 0, 0, 2}, {PairDegraded, 0, 2, 0}}
	for i, w := range want {
		s := st[i]
		if s.State != w.state || s.OK != w.ok || s.Failed != w.failed || s.Busy != w.busy {
			t.Errorf("%s: %s ok %d failed %d busy %d, want %s %d %d %d", s.Peer, s.State, s.OK, s.Failed, s.Busy, w.state, w.ok, w.failed, w.busy)
		}
	}
	if st[0].LatP50 != 12*time.Microsecond || st[0].WriteBytesPerSec != 1e9 {
		t.Errorf("a:1 measured p50 %v, %v B/s; want 12µs, 1e9 (8 Gb/s)", st[0].LatP50, st[0].WriteBytesPerSec)
	}

	// Shutdown during a probe: not recorded against the pair.
	cctx, cancel := context.WithCancel(ctx)
	p.run = func(ctx context.Context, peer string) (*verify.LoopbackResult, error) {
		cancel()
		return nil, ctx.Err()
	}
	before := p.Status()[1]
	p.probeNext(cctx, t0.Add(2*time.Minute))
	if after := p.Status()[1]; after.Failed != before.Failed || after.Busy != before.Busy {
		t.Fatalf("a probe cut by shutdown was recorded: %+v", after)
	}
}

func TestProbeMetrics(t *testing.T) {
	p := newProber(ProbeConfig{Peers: []string{"10.0.0.2:18516", "10.0.0.3:18516"}}, slog.New(slog.NewTextHandler(io.Discard, nil)), nil, nil)
	for _, o := range outcomes("gggggff") {
		p.pairs[0].record(o)
	}
	reg := prometheus.NewRegistry()
	reg.MustRegister(p)
	want := `
# HELP rocectl_probe_degraded 1 while the pair is degraded (probes failing, or latency or bandwidth away from its baseline), 0 when healthy or not yet known.
# TYPE rocectl_probe_degraded gauge
rocectl_probe_degraded{peer="10.0.0.2:18516"} 1
rocectl_probe_degraded{peer="10.0.0.3:18516"} 0
# HELP rocectl_probe_latency_seconds Half the SEND/RECV round trip of the last good probe of a peer, at the quantile.
# TYPE rocectl_probe_latency_seconds gauge
rocectl_probe_latency_seconds{peer="10.0.0.2:18516",quantile="0.5"} 1e-05
rocectl_probe_latency_seconds{peer="10.0.0.2:18516",quantile="0.99"} 2e-05
# HELP rocectl_probe_loss_ratio Share of a peer's last 20 probes that failed.
# TYPE rocectl_probe_loss_ratio gauge
rocectl_probe_loss_ratio{peer="10.0.0.2:18516"} 0.2857142857142857
rocectl_probe_loss_ratio{peer="10.0.0.3:18516"} 0
# HELP rocectl_probe_runs_total Probes of a peer by result: ok, failed (the pair lost it), busy (skipped: an apply or verify ran on either end, or the peer's probe CPU budget was spent), budget (skipped: this agent's probe CPU budget was spent).
# TYPE rocectl_probe_runs_total counter
rocectl_probe_runs_total{peer="10.0.0.2:18516",result="budget"} 0
rocectl_probe_runs_total{peer="10.0.0.2:18516",result="busy"} 0
rocectl_probe_runs_total{peer="10.0.0.2:18516",result="failed"} 2
rocectl_probe_runs_total{peer="10.0.0.2:18516",result="ok"} 5
rocectl_probe_runs_total{peer="10.0.0.3:18516",result="budget"} 0
rocectl_probe_runs_total{peer="10.0.0.3:18516",result="busy"} 0
rocectl_probe_runs_total{peer="10.0.0.3:18516",result="failed"} 0
rocectl_probe_runs_total{peer="10.0.0.3:18516",result="ok"} 0
# HELP rocectl_probe_write_bytes_per_second RDMA WRITE bandwidth of the last good probe of a peer (a small sample, not the link's capacity).
# TYPE rocectl_probe_write_bytes_per_second gauge
rocectl_probe_write_bytes_per_second{peer="10.0.0.2:18516"} 1e+09
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), "rocectl_probe_degraded", "rocectl_probe_latency_seconds",
		"rocectl_probe_loss_ratio", "rocectl_probe_runs_total", "rocectl_probe_write_bytes_per_second"); err != nil {
		t.Fatal(err)
	}
	if n, err := testutil.GatherAndCount(reg, "rocectl_probe_last_success_timestamp_seconds"); err != nil || n != 1 {
		t.Fatalf("last success series: %d (%v), want one: the never-probed peer has none", n, err)
	}
}

func TestProbeConfigCheck(t *testing.T) {
	c := ProbeConfig{Peers: []string{"a:1", "noport", "a:1"}, Listen: "x", Interval: time.Second}
	for i := range MaxProbePeers {
		c.Peers = append(c.Peers, fmt.Sprintf("h%d:1", i))
	}
	err := c.Check()
	for _, want := range []string{"at most 64 peers", `"noport": not HOST:PORT`, `"a:1" given twice`, `--probe-listen "x"`, "--probe-interval 1s: at least 10s"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Check: %v; want it to say %q", err, want)
		}
	}
	if err := (&ProbeConfig{Peers: []string{"10.0.0.2:18516"}, Listen: ":18516"}).Check(); err != nil {
		t.Fatalf("a good config: %v", err)
	}
}

// Probing's CPU stays within ProbeCPUShare of a core on each end, whatever
// a probe costs: with probes of 300 ms of CPU (Soft-RoCE under emulation
// measured about that), the prober skips turns for the budget instead of
// running them, and a server answers busy once its own budget is spent.
func TestProbeCPUBudget(t *testing.T) {
	var used time.Duration
	run := func(ctx context.Context, peer string) (*verify.LoopbackResult, error) {
		used += 300 * time.Millisecond
		return &verify.LoopbackResult{LatP50: 10 * time.Microsecond, LatP99: 20 * time.Microsecond, WriteGbps: 8}, nil
	}
	p := newProber(ProbeConfig{Peers: []string{"a:1", "b:1"}}, slog.New(slog.NewTextHandler(io.Discard, nil)), run,
		func() (func(), error) { return func() {}, nil })
	p.cpu = func() time.Duration { return used }
	p.budget = newCPUBudget(ProbeCPUShare, t0)
	window := time.Hour
	for at := time.Duration(0); at < window; at += p.step() {
		p.probeNext(context.Background(), t0.Add(at))
	}
	var ran, skipped uint64
	for _, s := range p.Status() {
		ran += s.OK
		skipped += s.Budget
	}
	if limit := time.Duration(float64(window)*ProbeCPUShare) + probeCPUBurst + 300*time.Millisecond; used > limit {
		t.Fatalf("probes used %v of CPU in %v, over the budget's %v", used, window, limit)
	}
	if ran == 0 || skipped == 0 {
		t.Fatalf("ran %d, skipped %d: want both (the budget paces, it does not stop probing)", ran, skipped)
	}
	t.Logf("%d probes ran and %d waited for the budget in %v: %v of CPU (%.2f %% of a core)", ran, skipped, window, used, float64(used)/float64(window)*100)

	// The server side: a budget of its own, spent by what it serves.
	var served time.Duration
	now := t0
	gate := budgetGate(newCPUBudget(ProbeCPUShare, now), func() time.Duration { return served }, func() time.Time { return now },
		func() (func(), error) { return func() {}, nil })
	for range 4 {
		release, err := gate()
		if err != nil {
			break
		}
		served += 300 * time.Millisecond
		release()
	}
	if _, err := gate(); err == nil || !strings.Contains(err.Error(), "probe CPU budget") {
		t.Fatalf("a server past its budget: %v", err)
	}
	now = now.Add(2 * time.Minute) // 0.6 s of credit back
	if release, err := gate(); err != nil {
		t.Fatalf("a server once its budget came back: %v", err)
	} else {
		release()
	}
}
