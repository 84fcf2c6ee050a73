//go:build lab && verbs

package agent

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/rocectl/rocectl/statedir"
	"github.com/rocectl/rocectl/test/lab/labenv"
	"github.com/rocectl/rocectl/verify"
)

// Continuous probing between three of the lab's fabric endpoints (real
// RoCE v2 through netdevsim ports and the tc switch, as the rack sweep's
// hosts): h1 probes h2 and h3, each serving probes behind its own state
// dir's traffic lock. Probes pass; a probe while h2's host is held by an
// apply is busy and opens no QP there; once h3's cable is pulled, its
// pair degrades within two probes and h2's stays healthy.
func TestLabProbesMarkThePulledPair(t *testing.T) {
	labenv.Get(t)
	eps := labenv.NewFabric(t, 61, 3)
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	cfgOf := func(e labenv.Endpoint) verify.LoopbackConfig {
		return verify.LoopbackConfig{Device: e.RXE, Port: 1, GIDIndex: e.GIDIndex, RequireRoCEv2: true, TrafficClass: 106, Log: log}
	}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	t.Cleanup(func() { cancel(); wg.Wait() })
	stores := make([]statedir.Store, len(eps))
	var peers []string
	for i, e := range eps {
		stores[i] = statedir.Store{Dir: t.TempDir()}
		if i == 0 {
			continue
		}
		ln, err := net.Listen("tcp", net.JoinHostPort(e.IP.String(), "18516"))
		if err != nil {
			t.Fatal(err)
		}
		peers = append(peers, ln.Addr().String())
		cfg, gate := cfgOf(e), trafficGate(stores[i], fmt.Sprintf("h%d probe server", i+1))
		wg.Go(func() {
			if err := verify.ServeProbes(ctx, ln, cfg, gate); err != nil {
				t.Errorf("h%d probe server: %v", i+1, err)
			}
		})
	}
	spec := verify.DefaultProbeSpec
	local := cfgOf(eps[0])
	run := func(ctx context.Context, peer string) (*verify.LoopbackResult, error) {
		return verify.Probe(ctx, peer, local, spec)
	}
	p := newProber(ProbeConfig{Peers: peers, Spec: spec}, log, run, trafficGate(stores[0], "h1 agent probe"))
	now := time.Now()
	// The probes here run back to back on a fake clock: the CPU budget
	// (TestProbeCPUBudget) would pace them, which is not what this test
	// is about.
	p.budget = newCPUBudget(1, now)
	round := func(n int) {
		for range n {
			now = now.Add(15 * time.Second)
			p.probeNext(ctx, now)
		}
	}
	cpu0 := processCPU()
	round(4) // h2 h3 h2 h3
	// Both ends of every probe run in this process: the CPU they took,
	// per probe, against the budget of 1 % of a core at the
	// default rate (one probe of each of 8 peers every 30 s). Soft-RoCE
	// under emulation does in software what a NIC does in hardware, so
	// this is an upper bound: the verbs code polls its completion queues
	// busily, as perftest does, so a probe costs its wall time on each end.
	perProbe := (processCPU() - cpu0) / 4
	share := float64(perProbe) * 8 / float64(DefaultProbeInterval) * 100
	t.Logf("probe CPU: %v per probe, both ends, Soft-RoCE; 8 peers every %v would take %.2f %% of a core: the CPU budget (%.1f %% each end) paces them to one every %v", perProbe, DefaultProbeInterval, share, ProbeCPUShare*100, time.Duration(float64(perProbe)/2/ProbeCPUShare))
	for _, s := range p.Status() {
		if s.State != PairHealthy || s.OK != 2 || s.LatP50 <= 0 || s.WriteBytesPerSec <= 0 {
			t.Fatalf("before any fault: %+v", s)
		}
	}

	held, err := stores[1].Traffic(ctx, "apply -p h2.toml")
	if err != nil {
		t.Fatal(err)
	}
	round(1) // h2, held
	held.Release()
	if s := p.Status()[0]; s.Busy != 1 || s.OK != 2 || s.Failed != 0 {
		t.Fatalf("h2 probed while its host was held: %+v", s)
	}

	if out, err := exec.Command("sh", "-c", eps[2].PullCable()).CombinedOutput(); err != nil {
		t.Fatalf("pull h3's cable: %v\n%s", err, out)
	}
	round(5) // h3 h2 h3 h2 h3
	st := p.Status()
	if h2 := st[0]; h2.State != PairHealthy || h2.OK != 4 || h2.Failed != 0 {
		t.Errorf("h2 after h3's cable was pulled: %+v", h2)
	}
	h3 := st[1]
	if h3.State != PairDegraded || h3.Failed != 3 || h3.OK != 2 || !strings.Contains(h3.Why, "in a row failed") {
		t.Errorf("h3 with its cable pulled: %+v", h3)
	}
	t.Logf("h3 degraded: %s", h3.Why)
	reg := prometheus.NewRegistry()
	reg.MustRegister(p)
	want := fmt.Sprintf(`
# HELP rocectl_probe_degraded 1 while the pair is degraded (probes failing, or latency or bandwidth away from its baseline), 0 when healthy or not yet known.
# TYPE rocectl_probe_degraded gauge
rocectl_probe_degraded{peer=%q} 0
rocectl_probe_degraded{peer=%q} 1
`, peers[0], peers[1])
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), "rocectl_probe_degraded"); err != nil {
		t.Error(err)
	}
}
