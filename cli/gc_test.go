package cli

import (
	"math"
	"runtime/debug"
	"testing"
)

// gcSettings reads the collector's percent and memory limit without
// changing them.
func gcSettings() (percent int, limit int64) {
	percent = debug.SetGCPercent(100)
	debug.SetGCPercent(percent)
	return percent, debug.SetMemoryLimit(-1)
}

func TestTuneGCOnlyForOneShotCommandsWithoutEnvironment(t *testing.T) {
	percent, limit := gcSettings()
	t.Cleanup(func() {
		debug.SetGCPercent(percent)
		debug.SetMemoryLimit(limit)
	})
	for _, tc := range []struct {
		command, gogc string
		off           bool
	}{
		{"audit", "", true},
		{"nccl-env", "", true},
		{"agent", "", false},
		{"apply", "", false},
		{"report", "", false},
		{"audit", "200", false}, // the operator's GOGC wins
	} {
		debug.SetGCPercent(100)
		debug.SetMemoryLimit(math.MaxInt64)
		t.Setenv("GOGC", tc.gogc)
		t.Setenv("GOMEMLIMIT", "")
		tuneGC(tc.command)
		p, l := gcSettings()
		if tc.off && (p != -1 || l != oneShotHeapLimit) {
			t.Errorf("%s (GOGC=%q): GC percent %d, limit %d; want off up to %d", tc.command, tc.gogc, p, l, oneShotHeapLimit)
		}
		if !tc.off && (p != 100 || l != math.MaxInt64) {
			t.Errorf("%s (GOGC=%q): GC percent %d, limit %d; want them untouched", tc.command, tc.gogc, p, l)
		}
	}
}
