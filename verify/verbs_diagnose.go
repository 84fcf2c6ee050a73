package verify

import (
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"syscall"
)

// Translation of verbs failures into what an operator can check. The
// numbers are enum ibv_wc_status of rdma-core's libibverbs/verbs.h
// (unchanged from rdma-core v13 to today: SUCCESS = 0 ... TM_RNDV_INCOMPLETE
// = 23), the texts are ibv_wc_status_str()'s, so that logs match what
// perftest and rc_pingpong print. No cgo here: the diagnosis is also used
// by the two-host peer that only receives a status number.

// Sentinel kinds of VerbsError; test with errors.Is.
var (
	ErrNoDevice      = errors.New("RDMA device not found")
	ErrPortNotActive = errors.New("port not ACTIVE")
	ErrNotEthernet   = errors.New("port link layer is not Ethernet (not a RoCE port)")
	ErrGIDInvalid    = errors.New("GID index not populated")
	ErrNotRoCEv2     = errors.New("GID is not RoCE v2")
	ErrPathMTU       = errors.New("path MTU larger than the port allows")
	ErrMemlock       = errors.New("memory registration refused (RLIMIT_MEMLOCK)")
	ErrQPTransition  = errors.New("QP state transition refused")
	ErrCompletion    = errors.New("work completion failed")
	ErrStalled       = errors.New("no completion within the stall timeout")
	ErrDataMismatch  = errors.New("received data differs from what was sent")
	ErrHandshake     = errors.New("two-host handshake failed")
	ErrPeerFailed    = errors.New("peer reported a failure")
)

// WCStatus is enum ibv_wc_status.
type WCStatus int

// The statuses rocectl gives a specific diagnosis for.
const (
	WCSuccess        WCStatus = 0
	WCLocLenErr      WCStatus = 1
	WCLocQPOpErr     WCStatus = 2
	WCLocProtErr     WCStatus = 4
	WCWRFlushErr     WCStatus = 5
	WCBadRespErr     WCStatus = 7
	WCLocAccessErr   WCStatus = 8
	WCRemInvReqErr   WCStatus = 9
	WCRemAccessErr   WCStatus = 10
	WCRemOpErr       WCStatus = 11
	WCRetryExcErr    WCStatus = 12
	WCRNRRetryExcErr WCStatus = 13
	WCFatalErr       WCStatus = 19
	WCRespTimeoutErr WCStatus = 20
	WCGeneralErr     WCStatus = 21
)

// wcStatusInfo is one row of the status table: the enum name, the text
// ibv_wc_status_str returns, and the operator-facing cause.
type wcStatusInfo struct {
	name, text, cause string
}

const causeRDOnly = "reliable-datagram (RD) status, not expected on an RC QP: libibverbs or driver bug"

// info is a switch rather than a table variable so that the package keeps
// no mutable state.
func (s WCStatus) info() wcStatusInfo {
	switch s {
	case 0:
		return wcStatusInfo{"IBV_WC_SUCCESS", "success", ""}
	case 1:
		return wcStatusInfo{"IBV_WC_LOC_LEN_ERR", "local length error",
			"message longer than the posted receive buffer or the port's max_msg_sz: check the message size on both ends"}
	case 2:
		return wcStatusInfo{"IBV_WC_LOC_QP_OP_ERR", "local QP operation error",
			"malformed work request or QP not in RTS (more SGEs or inline data than the QP was created with)"}
	case 3:
		return wcStatusInfo{"IBV_WC_LOC_EEC_OP_ERR", "local EE context operation error", causeRDOnly}
	case 4:
		return wcStatusInfo{"IBV_WC_LOC_PROT_ERR", "local protection error",
			"local buffer not covered by the memory region, or wrong lkey/PD"}
	case 5:
		return wcStatusInfo{"IBV_WC_WR_FLUSH_ERR", "Work Request Flushed Error",
			"flushed: the QP had already failed (see the first error) or was moved to the error state"}
	case 6:
		return wcStatusInfo{"IBV_WC_MW_BIND_ERR", "memory management operation error",
			"memory window bind failed (rocectl binds no windows): driver bug"}
	case 7:
		return wcStatusInfo{"IBV_WC_BAD_RESP_ERR", "bad response error",
			"unexpected transport opcode in the peer's response: peer QP mismatch or firmware problem"}
	case 8:
		return wcStatusInfo{"IBV_WC_LOC_ACCESS_ERR", "local access error",
			"the memory region lacks the access rights the incoming RDMA WRITE needs (LOCAL_WRITE/REMOTE_WRITE)"}
	case 9:
		return wcStatusInfo{"IBV_WC_REM_INV_REQ_ERR", "remote invalid request error",
			"the peer rejected the request: message larger than its receive buffer, unsupported opcode, or its QP not ready"}
	case 10:
		return wcStatusInfo{"IBV_WC_REM_ACCESS_ERR", "remote access error",
			"the peer refused the RDMA access: wrong rkey or remote address, or its MR lacks remote write"}
	case 11:
		return wcStatusInfo{"IBV_WC_REM_OP_ERR", "remote operation error",
			"the peer could not complete the operation (its receive WQE was bad or its QP failed)"}
	case 12:
		return wcStatusInfo{"IBV_WC_RETRY_EXC_ERR", "transport retry counter exceeded",
			"no ACKs: wrong GID index / no route / MTU mismatch / peer down (use the RoCE v2 IPv4 GID, check routing and ARP to the peer, keep the path MTU within both ports' active_mtu, make sure the peer QP exists; on a lossless fabric also check for a PFC pause storm)"}
	case 13:
		return wcStatusInfo{"IBV_WC_RNR_RETRY_EXC_ERR", "RNR retry counter exceeded",
			"receiver not ready: the peer had no receive buffer posted and its RNR NAKs outlasted rnr_retry; the peer application is stalled or too slow"}
	case 14:
		return wcStatusInfo{"IBV_WC_LOC_RDD_VIOL_ERR", "local RDD violation error", causeRDOnly}
	case 15:
		return wcStatusInfo{"IBV_WC_REM_INV_RD_REQ_ERR", "remote invalid RD request", causeRDOnly}
	case 16:
		return wcStatusInfo{"IBV_WC_REM_ABORT_ERR", "aborted error",
			"the peer aborted the operation"}
	case 17:
		return wcStatusInfo{"IBV_WC_INV_EECN_ERR", "invalid EE context number", causeRDOnly}
	case 18:
		return wcStatusInfo{"IBV_WC_INV_EEC_STATE_ERR", "invalid EE context state", causeRDOnly}
	case 19:
		return wcStatusInfo{"IBV_WC_FATAL_ERR", "fatal error",
			"the device hit a fatal error: check dmesg and devlink health; the NIC may need a reset"}
	case 20:
		return wcStatusInfo{"IBV_WC_RESP_TIMEOUT_ERR", "response timeout error",
			"the peer did not answer in time: congestion, a pause storm, or the peer is overloaded"}
	case 21:
		return wcStatusInfo{"IBV_WC_GENERAL_ERR", "general error",
			"unclassified transport error: check vendor_err and dmesg"}
	case 22:
		return wcStatusInfo{"IBV_WC_TM_ERR", "TM error",
			"tag-matching error (rocectl uses no tag matching): driver bug"}
	case 23:
		return wcStatusInfo{"IBV_WC_TM_RNDV_INCOMPLETE", "TM software rendezvous",
			"tag-matching rendezvous incomplete (rocectl uses no tag matching): driver bug"}
	}
	return wcStatusInfo{fmt.Sprintf("IBV_WC_STATUS_%d", int(s)), "unknown",
		"status unknown to this rocectl version: check vendor_err and dmesg"}
}

// String is the enum name, e.g. "IBV_WC_RETRY_EXC_ERR".
func (s WCStatus) String() string { return s.info().name }

// Text is what ibv_wc_status_str prints, e.g. "transport retry counter exceeded".
func (s WCStatus) Text() string { return s.info().text }

// Cause is the operator-facing explanation; "" for success.
func (s WCStatus) Cause() string { return s.info().cause }

// CompletionError is one failed work completion.
type CompletionError struct {
	Op        string   `json:"op"` // "write", "send", "recv"
	Status    WCStatus `json:"status"`
	VendorErr uint32   `json:"vendor_err"`
	QPN       uint32   `json:"qpn"`
	WRID      uint64   `json:"wr_id"`
}

func (e *CompletionError) Error() string {
	return fmt.Sprintf("%s completion on QP 0x%x: %s (%s, vendor_err 0x%x): %s",
		e.Op, e.QPN, e.Status.Text(), e.Status, e.VendorErr, e.Status.Cause())
}

// Is makes errors.Is(err, ErrCompletion) true for every completion error.
func (e *CompletionError) Is(target error) bool { return target == ErrCompletion }

// VerbsError is a failed verbs step, with the errno the kernel or
// libibverbs returned (if any) and what to check.
type VerbsError struct {
	Device string
	Port   int
	Op     string        // "ibv_open_device", "ibv_modify_qp INIT->RTR", "RDMA WRITE", ...
	Kind   error         // one of the Err* sentinels above, or nil
	Errno  syscall.Errno // 0 when the step did not fail with an errno
	Cause  string        // what to check
	// Completion is set when the step failed with a work completion error.
	Completion *CompletionError
}

func (e *VerbsError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "verbs %s/%d: %s", e.Device, e.Port, e.Op)
	switch c := e.Completion; {
	case c != nil:
		fmt.Fprintf(&b, ": %s completion on QP 0x%x: %s (%s, vendor_err 0x%x)", c.Op, c.QPN, c.Status.Text(), c.Status, c.VendorErr)
	case e.Errno != 0:
		fmt.Fprintf(&b, ": %s", e.Errno.Error())
	case e.Kind != nil:
		fmt.Fprintf(&b, ": %s", e.Kind.Error())
	}
	if e.Cause != "" {
		fmt.Fprintf(&b, ": %s", e.Cause)
	}
	return b.String()
}

// Unwrap exposes the kind, the errno and the completion, so that
// errors.Is(err, ErrPathMTU), errors.Is(err, syscall.EINVAL) and
// errors.As(err, **CompletionError) all work.
func (e *VerbsError) Unwrap() []error {
	var out []error
	if e.Kind != nil {
		out = append(out, e.Kind)
	}
	if e.Errno != 0 {
		out = append(out, e.Errno)
	}
	if e.Completion != nil {
		out = append(out, e.Completion)
	}
	return out
}

// diagnoseSetup explains a failed setup step from the step and its errno.
// kind is the sentinel the failure belongs to (nil when it is a plain
// errno without a more specific meaning).
func diagnoseSetup(op string, errno syscall.Errno) (cause string, kind error) {
	switch {
	case op == opOpenDevice && (errno == syscall.EACCES || errno == syscall.EPERM):
		return "no access to /dev/infiniband/uverbs*: run as root or fix the device permissions", nil
	case op == opRegMR && (errno == syscall.ENOMEM || errno == syscall.EPERM || errno == syscall.EAGAIN):
		return "the locked-memory limit is too small for the buffer: raise RLIMIT_MEMLOCK (systemd LimitMEMLOCK=infinity, or ulimit -l unlimited)", ErrMemlock
	case op == opQueryGID:
		return "the GID index is empty or out of the table: no IP address behind it, or the wrong index (list /sys/class/infiniband/<dev>/ports/<port>/gids and gid_attrs/types)", ErrGIDInvalid
	case op == opToRTR && errno == syscall.EINVAL:
		return "path MTU or GID invalid for this port (path MTU above the port's max, or a GID index/destination the port cannot use)", ErrQPTransition
	case op == opToRTR && isNoRouteErrno(errno):
		return "no route or neighbour to the destination GID: check the IP route and ARP/ND toward the peer address from the GID's netdev", ErrQPTransition
	case op == opToRTR:
		return "the driver refused the remote address: check the GID index, the peer's GID and QP number", ErrQPTransition
	case op == opToInit || op == opToRTS:
		return "the driver refused the QP attributes (port number, access flags or retry/timeout values)", ErrQPTransition
	case op == opCreateQP || op == opCreateCQ:
		return "the device refused the queue sizes, or it ran out of resources (check max_qp_wr/max_cqe in ibv_devinfo -v)", nil
	}
	return "", nil
}

func isNoRouteErrno(e syscall.Errno) bool {
	switch e {
	case syscall.ENETUNREACH, syscall.EHOSTUNREACH, syscall.ETIMEDOUT, syscall.ENODATA, syscall.EADDRNOTAVAIL, syscall.ENODEV:
		return true
	}
	return false
}

// Names of the verbs steps, as they appear in VerbsError.Op.
const (
	opDeviceList = "ibv_get_device_list"
	opOpenDevice = "ibv_open_device"
	opQueryPort  = "ibv_query_port"
	opQueryGID   = "ibv_query_gid_ex"
	opAllocPD    = "ibv_alloc_pd"
	opRegMR      = "ibv_reg_mr"
	opCreateCQ   = "ibv_create_cq"
	opCreateQP   = "ibv_create_qp"
	opToInit     = "ibv_modify_qp RESET->INIT"
	opToRTR      = "ibv_modify_qp INIT->RTR"
	opToRTS      = "ibv_modify_qp RTR->RTS"
	opPostRecv   = "ibv_post_recv"
	opWrite      = "RDMA WRITE"
	opPingPong   = "SEND/RECV ping-pong"
)

// portStateName is ibv_port_state_str's text for enum ibv_port_state.
func portStateName(state int) string {
	switch state {
	case 0:
		return "no state change (NOP)"
	case 1:
		return "down"
	case 2:
		return "init"
	case 3:
		return "armed"
	case 4:
		return "active"
	case 5:
		return "active defer"
	}
	return "unknown"
}

// portError explains a port that cannot carry RoCE traffic.
func portError(dev string, port, state, linkLayer int) *VerbsError {
	e := &VerbsError{Device: dev, Port: port, Op: opQueryPort}
	switch {
	case linkLayer != linkLayerEthernet:
		e.Kind = ErrNotEthernet
		e.Cause = fmt.Sprintf("link layer is %s: RoCE needs an Ethernet port (an InfiniBand port is tested with IB tools)", linkLayerName(linkLayer))
	default:
		e.Kind = ErrPortNotActive
		e.Cause = fmt.Sprintf("port state is %q: the netdev under it is down or has no carrier (ip link; ethtool)", portStateName(state))
	}
	return e
}

// enum ibv_port_state / link layer / gid type values (infiniband/verbs.h).
const (
	portStateActive      = 4
	linkLayerUnspecified = 0
	linkLayerInfiniBand  = 1
	linkLayerEthernet    = 2
	gidTypeIB            = 0
	gidTypeRoCEv1        = 1
	gidTypeRoCEv2        = 2
)

func linkLayerName(ll int) string {
	switch ll {
	case linkLayerUnspecified:
		return "unspecified"
	case linkLayerInfiniBand:
		return "InfiniBand"
	case linkLayerEthernet:
		return "Ethernet"
	}
	return fmt.Sprintf("unknown (%d)", ll)
}

func gidTypeName(t int) string {
	switch t {
	case gidTypeIB:
		return "IB"
	case gidTypeRoCEv1:
		return "RoCE v1"
	case gidTypeRoCEv2:
		return "RoCE v2"
	}
	return fmt.Sprintf("unknown (%d)", t)
}

// Kinds of work request, kept in the top byte of wr_id by the C loops
// (SHIM_WR_* in verbs_shim.h): a failed completion's opcode is undefined,
// its wr_id is not.
const (
	wrKindWrite = 1
	wrKindSend  = 2
	wrKindRecv  = 3
	wrKindStop  = 4
)

// wrIDOp names the operation a wr_id belongs to.
func wrIDOp(wrid uint64) string {
	switch wrid >> 56 {
	case wrKindWrite:
		return OpWrite
	case wrKindSend, wrKindStop:
		return OpSend
	case wrKindRecv:
		return "recv"
	}
	return fmt.Sprintf("wr_id 0x%x", wrid)
}

// counterHint is what a moving hw_counter says about a run. The names are
// the rxe and mlx5 ones of reference §A4.2.
type counterHint struct {
	names []string
	what  string
}

// counterHints lists, most telling first, the counters that explain a
// failed or degraded run. Counters that move in every healthy run
// (sent_pkts, rdma_sends, and on a slow rxe host duplicate_request and
// completer_retry_err) are not listed.
func counterHints() []counterHint {
	return []counterHint{
		{[]string{"send_err"}, "the device could not transmit RoCE packets: a path MTU above the netdev MTU (MTU mismatch), or the netdev is down"},
		{[]string{"link_downed"}, "the link went down during the run"},
		{[]string{"retry_exceeded_err", "local_ack_timeout_err"}, "ACK timeouts: requests or ACKs were lost on the path"},
		{[]string{"out_of_sequence", "packet_seq_err", "out_of_seq_request", "rcvd_seq_err", "implied_nak_seq_err"}, "packets arrived out of sequence: loss on the fabric (is PFC enabled for this priority end to end?)"},
		{[]string{"rnr_nak_retry_err", "rcvd_rnr_err", "send_rnr_err", "retry_rnr_exceeded_err"}, "receiver-not-ready NAKs: the receiver ran out of posted buffers"},
		{[]string{"req_remote_access_errors", "resp_remote_access_errors", "req_remote_invalid_request"}, "the responder refused requests (rkey, address or opcode)"},
		{[]string{"np_cnp_sent", "rp_cnp_handled", "np_ecn_marked_roce_packets"}, "ECN congestion notifications: the path is congested"},
	}
}

// counterEvidence turns the counter deltas of a run into hints such as
// "send_err +75821: the device could not transmit ...".
func counterEvidence(deltas map[string]int64) []string {
	var out []string
	for _, h := range counterHints() {
		var moved []string
		for _, n := range h.names {
			if d := deltas[n]; d > 0 {
				moved = append(moved, fmt.Sprintf("%s +%d", n, d))
			}
		}
		if len(moved) > 0 {
			out = append(out, strings.Join(moved, ", ")+": "+h.what)
		}
	}
	return out
}

// explainWithCounters adds the counter evidence to a failed run's
// VerbsError (the counters are read after the run, when the error already
// exists), and logs it as a warning when the run passed anyway.
func explainWithCounters(err error, deltas map[string]int64, log *slog.Logger) error {
	hints := counterEvidence(deltas)
	if len(hints) == 0 {
		return err
	}
	var ve *VerbsError
	if errors.As(err, &ve) {
		ve.Cause = strings.TrimSpace(ve.Cause + " [hw_counters: " + strings.Join(hints, "; ") + "]")
		return err
	}
	if err == nil && log != nil {
		log.Warn("verbs run passed but the port counters show trouble", "hints", hints)
	}
	return err
}
