package lldp_test

import (
	"errors"
	"os"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/rocectl/rocectl/internal/testkit/netnstest"
	"github.com/rocectl/rocectl/lldp"
)

// waitBlockedIn waits until a goroutine is parked in the poller inside fn
// (its stack shows both), so that what the test does next happens to a
// Read in progress and not before it.
func waitBlockedIn(t *testing.T, fn string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	buf := make([]byte, 1<<20)
	for {
		n := runtime.Stack(buf, true)
		for _, g := range strings.Split(string(buf[:n]), "\n\n") {
			if strings.Contains(g, "runtime_pollWait") && strings.Contains(g, fn) {
				return
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("no goroutine blocked in %s after 10s", fn)
		}
		runtime.Gosched()
	}
}

// Close during a Read: the Read returns os.ErrClosed, as documented, so
// that a caller that closes its listener on shutdown can tell that end
// from a failure (it used to be the poller's "use of closed file").
func TestReadReturnsErrClosedOnClose(t *testing.T) {
	ns := netnstest.New(t)
	ns.AddVeth("host0", "sw0")
	ns.SetUp("host0")
	var l *lldp.Listener
	if err := ns.Do(func() (err error) { l, err = lldp.Listen("host0"); return err }); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		_, err := l.Read(time.Time{})
		done <- err
	}()
	waitBlockedIn(t, "lldp.(*Listener).Read")
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if err := <-done; !errors.Is(err, os.ErrClosed) {
		t.Errorf("Read during Close: %v, want os.ErrClosed", err)
	}
	if _, err := l.Read(time.Time{}); !errors.Is(err, os.ErrClosed) {
		t.Errorf("Read after Close: %v, want os.ErrClosed", err)
	}
}
