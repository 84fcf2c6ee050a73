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
