//go:build lab && verbs

package verify

// rocectl's verbs traffic against perftest on the same Soft-RoCE devices,
// in the same guest boot. Soft-RoCE under emulation is a functional lab,
// not a performance one: only the ratio between the two means something.
//
//	bench/verbs-vs-perftest.sh      (builds this binary and runs it in the lab)

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rocectl/rocectl/internal/testkit/median"
	"github.com/rocectl/rocectl/nic"
)

// perftestRun starts the perftest server on rxe1 and the client on rxe0
// (toward LAB_IP1, as the lab's self-test does) and returns the client's
// result line split into fields.
func perftestRun(ctx context.Context, e verbsLabEnv, tool string, args ...string) ([]string, string, error) {
	base := append([]string{"-x", "1", "-p", "18700"}, args...)
	srv := exec.CommandContext(ctx, tool, append([]string{"-d", e.rxe1}, base...)...)
	var srvOut strings.Builder
	srv.Stdout, srv.Stderr = &srvOut, &srvOut
	if err := srv.Start(); err != nil {
		return nil, "", err
	}
	defer srv.Wait()
	var out []byte
	var err error
	// The server needs a moment to listen; the client does not retry.
	for try := 0; try < 20; try++ {
		time.Sleep(500 * time.Millisecond)
		out, err = exec.CommandContext(ctx, tool, append(append([]string{"-d", e.rxe0}, base...), e.ip1)...).CombinedOutput()
		if err == nil || !strings.Contains(string(out), "Couldn't connect") {
			break
		}
	}
	if err != nil {
		srv.Process.Kill()
		return nil, string(out) + srvOut.String(), fmt.Errorf("%s: %w", tool, err)
	}
	// The result is the first line of numbers after the "#bytes" header.
	lines := strings.Split(string(out), "\n")
	for i, l := range lines {
		if !strings.Contains(l, "#bytes") {
			continue
		}
		for _, d := range lines[i+1:] {
			f := strings.Fields(d)
			if len(f) > 3 {
				if _, err := strconv.Atoi(f[0]); err == nil {
					return f, string(out), nil
				}
			}
		}
	}
	return nil, string(out), fmt.Errorf("%s: no result line", tool)
}

func perftestField(b *testing.B, f []string, i int) float64 {
	if i >= len(f) {
		b.Fatalf("result line %v has no column %d", f, i)
	}
	v, err := strconv.ParseFloat(f[i], 64)
	if err != nil {
		b.Fatalf("column %d of %v: %v", i, f, err)
	}
	return v
}

func benchEnvInt(name string, def int) int {
	if v, err := strconv.Atoi(os.Getenv(name)); err == nil && v > 0 {
		return v
	}
	return def
}

// twoHost runs Listen on rxe1 and Connect from rxe0 in one process.
func labTwoHost(ctx context.Context, e verbsLabEnv, cfg LoopbackConfig) (*LoopbackResult, error) {
	addr := e.ip1 + ":18701"
	var wg sync.WaitGroup
	var serr error
	wg.Go(func() { _, serr = Listen(ctx, addr, LoopbackConfig{Device: e.rxe1, GIDIndex: 1}) })
	cfg.Device, cfg.GIDIndex = e.rxe0, 1
	res, err := Connect(ctx, addr, cfg)
	wg.Wait()
	if err == nil {
		err = serr
	}
	return res, err
}

// retries is how many times rxe0's requester timed out and resent during
// fn (completer_retry_err): under emulation each costs a full QP timeout
// (~67 ms), and they, not the code under test, decide most of a run's time.
func retries(b *testing.B, dev string, fn func()) int64 {
	fs := nic.NewFS("/", true)
	before, _ := readHWCounters(fs, dev, 1, verbsTestLog)
	fn()
	time.Sleep(hwCountersSettle(fs, dev, 1))
	after, _ := readHWCounters(fs, dev, 1, verbsTestLog)
	return hwCounterDeltas(before, after)["completer_retry_err"]
}

func BenchmarkLabVerbsVsPerftest(b *testing.B) {
	e := verbsLabEnv{os.Getenv("LAB_RXE0"), os.Getenv("LAB_RXE1"), os.Getenv("LAB_IF0"), os.Getenv("LAB_IF1"),
		os.Getenv("LAB_IP0"), os.Getenv("LAB_IP1")}
	if e.rxe0 == "" || e.ip1 == "" {
		b.Skip("not in the Soft-RoCE lab guest")
	}
	bwSize, bwIters := benchEnvInt("LAB_BENCH_BW_SIZE", 65536), benchEnvInt("LAB_BENCH_BW_ITERS", 1000)
	latSize, latIters := benchEnvInt("LAB_BENCH_LAT_SIZE", 2), benchEnvInt("LAB_BENCH_LAT_ITERS", 1000)
	rounds := benchEnvInt("LAB_BENCH_ROUNDS", 3)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Minute)
	defer cancel()
	us := func(d time.Duration) float64 { return float64(d) / float64(time.Microsecond) }
	for b.Loop() {
		// One series per measurement, one value per round.
		m := map[string][]float64{}
		add := func(k string, v float64) { m[k] = append(m[k], v) }
		var log strings.Builder
		for round := range rounds {
			// perftest: ib_write_bw -s SIZE -n N --report_gbits, columns
			// #bytes #iterations BW-peak BW-average MsgRate;
			// ib_write_lat / ib_send_lat -s SIZE -n N, columns
			// #bytes #iterations t_min t_max t_typical t_avg t_stdev 99% 99.9% (µs).
			perftest := func() {
				var f []string
				var out string
				var err error
				r := retries(b, e.rxe0, func() {
					f, out, err = perftestRun(ctx, e, "ib_write_bw", "-s", strconv.Itoa(bwSize), "-n", strconv.Itoa(bwIters), "--report_gbits")
				})
				if err != nil {
					b.Fatalf("%v\n%s", err, out)
				}
				add("p.bw", perftestField(b, f, 3))
				add("p.bw.retries", float64(r))
				for _, tool := range []string{"ib_write_lat", "ib_send_lat"} {
					f, out, err := perftestRun(ctx, e, tool, "-s", strconv.Itoa(latSize), "-n", strconv.Itoa(latIters))
					if err != nil {
						b.Fatalf("%v\n%s", err, out)
					}
					add("p."+tool+".typ", perftestField(b, f, 4))
					add("p."+tool+".p99", perftestField(b, f, 7))
				}
			}
			rocectl := func() {
				var th *LoopbackResult
				var err error
				r := retries(b, e.rxe0, func() {
					th, err = labTwoHost(ctx, e, LoopbackConfig{MsgSize: bwSize, Iterations: bwIters, Ops: []string{OpWrite}})
				})
				if err != nil {
					b.Fatal(err)
				}
				add("r.bw", th.WriteGbps)
				add("r.bw.retries", float64(r))
				lb, err := Loopback(ctx, LoopbackConfig{Device: e.rxe0, GIDIndex: 1, MsgSize: bwSize, Iterations: bwIters, Ops: []string{OpWrite}})
				if err != nil {
					b.Fatal(err)
				}
				add("l.bw", lb.WriteGbps)
				thl, err := labTwoHost(ctx, e, LoopbackConfig{MsgSize: latSize, Iterations: latIters, Ops: []string{OpSend}})
				if err != nil {
					b.Fatal(err)
				}
				add("r.lat.p50", us(thl.LatP50))
				add("r.lat.p99", us(thl.LatP99))
				lbl, err := Loopback(ctx, LoopbackConfig{Device: e.rxe0, GIDIndex: 1, MsgSize: latSize, Iterations: latIters, Ops: []string{OpSend}})
				if err != nil {
					b.Fatal(err)
				}
				add("l.lat.p50", us(lbl.LatP50))
				add("l.lat.p99", us(lbl.LatP99))
			}
			// Alternate who goes first: the shared host's load drifts.
			if round%2 == 0 {
				perftest()
				rocectl()
			} else {
				rocectl()
				perftest()
			}
			fmt.Fprintf(&log, "round %d: write Gb/s perftest %.4f (%v retries) rocectl %.4f (%v retries) loopback %.4f\n", round+1,
				m["p.bw"][round], m["p.bw.retries"][round], m["r.bw"][round], m["r.bw.retries"][round], m["l.bw"][round])
		}
		med := func(k string) float64 { return median.Mean(m[k]) }
		var t strings.Builder
		fmt.Fprintf(&t, "\nmedians of %d rounds; perftest and rocectl two-host both run rxe0 -> rxe1 (%s -> %s), loopback is rxe0 -> rxe0\n%s",
			rounds, e.ip0, e.ip1, log.String())
		fmt.Fprintf(&t, "%-36s %12s %18s %8s %18s\n", "", "perftest", "rocectl two-host", "ratio", "rocectl loopback")
		row := func(name string, p, r, l float64, prec int) {
			fmt.Fprintf(&t, "%-36s %12.*f %18.*f %8.2f %18.*f\n", name, prec, p, prec, r, r/p, prec, l)
		}
		row(fmt.Sprintf("RDMA WRITE %dB x%d [Gb/s]", bwSize, bwIters), med("p.bw"), med("r.bw"), med("l.bw"), 4)
		row(fmt.Sprintf("latency %dB p50 vs ib_send_lat [us]", latSize), med("p.ib_send_lat.typ"), med("r.lat.p50"), med("l.lat.p50"), 1)
		row(fmt.Sprintf("latency %dB p99 vs ib_send_lat [us]", latSize), med("p.ib_send_lat.p99"), med("r.lat.p99"), med("l.lat.p99"), 1)
		row(fmt.Sprintf("latency %dB p50 vs ib_write_lat [us]", latSize), med("p.ib_write_lat.typ"), med("r.lat.p50"), med("l.lat.p50"), 1)
		fmt.Print(t.String())
		b.ReportMetric(med("p.bw"), "perftest-Gb/s")
		b.ReportMetric(med("r.bw"), "rocectl-Gb/s")
		b.ReportMetric(med("r.bw")/med("p.bw"), "bw-ratio")
		b.ReportMetric(med("r.lat.p50"), "rocectl-p50-us")
		b.ReportMetric(med("p.ib_send_lat.typ"), "send_lat-typical-us")
	}
}
