package nic

import (
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"

	"github.com/vishvananda/netlink/nl"
	"github.com/vishvananda/netns"
	"golang.org/x/sys/unix"
)

// The kernel's RDMA netlink (NETLINK_RDMA, client RDMA_NL_NLDEV): what
// `rdma link show` asks for each RDMA device port — its state, physical
// state and netdev. Discovery takes the port → netdev relation and the
// port state from here on the live host rather than from sysfs, because
// the kernel answers for the socket's network namespace: it names a
// port's netdev only when that netdev is in the namespace
// (drivers/infiniband/core/nldev.c fill_port_info: net_eq(dev_net(netdev),
// net)), where sysfs's device/net and "parent" say nothing of namespaces.
//
// Numbers are include/uapi/rdma/rdma_netlink.h's (checked against
// rdma-core's kernel-headers/rdma/rdma_netlink.h):
//
//	RDMA_NL_NLDEV = 5 (RDMA_NL_IWCM = 2, RSVD, LS, NLDEV)
//	message type  = RDMA_NL_GET_TYPE(client, op) = client<<10 + op
//	RDMA_NLDEV_CMD_GET = 1, RDMA_NLDEV_CMD_PORT_GET = 5 (both "can dump")
//	RDMA_NLDEV_ATTR_DEV_INDEX = 1 (u32), DEV_NAME = 2 (string),
//	PORT_INDEX = 3 (u32), PORT_STATE = 12 (u8), PORT_PHYS_STATE = 13 (u8),
//	NDEV_INDEX = 50 (u32), NDEV_NAME = 51 (string)
//
// The kernel's PORT_GET dump needs the device's index
// (nldev_port_get_dumpit returns EINVAL without RDMA_NLDEV_ATTR_DEV_INDEX),
// so the devices are dumped first (CMD_GET, one message per device), then
// each device's ports. iproute2's rdma/link.c walks them the same way.
//
// vishvananda/netlink (v1.3.1) has RdmaLinkList for the device dump but
// nothing for ports (no PORT_GET, no NDEV_INDEX), and it runs on a
// netlink.Handle's own socket; both dumps here go through Live's one
// NETLINK_RDMA socket, opened in NewLive's namespace like its others, with
// nl's request, attribute and exchange code. The decoders below check
// every attribute's length, and are fuzzed.
const (
	rdmaNLNLDev = nl.RDMA_NL_NLDEV // 5

	rdmaCmdGet     = nl.RDMA_NLDEV_CMD_GET // 1
	rdmaCmdPortGet = 5                     // RDMA_NLDEV_CMD_PORT_GET; not in nl v1.3.1

	rdmaAttrDevIndex  = nl.RDMA_NLDEV_ATTR_DEV_INDEX       // 1
	rdmaAttrDevName   = nl.RDMA_NLDEV_ATTR_DEV_NAME        // 2
	rdmaAttrPortIndex = nl.RDMA_NLDEV_ATTR_PORT_INDEX      // 3
	rdmaAttrState     = nl.RDMA_NLDEV_ATTR_PORT_STATE      // 12
	rdmaAttrPhysState = nl.RDMA_NLDEV_ATTR_PORT_PHYS_STATE // 13
	rdmaAttrNdevIndex = 50                                 // RDMA_NLDEV_ATTR_NDEV_INDEX; not in nl v1.3.1
	rdmaAttrNdevName  = nl.RDMA_NLDEV_ATTR_NDEV_NAME       // 51
)

// rdmaMsgType is RDMA_NL_GET_TYPE(RDMA_NL_NLDEV, op).
func rdmaMsgType(op int) int { return rdmaNLNLDev<<10 + op }

// RDMALink is one RDMA device port as the kernel's RDMA netlink reports it
// (`rdma link show`: "link rxe0/1 state ACTIVE physical_state LINK_UP
// netdev veth0").
type RDMALink struct {
	Device   string `json:"device"`
	DevIndex uint32 `json:"dev_index"`
	Port     int    `json:"port"`
	// State and PhysState are named as sysfs and `rdma link` name them
	// ("ACTIVE", "LINK_UP"); a number the tables do not know is kept as
	// "UNKNOWN(n)".
	State     string `json:"state"`
	PhysState string `json:"physical_state"`
	// Netdev is the port's netdev when the kernel names one in the
	// asking socket's namespace; "" otherwise (another namespace, none,
	// or a kernel before 4.16, which had no NDEV attributes).
	Netdev      string `json:"netdev,omitempty"`
	NetdevIndex int    `json:"netdev_index,omitempty"`
}

// RDMALinker is a Kernel that can list the RDMA device ports of the host
// fs describes, as the kernel's RDMA netlink reports them. Live is one
// (for the live root only), and so is the kernel of a snapshot that
// recorded the view. Discovery falls back to sysfs, and records why, when
// the kernel is not one or its answer is an error.
type RDMALinker interface {
	RDMALinks(fs FS) ([]RDMALink, error)
}

// ErrNoRDMANetlink says a source has no RDMA netlink view to give.
var ErrNoRDMANetlink = errors.New("no RDMA netlink view")

// Port states as ib_port_state numbers them (include/rdma/ib_verbs.h), the
// names sysfs's ports/N/state and iproute2's rdma/link.c print.
var rdmaPortStates = []string{"NOP", "DOWN", "INIT", "ARMED", "ACTIVE", "ACTIVE_DEFER"}

// Physical port states (IB_PORT_PHYS_STATE_*), named as rdma/link.c names
// them.
var rdmaPhysStates = []string{"NOP", "SLEEP", "POLLING", "DISABLED", "ARMED", "LINK_UP",
	"LINK_ERROR_RECOVER", "PHY_TEST", "UNKNOWN", "OPA_OFFLINE", "UNKNOWN", "OPA_TEST"}

func stateName(names []string, v uint8) string {
	if int(v) < len(names) {
		return names[v]
	}
	return fmt.Sprintf("UNKNOWN(%d)", v)
}

// rdmaDevsRequest is the dump of every RDMA device (rdma dev show).
func rdmaDevsRequest() *nl.NetlinkRequest {
	return nl.NewNetlinkRequest(rdmaMsgType(rdmaCmdGet), unix.NLM_F_ACK|unix.NLM_F_DUMP)
}

// rdmaPortsRequest is the dump of one device's ports (rdma link show DEV).
func rdmaPortsRequest(devIndex uint32) *nl.NetlinkRequest {
	req := nl.NewNetlinkRequest(rdmaMsgType(rdmaCmdPortGet), unix.NLM_F_ACK|unix.NLM_F_DUMP)
	req.AddData(nl.NewRtAttr(rdmaAttrDevIndex, nl.Uint32Attr(devIndex)))
	return req
}

// rdmaAttrs is one message's attributes by type. A message without a
// family header: RDMA netlink attributes follow the nlmsghdr directly.
type rdmaAttrs map[uint16][]byte

// parseRDMAAttrs splits a message's payload into its attributes. The walk
// is its own rather than nl.ParseRouteAttr, which slices past the end of a
// message whose last attribute is not padded to 4 bytes.
func parseRDMAAttrs(payload []byte) (rdmaAttrs, error) {
	a := rdmaAttrs{}
	for b := payload; len(b) > 0; {
		if len(b) < unix.SizeofRtAttr {
			return nil, fmt.Errorf("RDMA netlink message: %d trailing bytes", len(b))
		}
		n := int(nl.NativeEndian().Uint16(b[0:2]))
		t := nl.NativeEndian().Uint16(b[2:4]) &^ (unix.NLA_F_NESTED | unix.NLA_F_NET_BYTEORDER)
		if n < unix.SizeofRtAttr || n > len(b) {
			return nil, fmt.Errorf("RDMA netlink message: attribute %d of length %d in %d bytes", t, n, len(b))
		}
		a[t] = b[unix.SizeofRtAttr:n]
		b = b[min(len(b), (n+unix.NLA_ALIGNTO-1)&^(unix.NLA_ALIGNTO-1)):]
	}
	return a, nil
}

func (a rdmaAttrs) u32(t uint16, what string) (uint32, bool, error) {
	v, ok := a[t]
	if !ok {
		return 0, false, nil
	}
	if len(v) != 4 {
		return 0, true, fmt.Errorf("RDMA netlink %s: %d bytes, want 4", what, len(v))
	}
	return nl.NativeEndian().Uint32(v), true, nil
}

func (a rdmaAttrs) u8(t uint16, what string) (uint8, bool, error) {
	v, ok := a[t]
	if !ok {
		return 0, false, nil
	}
	if len(v) != 1 {
		return 0, true, fmt.Errorf("RDMA netlink %s: %d bytes, want 1", what, len(v))
	}
	return v[0], true, nil
}

// str reads a NUL-terminated string attribute (nla_put_string).
func (a rdmaAttrs) str(t uint16, what string) (string, bool, error) {
	v, ok := a[t]
	if !ok {
		return "", false, nil
	}
	s, found := strings.CutSuffix(string(v), "\x00")
	if !found || strings.IndexByte(s, 0) >= 0 {
		return "", true, fmt.Errorf("RDMA netlink %s: not a NUL-terminated string", what)
	}
	return s, true, nil
}

// rdmaDev is one device of the CMD_GET dump.
type rdmaDev struct {
	index uint32
	name  string
}

// parseRDMADev decodes one message of the CMD_GET dump (fill_dev_info:
// the device's index and name come first, fill_nldev_handle).
func parseRDMADev(payload []byte) (rdmaDev, error) {
	a, err := parseRDMAAttrs(payload)
	if err != nil {
		return rdmaDev{}, err
	}
	idx, okI, err1 := a.u32(rdmaAttrDevIndex, "device index")
	name, okN, err2 := a.str(rdmaAttrDevName, "device name")
	if err := errors.Join(err1, err2); err != nil {
		return rdmaDev{}, err
	}
	if !okI || !okN || name == "" {
		return rdmaDev{}, errors.New("RDMA netlink device message without index or name")
	}
	return rdmaDev{index: idx, name: name}, nil
}

// parseRDMAPort decodes one message of the PORT_GET dump (fill_port_info).
func parseRDMAPort(payload []byte) (RDMALink, error) {
	a, err := parseRDMAAttrs(payload)
	if err != nil {
		return RDMALink{}, err
	}
	var l RDMALink
	var port, ndev uint32
	var state, phys uint8
	var okI, okN, okP, okS, okPh, okNI, okNN bool
	var errs [7]error
	l.DevIndex, okI, errs[0] = a.u32(rdmaAttrDevIndex, "device index")
	l.Device, okN, errs[1] = a.str(rdmaAttrDevName, "device name")
	port, okP, errs[2] = a.u32(rdmaAttrPortIndex, "port index")
	state, okS, errs[3] = a.u8(rdmaAttrState, "port state")
	phys, okPh, errs[4] = a.u8(rdmaAttrPhysState, "physical state")
	ndev, okNI, errs[5] = a.u32(rdmaAttrNdevIndex, "netdev index")
	l.Netdev, okNN, errs[6] = a.str(rdmaAttrNdevName, "netdev name")
	if err := errors.Join(errs[:]...); err != nil {
		return RDMALink{}, err
	}
	if !okI || !okN || !okP || l.Device == "" || port == 0 || port > 1<<16 {
		return RDMALink{}, fmt.Errorf("RDMA netlink port message without device or a valid port (device %q, port %d)", l.Device, port)
	}
	// ib_query_port fills both states on every port; a message without
	// one is not a port the tables can name.
	if !okS || !okPh {
		return RDMALink{}, fmt.Errorf("RDMA netlink port %s/%d without its state", l.Device, port)
	}
	if okNI != okNN || (okNN && (l.Netdev == "" || ndev == 0)) || ndev > 1<<31-1 {
		return RDMALink{}, fmt.Errorf("RDMA netlink port %s/%d: netdev name and index do not come together", l.Device, port)
	}
	l.Port, l.NetdevIndex = int(port), int(ndev)
	l.State, l.PhysState = stateName(rdmaPortStates, state), stateName(rdmaPhysStates, phys)
	return l, nil
}

// sortRDMALinks orders links by device (mlx5_2 before mlx5_10), then port.
func sortRDMALinks(links []RDMALink) {
	slices.SortStableFunc(links, func(a, b RDMALink) int {
		switch {
		case a.Device == b.Device:
			return a.Port - b.Port
		case naturalLess(a.Device, b.Device):
			return -1
		}
		return 1
	})
}

// ibCoreLoaded says whether the kernel's RDMA core is there (a module
// loaded, or built in: ib_core has parameters, so /sys/module/ib_core
// exists either way). This is the live host's /sys, not an FS: it decides
// what Live, the live kernel, may open.
func ibCoreLoaded() error {
	if _, err := os.Stat("/sys/module/ib_core"); err != nil {
		return fmt.Errorf("%w: the RDMA core (ib_core) is not loaded", ErrNoRDMANetlink)
	}
	return nil
}

// openRDMASocket opens the NETLINK_RDMA socket, unless ib_core is absent
// (loaded says why): opening it would then make the kernel load ib_core
// (netlink_create asks for module net-pf-16-proto-20, an alias of
// ib_core), a side effect an audit of a host without RDMA must not have.
func openRDMASocket(loaded error) (*nl.SocketHandle, error) {
	if loaded != nil {
		return nil, loaded
	}
	s, err := nl.GetNetlinkSocketAt(netns.None(), netns.None(), unix.NETLINK_RDMA)
	if err != nil {
		return nil, fmt.Errorf("%w: open NETLINK_RDMA socket: %w", ErrNoRDMANetlink, err)
	}
	// Without both timeouts a kernel that never answers would hang the
	// audit; a socket that refuses them is not used.
	tv := unix.NsecToTimeval(netlinkTimeout.Nanoseconds())
	err = s.SetSendTimeout(&tv)
	if err == nil {
		err = s.SetReceiveTimeout(&tv)
	}
	if err != nil {
		s.Close()
		return nil, fmt.Errorf("%w: NETLINK_RDMA socket: %w", ErrNoRDMANetlink, err)
	}
	return &nl.SocketHandle{Socket: s}, nil
}

// rdmaDumpTries bounds the retries of a dump the kernel interrupted
// (NLM_F_DUMP_INTR: a device came or went while it was dumped).
const rdmaDumpTries = 3

// RDMALinks lists every RDMA device port of the live host with its state
// and, when it is in this Live's namespace, its netdev. It answers only
// for the live root: under --root the tree is another host's.
func (l *Live) RDMALinks(fs FS) ([]RDMALink, error) {
	if fs.Root() != "/" {
		return nil, fmt.Errorf("%w: the files are read under %s, and the live kernel's RDMA netlink speaks of this host", ErrNoRDMANetlink, fs.Root())
	}
	if l.rdma == nil {
		return nil, l.rdmaErr
	}
	devMsgs, err := l.rdmaDump(rdmaDevsRequest)
	if err != nil {
		return nil, fmt.Errorf("RDMA netlink device dump: %w", err)
	}
	var links []RDMALink
	for _, m := range devMsgs {
		d, err := parseRDMADev(m)
		if err != nil {
			return nil, err
		}
		// A device removed between the two dumps fails its port dump
		// with EINVAL, as a malformed request would: either way the
		// view is not whole, and discovery reads sysfs instead.
		portMsgs, err := l.rdmaDump(func() *nl.NetlinkRequest { return rdmaPortsRequest(d.index) })
		if err != nil {
			return nil, fmt.Errorf("RDMA netlink port dump of %s: %w", d.name, err)
		}
		for _, pm := range portMsgs {
			p, err := parseRDMAPort(pm)
			if err != nil {
				return nil, err
			}
			links = append(links, p)
		}
	}
	sortRDMALinks(links)
	return links, nil
}

// rdmaDump runs one dump request on the RDMA socket, again when the
// kernel says the dump was interrupted.
func (l *Live) rdmaDump(newReq func() *nl.NetlinkRequest) ([][]byte, error) {
	var err error
	for range rdmaDumpTries {
		req := newReq()
		req.Sockets = map[int]*nl.SocketHandle{unix.NETLINK_RDMA: l.rdma}
		var msgs [][]byte
		msgs, err = req.Execute(unix.NETLINK_RDMA, 0)
		if !errors.Is(err, nl.ErrDumpInterrupted) {
			return msgs, err
		}
	}
	return nil, err
}
