package verify

import (
	"context"
	"errors"
	"net"
	"strings"
	"sync"
	"testing"
	"time"
)

// startProbeServer serves probes on loopback TCP with the fake fabric
// until the test ends; gate is the server's traffic gate.
func startProbeServer(t *testing.T, f *fakeFabric, gate func() (func(), error)) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() {
		cfg := LoopbackConfig{Device: "rxe1", GIDIndex: 1, Root: t.TempDir()}
		if err := serveProbesWith(ctx, ln, cfg, gate, f.open, fastTiming()); err != nil {
			t.Errorf("serveProbes: %v", err)
		}
	})
	t.Cleanup(func() { cancel(); wg.Wait() })
	return ln.Addr().String()
}

func open() (func(), error) { return func() {}, nil }

var testSpec = ProbeSpec{Messages: 20, MsgSize: 4096, Timeout: 5 * time.Second}

func runProbe(t *testing.T, f *fakeFabric, addr string, spec ProbeSpec) (*LoopbackResult, error) {
	t.Helper()
	cfg := LoopbackConfig{Device: "rxe0", GIDIndex: 1, TrafficClass: 106, Root: t.TempDir()}
	return probeWith(context.Background(), addr, cfg, spec, f.open, dialTCP)
}

// A probe measures latency and a bandwidth sample, and the server serves
// probe after probe on one listener, one at a time.
func TestProbeServesOneAfterAnother(t *testing.T) {
	f := newFakeFabric()
	addr := startProbeServer(t, f, open)
	for i := range 3 {
		res, err := runProbe(t, f, addr, testSpec)
		if err != nil {
			t.Fatalf("probe %d: %v", i, err)
		}
		if res.SendMsgs != testSpec.Messages || res.WriteMsgs != testSpec.Messages || res.WriteBytes != int64(testSpec.Messages*testSpec.MsgSize) {
			t.Fatalf("probe %d: sends %d writes %d bytes %d, want %d, %d, %d", i, res.SendMsgs, res.WriteMsgs, res.WriteBytes,
				testSpec.Messages, testSpec.Messages, testSpec.Messages*testSpec.MsgSize)
		}
		if res.CounterDeltas != nil {
			t.Fatalf("probe %d read hw_counters: %v", i, res.CounterDeltas)
		}
		if res.LatP50 <= 0 || res.LatP99 < res.LatP50 || res.WriteGbps <= 0 {
			t.Fatalf("probe %d: p50 %v p99 %v write %v Gb/s", i, res.LatP50, res.LatP99, res.WriteGbps)
		}
		if res.TrafficClass != 106 {
			t.Fatalf("probe %d: traffic class %d, want the profile's 106", i, res.TrafficClass)
		}
	}
}

// While an apply or verify holds the server's host, its answer is busy and
// no QP is opened there; the next probe, once the host is free, runs.
func TestProbeServerBusyWhileTheHostIsHeld(t *testing.T) {
	f := newFakeFabric()
	var mu sync.Mutex
	held := true
	gate := func() (func(), error) {
		mu.Lock()
		defer mu.Unlock()
		if held {
			return nil, errors.New("another rocectl is changing this host: pid 42 (apply)")
		}
		return func() {}, nil
	}
	addr := startProbeServer(t, f, gate)
	_, err := runProbe(t, f, addr, testSpec)
	if !errors.Is(err, ErrPeerFailed) || !strings.Contains(err.Error(), ErrProbeBusy.Error()) || !strings.Contains(err.Error(), "pid 42 (apply)") {
		t.Fatalf("probe of a held host: %v", err)
	}
	f.mu.Lock()
	opened := len(f.eps)
	f.mu.Unlock()
	if opened != 1 { // the client's own QP only
		t.Fatalf("%d QPs opened while the server's host was held, want only the client's", opened)
	}
	mu.Lock()
	held = false
	mu.Unlock()
	if _, err := runProbe(t, f, addr, testSpec); err != nil {
		t.Fatalf("probe once the host is free: %v", err)
	}
}

// A client asking the probe server for more than a probe is refused, and
// the server goes on serving probes.
func TestProbeServerRefusesMoreThanAProbe(t *testing.T) {
	f := newFakeFabric()
	addr := startProbeServer(t, f, open)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	big := LoopbackConfig{Device: "rxe0", GIDIndex: 1, Root: t.TempDir(), MsgSize: 4096, Duration: time.Minute, Ops: []string{OpWrite}}
	_, err := connectWith(ctx, addr, big, f.open, dialTCP, fastTiming())
	if !errors.Is(err, ErrPeerFailed) || !strings.Contains(err.Error(), "more than this end serves") {
		t.Fatalf("a minute-long test against the probe server: %v", err)
	}
	big = LoopbackConfig{Device: "rxe0", GIDIndex: 1, Root: t.TempDir(), MsgSize: 4096, Iterations: MaxProbeMessages + 1, Ops: []string{OpSend}}
	if _, err := connectWith(ctx, addr, big, f.open, dialTCP, fastTiming()); err == nil || !strings.Contains(err.Error(), "more than this end serves") {
		t.Fatalf("%d messages against the probe server: %v", MaxProbeMessages+1, err)
	}
	if _, err := runProbe(t, f, addr, testSpec); err != nil {
		t.Fatalf("a probe after the refusals: %v", err)
	}
}

// A peer with no probe server is a failed probe within the probe's
// timeout, not a half-minute dial retry.
func TestProbeOfAnAbsentPeerFailsWithinItsTimeout(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	spec := testSpec
	spec.Timeout = time.Second
	f := newFakeFabric()
	t0 := time.Now()
	_, err = runProbe(t, f, addr, spec)
	if err == nil || !strings.Contains(err.Error(), "cannot reach") {
		t.Fatalf("probe of a closed port: %v", err)
	}
	if d := time.Since(t0); d > 20*time.Second {
		t.Fatalf("the failed probe took %v, its timeout is %v", d, spec.Timeout)
	}
}

func TestProbeSpecBounds(t *testing.T) {
	if err := DefaultProbeSpec.Check(); err != nil {
		t.Fatalf("the default probe: %v", err)
	}
	for _, s := range []ProbeSpec{
		{Messages: 0, MsgSize: 1, Timeout: time.Second},
		{Messages: MaxProbeMessages + 1, MsgSize: 1, Timeout: time.Second},
		{Messages: 1, MsgSize: MaxProbeMsgSize + 1, Timeout: time.Second},
		{Messages: 1, MsgSize: 1, Timeout: MaxProbeTimeout + 1},
		{Messages: 1, MsgSize: 1},
	} {
		if s.Check() == nil {
			t.Errorf("%+v passed as a probe", s)
		}
	}
}
