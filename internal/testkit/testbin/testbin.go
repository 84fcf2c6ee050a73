package testbin

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/rocectl/rocectl/internal/testkit/fixturehost"
	"github.com/rocectl/rocectl/internal/testkit/leaktest"
)

// Main builds ./cmd/rocectl and ./cmd/rocectl-agent into one temporary
// directory (so that `rocectl agent` finds the daemon beside it), stores
// rocectl's path in *bin, runs the package's tests and exits with their
// code. The build has the test hooks (-tags rocectl_testhooks,
// cli/testhooks.go: ROCECTL_TEST_STEP_DELAY slows each apply step;
// nic/killpoint_testhooks.go: ROCECTL_TEST_KILL_AT kill -9s rocectl at a
// named point of a file replacement), which
// the shipped binaries lack. Without a Go toolchain on PATH *bin stays empty (tests that need
// it skip); a build that fails stops the run. Like leaktest.Main, it fails
// the run when a goroutine of this module outlives the tests.
func Main(m *testing.M, bin *string) {
	dir, err := os.MkdirTemp("", "rocectl-bin-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	if goTool, err := exec.LookPath("go"); err == nil {
		cmd := exec.Command(goTool, "build", "-tags", "rocectl_testhooks", "-o", dir+"/", "./cmd/rocectl", "./cmd/rocectl-agent")
		cmd.Dir = fixturehost.RepoRoot()
		if msg, err := cmd.CombinedOutput(); err != nil {
			fmt.Fprintf(os.Stderr, "building rocectl and rocectl-agent: %v\n%s", err, msg)
			os.RemoveAll(dir)
			os.Exit(1)
		}
		*bin = filepath.Join(dir, "rocectl")
	}
	code := leaktest.After(m.Run())
	os.RemoveAll(dir)
	os.Exit(code)
}
