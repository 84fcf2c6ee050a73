package nic

import (
	"errors"
	"os"
	"strings"
	"testing"

	"github.com/vishvananda/netlink/nl"
)

// The requests, byte for byte: nlmsghdr (len, type
// RDMA_NL_GET_TYPE(5, op) = 5<<10 + op, flags NLM_F_REQUEST|NLM_F_ACK|
// NLM_F_DUMP = 0x305, seq, pid 0), then for PORT_GET the device index as
// RDMA_NLDEV_ATTR_DEV_INDEX (type 1, u32): what iproute2's rdma tool
// sends (rd_prepare_msg, mnl_attr_put_u32).
func TestRDMARequestBytes(t *testing.T) {
	littleEndianOnly(t)
	for _, c := range []struct {
		name string
		req  *nl.NetlinkRequest
		want string
	}{
		{"CMD_GET dump", rdmaDevsRequest(), "10000000 0114 0503 07000000 00000000"},
		{"PORT_GET dump of device 3", rdmaPortsRequest(3), "18000000 0514 0503 07000000 00000000  0800 0100 03000000"},
	} {
		c.req.Seq = 7
		if got, want := c.req.Serialize(), unhex(t, c.want); string(got) != string(want) {
			t.Errorf("%s:\n got % x\nwant % x", c.name, got, want)
		}
	}
}

// A PORT_GET reply as the lab's kernel (Debian 6.1.0-48, rdma_rxe) sent it
// for rxe0 on the veth lab0, logged by TestLabRDMANetlinkMatchesRdmaLink:
// fill_port_info's handle (DEV_INDEX 0, DEV_NAME), PORT_INDEX, PORT_STATE
// (4, ACTIVE), PORT_PHYS_STATE (5, LINK_UP), NDEV_INDEX (3), NDEV_NAME;
// no CAP_FLAGS, which 6.1 puts only on InfiniBand ports. Attributes are
// padded to 4 bytes.
const portReplyRxe0 = `
0800 0100 00000000
0900 0200 72786530 00000000
0800 0300 01000000
0500 0c00 04000000
0500 0d00 05000000
0800 3200 03000000
0900 3300 6c616230 00000000`

// The CMD_GET reply for rxe0 from the same run: handle, PORT_INDEX (1
// port), CAP_FLAGS, NODE_GUID, SYS_IMAGE_GUID, DEV_NODE_TYPE, DEV_DIM (84),
// DEV_PROTOCOL (67) "roce".
const devReplyRxe0 = `
0800 0100 00000000
0900 0200 72786530 00000000
0800 0300 01000000
0c00 0400 763c2201 00000000
0c00 0600 e15481fe ffbcd1f0
0c00 0700 e15481fe ffbcd1f0
0500 0e00 01000000
0500 5400 00000000
0900 4300 726f6365 00000000`

func TestParseRDMAPort(t *testing.T) {
	littleEndianOnly(t)
	got, err := parseRDMAPort(unhex(t, portReplyRxe0))
	if err != nil {
		t.Fatal(err)
	}
	want := RDMALink{Device: "rxe0", DevIndex: 0, Port: 1, State: "ACTIVE", PhysState: "LINK_UP", Netdev: "lab0", NetdevIndex: 3}
	if got != want {
		t.Fatalf("got %+v\nwant %+v", got, want)
	}
	// Without NDEV attributes (another namespace, or before 4.16): no
	// netdev, the rest as before.
	noNdev := unhex(t, portReplyRxe0)[:len(unhex(t, portReplyRxe0))-20]
	got, err = parseRDMAPort(noNdev)
	want.Netdev, want.NetdevIndex = "", 0
	if err != nil || got != want {
		t.Fatalf("without netdev: %+v, %v", got, err)
	}
}

func TestParseRDMAPortRefusesBadMessages(t *testing.T) {
	littleEndianOnly(t)
	good := unhex(t, portReplyRxe0)
	for name, c := range map[string]struct {
		msg  []byte
		want string
	}{
		"cut inside an attribute":   {good[:len(good)-4], "attribute 51 of length 9 in 8 bytes"},
		"trailing bytes":            {append(append([]byte{}, good...), 1, 2), "2 trailing bytes"},
		"u32 of two bytes":          {unhex(t, "0600 0100 0200 0000 0900 0200 72786530 00000000"), "device index: 2 bytes"},
		"name without NUL":          {unhex(t, "0800 0100 02000000 0800 0200 72786530"), "not a NUL-terminated string"},
		"no port index":             {good[:20], "without device or a valid port"},
		"port 0":                    {unhex(t, "0800 0100 02000000 0900 0200 72786530 00000000 0800 0300 00000000 0500 0c00 04000000 0500 0d00 05000000"), "valid port"},
		"a device, not a port":      {unhex(t, devReplyRxe0), "without its state"},
		"no state":                  {good[:28], "without its state"},
		"netdev index without name": {good[:len(good)-12], "do not come together"},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := parseRDMAPort(c.msg)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("err %v, want %q", err, c.want)
			}
		})
	}
}

// An unpadded last attribute (the length says 5, the message ends there)
// is read, not sliced past: nl.ParseRouteAttr would panic on it.
func TestParseRDMAAttrsUnpaddedLast(t *testing.T) {
	littleEndianOnly(t)
	a, err := parseRDMAAttrs(unhex(t, "0800 0100 02000000 0500 0c00 04"))
	if err != nil || len(a[rdmaAttrState]) != 1 || a[rdmaAttrState][0] != 4 {
		t.Fatalf("%v, %v", a, err)
	}
}

func TestParseRDMADev(t *testing.T) {
	littleEndianOnly(t)
	d, err := parseRDMADev(unhex(t, devReplyRxe0))
	if err != nil || d.index != 0 || d.name != "rxe0" {
		t.Fatalf("%+v, %v", d, err)
	}
	// A PAD attribute (type 0) before a u64, as fill_dev_info puts one
	// where the u64 would not be 8-aligned, is skipped.
	d, err = parseRDMADev(unhex(t, "0800 0100 05000000 0b00 0200 6d6c78355f3000 00 0800 0300 01000000 0400 0000 0c00 0400 0000000000000000"))
	if err != nil || d.index != 5 || d.name != "mlx5_0" {
		t.Fatalf("%+v, %v", d, err)
	}
	if _, err := parseRDMADev(unhex(t, "0800 0100 05000000")); err == nil {
		t.Fatal("a device without a name was accepted")
	}
}

func TestStateNames(t *testing.T) {
	for _, c := range []struct {
		names []string
		v     uint8
		want  string
	}{{rdmaPortStates, 1, "DOWN"}, {rdmaPortStates, 4, "ACTIVE"}, {rdmaPortStates, 9, "UNKNOWN(9)"}, {rdmaPhysStates, 5, "LINK_UP"}, {rdmaPhysStates, 3, "DISABLED"}} {
		if got := stateName(c.names, c.v); got != c.want {
			t.Errorf("state %d = %s, want %s", c.v, got, c.want)
		}
	}
}

func FuzzParseRDMAPort(f *testing.F) {
	f.Add(unhex(f, portReplyRxe0))
	f.Add(unhex(f, devReplyRxe0))
	f.Add([]byte{})
	f.Add(unhex(f, "0500 0c00 04"))
	f.Fuzz(func(t *testing.T, msg []byte) {
		l, err := parseRDMAPort(msg)
		if err != nil {
			return
		}
		if l.Device == "" || l.Port <= 0 || l.State == "" || l.PhysState == "" || (l.Netdev == "") != (l.NetdevIndex == 0) {
			t.Fatalf("decoded a port without what a port needs: %+v", l)
		}
		if _, err := parseRDMADev(msg); err != nil {
			t.Fatalf("a port message is a device handle too: %v", err)
		}
	})
}

// On a machine without ib_core (this one, where discovery reads sysfs)
// Live says why before it opens anything; under --root it answers for no
// tree but the live one.
func TestLiveRDMALinksWithoutIBCoreOrUnderRoot(t *testing.T) {
	_, l := liveInNS(t)
	_, err := l.RDMALinks(NewFS(t.TempDir(), true))
	if !errors.Is(err, ErrNoRDMANetlink) || !strings.Contains(err.Error(), "live kernel") {
		t.Errorf("under a root: %v", err)
	}
	if _, statErr := os.Stat("/sys/module/ib_core"); statErr == nil {
		t.Skip("this kernel has ib_core: the fallback path is the lab's and fixtures' to test")
	}
	_, err = l.RDMALinks(NewFS("/", true))
	if !errors.Is(err, ErrNoRDMANetlink) || !strings.Contains(err.Error(), "ib_core") {
		t.Errorf("without ib_core: %v", err)
	}
	inv := Discover(NewFS("/", true), l, testLogger(t))
	if inv.RDMASource != RDMASourceSysfs || !strings.Contains(inv.SysfsReason, "ib_core") {
		t.Errorf("discovery: source %q reason %q", inv.RDMASource, inv.SysfsReason)
	}
}
