package nic

import (
	"errors"
	"fmt"
	"log/slog"
	"os/exec"
	"syscall"
	"testing"

	"github.com/rocectl/rocectl/internal/testkit/netnstest"
)

func testLogger(t testing.TB) *slog.Logger {
	return slog.New(slog.NewTextHandler(t.Output(), &slog.HandlerOptions{Level: slog.LevelDebug}))
}

// liveInNS gives the test a fresh namespace holding the veth pair va <-> vb
// and a Live opened inside it (all its sockets live there, so the test
// goroutine may use it from any thread).
func liveInNS(t testing.TB) (*netnstest.NS, *Live) {
	t.Helper()
	ns := netnstest.New(t)
	ns.AddVeth("va", "vb")
	var l *Live
	if err := ns.Do(func() (err error) {
		l, err = NewLive(testLogger(t))
		return err
	}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := l.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return ns, l
}

// needTool skips a cross-check that needs a command-line tool.
func needTool(t testing.TB, name string) {
	t.Helper()
	if _, err := exec.LookPath(name); err != nil {
		t.Skipf("cross-check needs %s: %v", name, err)
	}
}

func TestOpErrorKeepsErrno(t *testing.T) {
	err := opErr("eth9", "ethtool get pause", syscall.EOPNOTSUPP)
	if !errors.Is(err, syscall.EOPNOTSUPP) {
		t.Fatalf("errors.Is(%v, EOPNOTSUPP) = false", err)
	}
	var oe *OpError
	if !errors.As(err, &oe) || oe.Dev != "eth9" || oe.Op != "ethtool get pause" {
		t.Fatalf("errors.As = %#v", oe)
	}
	if got, want := err.Error(), "eth9: ethtool get pause: operation not supported"; got != want {
		t.Fatalf("Error() = %q, want %q", got, want)
	}
	if opErr("eth9", "x", nil) != nil {
		t.Fatal("opErr(nil) is not nil")
	}
}

func TestDCBDelegatesToDcbnl(t *testing.T) {
	_, l := liveInNS(t)
	// veth has no dcbnl_ops: the kernel answers EOPNOTSUPP (reference §H).
	if _, err := l.DCB("va"); !errors.Is(err, syscall.EOPNOTSUPP) {
		t.Fatalf("DCB(veth) = %v, want EOPNOTSUPP", err)
	}
}

// TestLiveIsBoundToItsNamespace uses a Live from threads in another
// namespace, many goroutines at once, as apply's parallel reads do: every
// request must still reach the namespace NewLive ran in. The callers sit in
// a second fresh namespace, not the host's, so a request that went to the
// caller's namespace finds no "va" there (ENODEV) and touches nothing.
func TestLiveIsBoundToItsNamespace(t *testing.T) {
	_, l := liveInNS(t)
	other := netnstest.New(t)
	errs := make(chan error, 16)
	for range 8 {
		go func() {
			errs <- other.Do(func() error {
				if _, err := l.DCB("va"); !errors.Is(err, syscall.EOPNOTSUPP) {
					return fmt.Errorf("DCB(va) = %v, want EOPNOTSUPP from the veth", err)
				}
				if _, err := l.Link("va"); err != nil {
					return fmt.Errorf("Link(va) = %v", err)
				}
				return nil
			})
		}()
		go func() {
			errs <- other.Do(func() error {
				if _, err := l.DriverInfo("vb"); err != nil {
					return fmt.Errorf("DriverInfo(vb) = %v", err)
				}
				return nil
			})
		}()
	}
	for range 16 {
		if err := <-errs; err != nil {
			t.Error(err)
		}
	}
}

func TestCloseTwice(t *testing.T) {
	_, l := liveInNS(t)
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if err := l.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
}
