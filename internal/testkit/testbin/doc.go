// Package testbin builds the rocectl binaries once for a test package that
// drives the real CLI (end-to-end tests, systemd units, the Ansible role).
//
// A test kit (row internal/testkit in internal/arch's table): only tests,
// other test kits, tools and benchmark programs import it, never the shipped
// binaries; of this module it may import nic, nic/nictest and other test
// kits.
package testbin
