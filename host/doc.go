// Package host maps every policy setting to the kernel: how each setting
// kind is observed, written and undone on one port (registry.go), grouped
// into the steps a transaction writes, and the plan's passes that place a
// driver's companions, orders and refusals among the changes (asking the
// port's driver layer, package driver, what they are). It runs no
// transaction itself: that is package apply's job (journal, lock,
// read-back, rollback).
//
// It may import policy, nic (and nic/dcb), nccl, port and driver.
package host
