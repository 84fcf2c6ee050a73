package agent

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coreos/go-systemd/v22/daemon"

	"github.com/rocectl/rocectl/apply"
	"github.com/rocectl/rocectl/host"
	"github.com/rocectl/rocectl/internal/testkit/fixturehost"
	"github.com/rocectl/rocectl/internal/testkit/leaktest"
	"github.com/rocectl/rocectl/internal/testkit/netnstest"
	"github.com/rocectl/rocectl/nic"
	"github.com/rocectl/rocectl/nic/snapshot"
	"github.com/rocectl/rocectl/statedir"
)

// notifier records what the daemon tells systemd.
type notifier struct {
	mu     sync.Mutex
	states []string
	// pinged gets a value (without blocking) at every WATCHDOG=1.
	pinged chan struct{}
}

func newNotifier() *notifier { return &notifier{pinged: make(chan struct{}, 1)} }

func (n *notifier) notify(state string) {
	n.mu.Lock()
	n.states = append(n.states, state)
	n.mu.Unlock()
	if state == daemon.SdNotifyWatchdog {
		select {
		case n.pinged <- struct{}{}:
		default:
		}
	}
}

// pings counts the WATCHDOG=1 sent, and those sent before READY=1.
func (n *notifier) pings() (all, beforeReady int) {
	n.mu.Lock()
	defer n.mu.Unlock()
	ready := false
	for _, s := range n.states {
		switch s {
		case daemon.SdNotifyReady:
			ready = true
		case daemon.SdNotifyWatchdog:
			all++
			if !ready {
				beforeReady++
			}
		}
	}
	return all, beforeReady
}

// waitPing waits for the next WATCHDOG=1, failing after 30 s.
func (n *notifier) waitPing(t *testing.T) {
	t.Helper()
	select {
	case <-n.pinged:
	case <-time.After(30 * time.Second):
		t.Fatal("no watchdog ping in 30 s")
	}
}

// stuckKernel blocks every Link call while stuck is set, until released.
type stuckKernel struct {
	nic.Kernel
	mu      sync.Mutex
	stuck   bool
	entered chan struct{} // closed when a call blocks
	release chan struct{}
}

func (k *stuckKernel) Link(name string) (nic.LinkInfo, error) {
	k.mu.Lock()
	stuck := k.stuck
	if stuck {
		k.stuck = false
		close(k.entered)
	}
	k.mu.Unlock()
	if stuck {
		<-k.release
	}
	return k.Kernel.Link(name)
}

// The watchdog pings come from the loop: a check that hangs stops them
// (systemd then restarts the agent), and they resume when it returns.
func TestWatchdogStopsWhenACheckHangs(t *testing.T) {
	s, err := snapshot.Open(fixturehost.Dir("cx6dx-ofed-factory"))
	if err != nil {
		t.Fatal(err)
	}
	k := &stuckKernel{Kernel: s.Kernel(), entered: make(chan struct{}), release: make(chan struct{})}
	n := newNotifier()
	const wd = 100 * time.Millisecond
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := goRun(t, cancel, func() error {
		return Run(ctx, Config{Profile: profile("connectx-lossless.toml"), Interval: 20 * time.Millisecond,
			Host: &host.Host{FS: s.FS(), K: k}, ReadOnly: true, Store: apply.Store{Store: statedir.Store{Dir: t.TempDir()}},
			Notify: n.notify, Watchdog: wd})
	})
	// Run cannot end while the check hangs: a test that fails before
	// releasing it does so here, before goRun's cleanup waits for Run.
	t.Cleanup(func() {
		select {
		case <-k.release:
		default:
			close(k.release)
		}
	})
	n.waitPing(t)
	n.waitPing(t)
	k.mu.Lock()
	k.stuck = true
	k.mu.Unlock()
	select {
	case <-k.entered:
	case <-time.After(30 * time.Second):
		t.Fatal("no check read a link in 30 s")
	}
	// The check is stuck: for three watchdog periods no ping may come (a
	// ping sent just before the check began may still be in the channel).
	select {
	case <-n.pinged:
	default:
	}
	before, _ := n.pings()
	select {
	case <-n.pinged:
		after, _ := n.pings()
		t.Fatalf("a ping while the check hangs (%d before, %d now)", before, after)
	case <-time.After(3 * wd):
	}
	close(k.release)
	n.waitPing(t)
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("Run: %v", err)
	}
}

// An enforce-mode apply soaks for the guard's window with the loop inside
// apply.Run: each poll of the soak pings, so a soak longer than the
// watchdog is not taken for a hang. The start check's apply runs before
// READY=1, when the loop has not begun: every ping before READY=1 comes
// from the soak.
func TestWatchdogPingsDuringTheSoak(t *testing.T) {
	root, sim := fixturehost.Copy(t, "cx6dx-ofed-factory")
	prof := filepath.Join(t.TempDir(), "p.toml")
	body := fmt.Sprintf("include = [%q]\n[guard]\nsoak = \"1s\"\npoll = \"100ms\"\ndetection_time = \"200ms\"\n", profile("connectx-lossless.toml"))
	if err := os.WriteFile(prof, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	var logs logBuffer
	n := newNotifier()
	const wd = 200 * time.Millisecond
	cfg := Config{Profile: prof, Enforce: true, Once: true, Host: &host.Host{FS: nic.NewFS(root, false), K: sim},
		Store: apply.Store{Store: statedir.Store{Dir: t.TempDir()}}, Log: logs.logger(), Notify: n.notify, Watchdog: wd}
	if err := Run(context.Background(), cfg); err != nil {
		t.Fatal(err)
	}
	applies := logs.records(t, "apply")
	if len(applies) != 1 || applies[0]["result"] != "applied" {
		t.Fatalf("apply lines %v, want one applied", applies)
	}
	// The soak lasts a second, polled every 100 ms (more slowly on a busy
	// machine), each poll a ping (they are at least wd/4 = 50 ms apart):
	// about 10. Without the soak's pings there would be none.
	if _, beforeReady := n.pings(); beforeReady < 3 {
		t.Errorf("%d watchdog pings during a 1 s soak, want about 10", beforeReady)
	}
}

// TestMain fails the package when a goroutine of rocectl's outlives the
// tests: every Run joins what it started before it returns, so nothing of
// package agent or nic may still run once the last test is done.
func TestMain(m *testing.M) { leaktest.Main(m) }

// A live agent (link and address watchers, LLDP listeners, the loop) in a
// namespace of its own: when Run returns, every goroutine it started is
// gone, the host watcher's included.
func TestRunJoinsItsGoroutines(t *testing.T) {
	ns := netnstest.New(t)
	h, _, _ := simHost(t)
	n := newNotifier()
	ready := make(chan struct{})
	notify := func(s string) {
		n.notify(s)
		if s == daemon.SdNotifyReady {
			close(ready)
		}
	}
	var logs logBuffer
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := goRun(t, cancel, func() error {
		return ns.Do(func() error {
			return Run(ctx, Config{Profile: profile("connectx-lossless.toml"), Interval: time.Hour, Host: h,
				Store: apply.Store{Store: statedir.Store{Dir: t.TempDir()}}, Log: logs.logger(), Notify: notify})
		})
	})
	select {
	case <-ready:
	case err := <-done:
		t.Fatalf("Run returned before READY=1: %v", err)
	case <-time.After(30 * time.Second):
		t.Fatal("no READY=1 in 30 s")
	}
	for _, bad := range []string{"no link events; relying on the interval", "no address events; relying on the interval"} {
		if r := logs.records(t, bad); len(r) > 0 {
			t.Fatalf("the host watcher did not start: %v", r)
		}
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("Run: %v", err)
	}
	if left := leaktest.Left(leaktest.Settle); len(left) > 0 {
		t.Errorf("goroutines still running after Run returned:\n\n%s", strings.Join(left, "\n\n"))
	}
}
