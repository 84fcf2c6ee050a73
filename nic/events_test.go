package nic

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"testing"
	"time"

	"github.com/vishvananda/netlink"

	"github.com/rocectl/rocectl/internal/netnstest"
)

// eventWait bounds how long a test waits for an event the kernel must send.
// It is a liveness bound, not a latency assertion: events arrive in
// microseconds.
const eventWait = 10 * time.Second

// waitFor returns the first event on ch that match accepts, failing the
// test if ch closes or nothing matches within eventWait. Other events are
// passed to skip (may be nil).
func waitFor[E any](t *testing.T, ch <-chan E, what string, match func(E) bool, skip func(E)) E {
	t.Helper()
	timeout := time.After(eventWait)
	for {
		select {
		case ev, ok := <-ch:
			if !ok {
				t.Fatalf("channel closed while waiting for %s", what)
			}
			if match(ev) {
				return ev
			}
			if skip != nil {
				skip(ev)
			}
		case <-timeout:
			t.Fatalf("no %s within %s", what, eventWait)
		}
	}
}

func waitClosed[E any](t *testing.T, ch <-chan E) {
	t.Helper()
	timeout := time.After(eventWait)
	for {
		select {
		case _, ok := <-ch:
			if !ok {
				return
			}
		case <-timeout:
			t.Fatalf("channel not closed within %s of cancel", eventWait)
		}
	}
}

func watchLinksIn(t *testing.T, ns *netnstest.NS, opt WatchOptions) (<-chan LinkEvent, context.CancelFunc) {
	t.Helper()
	ctx, cancel := context.WithCancel(t.Context())
	var ch <-chan LinkEvent
	if err := ns.Do(func() (err error) {
		ch, err = WatchLinks(ctx, testLogger(t), opt)
		return err
	}); err != nil {
		cancel()
		t.Fatal(err)
	}
	t.Cleanup(cancel)
	return ch, cancel
}

func linkIndex(t *testing.T, ns *netnstest.NS, name string) int {
	t.Helper()
	var idx int
	if err := ns.Do(func() error {
		l, err := netlink.LinkByName(name)
		if err == nil {
			idx = l.Attrs().Index
		}
		return err
	}); err != nil {
		t.Fatal(err)
	}
	return idx
}

func TestWatchLinks(t *testing.T) {
	ns := netnstest.New(t)
	ch, cancel := watchLinksIn(t, ns, WatchOptions{ThreadNamespace: true})

	// A new veth pair: the first event of each end says it appeared.
	ns.AddVeth("wa", "wb")
	first := map[string]LinkEvent{}
	for len(first) < 2 {
		ev := waitFor(t, ch, "events for wa and wb",
			func(ev LinkEvent) bool { return ev.Name == "wa" || ev.Name == "wb" }, nil)
		if _, seen := first[ev.Name]; !seen {
			first[ev.Name] = ev
		}
	}
	for _, name := range []string{"wa", "wb"} {
		ev := first[name]
		want := LinkEvent{Kind: EventAdded, Name: name, Index: linkIndex(t, ns, name), MTU: 1500, OperState: "down"}
		if ev != want {
			t.Errorf("first event of %s = %+v, want %+v", name, ev, want)
		}
	}

	// MTU change and admin up arrive as changes with the new values.
	if err := ns.Do(func() error {
		l, err := netlink.LinkByName("wa")
		if err != nil {
			return err
		}
		if err := netlink.LinkSetMTU(l, 9000); err != nil {
			return err
		}
		return netlink.LinkSetUp(l)
	}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, ch, "wa mtu 9000 change", func(ev LinkEvent) bool {
		return ev.Name == "wa" && ev.Kind == EventChanged && ev.MTU == 9000
	}, nil)
	waitFor(t, ch, "wa admin up change", func(ev LinkEvent) bool {
		return ev.Name == "wa" && ev.Kind == EventChanged && ev.AdminUp
	}, nil)

	// Deleting one end removes both.
	if err := ns.Do(func() error {
		l, err := netlink.LinkByName("wa")
		if err != nil {
			return err
		}
		return netlink.LinkDel(l)
	}); err != nil {
		t.Fatal(err)
	}
	removed := map[string]bool{}
	for len(removed) < 2 {
		ev := waitFor(t, ch, "removal of wa and wb", func(ev LinkEvent) bool { return ev.Kind == EventRemoved }, nil)
		removed[ev.Name] = true
	}
	if !removed["wa"] || !removed["wb"] {
		t.Fatalf("removed %v, want wa and wb", removed)
	}

	cancel()
	waitClosed(t, ch)
}

func TestWatchAddrs(t *testing.T) {
	ns := netnstest.New(t)
	ns.AddVeth("va", "vb")
	idx := linkIndex(t, ns, "va")
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	var ch <-chan AddrEvent
	if err := ns.Do(func() (err error) {
		ch, err = WatchAddrs(ctx, testLogger(t), WatchOptions{ThreadNamespace: true})
		return err
	}); err != nil {
		t.Fatal(err)
	}

	addrs := []string{"192.0.2.1/24", "2001:db8::1/64"}
	for _, a := range addrs {
		if err := ns.Do(func() error {
			l, err := netlink.LinkByName("va")
			if err != nil {
				return err
			}
			nla, err := netlink.ParseAddr(a)
			if err != nil {
				return err
			}
			return netlink.AddrAdd(l, nla)
		}); err != nil {
			t.Fatal(err)
		}
		want := AddrEvent{Kind: EventAdded, Index: idx, Name: "va", Prefix: netip.MustParsePrefix(a)}
		got := waitFor(t, ch, "address "+a, func(ev AddrEvent) bool { return ev.Prefix == want.Prefix }, nil)
		if got != want {
			t.Errorf("event for %s = %+v, want %+v", a, got, want)
		}
	}
	if got := netip.MustParsePrefix(addrs[0]).Addr(); !got.Is4() {
		t.Fatalf("IPv4 prefix parsed as %v", got) // guards the Unmap in addrEvent
	}

	if err := ns.Do(func() error {
		l, err := netlink.LinkByName("va")
		if err != nil {
			return err
		}
		return netlink.AddrDel(l, &netlink.Addr{IPNet: &net.IPNet{IP: net.IPv4(192, 0, 2, 1), Mask: net.CIDRMask(24, 32)}})
	}); err != nil {
		t.Fatal(err)
	}
	got := waitFor(t, ch, "removal of 192.0.2.1/24", func(ev AddrEvent) bool { return ev.Kind == EventRemoved }, nil)
	if want := (AddrEvent{Kind: EventRemoved, Index: idx, Name: "va", Prefix: netip.MustParsePrefix("192.0.2.1/24")}); got != want {
		t.Fatalf("removal event = %+v, want %+v", got, want)
	}

	cancel()
	waitClosed(t, ch)
}

// A consumer that falls behind overflows the subscription socket; the
// watcher must say so (EventLost) and keep watching on a new subscription.
func TestWatchLinksLostAndResubscribed(t *testing.T) {
	ns := netnstest.New(t)
	// The smallest receive buffer the kernel allows (it clamps 1 up to
	// SOCK_MIN_RCVBUF): a few messages.
	ch, _ := watchLinksIn(t, ns, WatchOptions{ReceiveBufferSize: 1, ThreadNamespace: true})

	// Not reading: the two 16-event channel buffers and the socket fill up.
	const pairs = 40
	for i := range pairs {
		ns.AddVeth(fmt.Sprintf("fa%d", i), fmt.Sprintf("fb%d", i))
	}
	lost := waitFor(t, ch, "EventLost", func(ev LinkEvent) bool { return ev.Kind == EventLost }, nil)
	if lost.Err == nil {
		t.Fatal("EventLost without a cause")
	}
	t.Logf("lost: %v", lost.Err)

	// The new subscription sees what happens after EventLost. One change
	// at a time: with this tiny buffer a burst of two notifications (a veth
	// pair) can overflow it again before the reader wakes up, while a
	// single message is always queued.
	if err := ns.Do(func() error {
		l, err := netlink.LinkByName("fa0")
		if err != nil {
			return err
		}
		return netlink.LinkSetMTU(l, 9000)
	}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, ch, "fa0 mtu 9000 after resubscribing", func(ev LinkEvent) bool {
		return ev.Name == "fa0" && ev.MTU == 9000
	}, func(ev LinkEvent) {
		if ev.Kind == EventLost {
			t.Errorf("second EventLost: %v", ev.Err)
		}
	})
}

func TestWatchCancelWithoutReading(t *testing.T) {
	ns := netnstest.New(t)
	ch, cancel := watchLinksIn(t, ns, WatchOptions{ThreadNamespace: true})
	for i := range 20 {
		ns.AddVeth(fmt.Sprintf("ca%d", i), fmt.Sprintf("cb%d", i))
	}
	cancel() // with the watcher blocked on a full channel
	waitClosed(t, ch)
}

func TestEventKindString(t *testing.T) {
	for k, s := range map[EventKind]string{EventAdded: "added", EventChanged: "changed", EventRemoved: "removed", EventLost: "lost", 0: "EventKind(0)"} {
		if k.String() != s {
			t.Errorf("%d.String() = %q, want %q", k, k.String(), s)
		}
	}
}
