package snapshot_test

import (
	"fmt"
	"path/filepath"
	"testing"

	"github.com/rocectl/rocectl/internal/cmd/mkhosts/hosts"
	"github.com/rocectl/rocectl/nic/snapshot"
)

// BenchmarkOpen: opening an n-port ConnectX-6 Dx fixture host, the first
// thing every `rocectl audit --snapshot` does (snapshot.json, kernel.json).
func BenchmarkOpen(b *testing.B) {
	for _, ports := range []int{8, 64} {
		b.Run(fmt.Sprintf("ports=%d", ports), func(b *testing.B) {
			dir := filepath.Join(b.TempDir(), "host")
			if err := hosts.WriteCX6DxFactoryN(hosts.DefaultCapturesDir(), dir, ports); err != nil {
				b.Fatal(err)
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
