// Package fdtest counts a test process's open descriptors, for tests that
// check a pass closes what it opens: a process that holds more descriptors
// than its table has room for waits for an RCU grace period each time the
// kernel grows it (nic.Dir.Close).
package fdtest

import (
	"os"
	"strings"
	"testing"
)

// Under counts the process's descriptors that lead below dir (absolute,
// symlinks resolved): descriptors of earlier tests' trees, which their
// Dirs' cleanups may close at any moment, do not count. Without
// /proc/self/fd the test is skipped.
func Under(t testing.TB, dir string) int {
	t.Helper()
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Skipf("no /proc/self/fd: %v", err)
	}
	n := 0
	for _, e := range ents {
		if l, err := os.Readlink("/proc/self/fd/" + e.Name()); err == nil && strings.HasPrefix(l, dir+"/") {
			n++
		}
	}
	return n
}
