//go:build !rocectl_testhooks

package nic

// killPoint is the test build's hook (killpoint_testhooks.go); the shipped
// binary has none.
func killPoint(string) {}
