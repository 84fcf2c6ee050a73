// Package fdtest counts a test process's open descriptors, for tests that
// check a pass closes what it opens: a process that holds more descriptors
// than its table has room for waits for an RCU grace period each time the
// kernel grows it (nic.Dir.Close).
//
// A test kit (row internal/testkit in internal/arch's table): only tests,
// other test kits, tools and benchmark programs import it, never the shipped
// binaries; of this module it may import nic, nic/nictest and other test
// kits.
package fdtest
