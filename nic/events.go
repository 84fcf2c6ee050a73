package nic

import (
	"context"
	"fmt"
	"log/slog"
	"net/netip"
	"time"

	"github.com/vishvananda/netlink"
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
	// between are missing: re-read everything. Err says why.
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
	// appearing at once) costs an EventLost and a re-read.
	ReceiveBufferSize int
	// ThreadNamespace pins the subscription (and every re-subscription,
	// which may run on another OS thread) to the calling thread's network
	// namespace. Needed only where threads live in different namespaces
	// (tests on a locked thread); it makes netlink setns(), which needs
	// CAP_SYS_ADMIN, so a daemon living in one namespace leaves it off.
	ThreadNamespace bool
}

// Resubscription back-off after a failed subscription.
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
func WatchLinks(ctx context.Context, log *slog.Logger, opt WatchOptions) (<-chan LinkEvent, error) {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	ns, err := threadNamespace(opt)
	if err != nil {
		return nil, fmt.Errorf("watch links: current network namespace: %w", err)
	}
	w := &eventWatcher[netlink.LinkUpdate, LinkEvent]{
		what: "link",
		log:  log,
		subscribe: func(ch chan netlink.LinkUpdate, done chan struct{}, errf func(error)) error {
			return netlink.LinkSubscribeWithOptions(ch, done, netlink.LinkSubscribeOptions{
				Namespace:         ns,
				ErrorCallback:     errf,
				ReceiveBufferSize: opt.ReceiveBufferSize,
			})
		},
		convert: func(u netlink.LinkUpdate) (LinkEvent, bool) { return linkEvent(u), true },
		lost:    func(err error) LinkEvent { return LinkEvent{Kind: EventLost, Err: err} },
		cleanup: func() { closeNS(ns) },
	}
	out, err := w.start(ctx)
	if err != nil {
		closeNS(ns)
		return nil, fmt.Errorf("watch links: %w", err)
	}
	return out, nil
}

// WatchAddrs reports IPv4 and IPv6 address changes in the calling thread's
// network namespace until ctx is done, then closes the channel.
func WatchAddrs(ctx context.Context, log *slog.Logger, opt WatchOptions) (<-chan AddrEvent, error) {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	ns, err := threadNamespace(opt)
	if err != nil {
		return nil, fmt.Errorf("watch addresses: current network namespace: %w", err)
	}
	// names resolves ifindexes in the watched namespace, whatever thread
	// the watcher goroutine runs on.
	var names *netlink.Handle
	if ns != nil {
		names, err = netlink.NewHandleAt(*ns, unix.NETLINK_ROUTE)
	} else {
		names, err = netlink.NewHandle(unix.NETLINK_ROUTE)
	}
	if err != nil {
		closeNS(ns)
		return nil, fmt.Errorf("watch addresses: %w", err)
	}
	w := &eventWatcher[netlink.AddrUpdate, AddrEvent]{
		what: "address",
		log:  log,
		subscribe: func(ch chan netlink.AddrUpdate, done chan struct{}, errf func(error)) error {
			return netlink.AddrSubscribeWithOptions(ch, done, netlink.AddrSubscribeOptions{
				Namespace:         ns,
				ErrorCallback:     errf,
				ReceiveBufferSize: opt.ReceiveBufferSize,
			})
		},
		convert: func(u netlink.AddrUpdate) (AddrEvent, bool) { return addrEvent(u, names, log) },
		lost:    func(err error) AddrEvent { return AddrEvent{Kind: EventLost, Err: err} },
		cleanup: func() {
			names.Close()
			closeNS(ns)
		},
	}
	out, err := w.start(ctx)
	if err != nil {
		names.Close()
		closeNS(ns)
		return nil, fmt.Errorf("watch addresses: %w", err)
	}
	return out, nil
}

func linkEvent(u netlink.LinkUpdate) LinkEvent {
	a := u.Link.Attrs()
	ev := LinkEvent{
		Kind:      EventChanged,
		Name:      a.Name,
		Index:     int(u.IfInfomsg.Index),
		MTU:       a.MTU,
		OperState: operState(uint8(a.OperState)),
		AdminUp:   u.IfInfomsg.Flags&unix.IFF_UP != 0,
	}
	switch {
	case u.Header.Type == unix.RTM_DELLINK:
		ev.Kind = EventRemoved
	case u.IfInfomsg.Change == ifiChangeAll:
		ev.Kind = EventAdded
	}
	return ev
}

func addrEvent(u netlink.AddrUpdate, names *netlink.Handle, log *slog.Logger) (AddrEvent, bool) {
	ip, ok := netip.AddrFromSlice(u.LinkAddress.IP)
	if !ok {
		log.Warn("address event without a valid address", "index", u.LinkIndex, "ip", u.LinkAddress.IP)
		return AddrEvent{}, false
	}
	ones, _ := u.LinkAddress.Mask.Size()
	ev := AddrEvent{
		Kind:   EventRemoved,
		Index:  u.LinkIndex,
		Prefix: netip.PrefixFrom(ip.Unmap(), ones),
		Scope:  u.Scope,
	}
	if u.NewAddr {
		ev.Kind = EventAdded
	}
	if l, err := names.LinkByIndex(u.LinkIndex); err == nil {
		ev.Name = l.Attrs().Name
	} else {
		log.Debug("address event for a netdev that is gone", "index", u.LinkIndex, "err", err)
	}
	return ev, true
}

// eventWatcher forwards one netlink subscription's updates as events, and
// re-subscribes when the subscription dies while ctx is still live.
type eventWatcher[U, E any] struct {
	what string
	log  *slog.Logger
	// subscribe starts netlink's receive goroutine on ch until done is
	// closed, reporting its errors to errf.
	subscribe func(ch chan U, done chan struct{}, errf func(error)) error
	convert   func(U) (E, bool)
	lost      func(error) E
	cleanup   func()
}

// subscription is one live netlink subscription. err is written only by netlink's receive
// goroutine, before it closes ch, and read only after ch is closed.
type subscription[U any] struct {
	ch   <-chan U
	done chan struct{}
	err  error
}

func (w *eventWatcher[U, E]) open() (*subscription[U], error) {
	ch, done := make(chan U, 16), make(chan struct{})
	s := &subscription[U]{ch: ch, done: done}
	err := w.subscribe(ch, done, func(err error) {
		w.log.Debug("netlink subscription error", "what", w.what, "err", err)
		s.err = err
	})
	if err != nil {
		close(done)
		return nil, err
	}
	return s, nil
}

// stop ends a subscription. netlink's receive goroutine may be blocked
// sending on ch, so ch is drained until that goroutine closes it.
func (s *subscription[U]) stop() {
	close(s.done)
	for range s.ch {
	}
}

func (w *eventWatcher[U, E]) start(ctx context.Context) (<-chan E, error) {
	s, err := w.open()
	if err != nil {
		return nil, err
	}
	out := make(chan E, 16)
	go w.run(ctx, s, out)
	return out, nil
}

func (w *eventWatcher[U, E]) run(ctx context.Context, s *subscription[U], out chan<- E) {
	defer close(out)
	defer w.cleanup()
	for {
		select {
		case <-ctx.Done():
			s.stop()
			return
		case u, ok := <-s.ch:
			if !ok {
				cause := s.err
				if cause == nil {
					cause = fmt.Errorf("%s subscription closed", w.what)
				}
				w.log.Warn("netlink subscription lost; resubscribing", "what", w.what, "err", cause)
				if s = w.reopen(ctx); s == nil {
					return
				}
				// Sent only now, so that whatever the consumer re-reads
				// is already covered by the new subscription.
				if !sendEvent(ctx, out, w.lost(cause)) {
					s.stop()
					return
				}
				continue
			}
			ev, ok := w.convert(u)
			if !ok {
				continue
			}
			if !sendEvent(ctx, out, ev) {
				s.stop()
				return
			}
		}
	}
}

// reopen subscribes again with back-off; nil when ctx ends first.
func (w *eventWatcher[U, E]) reopen(ctx context.Context) *subscription[U] {
	delay := resubscribeFirst
	for {
		t := time.NewTimer(delay)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil
		case <-t.C:
		}
		s, err := w.open()
		if err == nil {
			return s
		}
		w.log.Warn("netlink resubscribe failed", "what", w.what, "err", err, "retry_in", delay)
		delay = min(2*delay, resubscribeMax)
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
