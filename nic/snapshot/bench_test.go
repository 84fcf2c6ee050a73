package snapshot_test

import (
	"fmt"
	"path/filepath"
	"testing"

	"github.com/rocectl/rocectl/internal/testkit/hosts"
	"github.com/rocectl/rocectl/nic/snapshot"
)

// BenchmarkOpen: opening an n-port ConnectX-6 Dx fixture host, the first
// thing every `rocectl audit --snapshot` does (snapshot.json, kernel.json,
// and for a packed one files.pack).
func BenchmarkOpen(b *testing.B) {
	for _, c := range []struct {
		ports  int
		packed bool
	}{{8, false}, {64, false}, {64, true}} {
		name := fmt.Sprintf("ports=%d", c.ports)
		if c.packed {
			name += "/packed"
		}
		b.Run(name, func(b *testing.B) {
			dir := filepath.Join(b.TempDir(), "host")
			if err := hosts.WriteCX6DxFactoryN(hosts.DefaultCapturesDir(), dir, c.ports); err != nil {
				b.Fatal(err)
			}
			if c.packed {
				if err := snapshot.Pack(dir); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportAllocs()
			for b.Loop() {
				if _, err := snapshot.Open(dir); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
