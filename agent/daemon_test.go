package agent

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rocectl/rocectl/apply"
	"github.com/rocectl/rocectl/host"
	"github.com/rocectl/rocectl/internal/testkit/fixturehost"
	"github.com/rocectl/rocectl/nic"
	"github.com/rocectl/rocectl/nic/snapshot"
	"github.com/rocectl/rocectl/statedir"
)

// logBuffer collects the daemon's JSON log lines; safe to read while the
// daemon writes.
type logBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

// records returns the lines logged with msg.
func (l *logBuffer) records(t *testing.T, msg string) []map[string]any {
	t.Helper()
	l.mu.Lock()
	data := append([]byte(nil), l.b.Bytes()...)
	l.mu.Unlock()
	var out []map[string]any
	for _, line := range bytes.Split(bytes.TrimSpace(data), []byte("\n")) {
		if len(line) == 0 {
			continue
		}
		var r map[string]any
		if err := json.Unmarshal(line, &r); err != nil {
			t.Fatalf("log line %q: %v", line, err)
		}
		if r["msg"] == msg {
			out = append(out, r)
		}
	}
	return out
}

func (l *logBuffer) logger() *slog.Logger {
	return slog.New(slog.NewJSONHandler(l, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

func profile(name string) string {
	return filepath.Join(fixturehost.RepoRoot(), "profiles", name)
}

// Checked every few milliseconds, a host that keeps the same 46 settings
// drifted gets one drift line, not one per check.
func TestAuditLogsDriftOnlyWhenItChanges(t *testing.T) {
	t.Setenv("NOTIFY_SOCKET", "")
	s, err := snapshot.Open(fixturehost.Dir("cx6dx-ofed-factory"))
	if err != nil {
		t.Fatal(err)
	}
	var logs logBuffer
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := goRun(t, cancel, func() error {
		return Run(ctx, Config{Profile: profile("connectx-lossless.toml"), Interval: 5 * time.Millisecond,
			Host: &host.Host{FS: s.FS(), K: s.Kernel()}, ReadOnly: true, Store: apply.Store{Store: statedir.Store{Dir: t.TempDir()}}, Log: logs.logger()})
	})
	deadline := time.Now().Add(30 * time.Second)
	for len(logs.records(t, "drift check")) < 5 {
		if time.Now().After(deadline) {
			t.Fatal("fewer than 5 drift checks in 30 s")
		}
		time.Sleep(5 * time.Millisecond)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("Run: %v", err)
	}
	checks, drift := logs.records(t, "drift check"), logs.records(t, "drift")
	if len(drift) != 1 || drift[0]["level"] != "WARN" || drift[0]["settings"] != float64(46) {
		t.Fatalf("%d checks logged %d drift lines, want 1 (WARN, 46 settings): %v", len(checks), len(drift), drift)
	}
	if same := logs.records(t, "drift unchanged"); len(same) != len(checks)-1 {
		t.Errorf("%d checks, %d 'drift unchanged' debug lines, want %d", len(checks), len(same), len(checks)-1)
	}
}

// Enforce mode: one apply through apply.Run, logged as one line with its
// counts; the host then matches the profile.
func TestEnforceAppliesAndLogsOneLine(t *testing.T) {
	t.Setenv("NOTIFY_SOCKET", "")
	root, sim := fixturehost.Copy(t, "cx6dx-ofed-factory")
	prof := filepath.Join(t.TempDir(), "p.toml")
	body := fmt.Sprintf("include = [%q]\n[guard]\nenabled = false\n", profile("connectx-lossless.toml"))
	if err := os.WriteFile(prof, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	var logs logBuffer
	h := &host.Host{FS: nic.NewFS(root, false), K: sim}
	store := apply.Store{Store: statedir.Store{Dir: t.TempDir()}}
	cfg := Config{Profile: prof, Enforce: true, Once: true, Host: h, Store: store, Log: logs.logger()}
	if err := Run(context.Background(), cfg); err != nil {
		t.Fatal(err)
	}
	applies := logs.records(t, "apply")
	if len(applies) != 1 {
		t.Fatalf("%d apply lines, want 1", len(applies))
	}
	a := applies[0]
	if a["result"] != "applied" || a["changes"] != float64(46) || a["restored"] != float64(0) || a["journal"] == "" || a["steps"] == float64(0) {
		t.Errorf("apply line %v", a)
	}
	js, err := store.List()
	if err != nil || len(js) != 1 || js[0].State != apply.StateCommitted || js[0].ID != a["journal"] {
		t.Fatalf("journals %v %v", js, err)
	}
	// A second run finds nothing to do: in sync, said once, no apply.
	var again logBuffer
	cfg.Log = again.logger()
	if err := Run(context.Background(), cfg); err != nil {
		t.Fatal(err)
	}
	if n, ok := len(again.records(t, "apply")), len(again.records(t, "host matches profile")); n != 0 || ok != 1 {
		t.Errorf("second run: %d apply lines, %d in-sync lines, want 0 and 1", n, ok)
	}
}

// The daemon serves the counters on /metrics, keeps polling them between
// drift checks (an hour apart here), and stops polling and serving when
// Run returns.
func TestMetricsServesPolledCounters(t *testing.T) {
	t.Setenv("NOTIFY_SOCKET", "")
	h, sim, root := simHost(t)
	sim.SetStat("ens1f0np0", "rx_prio3_pause_duration", 1_500_000)
	setHWCounter(t, root, "mlx5_0", "rp_cnp_handled", 31)
	// Port 0: the kernel picks a free port while the daemon holds it, and
	// the daemon's "serving metrics" line says which.
	served := make(chan string, 1)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := goRun(t, cancel, func() error {
		return Run(ctx, Config{Profile: profile("connectx-lossless.toml"), Interval: time.Hour, MetricsAddr: "127.0.0.1:0",
			CounterInterval: 5 * time.Millisecond, Version: "v9.9.9", Host: h, ReadOnly: true,
			Store: apply.Store{Store: statedir.Store{Dir: t.TempDir()}}, Log: slog.New(servingHandler{slog.NewTextHandler(io.Discard, nil), served})})
	})
	var addr string
	select {
	case addr = <-served:
	case err := <-done:
		t.Fatalf("Run returned before serving metrics: %v", err)
	case <-time.After(30 * time.Second):
		t.Fatal(`no "serving metrics" line with the bound addr in 30 s`)
	}
	// scrapeUntil scrapes until the body holds every line (the server
	// starts before the first check and poll), or fails after 30 s.
	scrapeUntil := func(lines ...string) string {
		t.Helper()
		deadline := time.Now().Add(30 * time.Second)
		for {
			body, err := scrape("http://" + addr + "/metrics")
			missing := ""
			for _, l := range lines {
				if !strings.Contains(body, l+"\n") {
					missing = l
					break
				}
			}
			if err == nil && missing == "" {
				return body
			}
			if time.Now().After(deadline) {
				t.Fatalf("/metrics never served %q (err %v):\n%s", missing, err, body)
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
	body := scrapeUntil(
		`rocectl_pfc_pause_seconds_total{device="ens1f0np0",direction="rx",priority="3"} 1.5`,
		`rocectl_cnp_handled_total{device="ens1f0np0",port="1",rdma_device="mlx5_0"} 31`,
		`rocectl_drift_settings{device="ens1f0np0",kind="pfc",profile="connectx-lossless"} 1`,
		`rocectl_last_check_success 1`,
		`rocectl_guard_state{state="idle"} 1`,
	)
	for _, want := range []string{`rocectl_build_info{goversion="go`, `version="v9.9.9"} 1`, "go_goroutines ", "process_resident_memory_bytes "} {
		if !strings.Contains(body, want) {
			t.Errorf("/metrics lacks %q", want)
		}
	}
	// The poller, not the hourly drift check, picks up new counts.
	sim.AddStat("ens1f0np0", "rx_prio3_pause_duration", 250_000)
	scrapeUntil(`rocectl_pfc_pause_seconds_total{device="ens1f0np0",direction="rx",priority="3"} 1.75`)

	cancel()
	if err := <-done; err != nil {
		t.Fatalf("Run: %v", err)
	}
	if _, err := scrape("http://" + addr + "/metrics"); err == nil {
		t.Error("/metrics still served after Run returned")
	}
}

// goRun runs run (a Run) in a goroutine and returns the channel its error
// comes on. The goroutine ends with the test however the test ends: a
// cleanup calls cancel, which must end run, and waits for it.
func goRun(t *testing.T, cancel context.CancelFunc, run func() error) <-chan error {
	done := make(chan error, 1)
	exited := make(chan struct{})
	go func() {
		defer close(exited)
		done <- run()
	}()
	t.Cleanup(func() {
		cancel()
		<-exited
	})
	return done
}

// servingHandler passes records on to Handler and sends the addr of the
// daemon's "serving metrics" line on addr, when addr has room for it.
type servingHandler struct {
	slog.Handler
	addr chan<- string
}

func (h servingHandler) Handle(ctx context.Context, r slog.Record) error {
	if r.Message == "serving metrics" {
		r.Attrs(func(a slog.Attr) bool {
			if a.Key == "addr" {
				select {
				case h.addr <- a.Value.String():
				default:
				}
			}
			return true
		})
	}
	return h.Handler.Handle(ctx, r)
}

func (h servingHandler) WithAttrs(as []slog.Attr) slog.Handler {
	return servingHandler{h.Handler.WithAttrs(as), h.addr}
}

func (h servingHandler) WithGroup(name string) slog.Handler {
	return servingHandler{h.Handler.WithGroup(name), h.addr}
}

func scrape(url string) (string, error) {
	c := http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	resp, err := c.Get(url)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		return string(b), fmt.Errorf("%s: %s", url, resp.Status)
	}
	return string(b), err
}

// With RequireMatch, a host where no port matches the profile (a Broadcom
// host, an mlx5 profile) fails the agent's start; without it the agent
// runs, in sync with nothing. A later check that matches nothing is a
// failed check (rocectl_last_check_success 0), not "in sync".
func TestRequireMatch(t *testing.T) {
	t.Setenv("NOTIFY_SOCKET", "")
	s, err := snapshot.Open(fixturehost.Dir("bnxt-re-factory"))
	if err != nil {
		t.Fatal(err)
	}
	cfg := Config{Profile: profile("lossy-ecn-only.toml"), Once: true, Host: &host.Host{FS: s.FS(), K: s.Kernel()},
		ReadOnly: true, Store: apply.Store{Store: statedir.Store{Dir: t.TempDir()}}}
	if err := Run(context.Background(), cfg); err != nil {
		t.Fatalf("without RequireMatch: %v", err)
	}
	cfg.RequireMatch = true
	var status []string
	cfg.Notify = func(s string) { status = append(status, s) }
	if err := Run(context.Background(), cfg); !errors.Is(err, ErrNoMatch) {
		t.Fatalf("with RequireMatch: %v, want ErrNoMatch", err)
	}
	if len(status) != 1 || !strings.HasPrefix(status[0], "STATUS=drift check failed: no RoCE port matches") {
		t.Errorf("sd_notify %q, want one STATUS= naming the failure (and no READY=1)", status)
	}

	l := newLoop(cfg)
	l.st.lastOK = true
	if err := l.check(context.Background(), "interval"); !errors.Is(err, ErrNoMatch) || l.st.lastOK {
		t.Errorf("a later check: %v, last check ok %v; want ErrNoMatch, false", err, l.st.lastOK)
	}
}
