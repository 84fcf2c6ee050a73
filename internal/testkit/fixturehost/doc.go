// Package fixturehost gives tests a writable copy of a captured host from
// testdata/hosts: its file tree in a temporary directory (symlinks kept) and
// a simulated kernel loaded from its kernel.json.
//
// A test kit (row internal/testkit in internal/arch's table): only tests,
// other test kits, tools and benchmark programs import it, never the shipped
// binaries; of this module it may import nic, nic/nictest and other test
// kits.
package fixturehost
