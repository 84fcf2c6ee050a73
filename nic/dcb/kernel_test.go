package dcb

import (
	"errors"
	"os"
	"runtime"
	"strings"
	"syscall"
	"testing"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"
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
