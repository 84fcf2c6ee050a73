//go:build !rocectl_testhooks

package cli

import "github.com/rocectl/rocectl/host"

// testBeforeStep is the test build's hook (testhooks.go); the shipped
// binary has none.
func testBeforeStep() (func(int, host.Step) error, error) { return nil, nil }
