package e2e

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/rocectl/rocectl/apply"
	"github.com/rocectl/rocectl/internal/testkit/fixturehost"
	"github.com/rocectl/rocectl/internal/testkit/netnstest"
	"github.com/rocectl/rocectl/statedir"
)

// Reproducers for the issue "The state dir as a trust boundary", items 6
// and 7, against the built binary: a FIFO where an attribute is expected
// hung audit and apply forever; a SIGTERM mid-apply did nothing; an
// absolute symlink in the --root tree was followed out of it.

// runBounded runs c and fails the test if it has not ended within limit
// (it is then killed): the defects here were hangs.
func runBounded(t *testing.T, c *netnstest.Cmd, limit time.Duration) (int, string, time.Duration) {
	t.Helper()
	var out bytes.Buffer
	c.Stdout, c.Stderr = &out, &out
	start := time.Now()
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	killed := false
	timer := time.AfterFunc(limit, func() { killed = true; _ = c.Process.Kill() })
	err := c.Wait()
	took := time.Since(start)
	if !timer.Stop() && killed {
		t.Fatalf("rocectl %v still running after %v (killed)\n%s", c.Args[1:], limit, out.String())
	}
	var ee *exec.ExitError
	switch {
	case errors.As(err, &ee):
		return ee.ExitCode(), out.String(), took
	case err != nil:
		t.Fatal(err)
	}
	return 0, out.String(), took
}

// An attribute file replaced by a FIFO: audit and apply answer at once,
// naming the file and what it is, and apply changes nothing.
func TestFIFOAttributeRefusedPromptly(t *testing.T) {
	h := newHost(t)
	beforeFiles := fixturehost.Files(t, h.root)
	attr := filepath.Join(h.root, "sys/class/net/ens1f0np0/ecn/roce_np/enable/3")
	orig, err := os.ReadFile(attr)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(attr); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(attr, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{{"audit", "-p", h.profile}, {"apply", "-p", h.profile}} {
		code, out, took := runBounded(t, h.cmd(args...), time.Minute)
		t.Logf("%s: exit %d in %v", args[0], code, took)
		if code == 0 || !strings.Contains(out, "ecn/roce_np/enable/3: not a regular file: it is a FIFO") {
			t.Errorf("%s: exit %d, want a refusal naming the FIFO\n%s", args[0], code, out)
		}
	}
	if m := h.mtu("ens1f0np0"); m != 1500 {
		t.Errorf("MTU %d: apply wrote despite the unreadable setting", m)
	}
	// The file back in place of the FIFO (reading the tree would block
	// on it), every other file must be as it was.
	if err := os.Remove(attr); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(attr, orig, 0o644); err != nil {
		t.Fatal(err)
	}
	if d := fixturehost.DiffTrees(beforeFiles, fixturehost.Files(t, h.root)); len(d) > 0 {
		t.Errorf("files changed: %v", d)
	}
}

// An attribute in the --root tree that is an absolute symlink to a file
// outside it: apply resolves it inside the tree, and the file outside
// keeps its content.
func TestRootSymlinkDoesNotEscape(t *testing.T) {
	h := newHost(t)
	outside := filepath.Join(t.TempDir(), "victim")
	if err := os.WriteFile(outside, []byte("0\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	attr := filepath.Join(h.root, "sys/class/net/ens1f0np0/ecn/roce_np/enable/3")
	if err := os.Remove(attr); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, attr); err != nil {
		t.Fatal(err)
	}
	// The same path inside the tree: where the link leads under --root.
	inside := filepath.Join(h.root, outside)
	if err := os.MkdirAll(filepath.Dir(inside), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(inside, []byte("0\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	code, out, _ := runBounded(t, h.cmd("apply", "-p", h.profile), time.Minute)
	if code != 0 {
		t.Fatalf("apply exit %d\n%s", code, out)
	}
	if b, err := os.ReadFile(outside); err != nil || string(b) != "0\n" {
		t.Errorf("the file outside the root holds %q, %v: apply followed the link out", b, err)
	}
	if b, err := os.ReadFile(inside); err != nil || string(b) != "1\n" {
		t.Errorf("the file the link names inside the root holds %q, %v; want the profile's 1", b, err)
	}
}

// SIGTERM or SIGINT while apply writes: it rolls back, says so in one
// line, exits 1, leaves every file of the root byte-identical and the MTU
// as it was, records the journal rolled back and releases the lock.
func TestSignalMidApplyRollsBack(t *testing.T) {
	for name, sig := range map[string]syscall.Signal{"SIGTERM": syscall.SIGTERM, "SIGINT": syscall.SIGINT} {
		t.Run(name, func(t *testing.T) {
			h := newHost(t)
			beforeFiles := fixturehost.Files(t, h.root)
			c := h.slowCmd("300ms", "apply", "-p", h.profile)
			var out bytes.Buffer
			c.Stdout, c.Stderr = &out, &out
			if err := c.Start(); err != nil {
				t.Fatal(err)
			}
			// The first step is the MTU: once the kernel has it, the
			// apply is under way with the other steps still to come.
			waitFor(t, 30*time.Second, func() bool { return h.mtu("ens1f0np0") == 9000 })
			sent := time.Now()
			if err := c.Process.Signal(sig); err != nil {
				t.Fatal(err)
			}
			err := c.Wait()
			t.Logf("%s: exited %v after the signal", name, time.Since(sent))
			var ee *exec.ExitError
			if !errors.As(err, &ee) || ee.ExitCode() != 1 {
				t.Fatalf("exit %v, want 1\n%s", err, out.String())
			}
			if !strings.Contains(out.String(), "interrupted by signal "+name+"; host restored: ") {
				t.Errorf("output lacks the interruption line\n%s", out.String())
			}
			if m := h.mtu("ens1f0np0"); m != 1500 {
				t.Errorf("MTU %d after the interrupted apply, want 1500", m)
			}
			if d := fixturehost.DiffTrees(beforeFiles, fixturehost.Files(t, h.root)); len(d) > 0 {
				t.Errorf("files differ after the interrupted apply: %v", d)
			}
			js, err := apply.Store{Store: statedir.Store{Dir: h.state}}.List()
			if err != nil || len(js) != 1 || js[0].State != apply.StateRolledBack {
				t.Errorf("journals %+v, %v; want one rolled back", js, err)
			}
			l, err := statedir.Store{Dir: h.state}.Acquire("test")
			if err != nil {
				t.Fatalf("lock after the interrupted apply: %v", err)
			}
			l.Release()
		})
	}
}
