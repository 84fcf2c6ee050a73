package parallel

import (
	"runtime"
	"sync"
	"sync/atomic"
)

// Each calls fn(i) for every i in [0, n), on at most GOMAXPROCS goroutines
// at once, and returns when all calls have returned. Each i is handed out
// once; fn writes its result to the i-th slot of a slice it owns, so the
// caller keeps the order without locks. A host pass is mostly system calls
// on files and sockets of different ports: with n ports and P processors
// its wall time drops to about n/P reads, and no more goroutines than
// processors are ever runnable.
func Each(n int, fn func(i int)) {
	workers := min(runtime.GOMAXPROCS(0), n)
	if workers <= 1 {
		for i := range n {
			fn(i)
		}
		return
	}
	var next atomic.Int64
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for i := int(next.Add(1) - 1); i < n; i = int(next.Add(1) - 1) {
				fn(i)
			}
		})
	}
	wg.Wait()
}
