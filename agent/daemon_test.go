package agent

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/rocectl/rocectl/apply"
	"github.com/rocectl/rocectl/host"
	"github.com/rocectl/rocectl/internal/fixturehost"
	"github.com/rocectl/rocectl/nic"
	"github.com/rocectl/rocectl/nic/snapshot"
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
	done := make(chan error, 1)
	go func() {
		done <- Run(ctx, Config{Profile: profile("connectx-lossless.toml"), Interval: 5 * time.Millisecond,
			Host: &host.Host{FS: s.FS(), K: s.Kernel()}, ReadOnly: true, Store: apply.Store{Dir: t.TempDir()}, Log: logs.logger()})
	}()
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
	store := apply.Store{Dir: t.TempDir()}
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
