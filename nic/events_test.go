package nic

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"slices"
	"testing"
	"time"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"

	"github.com/rocectl/rocectl/internal/testkit/netnstest"
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
	stopOnCleanup(t, cancel, ch)
	return ch, cancel
}

// stopOnCleanup ends a watcher when the test ends, however it ends, and
// waits until its channel is closed: the watcher's goroutines are gone
// then and it no longer logs to t.
func stopOnCleanup[E any](t *testing.T, cancel context.CancelFunc, ch <-chan E) {
	t.Cleanup(func() {
		cancel()
		waitClosed(t, ch)
	})
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
	var ch <-chan AddrEvent
	if err := ns.Do(func() (err error) {
		ch, err = WatchAddrs(ctx, testLogger(t), WatchOptions{ThreadNamespace: true})
		return err
	}); err != nil {
		cancel()
		t.Fatal(err)
	}
	stopOnCleanup(t, cancel, ch)

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
// watcher must say so (EventLost), report every link as it is now, and keep
// watching on a new subscription.
func TestWatchLinksLostAndResubscribed(t *testing.T) {
	ns := netnstest.New(t)
	// The smallest receive buffer the kernel allows (it clamps 1 up to
	// SOCK_MIN_RCVBUF): a few messages.
	ch, _ := watchLinksIn(t, ns, WatchOptions{ReceiveBufferSize: 1, ThreadNamespace: true})

	// Not reading: the two 16-message channel buffers and the socket fill
	// up.
	const pairs = 40
	for i := range pairs {
		ns.AddVeth(fmt.Sprintf("fa%d", i), fmt.Sprintf("fb%d", i))
	}
	lost := waitFor(t, ch, "EventLost", func(ev LinkEvent) bool { return ev.Kind == EventLost }, nil)
	if !errors.Is(lost.Err, unix.ENOBUFS) {
		t.Fatalf("EventLost cause = %v, want ENOBUFS", lost.Err)
	}

	// After the loss every link is reported again, most of which have no
	// event of their own coming. With this tiny buffer the new
	// subscription may overflow again too: each EventLost restarts the
	// re-read, so whatever was missed is reported after the last one.
	want := map[string]LinkEvent{}
	if err := ns.Do(func() error {
		links, err := netlink.LinkList()
		for _, l := range links {
			ev := linkState(0, l)
			want[ev.Name] = ev
		}
		return err
	}); err != nil {
		t.Fatal(err)
	}
	if len(want) != 2*pairs+1 { // and lo
		t.Fatalf("namespace has %d links, want %d", len(want), 2*pairs+1)
	}
	reported := map[string]bool{}
	for len(reported) < len(want) {
		ev := waitFor(t, ch, fmt.Sprintf("re-read of all links (%d of %d seen)", len(reported), len(want)),
			func(LinkEvent) bool { return true }, nil)
		if ev.Kind == EventLost {
			clear(reported)
			continue
		}
		// Added for a link whose first event was lost.
		w := want[ev.Name]
		w.Kind = ev.Kind
		if (ev.Kind != EventAdded && ev.Kind != EventChanged) || ev != w {
			t.Fatalf("after EventLost: %+v, want %+v as added or changed", ev, w)
		}
		reported[ev.Name] = true
	}

	// The new subscription sees what happens after EventLost: fa0's new
	// MTU arrives as its event, or in a re-read should that event be lost.
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
	}, nil)
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

// The re-read after a lost subscription reports each link against what was
// reported before: changed with its current values if known, added if not,
// removed if known and gone.
func TestLinkSetResync(t *testing.T) {
	ns := netnstest.New(t)
	ns.AddVeth("ra", "rb")
	h, err := netlink.NewHandleAt(ns.Handle(), unix.NETLINK_ROUTE)
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	lo, ra, rb := linkIndex(t, ns, "lo"), linkIndex(t, ns, "ra"), linkIndex(t, ns, "rb")
	const goneIndex = 9999
	s := &linkSet{h: h, known: map[int]LinkEvent{
		lo:        {Kind: EventAdded, Name: "lo", Index: lo, MTU: 1280}, // stale values
		ra:        {Kind: EventAdded, Name: "ra", Index: ra, MTU: 1500, OperState: "down"},
		goneIndex: {Kind: EventChanged, Name: "gone0", Index: goneIndex, MTU: 1500, OperState: "up", AdminUp: true},
	}}
	got, err := s.resync()
	if err != nil {
		t.Fatal(err)
	}
	want := []LinkEvent{
		{Kind: EventChanged, Name: "lo", Index: lo, MTU: 65536, OperState: "down"},
		{Kind: EventChanged, Name: "ra", Index: ra, MTU: 1500, OperState: "down"},
		{Kind: EventAdded, Name: "rb", Index: rb, MTU: 1500, OperState: "down"},
		{Kind: EventRemoved, Name: "gone0", Index: goneIndex, MTU: 1500, OperState: "up", AdminUp: true},
	}
	byIndex := func(a, b LinkEvent) int { return a.Index - b.Index }
	slices.SortFunc(want, byIndex) // the kernel numbers the veth peer first
	slices.SortFunc(got, byIndex)
	if !slices.Equal(got, want) {
		t.Fatalf("resync =\n%+v\nwant\n%+v", got, want)
	}
	// Recorded: a second re-read of an unchanged namespace reports every
	// link as changed, and nothing as added or removed.
	got, err = s.resync()
	if err != nil {
		t.Fatal(err)
	}
	want = want[:3]
	for i := range want {
		want[i].Kind = EventChanged
	}
	slices.SortFunc(got, byIndex)
	if !slices.Equal(got, want) {
		t.Fatalf("second resync =\n%+v\nwant\n%+v", got, want)
	}
}

// The address re-read reports only differences: an address has nothing that
// could change while it stays the same address.
func TestAddrSetResync(t *testing.T) {
	ns := netnstest.New(t)
	ns.AddVeth("va", "vb")
	va := linkIndex(t, ns, "va")
	for _, a := range []string{"192.0.2.1/24", "2001:db8::1/64"} {
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
	}
	h, err := netlink.NewHandleAt(ns.Handle(), unix.NETLINK_ROUTE)
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	kept := AddrEvent{Kind: EventAdded, Index: va, Name: "va", Prefix: netip.MustParsePrefix("2001:db8::1/64")}
	gone := AddrEvent{Kind: EventAdded, Index: va, Name: "va", Prefix: netip.MustParsePrefix("198.51.100.1/24")}
	s := &addrSet{h: h, log: testLogger(t), known: map[addrKey]AddrEvent{
		{va, kept.Prefix}: kept,
		{va, gone.Prefix}: gone,
	}}
	got, err := s.resync()
	if err != nil {
		t.Fatal(err)
	}
	gone.Kind = EventRemoved
	want := []AddrEvent{
		{Kind: EventAdded, Index: va, Name: "va", Prefix: netip.MustParsePrefix("192.0.2.1/24")},
		gone,
	}
	if !slices.Equal(got, want) {
		t.Fatalf("resync =\n%+v\nwant\n%+v", got, want)
	}
	if got, err := s.resync(); err != nil || len(got) != 0 {
		t.Fatalf("second resync = %+v, %v; want nothing", got, err)
	}
}
