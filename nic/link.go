package nic

import (
	"encoding/binary"
	"fmt"
	"net"
	"strconv"
	"syscall"

	"github.com/vishvananda/netlink/nl"
	"golang.org/x/sys/unix"
)

// Link reads the netdev's rtnetlink attributes with one RTM_GETLINK by name.
// A missing netdev gives ENODEV.
func (l *Live) Link(ifname string) (LinkInfo, error) {
	if err := checkLinkName(ifname); err != nil {
		return LinkInfo{}, opErr(ifname, "get link", err)
	}
	req := getLinkRequest(ifname)
	req.Sockets = map[int]*nl.SocketHandle{unix.NETLINK_ROUTE: l.route}
	msgs, err := req.Execute(unix.NETLINK_ROUTE, unix.RTM_NEWLINK)
	if err != nil {
		return LinkInfo{}, opErr(ifname, "get link", err)
	}
	if len(msgs) != 1 {
		return LinkInfo{}, opErr(ifname, "get link", fmt.Errorf("kernel sent %d RTM_NEWLINK replies, want 1", len(msgs)))
	}
	info, _, err := decodeLink(msgs[0])
	if err != nil {
		return LinkInfo{}, opErr(ifname, "get link", err)
	}
	return info, nil
}

// SetMTU sets the netdev's MTU with RTM_SETLINK; like every setter here it
// only writes: the caller's transaction reads it back, with retries. The kernel
// refuses an MTU outside [min_mtu, max_mtu] with EINVAL (and, with extended
// ACK, a message such as "MTU greater than device maximum").
func (l *Live) SetMTU(ifname string, mtu int) error {
	op := "set mtu " + strconv.Itoa(mtu)
	if err := checkLinkName(ifname); err != nil {
		return opErr(ifname, op, err)
	}
	if mtu <= 0 || mtu > 1<<31-1 {
		return opErr(ifname, op, syscall.EINVAL)
	}
	req := setMTURequest(ifname, uint32(mtu))
	req.Sockets = map[int]*nl.SocketHandle{unix.NETLINK_ROUTE: l.route}
	if _, err := req.Execute(unix.NETLINK_ROUTE, 0); err != nil {
		return opErr(ifname, op, err)
	}
	return nil
}

// CheckLinkName refuses names the kernel cannot have (syscall.EINVAL):
// empty, "." or "..", longer than ALTIFNAMSIZ-1 (altnames may be up to 127
// bytes), or containing '/', ':', NUL or white space (dev_valid_name). A
// name that passes is one path element, safe to put in a sysfs path.
func CheckLinkName(name string) error { return checkLinkName(name) }

func checkLinkName(name string) error {
	if name == "" || len(name) >= altIfNameSize || name == "." || name == ".." {
		return syscall.EINVAL
	}
	for i := 0; i < len(name); i++ {
		switch name[i] {
		case 0, '/', ':', ' ', '\t', '\n', '\v', '\f', '\r':
			return syscall.EINVAL
		}
	}
	return nil
}

// nameAttr addresses a netdev by name: IFLA_IFNAME for names that fit
// IFNAMSIZ, IFLA_ALT_IFNAME for the longer alternative names.
func nameAttr(ifname string) *nl.RtAttr {
	if len(ifname) < unix.IFNAMSIZ {
		return nl.NewRtAttr(unix.IFLA_IFNAME, nl.ZeroTerminated(ifname))
	}
	return nl.NewRtAttr(unix.IFLA_ALT_IFNAME, nl.ZeroTerminated(ifname))
}

// getLinkRequest is RTM_GETLINK for one netdev by name. RTEXT_FILTER_SKIP_STATS
// keeps the ~1 KiB of interface statistics out of the reply.
func getLinkRequest(ifname string) *nl.NetlinkRequest {
	req := nl.NewNetlinkRequest(unix.RTM_GETLINK, 0)
	req.AddData(nl.NewIfInfomsg(unix.AF_UNSPEC))
	req.AddData(nameAttr(ifname))
	req.AddData(nl.NewRtAttr(unix.IFLA_EXT_MASK, nl.Uint32Attr(rtextFilterSkipStats)))
	return req
}

// setMTURequest is RTM_SETLINK {ifi_index 0, IFLA_IFNAME, IFLA_MTU}; with
// index 0 the kernel looks the netdev up by the name attribute.
func setMTURequest(ifname string, mtu uint32) *nl.NetlinkRequest {
	req := nl.NewNetlinkRequest(unix.RTM_SETLINK, unix.NLM_F_ACK)
	req.AddData(nl.NewIfInfomsg(unix.AF_UNSPEC))
	req.AddData(nameAttr(ifname))
	req.AddData(nl.NewRtAttr(unix.IFLA_MTU, nl.Uint32Attr(mtu)))
	return req
}

// decodeLink decodes an RTM_NEWLINK payload (ifinfomsg + attributes) into a
// LinkInfo and the netdev's name.
func decodeLink(b []byte) (LinkInfo, string, error) {
	if len(b) < unix.SizeofIfInfomsg {
		return LinkInfo{}, "", fmt.Errorf("RTM_NEWLINK payload of %d bytes, shorter than ifinfomsg", len(b))
	}
	ne := nl.NativeEndian()
	info := LinkInfo{
		Index:     int(int32(ne.Uint32(b[4:8]))),
		AdminUp:   ne.Uint32(b[8:12])&unix.IFF_UP != 0,
		OperState: operState(ifOperUnknown),
	}
	var name string
	err := walkAttrs(b[unix.SizeofIfInfomsg:], func(typ uint16, v []byte) {
		switch typ {
		case unix.IFLA_IFNAME:
			name = unix.ByteSliceToString(v)
		case unix.IFLA_MTU:
			info.MTU = int(attrU32(ne, v))
		case unix.IFLA_MIN_MTU:
			info.MinMTU = int(attrU32(ne, v))
		case unix.IFLA_MAX_MTU:
			info.MaxMTU = int(attrU32(ne, v))
		case unix.IFLA_OPERSTATE:
			if len(v) >= 1 {
				info.OperState = operState(v[0])
			}
		case unix.IFLA_ADDRESS:
			if len(v) > 0 {
				info.MAC = net.HardwareAddr(v).String()
			}
		}
	})
	if err != nil {
		return LinkInfo{}, "", fmt.Errorf("RTM_NEWLINK attributes: %w", err)
	}
	return info, name, nil
}

// walkAttrs calls fn for each top-level netlink attribute in b (type without
// the NLA_F_NESTED/NET_BYTEORDER flags). It checks every length against the
// buffer: nl.ParseRouteAttr panics when the last attribute's padding is cut
// off (found by FuzzDecodeLink).
func walkAttrs(b []byte, fn func(typ uint16, value []byte)) error {
	ne := nl.NativeEndian()
	for len(b) > 0 {
		if len(b) < unix.SizeofRtAttr {
			return fmt.Errorf("%d trailing bytes, shorter than an attribute header", len(b))
		}
		l := int(ne.Uint16(b[0:2]))
		if l < unix.SizeofRtAttr || l > len(b) {
			return fmt.Errorf("attribute length %d outside 4..%d", l, len(b))
		}
		fn(ne.Uint16(b[2:4])&nlaTypeMask, b[unix.SizeofRtAttr:l])
		next := (l + unix.RTA_ALIGNTO - 1) &^ (unix.RTA_ALIGNTO - 1)
		if next > len(b) {
			next = len(b) // the last attribute may come unpadded
		}
		b = b[next:]
	}
	return nil
}

func attrU32(ne binary.ByteOrder, b []byte) uint32 {
	if len(b) < 4 {
		return 0
	}
	return ne.Uint32(b)
}

// operState names IF_OPER_* values as /sys/class/net/<if>/operstate does
// (net/core/net-sysfs.c operstates[]), so live and sysfs readings compare.
func operState(s uint8) string {
	switch s {
	case ifOperUnknown:
		return "unknown"
	case ifOperNotPresent:
		return "notpresent"
	case ifOperDown:
		return "down"
	case ifOperLowerLayerDown:
		return "lowerlayerdown"
	case ifOperTesting:
		return "testing"
	case ifOperDormant:
		return "dormant"
	case ifOperUp:
		return "up"
	}
	return "unknown"
}

// uapi values x/sys/unix does not export (include/uapi/linux/if.h,
// rtnetlink.h).
const (
	altIfNameSize        = 128    // ALTIFNAMSIZ
	nlaTypeMask          = 0x3fff // NLA_TYPE_MASK: ^(NLA_F_NESTED | NLA_F_NET_BYTEORDER)
	rtextFilterSkipStats = 1 << 3 // RTEXT_FILTER_SKIP_STATS

	// enum if_oper_state (RFC 2863 operational status)
	ifOperUnknown        = 0
	ifOperNotPresent     = 1
	ifOperDown           = 2
	ifOperLowerLayerDown = 3
	ifOperTesting        = 4
	ifOperDormant        = 5
	ifOperUp             = 6
)
