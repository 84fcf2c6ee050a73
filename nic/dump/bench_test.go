package dump

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/rocectl/rocectl/nic"
	"github.com/rocectl/rocectl/nic/snapshot"
)

// ethtoolSFleet is `ethtool -S` of n interfaces, each with its prompt
// line, as an operator collects them in one file: every interface prints
// the counters of the real ConnectX-6 Dx capture
// (testdata/corpus/mlx5-cx6dx-ethtool-S-k5.15-txpause.txt), its per-queue
// counters (ch0_, rx0_, tx0_) repeated for 63 queues as a 64-channel
// mlx5 prints them: about 125 KB an interface, the 8 MB of 64 interfaces
// the issue "Performance at fleet scale" measured.
func ethtoolSFleet(tb testing.TB, n int) []byte {
	tb.Helper()
	raw, err := os.ReadFile(filepath.Join("testdata", "corpus", "mlx5-cx6dx-ethtool-S-k5.15-txpause.txt"))
	if err != nil {
		tb.Fatal(err)
	}
	queue := regexp.MustCompile(`^(\s+)(ch|rx|tx)0_(.*)$`)
	var global, perQueue []string
	for _, l := range strings.Split(strings.TrimRight(string(raw), "\n"), "\n")[1:] {
		if queue.MatchString(l) {
			perQueue = append(perQueue, l)
		} else {
			global = append(global, l)
		}
	}
	var b bytes.Buffer
	for i := range n {
		fmt.Fprintf(&b, "$ ethtool -S eth%d\nNIC statistics:\n", i)
		for _, l := range global {
			b.WriteString(l)
			b.WriteByte('\n')
		}
		for q := range 63 {
			for _, l := range perQueue {
				b.WriteString(queue.ReplaceAllString(l, fmt.Sprintf("${1}${2}%d_${3}", q)))
				b.WriteByte('\n')
			}
		}
	}
	return b.Bytes()
}

// BenchmarkImportEthtoolS is what `rocectl import` does with one file of
// `ethtool -S` of 64 and 256 interfaces (parse, build the snapshot's
// state, write the snapshot), taken in turn with its floor (importFloor)
// on the same input, so that load drift hits both alike. It reports both
// times, their ratio beside the target of the issue "Performance at
// fleet scale" (≤ 1.3x), the input's size and the bytes allocated.
func BenchmarkImportEthtoolS(b *testing.B) {
	for _, n := range []int{64, 256} {
		in := ethtoolSFleet(b, n)
		b.Run(fmt.Sprintf("interfaces=%d", n), func(b *testing.B) {
			b.SetBytes(int64(len(in)))
			var imp, floor time.Duration
			var alloc uint64
			for i := 0; b.Loop(); i++ {
				var before, after runtime.MemStats
				runtime.ReadMemStats(&before)
				t0 := time.Now()
				blocks, _ := Parse("ethtool-S.txt", in)
				im, err := Build(blocks, "")
				if err != nil {
					b.Fatal(err)
				}
				if len(im.State.Links) != n {
					b.Fatalf("%d links, want %d", len(im.State.Links), n)
				}
				meta := snapshot.Meta{CapturedAt: "2026-01-01T00:00:00Z", Source: "bench", NotCaptured: []string{"/sys"}}
				if err := snapshot.Write(filepath.Join(b.TempDir(), fmt.Sprint(i)), meta, im.State, nic.NewFS("/", true), nil); err != nil {
					b.Fatal(err)
				}
				imp += time.Since(t0)
				runtime.ReadMemStats(&after)
				alloc += after.TotalAlloc - before.TotalAlloc
				t0 = time.Now()
				importFloor(b, in, n)
				floor += time.Since(t0)
			}
			b.ReportMetric(float64(imp.Milliseconds())/float64(b.N), "import-ms")
			b.ReportMetric(float64(floor.Milliseconds())/float64(b.N), "floor-ms")
			b.ReportMetric(float64(imp)/float64(floor), "x-floor(target<=1.3)")
			b.ReportMetric(float64(len(in))/(1<<20), "input-MiB")
			b.ReportMetric(float64(alloc)/float64(b.N)/(1<<20), "alloc-MiB/op")
		})
	}
}

// importFloor is the least a program can do with the same input and
// still write what it read as JSON: split the lines, take "name: value"
// rows into one map per interface, marshal it indented to a file.
func importFloor(b *testing.B, in []byte, n int) {
	all := map[string]map[string]uint64{}
	var cur map[string]uint64
	for _, l := range strings.Split(string(in), "\n") {
		if nd, ok := strings.CutPrefix(l, "$ ethtool -S "); ok {
			cur = map[string]uint64{}
			all[nd] = cur
			continue
		}
		k, v, ok := strings.Cut(strings.TrimSpace(l), ": ")
		if !ok || cur == nil {
			continue
		}
		if x, err := strconv.ParseUint(v, 10, 64); err == nil {
			cur[k] = x
		}
	}
	if len(all) != n {
		b.Fatalf("floor: %d interfaces, want %d", len(all), n)
	}
	out, err := json.MarshalIndent(all, "", "  ")
	if err != nil {
		b.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(b.TempDir(), "floor.json"), out, 0o644); err != nil {
		b.Fatal(err)
	}
}
