// Package dirtree reads a directory tree into a map, so that tests can
// compare two trees byte for byte. It imports nothing of the module, so
// every package's tests can use it.
//
// A test kit (row internal/testkit in internal/arch's table): only tests,
// other test kits, tools and benchmark programs import it, never the shipped
// binaries; of this module it may import nic, nic/nictest and other test
// kits.
package dirtree
