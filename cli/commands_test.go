package cli

import (
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rocectl/rocectl/policy"
)

func TestVerifyReadBackOnFixtureHosts(t *testing.T) {
	code, out, errs := run(t, nil, "verify", "-p", repo("profiles/connectx-lossless.toml"), "--snapshot", repo("testdata/hosts/cx6dx-ofed-lossless"))
	if code != ExitOK || !strings.Contains(out, "setting(s) hold their profile values") {
		t.Fatalf("verify on the configured host: exit %d\n%s%s", code, out, errs)
	}
	code, out, _ = run(t, nil, "verify", "-p", repo("profiles/connectx-lossless.toml"), "--snapshot", repo("testdata/hosts/cx6dx-ofed-factory"))
	if code != ExitError || !strings.Contains(out, "verify: ens1f0np0.qos.pfc: want [3], have []") {
		t.Fatalf("verify on the factory host: exit %d\n%s", code, out)
	}
	// Loopback needs verbs: the default build says so instead of pretending.
	code, out, _ = run(t, nil, "verify", "--loopback", "-p", repo("profiles/connectx-lossless.toml"), "--snapshot", repo("testdata/hosts/cx6dx-ofed-lossless"))
	if code != ExitError || !strings.Contains(out, "verbs support not built in") && !strings.Contains(out, "no RoCE v2 IPv4 GID") && !strings.Contains(out, "no such") {
		t.Fatalf("verify --loopback: exit %d\n%s", code, out)
	}
}

// --size overrides [verify] message_size within the profile's bounds; a
// size out of them is refused before anything runs.
func TestVerifySizeFlag(t *testing.T) {
	prof, snap := repo("profiles/connectx-lossless.toml"), repo("testdata/hosts/cx6dx-ofed-lossless")
	if code, out, errs := run(t, nil, "verify", "--size", "1MiB", "-p", prof, "--snapshot", snap); code != ExitOK {
		t.Errorf("--size 1MiB: exit %d\n%s%s", code, out, errs)
	}
	for _, tc := range []struct{ size, want string }{
		{"0", "--size must be 1 byte to 1GiB, not 0"},
		{"2GiB", "--size must be 1 byte to 1GiB, not 2GiB"},
		{"lots", `--size: "lots" is not a size`},
	} {
		code, out, errs := run(t, nil, "verify", "--size", tc.size, "-p", prof, "--snapshot", snap)
		if code != ExitError || !strings.Contains(errs, tc.want) || out != "" {
			t.Errorf("--size %s: exit %d, stdout %q, stderr %q, want %q", tc.size, code, out, errs, tc.want)
		}
	}
}

func TestNCCLEnvFormatsAndWrite(t *testing.T) {
	snap := repo("testdata/hosts/cx6dx-ofed-lossless")
	// This host's two ports have their IPv4 RoCE v2 GID at different
	// indexes (as the captured GID tables do), so no single index fits:
	// "auto" leaves the choice to NCCL's per-device selection and says so.
	code, out, errs := run(t, nil, "nccl-env", "-p", repo("profiles/base.toml"), "--snapshot", snap)
	if code != ExitOK || !strings.Contains(errs, "NCCL_IB_GID_INDEX: dynamic: ports disagree (mlx5_0:1=5, mlx5_1:1=3); NCCL ≥ 2.21 selects per device with ROCE_VERSION_NUM=2, ADDR_FAMILY=AF_INET\n") {
		t.Fatalf("exit %d\n%s%s", code, out, errs)
	}
	for _, want := range []string{"NCCL_IB_HCA==mlx5_0:1,mlx5_1:1\n", "NCCL_IB_TC=106\n", "NCCL_IB_GID_INDEX=-1\nNCCL_IB_ROCE_VERSION_NUM=2\nNCCL_IB_ADDR_FAMILY=AF_INET\n"} {
		if !strings.Contains(out, want) {
			t.Errorf("env output lacks %q:\n%s", want, out)
		}
	}
	_, out, _ = run(t, nil, "nccl-env", "--format", "shell", "-p", repo("profiles/base.toml"), "--snapshot", snap)
	if !strings.Contains(out, "export NCCL_IB_HCA='=mlx5_0:1,mlx5_1:1'\n") && !strings.Contains(out, "export NCCL_IB_HCA==mlx5_0:1,mlx5_1:1\n") {
		t.Errorf("shell output:\n%s", out)
	}
	_, out, _ = run(t, nil, "nccl-env", "-o", "json", "-p", repo("profiles/base.toml"), "--snapshot", snap)
	var doc NCCLEnvDoc
	if err := json.Unmarshal([]byte(out), &doc); err != nil || doc.Variables["NCCL_IB_TC"] != "106" || !doc.Complete ||
		doc.GIDIndex == nil || doc.GIDIndex.Mode != "dynamic" || doc.SchemaVersion != 1 {
		t.Errorf("json output %q: %v", out, err)
	}

	// --write into a copy of the host's root: the whole list.
	root := t.TempDir()
	os.MkdirAll(filepath.Join(root, "etc"), 0o755)
	// A copy, not a symlink out of the root: --root confines every path
	// to the tree.
	if err := os.CopyFS(filepath.Join(root, "sys"), os.DirFS(filepath.Join(snap, "sys"))); err != nil {
		t.Fatal(err)
	}
	code, _, errs = run(t, nil, "--root", root, "nccl-env", "-p", repo("profiles/fat-tree-32gpu-100g.toml"), "--write", "/etc/nccl.conf")
	data, err := os.ReadFile(filepath.Join(root, "etc/nccl.conf"))
	if code != ExitOK || err != nil || !strings.Contains(string(data), "NCCL_IB_GID_INDEX=-1\n") || !strings.Contains(string(data), "NCCL_IB_TIMEOUT=22\n") || !strings.HasPrefix(string(data), "# BEGIN rocectl managed block") {
		t.Fatalf("write: exit %d %v\n%s\n%s", code, err, errs, data)
	}

	// pre-2.21 NCCL cannot select per device: refused with the reason,
	// and neither a partial list nor a partial file.
	legacy := filepath.Join(t.TempDir(), "legacy.toml")
	os.WriteFile(legacy, []byte("include = [\""+repo("profiles/fat-tree-32gpu-100g.toml")+"\"]\n[nccl]\ngeneration = \"pre-2.21\"\n"), 0o600)
	os.Remove(filepath.Join(root, "etc/nccl.conf"))
	code, out, errs = run(t, nil, "--root", root, "nccl-env", "-p", legacy, "--write", "/etc/nccl.conf")
	if code != ExitError || out != "" || !strings.Contains(errs, "NCCL_IB_GID_INDEX: cannot derive: ports disagree (mlx5_0:1=5, mlx5_1:1=3); with generation = \"pre-2.21\"") {
		t.Fatalf("pre-2.21: exit %d\n%s%s", code, out, errs)
	}
	if _, err := os.Stat(filepath.Join(root, "etc/nccl.conf")); !os.IsNotExist(err) {
		t.Errorf("pre-2.21: a file was written: %v", err)
	}
	code, out, _ = run(t, nil, "--root", root, "nccl-env", "-o", "json", "-p", legacy)
	doc = NCCLEnvDoc{}
	if err := json.Unmarshal([]byte(out), &doc); code != ExitError || err != nil || doc.Complete || len(doc.Variables) != 0 || len(doc.Errors) != 1 || doc.GIDIndex.Mode != "refused" {
		t.Errorf("pre-2.21 json: exit %d %v\n%s", code, err, out)
	}
}

// Every shipped host with the shipped profiles: a complete list and exit
// 0, or (bnxt, which connectx-lossless does not match) nothing to derive,
// exit 0, and exit 1 with --require-match.
func TestNCCLEnvOnShippedHosts(t *testing.T) {
	hosts, _ := filepath.Glob(repo("testdata/hosts/*"))
	profiles, _ := filepath.Glob(repo("profiles/*.toml"))
	if len(hosts) < 4 || len(profiles) < 4 {
		t.Fatalf("hosts %v, profiles %v", hosts, profiles)
	}
	for _, h := range hosts {
		for _, p := range profiles {
			t.Run(filepath.Base(h)+"/"+filepath.Base(p), func(t *testing.T) {
				code, out, errs := run(t, nil, "nccl-env", "-o", "json", "-p", p, "--snapshot", h)
				var doc NCCLEnvDoc
				if err := json.Unmarshal([]byte(out), &doc); err != nil || code != ExitOK || !doc.Complete || len(doc.Errors) != 0 {
					t.Fatalf("exit %d %v\n%s%s", code, err, out, errs)
				}
				if doc.Message != "" {
					if len(doc.Variables) != 0 {
						t.Errorf("variables without a matched port: %v", doc.Variables)
					}
					if code, _, _ := run(t, nil, "nccl-env", "--require-match", "-p", p, "--snapshot", h); code != ExitError {
						t.Errorf("--require-match without a matched port: exit %d", code)
					}
					return
				}
				prof, err := policy.Load(p, policy.LoadOptions{AllowInsecure: true})
				if err != nil {
					t.Fatal(err)
				}
				if want := len(prof.NCCL.Vars) > 0; want != (len(doc.Variables) > 0) || len(doc.Order) != len(doc.Variables) {
					t.Errorf("variables %v, order %v", doc.Variables, doc.Order)
				}
			})
		}
	}
}

func TestTopoCommand(t *testing.T) {
	dirs, _ := filepath.Glob(repo("nic/testdata/pci/*"))
	var root string
	for _, d := range dirs {
		if strings.Contains(d, "hgx") {
			root = d
		}
	}
	if root == "" {
		t.Fatal("no HGX PCI fixture")
	}
	code, out, errs := run(t, nil, "--root", root, "topo")
	if code != ExitOK || !strings.Contains(out, "NCCL_IB_HCA==") || !strings.Contains(out, "PIX") {
		t.Fatalf("exit %d\n%s%s", code, out, errs)
	}
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
	logs := &signalWriter{mark: `"msg":"serving metrics"`, seen: make(chan struct{})}
	ctx, cancel := context.WithCancel(context.Background())
	env := NewEnv(io.Discard, logs)
	cmd := NewRootCommand(env)
	cmd.SetArgs([]string{"--snapshot", repo("testdata/hosts/cx6dx-ofed-factory"), "--log-format", "json", "agent", "-p", repo("profiles/connectx-lossless.toml"),
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
	addr := servingAddr(t, logs)
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
func servingAddr(t *testing.T, logs *signalWriter) string {
	t.Helper()
	select {
	case <-logs.seen:
	default:
		t.Fatalf("no \"serving metrics\" line before READY=1:\n%s", logs.String())
	}
	for line := range strings.Lines(logs.String()) {
		var r struct{ Msg, Addr string }
		if json.Unmarshal([]byte(line), &r) == nil && r.Msg == "serving metrics" && r.Addr != "" {
			return r.Addr
		}
	}
	t.Fatalf("the \"serving metrics\" line has no addr:\n%s", logs.String())
	return ""
}

func TestJSONOnEarlyErrorsAndRequireMatch(t *testing.T) {
	code, out, _ := run(t, nil, "audit", "-o", "json", "-p", "/nonexistent.toml", "--snapshot", repo("testdata/hosts/cx6dx-ofed-factory"))
	var doc Report
	if code != ExitError || json.Unmarshal([]byte(out), &doc) != nil || len(doc.Errors) != 1 || !strings.Contains(doc.Errors[0], "no such file") {
		t.Fatalf("exit %d, stdout %q", code, out)
	}
	// A profile for mlx5 on a Broadcom host: nothing to do, unless the
	// caller (a boot unit) requires a match.
	code, _, _ = run(t, nil, "audit", "-p", repo("profiles/lossy-ecn-only.toml"), "--snapshot", repo("testdata/hosts/bnxt-re-factory"))
	if code != ExitOK {
		t.Fatalf("no match: exit %d", code)
	}
	code, _, errs := run(t, nil, "audit", "--require-match", "-p", repo("profiles/lossy-ecn-only.toml"), "--snapshot", repo("testdata/hosts/bnxt-re-factory"))
	if code != ExitError || !strings.Contains(errs, "No RoCE port matches the profile's [match]") {
		t.Fatalf("--require-match: exit %d\n%s", code, errs)
	}
	// The agent likewise (its unit passes the flag).
	t.Setenv("NOTIFY_SOCKET", "")
	agent := []string{"agent", "--once", "-p", repo("profiles/lossy-ecn-only.toml"), "--snapshot", repo("testdata/hosts/bnxt-re-factory")}
	if code, out, errs := run(t, nil, agent...); code != ExitOK {
		t.Fatalf("agent, no match: exit %d\n%s%s", code, out, errs)
	}
	code, _, errs = run(t, nil, append(agent, "--require-match")...)
	if code != ExitError || !strings.Contains(errs, "No RoCE port matches the profile's [match]") {
		t.Fatalf("agent --require-match: exit %d\n%s", code, errs)
	}
}
