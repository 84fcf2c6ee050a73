package dcb

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"syscall"

	"golang.org/x/sys/unix"
)

// The kernel faked at the socket, under the real Client, in the manner of
// mdlayher/netlink's nltest: kernel checks the bytes of each request and
// returns the datagrams the kernel would answer with, which the client then
// reads through its own receive loop (exchange.go).

// fakePort is the port ID of the fake socket, nlmsg_pid of replies to it.
const fakePort = 0x4242

type fakeSocket struct {
	// shared models NewClientOn: one socket whose sequence numbers and
	// unread datagrams carry over from request to request. Otherwise every
	// request gets a fresh socket, as with NewClient: seq 1, nothing queued.
	shared bool
	// kernel answers a request with datagrams; an error fails the send.
	kernel func(req []byte) ([][]byte, error)

	seq   uint32     // the last sequence number handed out
	sent  [][]byte   // every request, as written
	queue []datagram // datagrams not yet read
	held  bool       // lent to a request and not released
	lent  int        // requests that acquired the socket
}

type datagram struct {
	from uint32 // sender's port ID: 0 is the kernel
	b    []byte
}

func (f *fakeSocket) client() *Client { return &Client{acquire: f.acquire} }

func (f *fakeSocket) acquire() (socket, error) {
	if f.held {
		return nil, errors.New("fake socket lent twice without release")
	}
	f.held = true
	f.lent++
	if !f.shared {
		f.seq, f.queue = 0, nil
	}
	return f, nil
}

func (f *fakeSocket) nextSeq() uint32 { f.seq++; return f.seq }

func (f *fakeSocket) portID() (uint32, error) { return fakePort, nil }

func (f *fakeSocket) send(msg []byte) error {
	f.sent = append(f.sent, bytes.Clone(msg))
	if f.kernel == nil {
		return errors.New("fake kernel: no answer for this request")
	}
	dgrams, err := f.kernel(bytes.Clone(msg))
	if err != nil {
		return err
	}
	for _, d := range dgrams {
		f.queue = append(f.queue, datagram{from: kernelPort, b: d})
	}
	return nil
}

// receive fails at once where the real socket would wait for its timeout.
func (f *fakeSocket) receive() ([]byte, uint32, error) {
	if len(f.queue) == 0 {
		return nil, 0, fmt.Errorf("fake socket: nothing queued: %w", unix.EAGAIN)
	}
	d := f.queue[0]
	f.queue = f.queue[1:]
	return d.b, d.from, nil
}

func (f *fakeSocket) release() { f.held = false }

// Kernel side: netlink messages as the kernel frames them.

type reqHeader struct {
	typ, flags uint16
	seq, pid   uint32
}

func header(req []byte) reqHeader {
	return reqHeader{
		typ:   binary.NativeEndian.Uint16(req[4:6]),
		flags: binary.NativeEndian.Uint16(req[6:8]),
		seq:   binary.NativeEndian.Uint32(req[8:12]),
		pid:   binary.NativeEndian.Uint32(req[12:16]),
	}
}

// nlmsg frames payload as one netlink message, padded to 4 bytes.
func nlmsg(typ, flags uint16, seq, pid uint32, payload []byte) []byte {
	b := binary.NativeEndian.AppendUint32(nil, uint32(unix.SizeofNlMsghdr+len(payload)))
	b = binary.NativeEndian.AppendUint16(b, typ)
	b = binary.NativeEndian.AppendUint16(b, flags)
	b = binary.NativeEndian.AppendUint32(b, seq)
	b = binary.NativeEndian.AppendUint32(b, pid)
	b = append(b, payload...)
	for len(b)%4 != 0 {
		b = append(b, 0)
	}
	return b
}

// replyTo is dcb_doit's answer to req: a message of the request's type
// (RTM_GETDCB for GETs, RTM_SETDCB for SETs), the request's seq, addressed
// to the fake socket's port.
func replyTo(req []byte, flags uint16, payload []byte) []byte {
	h := header(req)
	return nlmsg(h.typ, flags, h.seq, fakePort, payload)
}

// ackTo is netlink_ack for a request that succeeded: NLMSG_ERROR with error
// 0 and the request's header alone (NLM_F_CAPPED).
func ackTo(req []byte) []byte {
	h := header(req)
	payload := append(le32(0), req[:unix.SizeofNlMsghdr]...)
	return nlmsg(unix.NLMSG_ERROR, unix.NLM_F_CAPPED, h.seq, fakePort, payload)
}

// errorTo is netlink_ack for a refused request on a socket without
// NETLINK_CAP_ACK: NLMSG_ERROR with -errno and the whole request echoed,
// then, if extack is not empty, NLM_F_ACK_TLVS with NLMSGERR_ATTR_MSG and
// NLMSGERR_ATTR_OFFS as the kernel puts them.
func errorTo(req []byte, errno syscall.Errno, extack string) []byte {
	h := header(req)
	payload := append(le32(uint32(-int32(errno))), req...)
	var flags uint16
	if extack != "" {
		flags = unix.NLM_F_ACK_TLVS
		payload = append(payload, nla(unix.NLMSGERR_ATTR_MSG, cstr(extack))...)
		payload = append(payload, nla(unix.NLMSGERR_ATTR_OFFS, le32(20))...)
	}
	return nlmsg(unix.NLMSG_ERROR, flags, h.seq, fakePort, payload)
}

// fakeKernel is dcbnl on a fresh socket per request: reply(i, req) gives the
// payload of the answer to the i-th request, or a syscall.Errno for an
// NLMSG_ERROR; the fake frames it, with the trailing ACK when the request
// asked for one. sent holds every request as written (seq 1 each, as on a
// fresh socket).
type fakeKernel struct {
	sent  [][]byte
	reply func(i int, req []byte) ([]byte, error)
}

func (f *fakeKernel) client() *Client {
	sock := &fakeSocket{kernel: func(req []byte) ([][]byte, error) {
		f.sent = append(f.sent, req)
		payload, err := f.reply(len(f.sent)-1, req)
		var errno syscall.Errno
		if errors.As(err, &errno) {
			return [][]byte{errorTo(req, errno, "")}, nil
		}
		if err != nil {
			return nil, err
		}
		return answer(req, payload), nil
	}}
	return sock.client()
}

// answer is the datagrams dcbnl sends for a request it accepts: the reply
// and, if the request asked for it, the ACK.
func answer(req []byte, payload []byte) [][]byte {
	out := [][]byte{replyTo(req, 0, payload)}
	if header(req).flags&unix.NLM_F_ACK != 0 {
		out = append(out, ackTo(req))
	}
	return out
}
