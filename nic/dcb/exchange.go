package dcb

import (
	"encoding/binary"
	"fmt"
	"syscall"

	"golang.org/x/sys/unix"
)

// One request and its reply on a netlink socket. The kernel answers a
// dcbnl request with one message of the request's type (RTM_GETDCB or
// RTM_SETDCB) carrying struct dcbmsg and attributes, and, when the request
// asked for NLM_F_ACK (every SET does), an NLMSG_ERROR with errno 0 after
// it. A request the kernel refuses (bad attribute, no permission, no such
// device, no dcbnl_ops) gets a single NLMSG_ERROR with a negative errno and,
// on a socket with NETLINK_EXT_ACK, the reason as NLMSGERR_ATTR_MSG.

// kernelPort is the netlink port ID of the kernel, the sender of every
// reply.
const kernelPort = 0

// roundTrip sends r on a socket from c.acquire and returns the payload of
// its reply: struct dcbmsg and attributes, without the nlmsghdr. It reads
// until the exchange is complete, the trailing ACK of a SET included, so
// that a shared socket is left with nothing of this request unread; replies
// to other requests (stale ones of an earlier request that gave up, or
// another user's) are told apart by sequence number and port ID and
// skipped.
func (c *Client) roundTrip(r *request) ([]byte, error) {
	sock, err := c.acquire()
	if err != nil {
		return nil, err
	}
	defer sock.release()
	port, err := sock.portID()
	if err != nil {
		return nil, fmt.Errorf("netlink port ID: %w", err)
	}
	x := exchange{
		seq:     sock.nextSeq(),
		port:    port,
		resType: r.resType,
		wantAck: r.msg.Flags&unix.NLM_F_ACK != 0,
	}
	if err := sock.send(r.bytes(x.seq)); err != nil {
		return nil, fmt.Errorf("send: %w", err)
	}
	for {
		dgram, from, err := sock.receive()
		if err != nil {
			return nil, fmt.Errorf("no reply to seq %d: %w", x.seq, err)
		}
		if from != kernelPort {
			continue // a datagram another process sent to our port
		}
		done, err := x.take(dgram)
		if err != nil {
			return nil, err
		}
		if done {
			return x.payload, nil
		}
	}
}

// exchange follows the replies to one request.
type exchange struct {
	seq     uint32 // the request's sequence number
	port    uint32 // our socket's port ID, nlmsg_pid of replies to us
	resType uint16 // nlmsg_type of the reply
	wantAck bool   // the request set NLM_F_ACK

	payload []byte // payload of the first reply message
	replied bool   // the reply is complete: one message, or parts up to NLMSG_DONE
}

// take reads the messages of one datagram. It returns done once the
// reply, and the ACK if one was asked for, have come; an NLMSG_ERROR with a
// non-zero errno ends the exchange with that error.
//
// dcbnl answers with a single message. Should a reply come in parts
// (NLM_F_MULTI), the first part is the reply and the others are read up to
// NLMSG_DONE and dropped, as the client did when nl's Execute collected
// them.
func (x *exchange) take(dgram []byte) (done bool, err error) {
	for len(dgram) > 0 {
		var h unix.NlMsghdr
		var data []byte
		h, data, dgram, err = nextMessage(dgram)
		if err != nil {
			return false, err
		}
		if h.Seq != x.seq || h.Pid != x.port {
			continue // a reply to another request, or to another socket
		}
		switch h.Type {
		case unix.NLMSG_ERROR:
			if err := nlmsgErr(h, data); err != nil {
				return true, err
			}
			if !x.replied {
				return true, fmt.Errorf("%w: the kernel acknowledged without a reply", ErrMalformed)
			}
			return true, nil
		case unix.NLMSG_DONE:
			// The end of a multipart reply; its payload, when there is one,
			// is an int error as in NLMSG_ERROR.
			if len(data) >= 4 {
				if errno := int32(binary.NativeEndian.Uint32(data)); errno < 0 {
					return true, syscall.Errno(-errno)
				}
			}
			if x.payload == nil {
				return true, fmt.Errorf("%w: a multipart reply without parts", ErrMalformed)
			}
			x.replied = true
		case x.resType:
			if x.payload == nil {
				x.payload = data
			}
			x.replied = h.Flags&unix.NLM_F_MULTI == 0
		default:
			continue
		}
		if x.replied && !x.wantAck {
			return true, nil
		}
	}
	return false, nil
}

// nextMessage splits the first netlink message off a datagram. A message
// whose nlmsg_len runs past the datagram, or a datagram too short for a
// header, is ErrMalformed.
func nextMessage(b []byte) (h unix.NlMsghdr, data, rest []byte, err error) {
	if len(b) < unix.SizeofNlMsghdr {
		return h, nil, nil, fmt.Errorf("%w: %d bytes left in a datagram, shorter than struct nlmsghdr", ErrMalformed, len(b))
	}
	h = unix.NlMsghdr{
		Len:   binary.NativeEndian.Uint32(b[0:4]),
		Type:  binary.NativeEndian.Uint16(b[4:6]),
		Flags: binary.NativeEndian.Uint16(b[6:8]),
		Seq:   binary.NativeEndian.Uint32(b[8:12]),
		Pid:   binary.NativeEndian.Uint32(b[12:16]),
	}
	if h.Len < unix.SizeofNlMsghdr || int(h.Len) > len(b) {
		return h, nil, nil, fmt.Errorf("%w: nlmsg_len %d with %d bytes left in the datagram", ErrMalformed, h.Len, len(b))
	}
	next := min(nlmsgAlign(int(h.Len)), len(b))
	return h, b[unix.SizeofNlMsghdr:h.Len:h.Len], b[next:], nil
}

func nlmsgAlign(n int) int { return (n + unix.NLMSG_ALIGNTO - 1) &^ (unix.NLMSG_ALIGNTO - 1) }

// nlmsgErr decodes the payload of an NLMSG_ERROR, struct nlmsgerr {int
// error; struct nlmsghdr msg;} followed, with NLM_F_ACK_TLVS, by extended
// ACK attributes. It returns nil for an ACK (error 0), the syscall.Errno
// for a refusal, with the kernel's NLMSGERR_ATTR_MSG after it when there is
// one. The errno is the answer; extended ACK attributes that cannot be read
// leave it bare rather than hide it.
func nlmsgErr(h unix.NlMsghdr, data []byte) error {
	if len(data) < 4 {
		return fmt.Errorf("%w: NLMSG_ERROR of %d bytes", ErrMalformed, len(data))
	}
	code := int32(binary.NativeEndian.Uint32(data))
	switch {
	case code == 0:
		return nil
	case code > 0:
		return fmt.Errorf("%w: NLMSG_ERROR with positive error %d", ErrMalformed, code)
	}
	errno := syscall.Errno(-code)
	if h.Flags&unix.NLM_F_ACK_TLVS == 0 {
		return errno
	}
	// The echoed request: its header alone when NLM_F_CAPPED, else all of
	// it.
	echo := data[4:]
	if len(echo) < unix.SizeofNlMsghdr {
		return errno
	}
	skip := unix.SizeofNlMsghdr
	if h.Flags&unix.NLM_F_CAPPED == 0 {
		skip = nlmsgAlign(int(binary.NativeEndian.Uint32(echo)))
	}
	if skip < unix.SizeofNlMsghdr || skip > len(echo) {
		return errno
	}
	s := attrScanner{b: echo[skip:]}
	for s.next() {
		if s.typ == unix.NLMSGERR_ATTR_MSG {
			if msg := unix.ByteSliceToString(s.data); msg != "" {
				return fmt.Errorf("%w: %s", errno, msg)
			}
		}
	}
	return errno
}
