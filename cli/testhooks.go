//go:build rocectl_testhooks

package cli

import (
	"fmt"
	"os"
	"time"

	"github.com/rocectl/rocectl/host"
)

// Only the test build links this file (internal/testkit/testbin builds rocectl
// with -tags rocectl_testhooks): the end-to-end tests slow each apply step
// down to kill -9 rocectl or pull a link in the middle of an apply. The
// shipped binary has no such hook.

// stepDelayEnv holds a duration slept before each apply step.
const stepDelayEnv = "ROCECTL_TEST_STEP_DELAY"

// testBeforeStep is the apply.Options.BeforeStep that stepDelayEnv asks
// for, or nil.
func testBeforeStep() (func(int, host.Step) error, error) {
	v := os.Getenv(stepDelayEnv)
	if v == "" {
		return nil, nil
	}
	d, err := time.ParseDuration(v)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", stepDelayEnv, err)
	}
	return func(int, host.Step) error { time.Sleep(d); return nil }, nil
}
