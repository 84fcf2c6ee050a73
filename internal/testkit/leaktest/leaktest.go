package leaktest

import (
	"fmt"
	"os"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"
)

// module is the prefix of this module's functions in a stack trace.
const module = "github.com/rocectl/rocectl/"

// Settle is how long Left gives goroutines on their way out to exit.
// Joining a goroutine means receiving what it sends or waiting for its
// WaitGroup.Done; it still has to return after that, and nothing in Go
// can wait for that last step. Until it has, it is runnable, running or
// finishing a system call (a deferred Close). A goroutine that waits
// instead (sleeping, on a channel, a lock, the network) was not joined,
// and Left reports it without waiting for it.
const Settle = 5 * time.Second

// Main runs m's tests, then fails the binary if Left finds goroutines of
// this module still running. Use it as a package's TestMain:
//
//	func TestMain(m *testing.M) { leaktest.Main(m) }
func Main(m *testing.M) { os.Exit(After(m.Run())) }

// After is the exit code of a test binary whose tests exited with code:
// 1, with the goroutines' stacks on stderr, when they passed but Left
// finds goroutines of this module still running. For a TestMain that
// does more than Main.
func After(code int) int {
	if code != 0 {
		return code
	}
	if left := Left(Settle); len(left) > 0 {
		fmt.Fprintf(os.Stderr, "goroutines outlived the tests:\n\n%s\n", strings.Join(left, "\n\n"))
		return 1
	}
	return code
}

// Left returns the stacks of the goroutines, other than the caller's and
// the test binary's main one, that run code of this module. Those on
// their way out (see Settle) are given up to settle to go; it returns as
// soon as none is left, or all that are left wait.
func Left(settle time.Duration) []string {
	deadline := time.Now().Add(settle)
	for wait := time.Millisecond; ; wait = min(2*wait, 100*time.Millisecond) {
		left := goroutines()
		if !slices.ContainsFunc(left, leaving) || time.Now().After(deadline) {
			return left
		}
		time.Sleep(wait)
	}
}

// leaving reports whether goroutine g (its stack as runtime.Stack prints
// it, "goroutine 7 [chan receive, 2 minutes]:" first) is not waiting:
// it may be on its way out.
func leaving(g string) bool {
	_, state, _ := strings.Cut(g, "[")
	state, _, _ = strings.Cut(state, "]")
	state, _, _ = strings.Cut(state, ",")
	switch state {
	case "runnable", "running", "syscall", "preempted":
		return true
	}
	return false
}

func goroutines() []string {
	buf := make([]byte, 1<<20)
	for {
		n := runtime.Stack(buf, true)
		if n < len(buf) {
			buf = buf[:n]
			break
		}
		buf = make([]byte, 2*len(buf))
	}
	var out []string
	for i, g := range strings.Split(string(buf), "\n\n") {
		// A runtime cleanup goroutine (runtime.runCleanups) running one of
		// this module's cleanups (closing a descriptor nic holds, when the
		// GC drops its owner) is the runtime's, not one the code started:
		// it shows up whenever a GC happens to end just before the check.
		if i > 0 && strings.Contains(g, module) && !strings.Contains(g, "\nmain.main()") && !strings.Contains(g, "runtime.runCleanups(") {
			out = append(out, g)
		}
	}
	return out
}
