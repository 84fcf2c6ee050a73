package dcb

import (
	"fmt"
	"sync/atomic"
	"time"

	"github.com/vishvananda/netlink/nl"
	"github.com/vishvananda/netns"
	"golang.org/x/sys/unix"
)

// socket is a NETLINK_ROUTE socket lent to the client for one request. It
// moves bytes only: the client writes its request, then reads datagrams
// until the reply is complete, and does all the framing, sequence matching
// and error decoding itself (exchange.go). The tests put a fake kernel
// behind this interface, under the real client, the way mdlayher/netlink's
// nltest does; nl.NetlinkRequest.Execute, which the client used before,
// reads a concrete *nl.NetlinkSocket and cannot run under a fake.
type socket interface {
	// nextSeq numbers the request about to be sent, never with 0 (the
	// sequence number of multicast notifications).
	nextSeq() uint32
	// portID is the socket's netlink port ID, which the kernel puts in
	// nlmsg_pid of its replies.
	portID() (uint32, error)
	// send writes one request message.
	send(msg []byte) error
	// receive returns the next datagram and its sender's port ID (0 for the
	// kernel). When nothing arrives within the socket's receive timeout it
	// fails with an error wrapping EAGAIN, as SO_RCVTIMEO would.
	receive() (dgram []byte, from uint32, err error)
	// release ends the request: it closes a socket opened for it and
	// unlocks a shared one.
	release()
}

// nlSocket is a socket of the nl package, opened for one request
// (NewClient) or shared (NewClientOn: Live's rtnetlink socket, whose other
// requests go through nl.NetlinkRequest.Execute). The client uses only its
// descriptor, timeouts and lock, and shares it on nl's terms: the lock is
// held for the whole exchange and requests are numbered from the handle's
// Seq, so the two kinds of users never read each other's replies as their
// own.
type nlSocket struct {
	sh     *nl.SocketHandle
	shared bool
}

// openSocket opens a socket in the calling thread's network namespace for
// one request, with nl's default timeouts (as Execute had) and extended ACK
// switched on so that the kernel says why it refused.
func openSocket() (socket, error) {
	s, err := nl.GetNetlinkSocketAt(netns.None(), netns.None(), unix.NETLINK_ROUTE)
	if err != nil {
		return nil, fmt.Errorf("open rtnetlink socket: %w", err)
	}
	tv := nl.SocketTimeoutTv
	_ = s.SetSendTimeout(&tv)    // only stores the value
	_ = s.SetReceiveTimeout(&tv) // only stores the value
	// Best effort: without it the error is the bare errno.
	_ = s.SetExtAck(true)
	return &nlSocket{sh: &nl.SocketHandle{Socket: s}}, nil
}

// lockSocket lends the shared socket sh to one request.
func lockSocket(sh *nl.SocketHandle) socket {
	sh.Socket.Lock()
	return &nlSocket{sh: sh, shared: true}
}

func (s *nlSocket) nextSeq() uint32 {
	for {
		if seq := atomic.AddUint32(&s.sh.Seq, 1); seq != 0 {
			return seq
		}
	}
}

func (s *nlSocket) portID() (uint32, error) { return s.sh.Socket.GetPid() }

func (s *nlSocket) send(msg []byte) error {
	// Netlink delivers a request to the kernel synchronously, so a
	// non-blocking send does not return EAGAIN.
	for {
		err := unix.Sendto(s.sh.Socket.GetFd(), msg, 0, &unix.SockaddrNetlink{Family: unix.AF_NETLINK})
		if err != unix.EINTR {
			return err
		}
	}
}

// receive reads one datagram from the non-blocking descriptor nl opened:
// it learns the datagram's size with MSG_PEEK|MSG_TRUNC, so no reply is
// ever cut short, and waits with poll(2) up to the socket's receive timeout.
func (s *nlSocket) receive() ([]byte, uint32, error) {
	fd := s.sh.Socket.GetFd()
	_, timeout := s.sh.Socket.GetTimeouts()
	var deadline time.Time
	if timeout > 0 {
		deadline = time.Now().Add(timeout)
	}
	for {
		n, _, err := unix.Recvfrom(fd, nil, unix.MSG_PEEK|unix.MSG_TRUNC|unix.MSG_DONTWAIT)
		switch err {
		case nil:
			b := make([]byte, n)
			n, from, err := unix.Recvfrom(fd, b, unix.MSG_DONTWAIT)
			if err != nil {
				return nil, 0, err
			}
			sa, ok := from.(*unix.SockaddrNetlink)
			if !ok {
				return nil, 0, fmt.Errorf("datagram from a %T", from)
			}
			return b[:n], sa.Pid, nil
		case unix.EINTR:
			continue
		case unix.EAGAIN:
			if err := waitReadable(fd, deadline, timeout); err != nil {
				return nil, 0, err
			}
		default:
			return nil, 0, err
		}
	}
}

func (s *nlSocket) release() {
	if s.shared {
		s.sh.Socket.Unlock()
		return
	}
	s.sh.Close()
}

// waitReadable waits until fd has a datagram (or an error) to read, or the
// deadline passes; a zero deadline waits for ever.
func waitReadable(fd int, deadline time.Time, timeout time.Duration) error {
	for {
		ms := -1
		if !deadline.IsZero() {
			left := time.Until(deadline)
			if left <= 0 {
				return fmt.Errorf("nothing received in %v: %w", timeout, unix.EAGAIN)
			}
			ms = int((left + time.Millisecond - 1) / time.Millisecond)
		}
		n, err := unix.Poll([]unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}, ms)
		switch {
		case err == unix.EINTR:
		case err != nil:
			return err
		case n > 0:
			return nil
		}
	}
}
