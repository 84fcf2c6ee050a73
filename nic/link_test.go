package nic

import (
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"strings"
	"syscall"
	"testing"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netlink/nl"
	"golang.org/x/sys/unix"

	"github.com/rocectl/rocectl/internal/testkit/netnstest"
)

func unhex(t testing.TB, s string) []byte {
	t.Helper()
	b, err := hex.DecodeString(strings.Join(strings.Fields(s), ""))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func littleEndianOnly(t *testing.T) {
	t.Helper()
	if binary.NativeEndian.Uint16([]byte{1, 0}) != 1 {
		t.Skip("byte vectors are written for little-endian hosts")
	}
}

// The request vectors: nlmsghdr (len, type, flags, seq 1, pid 0), an
// all-zero ifinfomsg (index 0: look up by name), then the attributes.
func TestLinkRequestBytes(t *testing.T) {
	littleEndianOnly(t)
	tests := []struct {
		name string
		req  func() []byte
		want string
	}{
		{
			name: "RTM_SETLINK va mtu 9000",
			req: func() []byte {
				r := setMTURequest("va", 9000)
				r.Seq = 1
				return r.Serialize()
			},
			want: `30000000 1300 0500 01000000 00000000
			       00 00 0000 00000000 00000000 00000000
			       0700 0300 76610000
			       0800 0400 28230000`,
		},
		{
			name: "RTM_GETLINK va skip stats",
			req: func() []byte {
				r := getLinkRequest("va")
				r.Seq = 1
				return r.Serialize()
			},
			want: `30000000 1200 0100 01000000 00000000
			       00 00 0000 00000000 00000000 00000000
			       0700 0300 76610000
			       0800 1d00 08000000`,
		},
		{
			// 16 bytes: too long for IFNAMSIZ, so IFLA_ALT_IFNAME (53).
			name: "RTM_GETLINK by altname",
			req: func() []byte {
				r := getLinkRequest("roce-uplink-0123")
				r.Seq = 1
				return r.Serialize()
			},
			want: `40000000 1200 0100 01000000 00000000
			       00 00 0000 00000000 00000000 00000000
			       1500 3500 726f63652d75706c696e6b2d30313233 00000000
			       0800 1d00 08000000`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, want := tt.req(), unhex(t, tt.want)
			if !bytes.Equal(got, want) {
				t.Fatalf("request\n got %x\nwant %x", got, want)
			}
		})
	}
}

func TestDecodeLinkRejectsShortPayload(t *testing.T) {
	if _, _, err := decodeLink(make([]byte, 15)); err == nil {
		t.Fatal("decodeLink accepted 15 bytes")
	}
}

func TestCheckLinkName(t *testing.T) {
	for _, bad := range []string{"", ".", "..", "a/b", "a:b", "a b", "a\nb", strings.Repeat("x", 128)} {
		if err := checkLinkName(bad); !errors.Is(err, syscall.EINVAL) {
			t.Errorf("checkLinkName(%q) = %v, want EINVAL", bad, err)
		}
	}
	for _, good := range []string{"eth0", "ens1f0np0", "enp59s0f0np0", strings.Repeat("x", 127)} {
		if err := checkLinkName(good); err != nil {
			t.Errorf("checkLinkName(%q) = %v", good, err)
		}
	}
}

// ipLink is what `ip -j -d link show` says about a link: the independent
// cross-check for Link.
type ipLink struct {
	IfIndex   int    `json:"ifindex"`
	MTU       int    `json:"mtu"`
	MinMTU    int    `json:"min_mtu"`
	MaxMTU    int    `json:"max_mtu"`
	OperState string `json:"operstate"`
	Address   string `json:"address"`
	Flags     []string
}

func ipShow(t *testing.T, ns *netnstest.NS, ifname string) ipLink {
	t.Helper()
	out, err := ns.Command("ip", "-j", "-d", "link", "show", "dev", ifname).Output()
	if err != nil {
		t.Fatalf("ip link show %s: %v", ifname, err)
	}
	var links []ipLink
	if err := json.Unmarshal(out, &links); err != nil || len(links) != 1 {
		t.Fatalf("ip -j output %s: %v", out, err)
	}
	return links[0]
}

func (i ipLink) adminUp() bool {
	for _, f := range i.Flags {
		if f == "UP" {
			return true
		}
	}
	return false
}

func TestLinkVethMatchesIP(t *testing.T) {
	needTool(t, "ip")
	ns, l := liveInNS(t)

	check := func(stage string) LinkInfo {
		t.Helper()
		got, err := l.Link("va")
		if err != nil {
			t.Fatalf("%s: %v", stage, err)
		}
		ip := ipShow(t, ns, "va")
		want := LinkInfo{
			Index:     ip.IfIndex,
			MTU:       ip.MTU,
			MinMTU:    ip.MinMTU,
			MaxMTU:    ip.MaxMTU,
			OperState: strings.ToLower(ip.OperState),
			AdminUp:   ip.adminUp(),
			MAC:       ip.Address,
		}
		if got != want {
			t.Fatalf("%s: Link(va)\n got %+v\nwant %+v (ip -j -d link)", stage, got, want)
		}
		return got
	}

	// A new veth: down, default MTU, and veth's MTU range (68..65535, seen
	// with ip -d on kernel 6.18: ETH_MIN_MTU .. ETH_MAX_MTU).
	got := check("new")
	if got.MTU != 1500 || got.MinMTU != 68 || got.MaxMTU != 65535 || got.AdminUp || got.OperState != "down" {
		t.Fatalf("new veth = %+v, want mtu 1500 range 68..65535, admin down, operstate down", got)
	}

	// One end up, peer down: no carrier, and veth has a lower device
	// (its peer), so RFC 2863 says lowerlayerdown.
	ns.SetUp("va")
	if got := check("va up"); !got.AdminUp || got.OperState != "lowerlayerdown" {
		t.Fatalf("va up, vb down = %+v, want admin up, operstate lowerlayerdown", got)
	}
	ns.SetUp("vb")
	if got := check("both up"); got.OperState != "up" {
		t.Fatalf("both up = %+v, want operstate up", got)
	}
}

func TestSetMTUVeth(t *testing.T) {
	ns, l := liveInNS(t)
	if err := l.SetMTU("va", 9000); err != nil {
		t.Fatal(err)
	}
	// Read it back by another path than Link.
	var mtu int
	if err := ns.Do(func() error {
		link, err := netlink.LinkByName("va")
		if err == nil {
			mtu = link.Attrs().MTU
		}
		return err
	}); err != nil {
		t.Fatal(err)
	}
	if mtu != 9000 {
		t.Fatalf("mtu after SetMTU(9000) = %d", mtu)
	}
	// And back down, which must also hold.
	if err := l.SetMTU("va", 1500); err != nil {
		t.Fatal(err)
	}
	if got, err := l.Link("va"); err != nil || got.MTU != 1500 {
		t.Fatalf("Link after SetMTU(1500) = %+v, %v", got, err)
	}
}

func TestSetMTUDummy(t *testing.T) {
	ns := netnstest.New(t)
	ns.SkipIfNoDummy("d0")
	var l *Live
	if err := ns.Do(func() (err error) { l, err = NewLive(testLogger(t)); return err }); err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if err := l.SetMTU("d0", 9000); err != nil {
		t.Fatal(err)
	}
	if got, err := l.Link("d0"); err != nil || got.MTU != 9000 {
		t.Fatalf("Link(d0) = %+v, %v; want mtu 9000", got, err)
	}
}

func TestSetMTUOutOfRange(t *testing.T) {
	_, l := liveInNS(t)
	tests := []struct {
		mtu    int
		extack string // dev_validate_mtu's extended-ACK text, as kernel 6.18 words it
	}{
		{65536, "mtu greater than device maximum"},
		{67, "mtu less than device minimum"},
	}
	for _, tt := range tests {
		err := l.SetMTU("va", tt.mtu)
		if !errors.Is(err, syscall.EINVAL) {
			t.Fatalf("SetMTU(va, %d) = %v, want EINVAL", tt.mtu, err)
		}
		var oe *OpError
		if !errors.As(err, &oe) || oe.Dev != "va" {
			t.Fatalf("SetMTU(va, %d) error %v does not name the interface", tt.mtu, err)
		}
		msg := err.Error()
		if !strings.HasPrefix(msg, "va: set mtu ") || !strings.Contains(msg, tt.extack) {
			t.Fatalf("SetMTU(va, %d) error %q, want the interface and %q", tt.mtu, msg, tt.extack)
		}
	}
	if got, err := l.Link("va"); err != nil || got.MTU != 1500 {
		t.Fatalf("after refused MTUs Link(va) = %+v, %v; want mtu 1500", got, err)
	}
	if err := l.SetMTU("va", -1); !errors.Is(err, syscall.EINVAL) {
		t.Fatalf("SetMTU(-1) = %v, want EINVAL", err)
	}
}

func TestLinkMissingIsENODEV(t *testing.T) {
	_, l := liveInNS(t)
	if _, err := l.Link("nosuchdev"); !errors.Is(err, syscall.ENODEV) {
		t.Fatalf("Link(nosuchdev) = %v, want ENODEV", err)
	}
	if err := l.SetMTU("nosuchdev", 1500); !errors.Is(err, syscall.ENODEV) {
		t.Fatalf("SetMTU(nosuchdev) = %v, want ENODEV", err)
	}
}

func TestLinkByAltName(t *testing.T) {
	ns, l := liveInNS(t)
	const alt = "roce-uplink-port-0" // longer than IFNAMSIZ-1
	var index int
	if err := ns.Do(func() error {
		link, err := netlink.LinkByName("va")
		if err != nil {
			return err
		}
		index = link.Attrs().Index
		return netlink.LinkAddAltName(link, alt)
	}); err != nil {
		t.Fatal(err)
	}
	got, err := l.Link(alt)
	if err != nil {
		t.Fatal(err)
	}
	if got.Index != index {
		t.Fatalf("Link(%s).Index = %d, want va's %d", alt, got.Index, index)
	}
	if err := l.SetMTU(alt, 4200); err != nil {
		t.Fatal(err)
	}
	if got, _ := l.Link("va"); got.MTU != 4200 {
		t.Fatalf("va mtu = %d after SetMTU via altname", got.MTU)
	}
	// The ethtool ioctls cannot address a name that long.
	if _, err := l.DriverInfo(alt); !errors.Is(err, syscall.EINVAL) {
		t.Fatalf("DriverInfo(%s) = %v, want EINVAL", alt, err)
	}
}

// newlinkPayload builds an RTM_NEWLINK payload the way the kernel lays it
// out: ifinfomsg, then attributes.
func newlinkPayload(index int32, flags uint32, attrs ...*nl.RtAttr) []byte {
	msg := nl.NewIfInfomsg(unix.AF_UNSPEC)
	msg.Index = index
	msg.Flags = flags
	b := bytes.Clone(msg.Serialize())
	for _, a := range attrs {
		b = append(b, a.Serialize()...)
	}
	return b
}

func TestDecodeLinkAttributes(t *testing.T) {
	p := newlinkPayload(7, unix.IFF_UP|unix.IFF_BROADCAST,
		nl.NewRtAttr(unix.IFLA_IFNAME, nl.ZeroTerminated("ens1f0np0")),
		nl.NewRtAttr(unix.IFLA_MTU, nl.Uint32Attr(9000)),
		nl.NewRtAttr(unix.IFLA_MIN_MTU, nl.Uint32Attr(68)),
		nl.NewRtAttr(unix.IFLA_MAX_MTU, nl.Uint32Attr(9978)),
		nl.NewRtAttr(unix.IFLA_OPERSTATE, []byte{ifOperUp}),
		nl.NewRtAttr(unix.IFLA_ADDRESS, []byte{0x0c, 0x42, 0xa1, 0x2b, 0x3c, 0x4d}),
	)
	got, name, err := decodeLink(p)
	if err != nil {
		t.Fatal(err)
	}
	want := LinkInfo{Index: 7, MTU: 9000, MinMTU: 68, MaxMTU: 9978, OperState: "up", AdminUp: true, MAC: "0c:42:a1:2b:3c:4d"}
	if got != want || name != "ens1f0np0" {
		t.Fatalf("decodeLink = %+v %q, want %+v ens1f0np0", got, name, want)
	}
	// A last attribute without its padding is still read.
	unpadded := append(newlinkPayload(1, 0), 0x07, 0x00, 0x03, 0x00, 'v', 'a', 0)
	if _, name, err := decodeLink(unpadded); err != nil || name != "va" {
		t.Fatalf("unpadded last attribute: name %q, %v", name, err)
	}
	// A length beyond the buffer is an error, not a panic.
	if _, _, err := decodeLink(append(newlinkPayload(1, 0), 0x09, 0x00, 0x03, 0x00, 'v')); err == nil {
		t.Fatal("attribute longer than the buffer accepted")
	}
	// Without IFLA_OPERSTATE the state is unknown, not "down".
	got, _, err = decodeLink(newlinkPayload(1, 0))
	if err != nil || got.OperState != "unknown" {
		t.Fatalf("no operstate: %+v, %v", got, err)
	}
}

func FuzzDecodeLink(f *testing.F) {
	f.Add(newlinkPayload(2, unix.IFF_UP,
		nl.NewRtAttr(unix.IFLA_IFNAME, nl.ZeroTerminated("va")),
		nl.NewRtAttr(unix.IFLA_MTU, nl.Uint32Attr(1500)),
		nl.NewRtAttr(unix.IFLA_OPERSTATE, []byte{ifOperLowerLayerDown})))
	f.Add(newlinkPayload(3, 0, nl.NewRtAttr(unix.IFLA_MTU, []byte{1})))
	// Found by the fuzzer: a last attribute whose padding is cut off made
	// nl.ParseRouteAttr panic.
	f.Add([]byte("0000000000000000\a\x0000000"))
	f.Fuzz(func(t *testing.T, b []byte) {
		info, _, err := decodeLink(b)
		if err == nil && info.OperState == "" {
			t.Fatalf("decoded %+v without an operstate", info)
		}
	})
}
