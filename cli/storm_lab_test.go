//go:build lab

package cli

import (
	"bytes"
	"context"
	"flag"
	"math/rand/v2"
	"os"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rocectl/rocectl/internal/testkit/median"
)

var stormLab = flag.Bool("storm.lab", false, "run TestLabStormLatency (bench/storm-latency.sh with STORM_LAB=1)")

// TestLabStormLatency is the lab half of bench/storm-latency.sh: storm
// onset -> rollback complete through the real kernel (netdevsim's
// mlx5-named counters read by the ethtool ioctl, dcbnl restored by the
// rollback), guard poll 100 ms, detection_time 200 ms. Each run applies
// PFC on 3 and 4 over a committed PFC-on-3 state; at a random moment of
// the soak's first second a writer makes rx_prio4_pause_duration follow
// wall-clock time (a 100 % storm, 1 µs per µs, not the 2× that
// TestLabStormRollsBackRealDCB needs to beat per-poll jitter). It logs
// "storm-latency: ..." lines the script reads; target (issue): median of
// 10 ≤ 400 ms. Off unless -storm.lab: the script runs it alone.
func TestLabStormLatency(t *testing.T) {
	if !*stormLab {
		t.Skip("run by bench/storm-latency.sh (STORM_LAB=1): -storm.lab")
	}
	l := newLabNIC(t)
	if code, out, errs := l.rocectl(t, "apply", "-p", l.profile(t, "[3]", "0s")); code != ExitOK {
		t.Fatalf("first apply: exit %d\n%s%s", code, out, errs)
	}
	prof := l.profile(t, "[3, 4]", "3s")
	body, err := os.ReadFile(prof)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(prof, bytes.Replace(body, []byte(`detection_time = "300ms"`), []byte(`detection_time = "200ms"`), 1), 0o600); err != nil {
		t.Fatal(err)
	}
	const counter = "rx_prio4_pause_duration"
	var lat []time.Duration
	for i := range *stormRuns {
		base, err := l.port.Stat(counter)
		if err != nil {
			t.Fatal(err)
		}
		stdout := &signalWriter{mark: "Applied ", seen: make(chan struct{})}
		var stderr bytes.Buffer
		var onset atomic.Int64
		done := make(chan struct{})
		writerDone := make(chan struct{})
		go func() {
			defer close(writerDone)
			select {
			case <-stdout.seen:
			case <-done:
				return
			}
			timer := time.NewTimer(rand.N(time.Second))
			select {
			case <-timer.C:
			case <-done:
				timer.Stop()
				return
			}
			start := time.Now()
			onset.Store(start.UnixNano())
			for {
				select {
				case <-done:
					return
				default:
				}
				_ = l.port.SetStat(counter, base+uint64(time.Since(start).Microseconds()))
				time.Sleep(time.Millisecond)
			}
		}()
		cmd := NewRootCommand(NewEnv(stdout, &stderr))
		cmd.SetArgs([]string{"--state-dir", l.state, "apply", "-p", prof})
		err = cmd.ExecuteContext(context.Background())
		end := time.Now()
		close(done)
		<-writerDone
		on := onset.Load()
		if code := ExitCode(err); code != ExitRolledBack || on == 0 {
			t.Fatalf("run %d: exit %d (want 3), storm started: %v\n%s%s%s", i, code, on != 0, stdout.String(), stderr.String(), ErrorMessage(err))
		}
		if !strings.Contains(stderr.String(), "pause storm on "+l.port.Ifname+" priority 4 (rx)") {
			t.Fatalf("run %d rolled back for another reason:\n%s", i, stderr.String())
		}
		if got := pfcEnabled(t, l.port.Ifname); len(got) != 1 || got[0] != 3 {
			t.Fatalf("run %d: after the rollback PFC is on %v, want [3]", i, got)
		}
		lat = append(lat, end.Sub(time.Unix(0, on)))
		t.Logf("storm-latency: run %d: %.1f ms", i, msOf(lat[len(lat)-1]))
	}
	t.Logf("storm-latency: lab median %.1f ms worst %.1f ms runs %d", msOf(median.Mean(lat)), msOf(slices.Max(lat)), len(lat))
}
