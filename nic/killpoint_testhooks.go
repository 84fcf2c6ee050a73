//go:build rocectl_testhooks

package nic

import (
	"os"
	"syscall"
	"time"
)

// Only the test build links this file (internal/testkit/testbin builds
// rocectl with -tags rocectl_testhooks): the end-to-end tests kill -9
// rocectl at an exact point of a file replacement (FileIn.Replace: the
// temp file created, written, fsynced, renamed) rather than after a
// guessed delay. The shipped binary has no such hook.

// KillAtEnv names the kill point at which the process SIGKILLs itself.
const KillAtEnv = "ROCECTL_TEST_KILL_AT"

func killPoint(name string) {
	if os.Getenv(KillAtEnv) == name {
		_ = syscall.Kill(os.Getpid(), syscall.SIGKILL)
		for {
			time.Sleep(time.Second) // the signal is on its way
		}
	}
}
