// Package leaktest fails a test binary when a goroutine running this
// module's code outlives its tests. rocectl's rule is that whatever starts
// a goroutine joins it before it returns (apply.Run, the agent's loop, a
// verbs run, the netlink event reader); one that is left running is how a
// test comes to fail later, in another test, or only on a busy machine.
//
// A test kit (row internal/testkit in internal/arch's table): only tests,
// other test kits, tools and benchmark programs import it, never the shipped
// binaries; of this module it may import nic, nic/nictest and other test
// kits.
package leaktest
