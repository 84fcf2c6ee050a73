package lldp

import (
	"errors"
	"fmt"
	"net"
	"os"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"
)

// Listener receives the LLDP frames arriving on one netdev through an
// AF_PACKET socket. Every packet socket gets its own copy of a frame, so
// it coexists with lldpd or lldpad. Idle, it costs nothing: the socket's
// classic BPF filter drops everything but incoming LLDP in the kernel, and
// Read waits in the runtime's poller, not in a loop.
type Listener struct {
	Netdev string
	f      *os.File
	buf    []byte
	// closed is set by Close before the descriptor goes: the poller's
	// error for a closed file ("use of closed file") is not os.ErrClosed,
	// so Read answers from this.
	closed atomic.Bool
}

// Received is one frame heard: decoded, or why it could not be.
type Received struct {
	At    time.Time
	Frame *Frame // nil when Err is set
	Err   error  // a *DecodeError for a malformed frame
}

// filter is "accept only incoming frames of EtherType 0x88cc":
//
//	ld  #pkttype              ; ancillary: SKF_AD_OFF + SKF_AD_PKTTYPE
//	jeq #PACKET_OUTGOING, drop ; our own LLDP (lldpd's) going out
//	ldh [12]
//	jne #0x88cc, drop
//	ret #0xffff
//	drop: ret #0
var filter = []unix.SockFilter{
	{Code: unix.BPF_LD | unix.BPF_W | unix.BPF_ABS, K: skfAdOff + skfAdPkttype},
	{Code: unix.BPF_JMP | unix.BPF_JEQ | unix.BPF_K, Jt: 3, K: unix.PACKET_OUTGOING},
	{Code: unix.BPF_LD | unix.BPF_H | unix.BPF_ABS, K: 12},
	{Code: unix.BPF_JMP | unix.BPF_JEQ | unix.BPF_K, Jf: 1, K: EtherType},
	{Code: unix.BPF_RET | unix.BPF_K, K: 0xffff},
	{Code: unix.BPF_RET | unix.BPF_K, K: 0},
}

// Ancillary loads of linux/filter.h (not in x/sys).
const (
	skfAdOff     = 0xfffff000 // SKF_AD_OFF, -0x1000
	skfAdPkttype = 4          // SKF_AD_PKTTYPE
)

func htons(v uint16) uint16 { return v<<8 | v>>8 }

// Listen opens a listener on netdev in the calling thread's network
// namespace: a packet socket with the filter attached before it is bound
// (so that no frame of another type or interface is ever queued), bound
// to netdev and ETH_P_LLDP, and a member of 01:80:C2:00:00:0E so that a
// NIC filtering multicast lets the frames in.
func Listen(netdev string) (*Listener, error) {
	ifi, err := net.InterfaceByName(netdev)
	if err != nil {
		return nil, fmt.Errorf("lldp: %s: %w", netdev, err)
	}
	fd, err := unix.Socket(unix.AF_PACKET, unix.SOCK_RAW|unix.SOCK_NONBLOCK|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("lldp: packet socket: %w", err)
	}
	fail := func(what string, err error) (*Listener, error) {
		unix.Close(fd)
		return nil, fmt.Errorf("lldp: %s on %s: %w", what, netdev, err)
	}
	prog := unix.SockFprog{Len: uint16(len(filter)), Filter: &filter[0]}
	if err := unix.SetsockoptSockFprog(fd, unix.SOL_SOCKET, unix.SO_ATTACH_FILTER, &prog); err != nil {
		return fail("attach BPF filter", err)
	}
	if err := unix.Bind(fd, &unix.SockaddrLinklayer{Protocol: htons(unix.ETH_P_LLDP), Ifindex: ifi.Index}); err != nil {
		return fail("bind", err)
	}
	mreq := unix.PacketMreq{Ifindex: int32(ifi.Index), Type: unix.PACKET_MR_MULTICAST, Alen: 6}
	copy(mreq.Address[:], MulticastNearestBridge)
	if err := unix.SetsockoptPacketMreq(fd, unix.SOL_PACKET, unix.PACKET_ADD_MEMBERSHIP, &mreq); err != nil {
		return fail("join 01:80:c2:00:00:0e", err)
	}
	// A non-blocking descriptor makes the File pollable: Read then waits
	// in epoll with a deadline, and Close wakes it.
	return &Listener{Netdev: netdev, f: os.NewFile(uintptr(fd), "lldp:"+netdev), buf: make([]byte, 4096)}, nil
}

// Read waits for the next LLDP frame until deadline (zero: no deadline).
// It returns os.ErrDeadlineExceeded when none came, os.ErrClosed after
// Close; a malformed frame is not an error of Read but a Received with Err.
func (l *Listener) Read(deadline time.Time) (Received, error) {
	r, err := l.read(deadline)
	if err != nil && l.closed.Load() {
		return Received{}, fmt.Errorf("lldp: recv on %s: %w", l.Netdev, os.ErrClosed)
	}
	return r, err
}

func (l *Listener) read(deadline time.Time) (Received, error) {
	if err := l.f.SetReadDeadline(deadline); err != nil {
		return Received{}, err
	}
	rc, err := l.f.SyscallConn()
	if err != nil {
		return Received{}, err
	}
	var n int
	var rerr error
	err = rc.Read(func(fd uintptr) bool {
		// MSG_TRUNC: n is the frame's real length even when it
		// does not fit the buffer, so an oversized frame is seen.
		n, _, rerr = unix.Recvfrom(int(fd), l.buf, unix.MSG_TRUNC)
		return !errors.Is(rerr, unix.EAGAIN)
	})
	if err != nil {
		return Received{}, err
	}
	if rerr != nil {
		return Received{}, fmt.Errorf("lldp: recv on %s: %w", l.Netdev, rerr)
	}
	r := Received{At: time.Now()}
	if n > len(l.buf) {
		r.Err = &DecodeError{Reason: fmt.Sprintf("oversized: %d-byte frame", n)}
		return r, nil
	}
	r.Frame, r.Err = DecodeFrame(l.buf[:n])
	return r, nil
}

// Close closes the socket; a Read in progress, and every later one,
// returns os.ErrClosed. It may be called more than once and from another
// goroutine than the reader's.
func (l *Listener) Close() error {
	l.closed.Store(true)
	return l.f.Close()
}
