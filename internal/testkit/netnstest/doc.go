// Package netnstest gives a test its own, throw-away network namespace, so
// that tests can create links, change MTUs and subscribe to rtnetlink events
// against the real kernel without touching the host's network.
//
//	ns := netnstest.New(t)            // skips the test when not root
//	ns.AddVeth("va", "vb")
//	err := ns.Do(func() error { ... }) // runs on an OS thread inside ns
//	out, err := ns.Command("ip", "link").Output()
//
// The namespace is unnamed (nothing under /var/run/netns): it lives as long as
// the handle New keeps open, plus any socket or process still inside it, and
// t.Cleanup closes that handle.
//
// Threads: Linux network namespaces belong to threads, not processes. New and
// Do lock their goroutine to its OS thread, switch the thread into the
// namespace, and switch it back before unlocking. Should switching back fail,
// the goroutine ends still locked, and the Go runtime retires the thread
// rather than let other goroutines run in the test namespace. (Simply never
// unlocking is not enough: when the thread is the process's main thread the
// runtime parks it forever instead, keeping the namespace alive.)
//
// A test kit (row internal/testkit in internal/arch's table): only tests,
// other test kits, tools and benchmark programs import it, never the shipped
// binaries; of this module it may import nic, nic/nictest and other test
// kits.
package netnstest
