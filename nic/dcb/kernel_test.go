package dcb

import (
	"errors"
	"fmt"
	"os"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netlink/nl"
	"github.com/vishvananda/netns"
	"golang.org/x/sys/unix"
)

// Real-kernel tests: the client against this machine's kernel, inside a
// network namespace the test creates, on a veth pair it creates there. veth
// has no dcbnl_ops, so dcb_doit answers every command with NLMSG_ERROR
// -EOPNOTSUPP (reference §A1.1) — the "unsupported here" path rocectl takes
// on every NIC without DCB.

// inNewNetns locks the test goroutine to its thread and moves the thread into
// a fresh network namespace until the test ends. If the original namespace
// cannot be restored the thread stays locked, so the runtime discards it
// instead of reusing a thread in the wrong namespace.
func inNewNetns(t *testing.T) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root (CAP_SYS_ADMIN for a network namespace, CAP_NET_ADMIN for links)")
	}
	runtime.LockOSThread()
	orig, err := netns.Get()
	if err != nil {
		runtime.UnlockOSThread()
		t.Fatalf("current netns: %v", err)
	}
	ns, err := netns.New() // also switches this thread into it
	if err != nil {
		orig.Close()
		runtime.UnlockOSThread()
		t.Fatalf("new netns: %v", err)
	}
	t.Cleanup(func() {
		ns.Close()
		if err := netns.Set(orig); err != nil {
			orig.Close()
			t.Errorf("restore netns: %v (thread left locked)", err)
			return
		}
		orig.Close()
		runtime.UnlockOSThread()
	})
}

func addVeth(t *testing.T, name, peer string) {
	t.Helper()
	veth := &netlink.Veth{LinkAttrs: netlink.LinkAttrs{Name: name}, PeerName: peer}
	if err := netlink.LinkAdd(veth); err != nil {
		t.Fatalf("add veth: %v", err)
	}
	t.Cleanup(func() { _ = netlink.LinkDel(veth) })
	if err := netlink.LinkSetUp(veth); err != nil {
		t.Fatalf("veth up: %v", err)
	}
}

func TestKernelVethHasNoDCB(t *testing.T) {
	inNewNetns(t)
	addVeth(t, "rcdcb0", "rcdcb1")
	c := NewClient()

	st, err := c.Get("rcdcb0")
	if st != nil || !errors.Is(err, syscall.EOPNOTSUPP) {
		t.Fatalf("Get on veth: %v, %v; want EOPNOTSUPP", st, err)
	}
	var e *Error
	if !errors.As(err, &e) || e.Op != "IEEE_GET" || e.Ifname != "rcdcb0" {
		t.Fatalf("error %#v", err)
	}
	if want := "dcbnl IEEE_GET on rcdcb0: operation not supported"; err.Error() != want {
		t.Errorf("message %q, want %q", err, want)
	}

	err = c.SetPFC("rcdcb0", PFC{Enable: 1 << 3})
	if !errors.Is(err, syscall.EOPNOTSUPP) || !strings.HasPrefix(err.Error(), "dcbnl IEEE_SET PFC on rcdcb0: ") {
		t.Fatalf("SetPFC on veth: %v", err)
	}
	for name, call := range map[string]func() error{
		"AddApps": func() error { return c.AddApps("rcdcb1", []App{{SelDSCP, 3, 26}}) },
		"SetDCBX": func() error { return c.SetDCBX("rcdcb1", DCBXHost|DCBXVerIEEE) },
		"GetDCBX": func() error { _, err := c.GetDCBX("rcdcb1"); return err },
	} {
		if err := call(); !errors.Is(err, syscall.EOPNOTSUPP) {
			t.Errorf("%s on veth: %v, want EOPNOTSUPP", name, err)
		}
	}
}

// A device that does not exist is ENODEV, from dcb_doit's name lookup, before
// any driver is asked.
func TestKernelNoSuchDevice(t *testing.T) {
	inNewNetns(t)
	_, err := NewClient().Get("rcdcb-none")
	if !errors.Is(err, syscall.ENODEV) {
		t.Fatalf("Get on a missing device: %v, want ENODEV", err)
	}
}

// openShared opens a NETLINK_ROUTE socket as NewLive does: extended ACK on
// and its own timeouts.
func openShared(t *testing.T, timeout time.Duration) *nl.SocketHandle {
	t.Helper()
	s, err := nl.GetNetlinkSocketAt(netns.None(), netns.None(), unix.NETLINK_ROUTE)
	if err != nil {
		t.Fatal(err)
	}
	sh := &nl.SocketHandle{Socket: s}
	t.Cleanup(sh.Close)
	tv := unix.NsecToTimeval(timeout.Nanoseconds())
	_ = s.SetSendTimeout(&tv)
	_ = s.SetReceiveTimeout(&tv)
	if err := s.SetExtAck(true); err != nil {
		t.Fatalf("NETLINK_EXT_ACK: %v", err)
	}
	return sh
}

// assertNothingUnread checks that no datagram waits on the socket.
func assertNothingUnread(t *testing.T, sh *nl.SocketHandle) {
	t.Helper()
	n, _, err := unix.Recvfrom(sh.Socket.GetFd(), nil, unix.MSG_PEEK|unix.MSG_TRUNC|unix.MSG_DONTWAIT)
	if !errors.Is(err, unix.EAGAIN) {
		t.Errorf("socket has a %d-byte datagram unread (%v)", n, err)
	}
}

// On a socket shared with nl's Execute, as Live shares its rtnetlink socket,
// the two number their requests from the same counter and leave nothing
// for each other to read.
func TestKernelSharedSocket(t *testing.T) {
	inNewNetns(t)
	addVeth(t, "rcdcb0", "rcdcb1")
	sh := openShared(t, 5*time.Second)
	c := NewClientOn(sh)

	if _, err := c.Get("rcdcb0"); !errors.Is(err, syscall.EOPNOTSUPP) {
		t.Fatalf("Get on veth: %v", err)
	}
	if err := c.SetPFC("rcdcb0", PFC{Enable: 1 << 3}); !errors.Is(err, syscall.EOPNOTSUPP) {
		t.Fatalf("SetPFC on veth: %v", err)
	}
	assertNothingUnread(t, sh)

	req := nl.NewNetlinkRequest(unix.RTM_GETLINK, 0)
	req.AddData(nl.NewIfInfomsg(unix.AF_UNSPEC))
	req.AddData(nl.NewRtAttr(unix.IFLA_IFNAME, nl.ZeroTerminated("rcdcb1")))
	req.Sockets = map[int]*nl.SocketHandle{unix.NETLINK_ROUTE: sh}
	msgs, err := req.Execute(unix.NETLINK_ROUTE, unix.RTM_NEWLINK)
	if err != nil || len(msgs) != 1 {
		t.Fatalf("RTM_GETLINK on the shared socket: %d messages, %v", len(msgs), err)
	}
	if _, err := c.GetDCBX("rcdcb1"); !errors.Is(err, syscall.EOPNOTSUPP) {
		t.Fatalf("GetDCBX on veth: %v", err)
	}
	if sh.Seq != 4 {
		t.Errorf("shared counter at %d after 4 requests", sh.Seq)
	}
	assertNothingUnread(t, sh)
}

// A request the kernel's attribute policy refuses (an IFNAME without its
// NUL) is EINVAL with the kernel's extended ACK message, on a socket per
// call and on a shared one.
func TestKernelExtendedAck(t *testing.T) {
	inNewNetns(t)
	r := &request{op: "IEEE_GET", ifname: "eth0", resType: unix.RTM_GETDCB, msg: nl.NewNetlinkRequest(unix.RTM_GETDCB, 0)}
	r.msg.AddData(dcbmsg{CmdIEEEGet})
	r.msg.AddData(nl.NewRtAttr(int(AttrIfname), []byte("eth0")))
	for name, c := range map[string]*Client{
		"socket per call": NewClient(),
		"shared socket":   NewClientOn(openShared(t, 5*time.Second)),
	} {
		_, err := c.roundTrip(r)
		// The text is the kernel's ("Attribute failed policy validation"
		// since 5.2); that there is one is the client's doing.
		reason, ok := strings.CutPrefix(fmt.Sprint(err), "invalid argument: ")
		if !errors.Is(err, syscall.EINVAL) || !ok || reason == "" {
			t.Fatalf("%s: %v, want EINVAL with the kernel's reason", name, err)
		}
		t.Logf("%s: %v", name, err)
	}
}

// The real socket gives up after its receive timeout, with EAGAIN.
func TestKernelReceiveTimeout(t *testing.T) {
	inNewNetns(t)
	sh := openShared(t, 20*time.Millisecond)
	sock := lockSocket(sh)
	defer sock.release()
	_, _, err := sock.receive()
	if !errors.Is(err, unix.EAGAIN) || err.Error() != "nothing received in 20ms: resource temporarily unavailable" {
		t.Fatalf("receive on a silent socket: %v", err)
	}
}
