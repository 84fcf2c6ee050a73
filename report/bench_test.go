package report

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"testing"
	"time"
)

// writeFleet writes n audit documents (racks of 32; every fifth rack with
// the same cable-length drift, every seventh host with a host-specific MTU
// drift) into dir, shaped like the corpus's factory host document.
func writeFleet(tb testing.TB, dir string, n int) {
	tb.Helper()
	tmpl, err := os.ReadFile(filepath.Join("testdata", "corpus", "rack-c-01.audit.json"))
	if err != nil {
		tb.Fatal(err)
	}
	var doc map[string]any
	if err := json.Unmarshal(tmpl, &doc); err != nil {
		tb.Fatal(err)
	}
	for i := 0; i < n; i++ {
		rack := i / 32
		var changes []any
		if rack%5 == 0 {
			changes = append(changes, map[string]any{"key": "ens1f0np0.qos.cable_length_m", "scope": "ens1f0np0", "before": "7", "after": "30"})
		}
		if i%7 == 0 {
			changes = append(changes, map[string]any{"key": "ens1f0np0.link.mtu", "scope": "ens1f0np0", "before": fmt.Sprint(1500 + i), "after": "9000"})
		}
		if changes == nil {
			changes = []any{}
		}
		doc["host"] = fmt.Sprintf("r%03d-h%02d", rack, i%32)
		doc["changes"] = changes
		doc["changed"] = len(changes) > 0
		doc["generated_at"] = "2026-01-02T03:00:00Z"
		b, _ := json.Marshal(doc)
		if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("h%05d.audit.json", i)), b, 0o644); err != nil {
			tb.Fatal(err)
		}
	}
}

// BenchmarkReport10k: load, build and render (text and JSON) the fleet
// view of 10,000 host documents. Target: under 2 s and 200 MB.
func BenchmarkReport10k(b *testing.B) {
	dir := b.TempDir()
	writeFleet(b, dir, 10000)
	b.ResetTimer()
	for b.Loop() {
		var before runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		start := time.Now()
		docs, problems, err := Load(context.Background(), []string{dir})
		if err != nil || len(docs) != 10000 {
			b.Fatalf("%d docs, %v", len(docs), err)
		}
		f := Build(docs, problems, Options{Now: time.Now(), MaxAge: time.Hour})
		for _, format := range []string{"text", "json", "html"} {
			if err := Render(io.Discard, f, format); err != nil {
				b.Fatal(err)
			}
		}
		var after runtime.MemStats
		runtime.ReadMemStats(&after)
		b.ReportMetric(float64(time.Since(start).Milliseconds()), "ms/report")
		b.ReportMetric(float64(after.TotalAlloc-before.TotalAlloc)/(1<<20), "MB-alloc/report")
		if len(f.Drift) < 2 || len(f.Drift[0].Hosts) < 60 {
			b.Fatalf("drift lines %d", len(f.Drift))
		}
	}
}
