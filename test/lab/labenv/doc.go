// Package labenv describes the Soft-RoCE lab guest (test/lab) to Go tests
// built with the "lab" build tag: the two rxe devices and their wire, and
// helpers to create netdevsim devices (with the lab's DCB and mlx5-like
// counter patches) and drive their counters.
//
// Everything comes from the LAB_* variables that test/lab/guest-init and
// test/lab/guest-go-tests.sh export; outside the guest Get skips the test.
//
// Tests only (row test in internal/arch's table): nothing imports it, and
// its non-test files import nothing of this module.
package labenv
