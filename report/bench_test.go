package report

import (
	"bytes"
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

// fleetDocs makes n audit documents (racks of 32; every fifth rack with
// the same cable-length drift, every seventh host with a host-specific MTU
// drift), shaped like the corpus's factory host document.
func fleetDocs(tb testing.TB, n int) [][]byte {
	tb.Helper()
	tmpl, err := os.ReadFile(filepath.Join("testdata", "corpus", "rack-c-01.audit.json"))
	if err != nil {
		tb.Fatal(err)
	}
	var doc map[string]any
	if err := json.Unmarshal(tmpl, &doc); err != nil {
		tb.Fatal(err)
	}
	out := make([][]byte, n)
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
		out[i], _ = json.MarshalIndent(doc, "", "  ")
	}
	return out
}

// writeFleet writes fleetDocs into dir, one file each.
func writeFleet(tb testing.TB, dir string, n int) {
	tb.Helper()
	for i, b := range fleetDocs(tb, n) {
		if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("h%05d.audit.json", i)), b, 0o644); err != nil {
			tb.Fatal(err)
		}
	}
}

// factoryDocs is n copies of the corpus's 8-setting-group factory host
// (rack-d-02: 2 ports, every setting drifted or unsupported), each its own
// host.
func factoryDocs(tb testing.TB, n int) [][]byte {
	tb.Helper()
	tmpl, err := os.ReadFile(filepath.Join("testdata", "corpus", "rack-d-02.audit.json"))
	if err != nil {
		tb.Fatal(err)
	}
	out := make([][]byte, n)
	for i := range out {
		out[i] = bytes.Replace(tmpl, []byte(`"host": "rack-d-02"`), fmt.Appendf(nil, `"host": "f%05d"`, i), 1)
	}
	return out
}

// ncclDocs is n hosts of testdata/nccl, each with its audit (gpu-a-02's:
// two NCCL chain problems) and its nccl-env document (gpu-a-03's, -1;
// every seventh host gpu-a-06's, pinned 3): 2n documents.
func ncclDocs(tb testing.TB, n int) [][]byte {
	tb.Helper()
	read := func(name string) []byte {
		b, err := os.ReadFile(filepath.Join("testdata", "nccl", name))
		if err != nil {
			tb.Fatal(err)
		}
		return b
	}
	audit, dyn, pinned := read("gpu-a-02.audit.json"), read("gpu-a-03.nccl-env.json"), read("gpu-a-06.nccl-env.json")
	out := make([][]byte, 0, 2*n)
	for i := range n {
		name := fmt.Appendf(nil, `"host": "n%05d"`, i)
		env, from := dyn, `"host": "gpu-a-03"`
		if i%7 == 0 {
			env, from = pinned, `"host": "gpu-a-06"`
		}
		out = append(out, bytes.Replace(audit, []byte(`"host": "gpu-a-02"`), name, 1), bytes.Replace(env, []byte(from), name, 1))
	}
	return out
}

// BenchmarkFold: the fold itself, on one goroutine, without files: decode
// each document (Parse) and fold it (foldDoc, folder.add), then make the
// fleet view (finish); Stream runs the first two on every CPU. fleet:
// 10,000 hosts of fleetDocs, most in sync; factory: 2,000 factory hosts,
// every setting drifted; nccl: 5,000 hosts of an audit with NCCL chain
// problems and an nccl-env document each (ns/doc is per document).
func BenchmarkFold(b *testing.B) {
	for _, bc := range []struct {
		name  string
		docs  [][]byte
		hosts int
	}{{"fleet", fleetDocs(b, 10000), 10000}, {"factory", factoryDocs(b, 2000), 2000}, {"nccl", ncclDocs(b, 5000), 5000}} {
		b.Run(bc.name, func(b *testing.B) {
			size := 0
			for _, d := range bc.docs {
				size += len(d)
			}
			b.SetBytes(int64(size))
			for b.Loop() {
				f := newFolder(Options{Now: time.Now()})
				for i, data := range bc.docs {
					ds, err := Parse("h.audit.json", data)
					if err != nil {
						b.Fatal(err)
					}
					for j := range ds {
						f.add(ds[j].Host, ds[j].Source, foldDoc(&ds[j], seq{file: i, doc: j}))
					}
				}
				fl := f.finish()
				if len(fl.Hosts) != bc.hosts || len(fl.Drift) < 2 && bc.name != "nccl" {
					b.Fatalf("%d hosts, %d drift lines", len(fl.Hosts), len(fl.Drift))
				}
				if bc.name == "nccl" && (fl.NCCLGID == nil || fl.NCCLGID.Differ != (bc.hosts+6)/7 || fl.NCCLChain == nil || fl.NCCLChain.Hosts != bc.hosts) {
					b.Fatalf("nccl sections: %+v %+v", fl.NCCLGID, fl.NCCLChain)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(len(bc.docs)), "ns/doc")
		})
	}
}

// BenchmarkReport10k: read and fold (Stream) and render (text, JSON,
// HTML) the fleet view of 10,000 host documents. Target: under 2 s and
// 200 MB (bench/report-fleet.sh measures the command's peak RSS).
func BenchmarkReport10k(b *testing.B) {
	dir := b.TempDir()
	writeFleet(b, dir, 10000)
	b.ResetTimer()
	for b.Loop() {
		var before runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		start := time.Now()
		f, err := Stream(context.Background(), []string{dir}, Options{Now: time.Now(), MaxAge: time.Hour})
		if err != nil || len(f.Hosts) != 10000 {
			b.Fatalf("%v", err)
		}
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
