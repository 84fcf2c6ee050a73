package dcb

import (
	"errors"
	"fmt"

	"github.com/vishvananda/netlink/nl"
)

// Client talks dcbnl to the kernel over NETLINK_ROUTE. A Client from
// NewClientOn sends every request on the socket it is given, so its calls
// reach that socket's network namespace from any thread; one from NewClient
// opens a socket per call in the namespace of the calling OS thread. A
// Client holds no state of the host and is safe for concurrent use.
//
// The client sends exactly what it is given, one object per message, and
// never reads-modify-writes by itself. Callers do GET → modify → SET → GET,
// and the final GET is not optional: the kernel silently ignores a SET of
// ETS, MAXRATE, PFC or BUFFER when the driver lacks that operation and still
// reports success (reference §A1.4.3), and kernels before 6.1 skip PCP APP
// entries without a word.
//
// Errors are *Error values whose Err is the kernel's errno, whether it came
// as NLMSG_ERROR (bad request, no permission, no such device, no dcbnl_ops
// at all → EOPNOTSUPP; followed by the kernel's extended ACK message when
// it sent one) or as the in-band status of an IEEE_SET/IEEE_DEL reply;
// errors.Is(err, syscall.EOPNOTSUPP) works on both.
type Client struct {
	// acquire lends a socket for one request (socket.go); the tests hand
	// out a fake kernel.
	acquire func() (socket, error)
}

// NewClient returns a client for the kernel of the calling thread's network
// namespace.
func NewClient() *Client {
	return &Client{acquire: openSocket}
}

// NewClientOn returns a client whose requests all go over sock, an open
// NETLINK_ROUTE socket. The socket is bound to the namespace it was opened
// in, so a Live that opened it in a test's namespace can be used from
// goroutines on any thread, and a call costs no socket(2), bind(2) and
// close(2).
//
// The client shares sock with users of nl.NetlinkRequest.Execute: it holds
// the socket's lock for each request and numbers requests from sock.Seq.
func NewClientOn(sock *nl.SocketHandle) *Client {
	return &Client{acquire: func() (socket, error) { return lockSocket(sock), nil }}
}

// Get reads the IEEE DCB state of ifname (DCB_CMD_IEEE_GET), the link
// partner's IEEE DCBX in it when the driver reports one. When the DCBX mode
// says the firmware runs CEE (CEEPeerMode), it also reads the partner's
// CEE DCBX (DCB_CMD_CEE_GET) into State.CEEPeer: a CEE_GET that fails
// leaves CEEPeer nil (not reported) rather than failing the IEEE state,
// which is what every other caller reads Get for.
func (c *Client) Get(ifname string) (*State, error) {
	r, err := ieeeGetRequest(ifname)
	if err != nil {
		return nil, r.fail(err)
	}
	payload, err := c.roundTrip(r)
	if err != nil {
		return nil, r.fail(err)
	}
	st, err := DecodeGetReply(payload)
	if err != nil {
		return nil, r.fail(err)
	}
	if CEEPeerMode(st.DCBX) {
		if p, err := c.GetCEEPeer(ifname); err == nil {
			st.CEEPeer = p
		}
	}
	return st, nil
}

// GetCEEPeer reads the link partner's CEE DCBX as the driver reports it
// (DCB_CMD_CEE_GET); nil when the reply has no peer object.
func (c *Client) GetCEEPeer(ifname string) (*CEEPeer, error) {
	r, err := ceeGetRequest(ifname)
	if err != nil {
		return nil, r.fail(err)
	}
	payload, err := c.roundTrip(r)
	if err != nil {
		return nil, r.fail(err)
	}
	p, err := DecodeCEEGetReply(payload)
	if err != nil {
		return nil, r.fail(err)
	}
	return p, nil
}

// GetDCBX reads the DCBX mode alone (DCB_CMD_GDCBX). Get returns it too.
func (c *Client) GetDCBX(ifname string) (uint8, error) {
	r, err := gdcbxRequest(ifname)
	if err != nil {
		return 0, r.fail(err)
	}
	payload, err := c.roundTrip(r)
	if err != nil {
		return 0, r.fail(err)
	}
	mode, err := DecodeDCBXReply(payload)
	if err != nil {
		return 0, r.fail(err)
	}
	return mode, nil
}

// SetPFC sends struct ieee_pfc. Drivers use pfc_en, mbc and delay (mlx5:
// delay is the cable length in metres) and ignore the counters. On mlx5 a
// change of pfc_en flaps the link.
func (c *Client) SetPFC(ifname string, p PFC) error {
	return c.set(pfcSetRequest(ifname, p))
}

// SetETS validates e (ValidateETS), zeroes the bandwidth of non-ETS TCs and
// sends struct ieee_ets.
func (c *Client) SetETS(ifname string, e ETS) error {
	if err := ValidateETS(e); err != nil {
		return &Error{Op: "IEEE_SET ETS", Ifname: ifname, Err: err}
	}
	return c.set(etsSetRequest(ifname, e))
}

// SetBuffer validates b (ValidateBuffer) and sends struct dcbnl_buffer. On
// mlx5 any buffer SET switches the port to manual buffer sizing.
func (c *Client) SetBuffer(ifname string, b Buffer) error {
	if err := ValidateBuffer(b); err != nil {
		return &Error{Op: "IEEE_SET BUFFER", Ifname: ifname, Err: err}
	}
	return c.set(bufferSetRequest(ifname, b))
}

// SetMaxrate sends struct ieee_maxrate (kbit/s per TC, 0 = unlimited).
func (c *Client) SetMaxrate(ifname string, m Maxrate) error {
	return c.set(maxrateSetRequest(ifname, m))
}

// AddApps adds APP table entries (IEEE_SET), at most MaxAppsPerMessage per
// message. The kernel applies a message's entries in order and stops at the
// first failure, so after an error some entries may be in place: read back.
// Adding an entry that exists is -EEXIST in the generic table; mlx5 replaces
// the DSCP's mapping instead.
func (c *Client) AddApps(ifname string, apps []App) error {
	return c.apps(CmdIEEESet, ifname, apps)
}

// DelApps removes APP table entries (IEEE_DEL); an entry that does not
// exist (same selector, protocol and priority) is -ENOENT.
func (c *Client) DelApps(ifname string, apps []App) error {
	return c.apps(CmdIEEEDel, ifname, apps)
}

func (c *Client) apps(cmd uint8, ifname string, apps []App) error {
	if err := ValidateApps(apps); err != nil {
		op := "IEEE_SET APP"
		if cmd == CmdIEEEDel {
			op = "IEEE_DEL APP"
		}
		return &Error{Op: op, Ifname: ifname, Err: err}
	}
	for start := 0; start < len(apps); start += MaxAppsPerMessage {
		end := min(start+MaxAppsPerMessage, len(apps))
		if err := c.set(appRequest(cmd, ifname, apps[start:end])); err != nil {
			var e *Error
			if len(apps) > MaxAppsPerMessage && errors.As(err, &e) {
				// Say which message failed; the ones before it are applied.
				e.Err = fmt.Errorf("entries %d..%d: %w", start, end-1, e.Err)
			}
			return err
		}
	}
	return nil
}

// SetDCBX sets the DCBX mode (DCBX* bits; mlx5 wants DCBXHost|DCBXVerIEEE
// for host-managed IEEE DCB, 0 hands DCBX to the firmware). A refusal comes
// back as an *Error wrapping a *DCBXError.
func (c *Client) SetDCBX(ifname string, mode uint8) error {
	r, err := sdcbxRequest(ifname, mode)
	if err != nil {
		return r.fail(err)
	}
	payload, err := c.roundTrip(r)
	if err != nil {
		return r.fail(err)
	}
	status, err := DecodeDCBXReply(payload)
	if err != nil {
		return r.fail(err)
	}
	if status != 0 {
		return r.fail(&DCBXError{Mode: mode, Status: status})
	}
	return nil
}

// set runs an IEEE_SET/IEEE_DEL request and turns both kinds of failure
// (NLMSG_ERROR and the in-band status) into an *Error.
func (c *Client) set(r *request, err error) error {
	if err != nil {
		return r.fail(err)
	}
	payload, err := c.roundTrip(r)
	if err != nil {
		return r.fail(err)
	}
	if err := DecodeSetReply(payload); err != nil {
		return r.fail(err)
	}
	return nil
}

func (r *request) fail(err error) error {
	return &Error{Op: r.op, Ifname: r.ifname, Err: err}
}
