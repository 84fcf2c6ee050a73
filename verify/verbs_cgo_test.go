//go:build cgo && verbs

package verify

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"
)

// These run on any host with libibverbs installed, RDMA device or not.

func TestWCStatusTextMatchesLibibverbs(t *testing.T) {
	for s := WCStatus(0); s <= 24; s++ {
		if got, want := s.Text(), libibverbsWCStatusStr(int(s)); got != want {
			t.Errorf("status %d (%s): Go text %q, ibv_wc_status_str %q", int(s), s, got, want)
		}
	}
}

func TestLoopbackUnknownDevice(t *testing.T) {
	_, err := Loopback(context.Background(), LoopbackConfig{Device: "rocectl_nonexistent0"})
	if !errors.Is(err, ErrNoDevice) || errors.Is(err, ErrVerbsNotBuiltIn) {
		t.Fatalf("got %v, want ErrNoDevice", err)
	}
	if !strings.Contains(err.Error(), "rocectl_nonexistent0") && !strings.Contains(err.Error(), "no RDMA devices") {
		t.Errorf("error does not say what is missing: %v", err)
	}
}

func TestConnectUnknownDeviceFailsBeforeDialing(t *testing.T) {
	start := time.Now()
	// Nothing listens on port 9 of TEST-NET-1; the device check must come first.
	_, err := Connect(context.Background(), "192.0.2.1:9", LoopbackConfig{Device: "rocectl_nonexistent0"})
	if !errors.Is(err, ErrNoDevice) {
		t.Fatalf("got %v, want ErrNoDevice", err)
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("took %v: dialled before opening the device", d)
	}
}

// BenchmarkCgoCall measures one empty cgo call (ns/call), the price the
// traffic loops would pay two or three times per message if Go drove them.
func BenchmarkCgoCall(b *testing.B) {
	const calls = 1 << 20
	for b.Loop() {
		start := time.Now()
		x := 0
		for range calls {
			x = cgoNop(x)
		}
		if x != calls {
			b.Fatal(x)
		}
		b.ReportMetric(float64(time.Since(start).Nanoseconds())/calls, "ns/call")
	}
}

// BenchmarkClock measures the C loops' clock read (ns/read), which the
// loops take once per poll.
func BenchmarkClock(b *testing.B) {
	for b.Loop() {
		cNowNS()
	}
}
