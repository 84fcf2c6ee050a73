package agentcmd

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rocectl/rocectl/cli"
	"github.com/rocectl/rocectl/internal/testkit/fixturehost"
	"github.com/rocectl/rocectl/internal/testkit/leaktest"
)

// TestMain fails the package when a goroutine of the daemon outlives its
// tests (internal/testkit/leaktest).
func TestMain(m *testing.M) { leaktest.Main(m) }

func repo(p string) string { return filepath.Join(fixturehost.RepoRoot(), p) }

// run runs rocectl-agent ARGS in this process, as cmd/rocectl-agent does.
func run(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errb bytes.Buffer
	cmd := NewRootCommand(cli.NewEnv(&out, &errb))
	cmd.SetArgs(args)
	err := cmd.ExecuteContext(context.Background())
	if msg := cli.ErrorMessage(err); msg != "" {
		errb.WriteString(msg + "\n")
	}
	return cli.ExitCode(err), out.String(), errb.String()
}

// lockedBuffer is a log the daemon's goroutines write while the test
// reads it.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// The agent in audit mode: READY=1 to systemd after the first check, and
// the drift on /metrics.
func TestAgentNotifiesReadyAndServesMetrics(t *testing.T) {
	sock := filepath.Join(t.TempDir(), "notify")
	conn, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: sock, Net: "unixgram"})
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	t.Setenv("NOTIFY_SOCKET", sock)

	// Port 0: the kernel picks a free port while the agent holds it, and
	// the agent logs which (before READY=1).
	logs := &lockedBuffer{}
	ctx, cancel := context.WithCancel(context.Background())
	env := cli.NewEnv(io.Discard, logs)
	cmd := NewRootCommand(env)
	cmd.SetArgs([]string{"--snapshot", repo("testdata/hosts/cx6dx-ofed-factory"), "--log-format", "json", "-p", repo("profiles/connectx-lossless.toml"),
		"--mode", "audit", "--interval", "1h", "--metrics-addr", "127.0.0.1:0"})
	var runErr error
	done := make(chan struct{})
	go func() {
		defer close(done)
		runErr = cmd.ExecuteContext(ctx)
	}()
	// The agent ends with the test, however the test ends.
	t.Cleanup(func() { cancel(); <-done })

	conn.SetReadDeadline(time.Now().Add(10 * time.Second))
	buf := make([]byte, 4096)
	ready := false
	for !ready {
		n, err := conn.Read(buf)
		if err != nil {
			t.Fatalf("no READY=1 from the agent: %v", err)
		}
		ready = strings.Contains(string(buf[:n]), "READY=1")
	}
	addr := servingAddr(t, logs.String())
	resp, err := http.Get("http://" + addr + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	for _, want := range []string{
		`rocectl_drift_settings{device="ens1f0np0",kind="ecn_enable",profile="connectx-lossless"} 14`,
		`rocectl_last_check_success 1`,
		`rocectl_pfc_storm_events_total{device="ens1f0np0",severity="error"} 0`,
	} {
		if !strings.Contains(string(body), want) {
			t.Errorf("/metrics lacks %q:\n%s", want, body)
		}
	}
	cancel()
	select {
	case <-done:
		if runErr != nil {
			t.Fatalf("agent returned %v", runErr)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("agent did not stop on cancel")
	}
}

// servingAddr is the address in the agent's "serving metrics" log line,
// which it writes before READY=1.
func servingAddr(t *testing.T, logs string) string {
	t.Helper()
	for line := range strings.Lines(logs) {
		var r struct{ Msg, Addr string }
		if json.Unmarshal([]byte(line), &r) == nil && r.Msg == "serving metrics" && r.Addr != "" {
			return r.Addr
		}
	}
	t.Fatalf("no \"serving metrics\" line with an addr before READY=1:\n%s", logs)
	return ""
}

// A profile for mlx5 on a Broadcom host: nothing to do, unless the unit
// requires a match (it passes --require-match).
func TestAgentRequireMatch(t *testing.T) {
	t.Setenv("NOTIFY_SOCKET", "")
	args := []string{"--once", "-p", repo("profiles/lossy-ecn-only.toml"), "--snapshot", repo("testdata/hosts/bnxt-re-factory")}
	if code, out, errs := run(t, args...); code != cli.ExitOK {
		t.Fatalf("no match: exit %d\n%s%s", code, out, errs)
	}
	code, _, errs := run(t, append(args, "--require-match")...)
	if code != cli.ExitError || !strings.Contains(errs, "No RoCE port matches the profile's [match]") {
		t.Fatalf("--require-match: exit %d\n%s", code, errs)
	}
}

// The daemon's flags and the global ones complete as rocectl's do.
func TestFlagCompletion(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string // the candidates, then cobra's directive line
	}{
		{[]string{"--mode", ""}, "audit\nenforce\n:4\n"},
		{[]string{"--log-format", ""}, "text\njson\n:4\n"},
		{[]string{"-p", ""}, "toml\n:8\n"},
		{[]string{"--state-dir", ""}, ":16\n"},
	} {
		code, out, errs := run(t, append([]string{"__complete"}, c.args...)...)
		if code != cli.ExitOK || out != c.want {
			t.Errorf("__complete %s: exit %d, got %q, want %q\n%s", strings.Join(c.args, " "), code, out, c.want, errs)
		}
	}
}

func TestBadModeAndEnforceOnSnapshot(t *testing.T) {
	p := repo("profiles/connectx-lossless.toml")
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"-p", p, "--mode", "fix"}, `--mode must be enforce or audit, not "fix"`},
		{[]string{"-p", p, "--mode", "enforce", "--snapshot", repo("testdata/hosts/cx6dx-ofed-factory")}, "a snapshot is read-only: use --mode audit"},
		{[]string{"--mode", "audit"}, `required flag(s) "profile" not set`},
	} {
		code, _, errs := run(t, c.args...)
		if code != cli.ExitError || !strings.Contains(errs, c.want) {
			t.Errorf("%v: exit %d, want %q in\n%s", c.args, code, c.want, errs)
		}
	}
}
