package parallel

import (
	"runtime"
	"sync/atomic"
	"testing"
)

// TestEach: every index is handed out exactly once, never more than
// GOMAXPROCS calls run at once, and Each returns only after all of them.
func TestEach(t *testing.T) {
	for _, procs := range []int{1, 2, 4} {
		prev := runtime.GOMAXPROCS(procs)
		for _, n := range []int{0, 1, 3, 64} {
			seen := make([]atomic.Int32, n)
			var running, peak atomic.Int32
			Each(n, func(i int) {
				r := running.Add(1)
				for {
					p := peak.Load()
					if r <= p || peak.CompareAndSwap(p, r) {
						break
					}
				}
				seen[i].Add(1)
				running.Add(-1)
			})
			for i := range seen {
				if c := seen[i].Load(); c != 1 {
					t.Errorf("GOMAXPROCS %d, n %d: index %d called %d times", procs, n, i, c)
				}
			}
			if running.Load() != 0 {
				t.Errorf("GOMAXPROCS %d, n %d: Each returned with calls running", procs, n)
			}
			if int(peak.Load()) > procs {
				t.Errorf("GOMAXPROCS %d, n %d: %d calls at once", procs, n, peak.Load())
			}
		}
		runtime.GOMAXPROCS(prev)
	}
}
