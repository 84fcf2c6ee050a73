package cli

import (
	"os"
	"runtime/debug"
)

// oneShotHeapLimit is the heap a short read-only command may grow to
// before the garbage collector runs at all. A 64-port audit allocates a
// few MB in all, and the process exits a few tens of milliseconds later:
// collecting during it is work whose only result is thrown away at exit.
// The limit keeps the collector there for inputs far bigger than that.
const oneShotHeapLimit = 128 << 20

// oneShotCommands are the commands that read one host (or a snapshot, or
// profiles), print, and exit. Not the agent, watch, apply or verify, which
// run for seconds to days, nor report, whose input is a whole fleet's
// documents.
var oneShotCommands = map[string]bool{
	"audit": true, "validate": true, "nccl-env": true, "topo": true, "peer": true,
}

// tuneGC turns the collector off up to oneShotHeapLimit for a one-shot
// command (measured on a 64-port snapshot audit: about 10 % less CPU and
// 7 % less wall time). GOGC or GOMEMLIMIT in the environment win: who
// sets them has a reason.
func tuneGC(command string) {
	if !oneShotCommands[command] || gcSetByEnv() {
		return
	}
	debug.SetMemoryLimit(oneShotHeapLimit)
	debug.SetGCPercent(-1)
}

// daemonGCPercent is the agent's GOGC. The agent lives for days with a
// small, steady heap (counter state, the last check): at the default 100
// the heap doubles before each collection, and that doubling is most of
// its resident size above the runtime's own. 75 keeps the 8-port,
// 200 ms-poll footprint about 1 MB lower, well inside the 20 MB budget
// (bench/agent-footprint.sh, two runs each: 20.0 MB and 0.73 % at 100;
// 18.8 MB and 0.73-0.86 % at 75; 17.7 MB but 1.00 % at 50).
const daemonGCPercent = 75

// TuneDaemonGC sets the agent's collector (daemonGCPercent), unless GOGC
// or GOMEMLIMIT in the environment say otherwise.
func TuneDaemonGC() {
	if gcSetByEnv() {
		return
	}
	debug.SetGCPercent(daemonGCPercent)
}

// reportGC lets the collector run less often while report decodes: each
// document is garbage as soon as it is folded, so the live heap is small
// (the fleet's rows) and the default GOGC=100 collected every few MB,
// a fifth of report's CPU over 10,000 documents of 8 ports. GOGC=400
// under a soft limit of 192 MiB keeps the peak bounded (100,000
// documents: ≈ 200 MB, the target is 300). A GOGC or GOMEMLIMIT in the
// environment is left as it is; the returned function restores the
// settings (the command also runs inside tests).
func reportGC() (restore func()) {
	if gcSetByEnv() {
		return func() {}
	}
	pct := debug.SetGCPercent(400)
	limit := debug.SetMemoryLimit(192 << 20)
	return func() {
		debug.SetGCPercent(pct)
		debug.SetMemoryLimit(limit)
	}
}

// gcSetByEnv says whether GOGC or GOMEMLIMIT is in the environment: who
// set them has a reason, and no command's own tuning overrides them.
func gcSetByEnv() bool { return os.Getenv("GOGC") != "" || os.Getenv("GOMEMLIMIT") != "" }
