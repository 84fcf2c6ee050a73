package dcb

import (
	"fmt"

	"github.com/vishvananda/netlink/nl"
	"golang.org/x/sys/unix"
)

// Request builders. Every message is
//
//	nlmsghdr | dcbmsg{AF_UNSPEC, cmd, 0} | DCB_ATTR_IFNAME "name\0" | [payload attrs]
//
// built with nl.NewNetlinkRequest and nl.NewRtAttr (reference §A1.7). GETs
// carry NLM_F_REQUEST only, SETs NLM_F_REQUEST|NLM_F_ACK, as in the vectors
// of §A1.6. Nests are sent with NLA_F_NESTED set, as iproute2 (libmnl) does;
// the kernel parses them with nla_parse_nested_deprecated and accepts either.
//
// Each SET carries exactly one object. The kernel processes a multi-object
// IEEE_SET in a fixed order and aborts at the first failure, leaving earlier
// objects applied and reporting one status for all of them (§A1.4.2); one
// object per message makes the status attributable.

// MaxAppsPerMessage bounds the APP entries in one IEEE_SET/IEEE_DEL: 64
// entries of 8 bytes make a 552-byte message on "eth0" (all 64 DSCP values
// fit in one), far from the u16 attribute length limit and well under a
// page.
const MaxAppsPerMessage = 64

// request is a built message plus what the client needs to run it.
type request struct {
	msg     *nl.NetlinkRequest
	op      string // for *Error.Op
	ifname  string
	resType uint16 // RTM_GETDCB or RTM_SETDCB: the reply's nlmsg_type
}

// dcbmsg is struct dcbmsg; it implements nl.NetlinkRequestData.
type dcbmsg struct{ cmd uint8 }

func (d dcbmsg) Len() int          { return 4 }
func (d dcbmsg) Serialize() []byte { return []byte{unix.AF_UNSPEC, d.cmd, 0, 0} }

func newRequest(op string, msgType uint16, cmd uint8, ifname string) (*request, error) {
	r := &request{op: op, ifname: ifname, resType: msgType}
	// On error r still names the operation, for the caller's *Error.
	if err := validateIfname(ifname); err != nil {
		return r, err
	}
	flags := 0
	if msgType == unix.RTM_SETDCB {
		flags = unix.NLM_F_ACK
	}
	m := nl.NewNetlinkRequest(int(msgType), flags)
	m.AddData(dcbmsg{cmd})
	m.AddData(nl.NewRtAttr(int(AttrIfname), nl.ZeroTerminated(ifname)))
	r.msg = m
	return r, nil
}

// bytes serializes r with a fixed sequence number (the nl package numbers
// requests from a process-wide counter; tests and captures want it fixed).
func (r *request) bytes(seq uint32) []byte {
	r.msg.Seq = seq
	return r.msg.Serialize()
}

func ieeeGetRequest(ifname string) (*request, error) {
	return newRequest("IEEE_GET", unix.RTM_GETDCB, CmdIEEEGet, ifname)
}

// ceeGetRequest is CEE_GET: the same shape as IEEE_GET (dcbnl_cee_get
// needs nothing but the name).
func ceeGetRequest(ifname string) (*request, error) {
	return newRequest("CEE_GET", unix.RTM_GETDCB, CmdCEEGet, ifname)
}

func gdcbxRequest(ifname string) (*request, error) {
	return newRequest("GDCBX", unix.RTM_GETDCB, CmdGDCBX, ifname)
}

func sdcbxRequest(ifname string, mode uint8) (*request, error) {
	r, err := newRequest("SDCBX", unix.RTM_SETDCB, CmdSDCBX, ifname)
	if err != nil {
		return r, err
	}
	// iproute2 sends SDCBX bare: the u8 sits at top level, not in a nest.
	r.msg.AddData(nl.NewRtAttr(int(AttrDCBX), []byte{mode}))
	return r, nil
}

// ieeeSetRequest builds IEEE_SET with one object inside DCB_ATTR_IEEE.
func ieeeSetRequest(op, ifname string, attr uint16, payload []byte) (*request, error) {
	r, err := newRequest("IEEE_SET "+op, unix.RTM_SETDCB, CmdIEEESet, ifname)
	if err != nil {
		return r, err
	}
	ieee := nl.NewRtAttr(int(AttrIEEE)|unix.NLA_F_NESTED, nil)
	ieee.AddRtAttr(int(attr), payload)
	r.msg.AddData(ieee)
	return r, nil
}

func pfcSetRequest(ifname string, p PFC) (*request, error) {
	b, _ := p.MarshalBinary()
	return ieeeSetRequest("PFC", ifname, AttrIEEEPFC, b)
}

// etsSetRequest zeroes tc_tx_bw of non-ETS TCs first: mlx5 reports 100 for
// strict/vendor TCs on GET and newer kernels reject a non-ETS TC with
// bandwidth (§A1.4.6), so a GET→modify→SET must not send them back.
func etsSetRequest(ifname string, e ETS) (*request, error) {
	e = NormalizeETS(e)
	b, _ := e.MarshalBinary()
	return ieeeSetRequest("ETS", ifname, AttrIEEEETS, b)
}

func bufferSetRequest(ifname string, bu Buffer) (*request, error) {
	b, _ := bu.MarshalBinary()
	return ieeeSetRequest("BUFFER", ifname, AttrDCBBuffer, b)
}

func maxrateSetRequest(ifname string, m Maxrate) (*request, error) {
	b, _ := m.MarshalBinary()
	return ieeeSetRequest("MAXRATE", ifname, AttrIEEEMaxrate, b)
}

// appRequest builds IEEE_SET (add) or IEEE_DEL (delete) of APP entries:
// DCB_ATTR_IEEE{APP_TABLE{APP, APP, ...}}, each entry under the attribute
// type the kernel pairs with its selector (1 for IEEE selectors, 2 for PCP).
func appRequest(cmd uint8, ifname string, apps []App) (*request, error) {
	op := "IEEE_SET APP"
	if cmd == CmdIEEEDel {
		op = "IEEE_DEL APP"
	}
	r, err := newRequest(op, unix.RTM_SETDCB, cmd, ifname)
	if err != nil {
		return r, err
	}
	if len(apps) > MaxAppsPerMessage {
		return r, fmt.Errorf("%d APP entries in one message, at most %d", len(apps), MaxAppsPerMessage)
	}
	ieee := nl.NewRtAttr(int(AttrIEEE)|unix.NLA_F_NESTED, nil)
	table := ieee.AddRtAttr(int(AttrIEEEAppTable)|unix.NLA_F_NESTED, nil)
	for i := range apps {
		table.AddRtAttr(int(appAttrType(apps[i].Selector)), apps[i].appendBinary(make([]byte, 0, SizeApp)))
	}
	r.msg.AddData(ieee)
	return r, nil
}
