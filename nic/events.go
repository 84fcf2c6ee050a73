package nic

import (
	"cmp"
	"context"
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"slices"
	"syscall"
	"time"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netlink/nl"
	"github.com/vishvananda/netns"
	"golang.org/x/sys/unix"
)

// EventKind says what a LinkEvent or AddrEvent reports.
type EventKind uint8

const (
	// EventAdded: a netdev was registered in (or moved into) the namespace,
	// typically with a new ifindex after a driver reload; or an address was
	// added. The kernel forgets dcbnl APP entries and similar settings with
	// the old netdev, so the agent re-applies.
	EventAdded EventKind = iota + 1
	// EventChanged: a netdev's attributes changed (MTU, flags, operstate).
	EventChanged
	// EventRemoved: a netdev was unregistered or left the namespace; or an
	// address was removed.
	EventRemoved
	// EventLost: the subscription failed (typically ENOBUFS after the
	// socket buffer overflowed) and has been re-established. Events in
	// between are missing; the watcher's re-read of the state follows
	// (see WatchLinks, WatchAddrs). Err says why.
	EventLost
)

func (k EventKind) String() string {
	switch k {
	case EventAdded:
		return "added"
	case EventChanged:
		return "changed"
	case EventRemoved:
		return "removed"
	case EventLost:
		return "lost"
	}
	return fmt.Sprintf("EventKind(%d)", uint8(k))
}

// LinkEvent is one RTM_NEWLINK/RTM_DELLINK notification.
type LinkEvent struct {
	Kind      EventKind
	Name      string
	Index     int
	MTU       int
	OperState string // as in LinkInfo: "up", "down", "lowerlayerdown", ...
	AdminUp   bool
	Err       error // EventLost only
}

// AddrEvent is one RTM_NEWADDR/RTM_DELADDR notification (IPv4 and IPv6). A
// new address on a RoCE netdev means a new RoCE v2 GID.
type AddrEvent struct {
	Kind   EventKind
	Index  int          // ifindex of the netdev holding the address
	Name   string       // its name, looked up when the event arrives; "" if it is already gone
	Prefix netip.Prefix // address and prefix length; IPv4 as 4-byte addresses
	Scope  int          // RT_SCOPE_*: 0 universe, 253 link, 254 host
	Err    error        // EventLost only
}

// WatchOptions tunes WatchLinks and WatchAddrs.
type WatchOptions struct {
	// ReceiveBufferSize sets the subscription socket's SO_RCVBUF; 0 keeps
	// the kernel default. A burst larger than the buffer (hundreds of VFs
	// appearing at once) costs an EventLost and a re-read of the state.
	ReceiveBufferSize int
	// ThreadNamespace pins the subscription (and every re-subscription,
	// which may run on another OS thread) to the calling thread's network
	// namespace. Needed only where threads live in different namespaces
	// (tests on a locked thread); it makes netlink setns(), which needs
	// CAP_SYS_ADMIN, so a daemon living in one namespace leaves it off.
	ThreadNamespace bool
}

// Back-off between failed re-subscriptions. The first attempt after a lost
// subscription is immediate: falling behind is no reason to wait.
const (
	resubscribeFirst = 100 * time.Millisecond
	resubscribeMax   = 5 * time.Second
)

// ifiChangeAll is the ifi_change the kernel puts in the first RTM_NEWLINK
// of a netdev that appears: register_netdevice and rtnl_configure_link
// (links created over rtnetlink) and dev_change_net_namespace all notify
// with change = ~0U; later notifications carry the changed flags or 0.
const ifiChangeAll = 0xFFFFFFFF

// WatchLinks reports link changes in the calling thread's network namespace
// until ctx is done, then closes the channel. Subscribe before reading the
// current state, so that nothing falls between the two.
//
// When the subscription is lost (EventLost), the watcher subscribes again,
// re-reads every link and reports each right after the EventLost: EventAdded
// for a netdev it had not reported before, EventChanged with the current
// values for one it had, EventRemoved for one that is gone. A consumer
// waiting for a state therefore sees it whether or not its event was lost.
//
// The channel is closed only once every goroutine the watcher started has
// exited; log is not used after that. Whoever must not be outlived (a test)
// cancels ctx and reads until the channel is closed.
func WatchLinks(ctx context.Context, log *slog.Logger, opt WatchOptions) (<-chan LinkEvent, error) {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	ns, err := threadNamespace(opt)
	if err != nil {
		return nil, fmt.Errorf("watch links: current network namespace: %w", err)
	}
	h, err := handleIn(ns)
	if err != nil {
		closeNS(ns)
		return nil, fmt.Errorf("watch links: %w", err)
	}
	links := &linkSet{h: h, known: map[int]LinkEvent{}}
	w := &eventWatcher[LinkEvent]{
		what: "link",
		log:  log,
		subscribe: func() (*subscription, error) {
			return subscribe(ns, opt.ReceiveBufferSize, unix.RTNLGRP_LINK)
		},
		convert: func(m syscall.NetlinkMessage) (LinkEvent, bool) {
			ev, ok := linkEvent(m, log)
			if ok {
				links.seen(ev)
			}
			return ev, ok
		},
		resync: links.resync,
		lost:   func(err error) LinkEvent { return LinkEvent{Kind: EventLost, Err: err} },
		cleanup: func() {
			h.Close()
			closeNS(ns)
		},
	}
	out, err := w.start(ctx)
	if err != nil {
		return nil, fmt.Errorf("watch links: %w", err)
	}
	return out, nil
}

// WatchAddrs reports IPv4 and IPv6 address changes in the calling thread's
// network namespace until ctx is done, then closes the channel. After an
// EventLost it re-reads every address and reports the differences to what
// it had reported (an address has no attributes that could change while
// staying the same address). The channel closes as WatchLinks' does.
func WatchAddrs(ctx context.Context, log *slog.Logger, opt WatchOptions) (<-chan AddrEvent, error) {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	ns, err := threadNamespace(opt)
	if err != nil {
		return nil, fmt.Errorf("watch addresses: current network namespace: %w", err)
	}
	// h resolves ifindexes and re-reads addresses in the watched
	// namespace, whatever thread the watcher goroutine runs on.
	h, err := handleIn(ns)
	if err != nil {
		closeNS(ns)
		return nil, fmt.Errorf("watch addresses: %w", err)
	}
	addrs := &addrSet{h: h, log: log, known: map[addrKey]AddrEvent{}}
	w := &eventWatcher[AddrEvent]{
		what: "address",
		log:  log,
		subscribe: func() (*subscription, error) {
			return subscribe(ns, opt.ReceiveBufferSize, unix.RTNLGRP_IPV4_IFADDR, unix.RTNLGRP_IPV6_IFADDR)
		},
		convert: func(m syscall.NetlinkMessage) (AddrEvent, bool) {
			ev, ok := addrs.event(m)
			if ok {
				addrs.seen(ev)
			}
			return ev, ok
		},
		resync: addrs.resync,
		lost:   func(err error) AddrEvent { return AddrEvent{Kind: EventLost, Err: err} },
		cleanup: func() {
			h.Close()
			closeNS(ns)
		},
	}
	out, err := w.start(ctx)
	if err != nil {
		return nil, fmt.Errorf("watch addresses: %w", err)
	}
	return out, nil
}

// handleIn opens a route netlink handle in ns, or where the calling thread
// is when ns is nil.
func handleIn(ns *netns.NsHandle) (*netlink.Handle, error) {
	if ns != nil {
		return netlink.NewHandleAt(*ns, unix.NETLINK_ROUTE)
	}
	return netlink.NewHandle(unix.NETLINK_ROUTE)
}

// linkEvent converts an RTM_NEWLINK or RTM_DELLINK notification.
func linkEvent(m syscall.NetlinkMessage, log *slog.Logger) (LinkEvent, bool) {
	if m.Header.Type != unix.RTM_NEWLINK && m.Header.Type != unix.RTM_DELLINK {
		return LinkEvent{}, false
	}
	if len(m.Data) < unix.SizeofIfInfomsg {
		log.Warn("short link notification", "len", len(m.Data))
		return LinkEvent{}, false
	}
	hdr := unix.NlMsghdr(m.Header)
	l, err := netlink.LinkDeserialize(&hdr, m.Data)
	if err != nil {
		log.Warn("undecodable link notification", "err", err)
		return LinkEvent{}, false
	}
	kind := EventChanged
	switch {
	case m.Header.Type == unix.RTM_DELLINK:
		kind = EventRemoved
	case nl.DeserializeIfInfomsg(m.Data).Change == ifiChangeAll:
		kind = EventAdded
	}
	return linkState(kind, l), true
}

// linkState is l's state as an event of the given kind.
func linkState(kind EventKind, l netlink.Link) LinkEvent {
	a := l.Attrs()
	return LinkEvent{
		Kind:      kind,
		Name:      a.Name,
		Index:     a.Index,
		MTU:       a.MTU,
		OperState: operState(uint8(a.OperState)),
		AdminUp:   a.RawFlags&unix.IFF_UP != 0,
	}
}

// linkSet is what a link watcher has reported, by ifindex: the base a
// re-read is compared with. Only the watcher goroutine uses it.
type linkSet struct {
	h     *netlink.Handle
	known map[int]LinkEvent
}

func (s *linkSet) seen(ev LinkEvent) {
	if ev.Kind == EventRemoved {
		delete(s.known, ev.Index)
	} else {
		s.known[ev.Index] = ev
	}
}

// resync re-reads every link and returns the events that report the
// namespace's state from scratch (see WatchLinks), recording them.
func (s *linkSet) resync() ([]LinkEvent, error) {
	// An interrupted dump (ErrDumpInterrupted, links changed under it)
	// is an error too: the watcher then tries again.
	links, err := s.h.LinkList()
	if err != nil {
		return nil, err
	}
	var evs []LinkEvent
	present := make(map[int]bool, len(links))
	for _, l := range links {
		kind := EventChanged
		if _, ok := s.known[l.Attrs().Index]; !ok {
			kind = EventAdded
		}
		evs = append(evs, linkState(kind, l))
		present[l.Attrs().Index] = true
	}
	var gone []LinkEvent
	for idx, ev := range s.known {
		if !present[idx] {
			ev.Kind = EventRemoved
			gone = append(gone, ev)
		}
	}
	slices.SortFunc(gone, func(a, b LinkEvent) int { return cmp.Compare(a.Index, b.Index) })
	evs = append(evs, gone...)
	for _, ev := range evs {
		s.seen(ev)
	}
	return evs, nil
}

// addrKey identifies an address: the same prefix may sit on two netdevs.
type addrKey struct {
	index  int
	prefix netip.Prefix
}

// addrSet is what an address watcher has reported; see linkSet.
type addrSet struct {
	h     *netlink.Handle
	log   *slog.Logger
	known map[addrKey]AddrEvent
}

// event converts an RTM_NEWADDR or RTM_DELADDR notification.
func (s *addrSet) event(m syscall.NetlinkMessage) (AddrEvent, bool) {
	if m.Header.Type != unix.RTM_NEWADDR && m.Header.Type != unix.RTM_DELADDR {
		return AddrEvent{}, false
	}
	if len(m.Data) < unix.SizeofIfAddrmsg {
		s.log.Warn("short address notification", "len", len(m.Data))
		return AddrEvent{}, false
	}
	msg := nl.DeserializeIfAddrmsg(m.Data)
	attrs, err := nl.ParseRouteAttr(m.Data[unix.SizeofIfAddrmsg:])
	if err != nil {
		s.log.Warn("undecodable address notification", "err", err)
		return AddrEvent{}, false
	}
	// IFA_LOCAL is the address itself where both are present (on a
	// point-to-point link IFA_ADDRESS is the peer); IPv6 sends only
	// IFA_ADDRESS.
	var local, address []byte
	for _, a := range attrs {
		switch a.Attr.Type {
		case unix.IFA_LOCAL:
			local = a.Value
		case unix.IFA_ADDRESS:
			address = a.Value
		}
	}
	if local == nil {
		local = address
	}
	kind := EventRemoved
	if m.Header.Type == unix.RTM_NEWADDR {
		kind = EventAdded
	}
	return s.addrEvent(kind, int(msg.Index), local, int(msg.Prefixlen), int(msg.Scope))
}

func (s *addrSet) addrEvent(kind EventKind, index int, ipb []byte, ones, scope int) (AddrEvent, bool) {
	ip, ok := netip.AddrFromSlice(ipb)
	if !ok {
		s.log.Warn("address event without a valid address", "index", index, "ip", net.IP(ipb))
		return AddrEvent{}, false
	}
	ev := AddrEvent{Kind: kind, Index: index, Prefix: netip.PrefixFrom(ip.Unmap(), ones), Scope: scope}
	if l, err := s.h.LinkByIndex(index); err == nil {
		ev.Name = l.Attrs().Name
	} else {
		s.log.Debug("address event for a netdev that is gone", "index", index, "err", err)
	}
	return ev, true
}

func (s *addrSet) seen(ev AddrEvent) {
	k := addrKey{ev.Index, ev.Prefix}
	if ev.Kind == EventRemoved {
		delete(s.known, k)
	} else {
		s.known[k] = ev
	}
}

// resync re-reads every address and returns EventAdded for those not
// reported yet and EventRemoved for those gone, recording them.
func (s *addrSet) resync() ([]AddrEvent, error) {
	addrs, err := s.h.AddrList(nil, netlink.FAMILY_ALL)
	if err != nil {
		return nil, err
	}
	var evs []AddrEvent
	present := make(map[addrKey]bool, len(addrs))
	for _, a := range addrs {
		ones, _ := a.Mask.Size()
		ev, ok := s.addrEvent(EventAdded, a.LinkIndex, a.IP, ones, a.Scope)
		if !ok {
			continue
		}
		k := addrKey{ev.Index, ev.Prefix}
		present[k] = true
		if _, known := s.known[k]; !known {
			evs = append(evs, ev)
		}
	}
	var gone []AddrEvent
	for k, ev := range s.known {
		if !present[k] {
			ev.Kind = EventRemoved
			gone = append(gone, ev)
		}
	}
	slices.SortFunc(gone, func(a, b AddrEvent) int {
		if c := cmp.Compare(a.Index, b.Index); c != 0 {
			return c
		}
		return a.Prefix.Addr().Compare(b.Prefix.Addr())
	})
	evs = append(evs, gone...)
	for _, ev := range evs {
		s.seen(ev)
	}
	return evs, nil
}

// subscription is one netlink multicast socket and the goroutine reading
// it. err is written only by that goroutine, before it closes msgs, and read
// only after msgs is closed.
type subscription struct {
	sock *nl.NetlinkSocket
	msgs chan syscall.NetlinkMessage
	err  error
}

// subscribe opens a route netlink socket on the given multicast groups in
// ns (nil: where the calling thread is) and starts reading it. The reader
// is netlink's own loop rewritten so that stop can wait for it: the
// library's subscriptions leave a goroutine behind that closes the socket.
func subscribe(ns *netns.NsHandle, rcvbuf int, groups ...uint) (*subscription, error) {
	var sock *nl.NetlinkSocket
	var err error
	if ns != nil {
		sock, err = nl.SubscribeAt(*ns, netns.None(), unix.NETLINK_ROUTE, groups...)
	} else {
		sock, err = nl.Subscribe(unix.NETLINK_ROUTE, groups...)
	}
	if err != nil {
		return nil, fmt.Errorf("subscribe: %w", err)
	}
	if rcvbuf != 0 {
		if err := sock.SetReceiveBufferSize(rcvbuf, false); err != nil {
			sock.Close()
			return nil, fmt.Errorf("set receive buffer size: %w", err)
		}
	}
	s := &subscription{sock: sock, msgs: make(chan syscall.NetlinkMessage, 16)}
	go s.read()
	return s, nil
}

func (s *subscription) read() {
	defer close(s.msgs)
	for {
		msgs, from, err := s.sock.Receive()
		if err != nil {
			// ENOBUFS when the socket overflowed; "file already
			// closed" after stop.
			s.err = fmt.Errorf("receive: %w", err)
			return
		}
		if from.Pid != nl.PidKernel {
			continue
		}
		for _, m := range msgs {
			s.msgs <- m
		}
	}
}

// stop closes the socket, which wakes a reader blocked in Receive, and
// returns once the reader has exited. The reader may be blocked sending on
// msgs, so msgs is drained until the reader closes it.
func (s *subscription) stop() {
	s.sock.Close()
	for range s.msgs {
	}
}

// eventWatcher forwards one netlink subscription's notifications as events,
// and re-subscribes and re-reads the state when the subscription dies while
// ctx is still live. Everything but start runs on the watcher goroutine.
type eventWatcher[E any] struct {
	what      string
	log       *slog.Logger
	subscribe func() (*subscription, error)
	// convert turns a notification into an event, and records it as
	// reported; false skips the message.
	convert func(syscall.NetlinkMessage) (E, bool)
	// resync re-reads the state and returns the events that report it
	// from scratch, recording them as reported.
	resync  func() ([]E, error)
	lost    func(error) E
	cleanup func()
}

// start subscribes, records the current state as the base for later
// re-reads, and starts the watcher goroutine. On error everything is closed.
func (w *eventWatcher[E]) start(ctx context.Context) (<-chan E, error) {
	s, _, err := w.open()
	if err != nil {
		w.cleanup()
		return nil, err
	}
	out := make(chan E, 16)
	go w.run(ctx, s, out)
	return out, nil
}

// open subscribes and then re-reads the state, so that a change between
// the two is both in the re-read and among the notifications.
func (w *eventWatcher[E]) open() (*subscription, []E, error) {
	s, err := w.subscribe()
	if err != nil {
		return nil, nil, err
	}
	evs, err := w.resync()
	if err != nil {
		s.stop()
		return nil, nil, fmt.Errorf("read current %ss: %w", w.what, err)
	}
	return s, evs, nil
}

func (w *eventWatcher[E]) run(ctx context.Context, s *subscription, out chan<- E) {
	// The reader is joined and the logger done with before out closes.
	defer func() {
		if s != nil {
			s.stop()
		}
		w.cleanup()
		close(out)
	}()
	for {
		select {
		case <-ctx.Done():
			return
		case m, ok := <-s.msgs:
			if ok {
				if ev, ok := w.convert(m); ok && !sendEvent(ctx, out, ev) {
					return
				}
				continue
			}
			cause := s.err
			w.log.Warn("netlink subscription lost; resubscribing", "what", w.what, "err", cause)
			s.stop() // closes the socket; the reader is gone already
			var evs []E
			if s, evs = w.reopen(ctx); s == nil {
				return
			}
			// Sent only now, so that whatever the consumer re-reads
			// is already covered by the new subscription.
			if !sendEvent(ctx, out, w.lost(cause)) {
				return
			}
			for _, ev := range evs {
				if !sendEvent(ctx, out, ev) {
					return
				}
			}
		}
	}
}

// reopen subscribes again and re-reads the state, at once and then with
// back-off; nil when ctx ends first.
func (w *eventWatcher[E]) reopen(ctx context.Context) (*subscription, []E) {
	var delay time.Duration
	for {
		if delay > 0 {
			t := time.NewTimer(delay)
			select {
			case <-ctx.Done():
				t.Stop()
				return nil, nil
			case <-t.C:
			}
		} else if ctx.Err() != nil {
			return nil, nil
		}
		s, evs, err := w.open()
		if err == nil {
			return s, evs
		}
		delay = min(max(2*delay, resubscribeFirst), resubscribeMax)
		w.log.Warn("netlink resubscribe failed", "what", w.what, "err", err, "retry_in", delay)
	}
}

func sendEvent[E any](ctx context.Context, out chan<- E, ev E) bool {
	select {
	case out <- ev:
		return true
	case <-ctx.Done():
		return false
	}
}

// threadNamespace is the calling thread's namespace when opt pins it, nil
// otherwise (subscribe where each thread is, without setns).
func threadNamespace(opt WatchOptions) (*netns.NsHandle, error) {
	if !opt.ThreadNamespace {
		return nil, nil
	}
	cur, err := netns.Get()
	if err != nil {
		return nil, err
	}
	return &cur, nil
}

func closeNS(ns *netns.NsHandle) {
	if ns != nil {
		ns.Close()
	}
}
