package systemd

import (
	"context"
	"os"
	"os/exec"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestAgentWatchersUnderUnitCapabilities runs the agent's real command line
// with exactly the capabilities rocectl-agent.service leaves it
// (CapabilityBoundingSet=, NoNewPrivileges=, emulated with setpriv(1)) and
// checks that its link and address watchers start: without them the agent
// misses driver reloads until the next interval. (They once needed
// CAP_SYS_ADMIN for a setns into the agent's own namespace; this test is
// what showed it, and what keeps the unit without it.)
//
// The agent runs live (no --snapshot, which turns the watchers off) but in
// audit mode, which writes nothing, in a network namespace of its own with
// only lo, with --root at an empty directory (no sysfs of this host, so
// without the unit's --require-match) and a temporary state dir.
func TestAgentWatchersUnderUnitCapabilities(t *testing.T) {
	needBinary(t)
	if os.Geteuid() != 0 {
		t.Skip("needs root: a new network namespace and setpriv --bounding-set")
	}
	setpriv, err := exec.LookPath("setpriv")
	if err != nil {
		t.Skip("setpriv (util-linux) not installed")
	}
	u := loadUnit(t, "rocectl-agent.service")
	caps := u.list("Service", "CapabilityBoundingSet")
	envFile := testEnvFile(t, "profiles/connectx-lossless.toml")
	argv := execStart(t, u, unitEnv(t, u, envFile))
	if !hasFlagValue(argv, "--mode", "audit") {
		t.Fatalf("the example environment must keep audit mode for this test: %q", argv)
	}

	start := func(t *testing.T, caps []string) (warnings string, ready bool) {
		t.Helper()
		bounding := "-all"
		for _, c := range caps {
			bounding += ",+" + strings.ToLower(strings.TrimPrefix(c, "CAP_"))
		}
		sock, msgs := notifyListener(t)
		// The empty root has no RoCE port: the unit's --require-match
		// is turned off, as ROCECTL_ARGS may.
		args := append(slices.Clone(argv[1:]), "--root", t.TempDir(), "--state-dir", t.TempDir(), "--metrics-addr", "127.0.0.1:0", "--interval", "1h",
			"--require-match=false")
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		cmd := exec.CommandContext(ctx, setpriv, append([]string{"--bounding-set", bounding, "--inh-caps", "-all", "--no-new-privs", "--", binaryOf(t, argv[0])}, args...)...)
		cmd.Env = append(os.Environ(), "NOTIFY_SOCKET="+sock)
		cmd.SysProcAttr = &syscall.SysProcAttr{Cloneflags: syscall.CLONE_NEWNET}
		var stderr strings.Builder
		cmd.Stderr = &stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		exited := make(chan error, 1)
		go func() { exited <- cmd.Wait() }()
		deadline := time.After(20 * time.Second)
		for !ready {
			select {
			case m := <-msgs:
				ready = m == "READY=1"
			case err := <-exited:
				t.Logf("the agent exited before READY=1: %v", err)
				return stderr.String(), false
			case <-deadline:
				_ = cmd.Process.Kill()
				<-exited
				return stderr.String(), false
			}
		}
		_ = cmd.Process.Signal(syscall.SIGTERM)
		<-exited
		return stderr.String(), ready
	}

	out, ready := start(t, caps)
	if !ready {
		t.Fatalf("no READY=1 from the agent under CapabilityBoundingSet=%v:\n%s", caps, out)
	}
	for _, bad := range []string{"no link events", "no address events"} {
		if strings.Contains(out, bad) {
			t.Errorf("under the unit's CapabilityBoundingSet=%v the agent logs %q:\n%s", caps, bad, out)
		}
	}
}
