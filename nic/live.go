package nic

import (
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netlink/nl"
	"github.com/vishvananda/netns"
	"golang.org/x/sys/unix"

	"github.com/rocectl/rocectl/nic/dcb"
)

// Live is the Kernel of the running host: rtnetlink and devlink over netlink
// sockets, ethtool over SIOCETHTOOL ioctls, dcbnl through dcb.Client.
//
// Network namespace: every socket Live uses for rtnetlink, dcbnl, devlink
// and ethtool is opened by NewLive, so all its requests go to the namespace
// of the thread that called NewLive, whatever thread later uses the Live.
// (The kernel binds a socket to the namespace it was created in.) That is
// what lets apply read several ports at once from goroutines on other
// threads, even when the Live was made inside a test's namespace.
//
// A Live is safe for concurrent use.
type Live struct {
	log *slog.Logger

	// route carries RTM_GETLINK/RTM_SETLINK and, through dcb, the dcbnl
	// requests. It is an nl socket rather than a netlink.Handle because
	// LinkAttrs has no min/max MTU and the Handle's sockets cannot have
	// extended ACK switched on.
	route *nl.SocketHandle
	// genl is a Handle on NETLINK_GENERIC for devlink.
	genl *netlink.Handle
	// rdma is a NETLINK_RDMA socket for the RDMA device ports
	// (rdmanl.go), or nil with rdmaErr saying why there is none.
	rdma    *nl.SocketHandle
	rdmaErr error
	// ioctlFD is the datagram socket that carries the SIOCETHTOOL ioctls
	// (ethtool.go, tunable.go).
	ioctlFD int
	bufs    ioctlBufs

	dcb *dcb.Client
}

var _ Kernel = (*Live)(nil)

// netlinkTimeout bounds every netlink request. The kernel answers rtnetlink
// and devlink requests in microseconds; a devlink request on a firmware-bound
// parameter can take a few seconds.
const netlinkTimeout = 30 * time.Second

// NewLive opens the sockets Live needs in the calling thread's network
// namespace. log may be nil (discard).
func NewLive(log *slog.Logger) (*Live, error) {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	l := &Live{log: log, ioctlFD: -1}
	ok := false
	defer func() {
		if !ok {
			l.Close()
		}
	}()

	s, err := nl.GetNetlinkSocketAt(netns.None(), netns.None(), unix.NETLINK_ROUTE)
	if err != nil {
		return nil, fmt.Errorf("open rtnetlink socket: %w", err)
	}
	l.route = &nl.SocketHandle{Socket: s}
	tv := unix.NsecToTimeval(netlinkTimeout.Nanoseconds())
	if err := s.SetSendTimeout(&tv); err != nil {
		return nil, fmt.Errorf("rtnetlink socket: %w", err)
	}
	if err := s.SetReceiveTimeout(&tv); err != nil {
		return nil, fmt.Errorf("rtnetlink socket: %w", err)
	}
	// Extended ACK: the kernel then says why it refused, e.g. "mtu greater
	// than device maximum"; nl appends that text after the errno it wraps.
	if err := s.SetExtAck(true); err != nil {
		log.Debug("netlink extended ack unavailable", "err", err)
	}

	if l.genl, err = netlink.NewHandle(unix.NETLINK_GENERIC); err != nil {
		return nil, fmt.Errorf("open generic netlink socket: %w", err)
	}
	if err := l.genl.SetSocketTimeout(netlinkTimeout); err != nil {
		return nil, fmt.Errorf("generic netlink socket: %w", err)
	}

	l.rdma, l.rdmaErr = openRDMASocket(ibCoreLoaded())
	if l.rdmaErr != nil {
		log.Debug("no RDMA netlink: discovery reads sysfs", "reason", l.rdmaErr)
	}

	if l.ioctlFD, err = ioctlSocket(); err != nil {
		return nil, fmt.Errorf("open ethtool socket: %w", err)
	}

	l.dcb = dcb.NewClientOn(l.route)
	ok = true
	return l, nil
}

// ioctlSocket opens a datagram socket to carry SIOCETHTOOL, as ethtool(8)
// does: AF_INET, or AF_UNIX on a kernel without IPv4. Any socket works; the
// kernel only uses it to find the network namespace.
func ioctlSocket() (int, error) {
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err == nil {
		return fd, nil
	}
	fd, err2 := unix.Socket(unix.AF_UNIX, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err2 != nil {
		return -1, errors.Join(err, err2)
	}
	return fd, nil
}

// Close releases the sockets. The Live must not be used afterwards.
func (l *Live) Close() error {
	var errs []error
	if l.route != nil {
		l.route.Close()
		l.route = nil
	}
	if l.genl != nil {
		l.genl.Close()
		l.genl = nil
	}
	if l.rdma != nil {
		l.rdma.Close()
		l.rdma = nil
	}
	if l.ioctlFD >= 0 {
		if err := unix.Close(l.ioctlFD); err != nil {
			errs = append(errs, err)
		}
		l.ioctlFD = -1
	}
	l.bufs.free()
	return errors.Join(errs...)
}

// DCB returns the netdev's IEEE DCB state (dcbnl IEEE_GET), with the link
// partner's DCBX where the driver reports it (and, in firmware-run CEE, a
// CEE_GET for the CEE peer: dcb.Client.Get).
func (l *Live) DCB(ifname string) (*dcb.State, error) { return l.dcb.Get(ifname) }

// SetDCBX sets the DCBX mode bits (dcb.DCBX*).
func (l *Live) SetDCBX(ifname string, mode uint8) error { return l.dcb.SetDCBX(ifname, mode) }

// SetETS writes the ETS configuration.
func (l *Live) SetETS(ifname string, ets dcb.ETS) error { return l.dcb.SetETS(ifname, ets) }

// SetPFC writes the PFC configuration.
func (l *Live) SetPFC(ifname string, pfc dcb.PFC) error { return l.dcb.SetPFC(ifname, pfc) }

// SetBuffer writes the port buffer configuration.
func (l *Live) SetBuffer(ifname string, buf dcb.Buffer) error { return l.dcb.SetBuffer(ifname, buf) }

// AddApps adds APP table entries.
func (l *Live) AddApps(ifname string, apps []dcb.App) error { return l.dcb.AddApps(ifname, apps) }

// DelApps deletes APP table entries.
func (l *Live) DelApps(ifname string, apps []dcb.App) error { return l.dcb.DelApps(ifname, apps) }

// OpError is a kernel request on one device that failed. Err is the cause as
// the kernel gave it, normally a syscall.Errno (possibly annotated with the
// kernel's extended-ACK message), so errors.Is(err, syscall.EOPNOTSUPP)
// and friends work through it.
type OpError struct {
	Op  string // what was asked, e.g. "set mtu 9000", "ethtool get pause"
	Dev string // netdev name, or devlink "bus/name"
	Err error
}

func (e *OpError) Error() string { return e.Dev + ": " + e.Op + ": " + e.Err.Error() }
func (e *OpError) Unwrap() error { return e.Err }

func opErr(dev, op string, err error) error {
	if err == nil {
		return nil
	}
	return &OpError{Op: op, Dev: dev, Err: err}
}
