package dcb

import (
	"bytes"
	"encoding/binary"
	"errors"
	"slices"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"
)

// The client's receive loop against a fake kernel at the socket
// (fakesocket_test.go): what it writes, which replies it takes as its own,
// and what it makes of errors and broken replies.

// dcbnlAccepts is the payload a driver that accepts everything answers req
// with: the fixture state for IEEE_GET, HOST|VER_IEEE for GDCBX, status 0
// for SDCBX, IEEE_SET and IEEE_DEL, no peer for CEE_GET.
func dcbnlAccepts(req []byte) []byte {
	switch cmd := req[17]; cmd {
	case CmdIEEEGet:
		return fullGetReply(fixtureApps)
	case CmdGDCBX:
		return dcbPayload(CmdGDCBX, nla(AttrDCBX, u8(DCBXHost|DCBXVerIEEE)))
	case CmdSDCBX:
		return dcbPayload(CmdSDCBX, nla(AttrDCBX, u8(0)))
	case CmdCEEGet:
		// A driver without CEE peer ops: the CEE nest holds only its
		// local (here empty) APP table.
		return dcbPayload(CmdCEEGet, nla(AttrIfname, cstr("eth0")), nla(AttrCEE, nla(AttrCEEAppTable)))
	default:
		return dcbPayload(cmd, nla(AttrIEEE, u8(0)))
	}
}

func acceptAll(req []byte) ([][]byte, error) { return answer(req, dcbnlAccepts(req)), nil }

// assertDrained checks that the request gave the socket back and left
// nothing of its exchange unread.
func assertDrained(t *testing.T, f *fakeSocket) {
	t.Helper()
	if f.held {
		t.Errorf("socket not released")
	}
	if len(f.queue) != 0 {
		t.Errorf("%d datagrams left unread", len(f.queue))
	}
}

// Each public call writes the bytes of its vector (request_test.go), with
// the sequence number the socket hands out, and reads the whole answer, the
// ACK of a SET included.
func TestClientWritesTheRequestVectors(t *testing.T) {
	requireLittleEndian(t)
	for _, v := range slices.Concat(referenceVectors, derivedVectors) {
		t.Run(v.name, func(t *testing.T) {
			want := unhex(t, v.want)
			f := &fakeSocket{shared: true, seq: binary.NativeEndian.Uint32(want[8:12]) - 1, kernel: acceptAll}
			if err := v.send(f.client()); err != nil {
				t.Fatal(err)
			}
			if len(f.sent) != 1 || !bytes.Equal(f.sent[0], want) {
				t.Fatalf("wrote %x\nwant   %x", f.sent, want)
			}
			assertDrained(t, f)
		})
	}
}

// On a shared socket the client takes only messages from the kernel, with
// its own sequence number and port ID; everything else is read and dropped.
func TestClientSkipsRepliesToOtherRequests(t *testing.T) {
	requireLittleEndian(t)
	const seq = 5
	refuse := dcbPayload(CmdIEEESet, nla(AttrIEEE, u8(0xea))) // in-band -EINVAL
	earlier, _ := wire(seq - 1)(pfcSetRequest("eth0", PFC{}))
	f := &fakeSocket{shared: true, seq: seq - 1, kernel: acceptAll}
	f.queue = []datagram{
		// The reply and the ACK of an earlier request, still unread.
		{kernelPort, replyTo(earlier, 0, refuse)},
		{kernelPort, ackTo(earlier)},
		// Our sequence number, but for another socket's port; then a later
		// sequence number, in the same datagram.
		{kernelPort, append(nlmsg(unix.RTM_SETDCB, 0, seq, fakePort+1, refuse),
			nlmsg(unix.RTM_SETDCB, 0, seq+1, fakePort, refuse)...)},
		// A perfect reply, sent by another process rather than the kernel.
		{777, nlmsg(unix.RTM_SETDCB, 0, seq, fakePort, refuse)},
		// An NLMSG_ERROR of an earlier request.
		{kernelPort, errorTo(earlier, syscall.EPERM, "")},
	}
	c := f.client()
	if err := c.SetPFC("eth0", PFC{Enable: 1 << 3}); err != nil {
		t.Fatalf("took another request's reply: %v", err)
	}
	if got := header(f.sent[0]).seq; got != seq {
		t.Errorf("request seq %d, want %d", got, seq)
	}
	assertDrained(t, f)

	// The next request takes the next number.
	if _, err := c.Get("eth0"); err != nil || header(f.sent[1]).seq != seq+1 {
		t.Fatalf("next request: %v, seq %d", err, header(f.sent[1]).seq)
	}
	assertDrained(t, f)
}

// A SET whose ACK comes too late fails; the ACK, read by the next request
// on the shared socket, is skipped as stale.
func TestClientSkipsTheLateAckOfAFailedRequest(t *testing.T) {
	requireLittleEndian(t)
	var lateAck []byte
	f := &fakeSocket{shared: true, kernel: func(req []byte) ([][]byte, error) {
		out := answer(req, dcbnlAccepts(req))
		if header(req).seq == 1 {
			lateAck = out[1]
			return out[:1], nil
		}
		return out, nil
	}}
	c := f.client()
	err := c.SetPFC("eth0", PFC{Enable: 1 << 3})
	var e *Error
	if !errors.Is(err, syscall.EAGAIN) || !errors.As(err, &e) || e.Op != "IEEE_SET PFC" {
		t.Fatalf("SET without its ACK: %v", err)
	}
	if want := "dcbnl IEEE_SET PFC on eth0: no reply to seq 1: fake socket: nothing queued: resource temporarily unavailable"; err.Error() != want {
		t.Errorf("message %q, want %q", err, want)
	}

	f.queue = append(f.queue, datagram{kernelPort, lateAck})
	st, err := c.Get("eth0")
	if err != nil {
		t.Fatalf("GET after a stale ACK: %v", err)
	}
	if *st.PFC != fixturePFC {
		t.Errorf("PFC %+v", *st.PFC)
	}
	assertDrained(t, f)
}

// A reply in parts (NLM_F_MULTI) is read up to NLMSG_DONE, across
// datagrams; the first part is the reply.
func TestClientMultipartReply(t *testing.T) {
	requireLittleEndian(t)
	second := dcbPayload(CmdIEEEGet, nla(AttrIEEE, nla(AttrIEEEPFC, pfcBytes(PFC{Cap: 4}))))
	doneErr := int32(0)
	f := &fakeSocket{shared: true, kernel: func(req []byte) ([][]byte, error) {
		h := header(req)
		parts := append(replyTo(req, unix.NLM_F_MULTI, dcbnlAccepts(req)), replyTo(req, unix.NLM_F_MULTI, second)...)
		done := nlmsg(unix.NLMSG_DONE, unix.NLM_F_MULTI, h.seq, fakePort, le32(uint32(doneErr)))
		out := [][]byte{parts, done}
		if h.flags&unix.NLM_F_ACK != 0 {
			out = append(out, ackTo(req))
		}
		return out, nil
	}}
	c := f.client()
	st, err := c.Get("eth0")
	if err != nil {
		t.Fatal(err)
	}
	if *st.PFC != fixturePFC {
		t.Errorf("PFC %+v, want the first part's", *st.PFC)
	}
	assertDrained(t, f)

	// A SET's reply in parts, then its ACK.
	if err := c.SetPFC("eth0", PFC{}); err != nil {
		t.Fatal(err)
	}
	assertDrained(t, f)

	// NLMSG_DONE may carry an error, as at the end of a failed dump.
	doneErr = -int32(syscall.EBUSY)
	_, err = c.Get("eth0")
	var e *Error
	if !errors.Is(err, syscall.EBUSY) || !errors.As(err, &e) || e.Op != "IEEE_GET" {
		t.Fatalf("NLMSG_DONE with -EBUSY: %v", err)
	}
}

// NLMSG_ERROR is the kernel's errno, with its extended ACK message after it
// when the socket has NETLINK_EXT_ACK on.
func TestClientNLMSGErrorWithExtendedAck(t *testing.T) {
	requireLittleEndian(t)
	const reason = "Attribute failed policy validation"
	capped := func(req []byte, errno syscall.Errno, tlvs []byte) []byte {
		payload := slices.Concat(le32(uint32(-int32(errno))), req[:unix.SizeofNlMsghdr], tlvs)
		return nlmsg(unix.NLMSG_ERROR, unix.NLM_F_CAPPED|unix.NLM_F_ACK_TLVS, header(req).seq, fakePort, payload)
	}
	for _, tc := range []struct {
		name   string
		answer func(req []byte) []byte
		errno  syscall.Errno
		want   string
	}{
		{
			name:   "errno alone",
			answer: func(req []byte) []byte { return errorTo(req, syscall.EPERM, "") },
			errno:  syscall.EPERM,
			want:   "dcbnl IEEE_SET PFC on eth0: operation not permitted",
		},
		{
			name:   "extended ACK after the echoed request",
			answer: func(req []byte) []byte { return errorTo(req, syscall.EINVAL, reason) },
			errno:  syscall.EINVAL,
			want:   "dcbnl IEEE_SET PFC on eth0: invalid argument: " + reason,
		},
		{
			name: "extended ACK after the header alone (NETLINK_CAP_ACK)",
			answer: func(req []byte) []byte {
				return capped(req, syscall.EINVAL, slices.Concat(nla(unix.NLMSGERR_ATTR_OFFS, le32(20)), nla(unix.NLMSGERR_ATTR_MSG, cstr(reason))))
			},
			errno: syscall.EINVAL,
			want:  "dcbnl IEEE_SET PFC on eth0: invalid argument: " + reason,
		},
		{
			// The errno is the answer; attributes that run past the end do
			// not hide it.
			name: "unreadable extended ACK",
			answer: func(req []byte) []byte {
				return capped(req, syscall.ENODEV, []byte{0xff, 0x00, byte(unix.NLMSGERR_ATTR_MSG), 0, 'x'})
			},
			errno: syscall.ENODEV,
			want:  "dcbnl IEEE_SET PFC on eth0: no such device",
		},
		{
			name: "echoed request longer than the message",
			answer: func(req []byte) []byte {
				m := errorTo(req, syscall.EOPNOTSUPP, reason)
				binary.NativeEndian.PutUint32(m[20:24], 4096) // the echo's nlmsg_len
				return m
			},
			errno: syscall.EOPNOTSUPP,
			want:  "dcbnl IEEE_SET PFC on eth0: operation not supported",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := &fakeSocket{shared: true, kernel: func(req []byte) ([][]byte, error) {
				return [][]byte{tc.answer(req)}, nil
			}}
			err := f.client().SetPFC("eth0", PFC{})
			var e *Error
			if !errors.Is(err, tc.errno) || !errors.As(err, &e) || e.Op != "IEEE_SET PFC" {
				t.Fatalf("err %v, want %v", err, tc.errno)
			}
			if err.Error() != tc.want {
				t.Errorf("message %q, want %q", err, tc.want)
			}
			assertDrained(t, f)
		})
	}
}

// Replies that cannot be framed or make no sense are ErrMalformed.
func TestClientMalformedReplies(t *testing.T) {
	requireLittleEndian(t)
	for _, tc := range []struct {
		name   string
		answer func(req []byte) [][]byte
		want   string
	}{
		{
			name:   "datagram shorter than nlmsghdr",
			answer: func([]byte) [][]byte { return [][]byte{make([]byte, 10)} },
			want:   "10 bytes left in a datagram, shorter than struct nlmsghdr",
		},
		{
			name: "truncated reply",
			answer: func(req []byte) [][]byte {
				m := replyTo(req, 0, dcbnlAccepts(req)) // 28 bytes
				return [][]byte{m[:24]}
			},
			want: "nlmsg_len 28 with 24 bytes left in the datagram",
		},
		{
			name: "nlmsg_len below the header's size",
			answer: func(req []byte) [][]byte {
				m := replyTo(req, 0, dcbnlAccepts(req))
				binary.NativeEndian.PutUint32(m[0:4], 8)
				return [][]byte{m}
			},
			want: "nlmsg_len 8 with 28 bytes left in the datagram",
		},
		{
			name: "NLMSG_ERROR without its error",
			answer: func(req []byte) [][]byte {
				return [][]byte{nlmsg(unix.NLMSG_ERROR, 0, header(req).seq, fakePort, []byte{0xea, 0xff})}
			},
			want: "NLMSG_ERROR of 2 bytes",
		},
		{
			name: "NLMSG_ERROR with a positive error",
			answer: func(req []byte) [][]byte {
				return [][]byte{nlmsg(unix.NLMSG_ERROR, 0, header(req).seq, fakePort, le32(22))}
			},
			want: "NLMSG_ERROR with positive error 22",
		},
		{
			name:   "ACK without a reply",
			answer: func(req []byte) [][]byte { return [][]byte{ackTo(req)} },
			want:   "the kernel acknowledged without a reply",
		},
		{
			name: "NLMSG_DONE without parts",
			answer: func(req []byte) [][]byte {
				return [][]byte{nlmsg(unix.NLMSG_DONE, unix.NLM_F_MULTI, header(req).seq, fakePort, le32(0))}
			},
			want: "a multipart reply without parts",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := &fakeSocket{kernel: func(req []byte) ([][]byte, error) { return tc.answer(req), nil }}
			err := f.client().SetMaxrate("eth0", Maxrate{})
			var e *Error
			if !errors.Is(err, ErrMalformed) || !errors.As(err, &e) || e.Op != "IEEE_SET MAXRATE" || e.Ifname != "eth0" {
				t.Fatalf("err %v, want ErrMalformed in *Error", err)
			}
			if want := "dcbnl IEEE_SET MAXRATE on eth0: malformed dcbnl message: " + tc.want; err.Error() != want {
				t.Errorf("message %q, want %q", err, want)
			}
			if f.held {
				t.Errorf("socket not released")
			}
		})
	}
}

// No reply, a failed send and no socket are errors that say so.
func TestClientNoReply(t *testing.T) {
	requireLittleEndian(t)
	f := &fakeSocket{kernel: func([]byte) ([][]byte, error) { return nil, nil }}
	_, err := f.client().Get("eth0")
	var e *Error
	if !errors.Is(err, syscall.EAGAIN) || !errors.As(err, &e) || e.Op != "IEEE_GET" {
		t.Fatalf("err %v, want EAGAIN in *Error", err)
	}
	if want := "dcbnl IEEE_GET on eth0: no reply to seq 1: fake socket: nothing queued: resource temporarily unavailable"; err.Error() != want {
		t.Errorf("message %q, want %q", err, want)
	}
	if f.held {
		t.Errorf("socket not released")
	}

	f.kernel = func([]byte) ([][]byte, error) { return nil, syscall.ENOBUFS }
	_, err = f.client().GetDCBX("eth0")
	if !errors.Is(err, syscall.ENOBUFS) || err.Error() != "dcbnl GDCBX on eth0: send: no buffer space available" {
		t.Fatalf("failed send: %v", err)
	}
	if f.held || f.lent != 2 {
		t.Errorf("held %v after %d loans", f.held, f.lent)
	}

	noSocket := errors.New("no socket for you")
	c := &Client{acquire: func() (socket, error) { return nil, noSocket }}
	if err := c.SetDCBX("eth0", DCBXHost|DCBXVerIEEE); !errors.Is(err, noSocket) || !errors.As(err, &e) || e.Op != "SDCBX" {
		t.Fatalf("no socket: %v", err)
	}
}
