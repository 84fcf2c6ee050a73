package verify

import (
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"syscall"
	"testing"
)

// Every enum ibv_wc_status value of rdma-core's libibverbs/verbs.h
// (rdma-core 44 as installed by libibverbs-dev, same order in rdma-core
// master), with ibv_wc_status_str()'s text as printed by that library.
// verbs_cgo_test.go checks the texts against the library itself.
var wcStatusTable = []struct {
	n          int
	name, text string
	cause      string // a phrase the diagnosis must contain
}{
	{0, "IBV_WC_SUCCESS", "success", ""},
	{1, "IBV_WC_LOC_LEN_ERR", "local length error", "message longer than the posted receive buffer"},
	{2, "IBV_WC_LOC_QP_OP_ERR", "local QP operation error", "malformed work request"},
	{3, "IBV_WC_LOC_EEC_OP_ERR", "local EE context operation error", "not expected on an RC QP"},
	{4, "IBV_WC_LOC_PROT_ERR", "local protection error", "not covered by the memory region"},
	{5, "IBV_WC_WR_FLUSH_ERR", "Work Request Flushed Error", "see the first error"},
	{6, "IBV_WC_MW_BIND_ERR", "memory management operation error", "memory window"},
	{7, "IBV_WC_BAD_RESP_ERR", "bad response error", "unexpected transport opcode"},
	{8, "IBV_WC_LOC_ACCESS_ERR", "local access error", "lacks the access rights"},
	{9, "IBV_WC_REM_INV_REQ_ERR", "remote invalid request error", "larger than its receive buffer"},
	{10, "IBV_WC_REM_ACCESS_ERR", "remote access error", "wrong rkey or remote address"},
	{11, "IBV_WC_REM_OP_ERR", "remote operation error", "could not complete"},
	{12, "IBV_WC_RETRY_EXC_ERR", "transport retry counter exceeded", "no ACKs: wrong GID index / no route / MTU mismatch / peer down"},
	{13, "IBV_WC_RNR_RETRY_EXC_ERR", "RNR retry counter exceeded", "receiver not ready"},
	{14, "IBV_WC_LOC_RDD_VIOL_ERR", "local RDD violation error", "not expected on an RC QP"},
	{15, "IBV_WC_REM_INV_RD_REQ_ERR", "remote invalid RD request", "not expected on an RC QP"},
	{16, "IBV_WC_REM_ABORT_ERR", "aborted error", "aborted"},
	{17, "IBV_WC_INV_EECN_ERR", "invalid EE context number", "not expected on an RC QP"},
	{18, "IBV_WC_INV_EEC_STATE_ERR", "invalid EE context state", "not expected on an RC QP"},
	{19, "IBV_WC_FATAL_ERR", "fatal error", "devlink health"},
	{20, "IBV_WC_RESP_TIMEOUT_ERR", "response timeout error", "pause storm"},
	{21, "IBV_WC_GENERAL_ERR", "general error", "vendor_err"},
	{22, "IBV_WC_TM_ERR", "TM error", "tag-matching"},
	{23, "IBV_WC_TM_RNDV_INCOMPLETE", "TM software rendezvous", "tag-matching"},
	{24, "IBV_WC_STATUS_24", "unknown", "unknown to this rocectl"},
}

func TestWCStatusTable(t *testing.T) {
	for _, tc := range wcStatusTable {
		s := WCStatus(tc.n)
		if s.String() != tc.name || s.Text() != tc.text {
			t.Errorf("status %d: %q %q, want %q %q", tc.n, s, s.Text(), tc.name, tc.text)
		}
		if tc.n == 0 && s.Cause() != "" || tc.n != 0 && !strings.Contains(s.Cause(), tc.cause) {
			t.Errorf("status %d (%s) cause %q, want it to contain %q", tc.n, s, s.Cause(), tc.cause)
		}
	}
	// The named constants are the enum values.
	for c, n := range map[WCStatus]int{WCSuccess: 0, WCLocLenErr: 1, WCLocQPOpErr: 2, WCLocProtErr: 4, WCWRFlushErr: 5,
		WCBadRespErr: 7, WCLocAccessErr: 8, WCRemInvReqErr: 9, WCRemAccessErr: 10, WCRemOpErr: 11, WCRetryExcErr: 12,
		WCRNRRetryExcErr: 13, WCFatalErr: 19, WCRespTimeoutErr: 20, WCGeneralErr: 21} {
		if int(c) != n || c.String() != wcStatusTable[n].name {
			t.Errorf("constant %s = %d, want %d", c, int(c), n)
		}
	}
}

func TestCompletionErrorMessage(t *testing.T) {
	// As the lab would report a write that got no ACKs (vendor_err as rxe sets it: 0).
	ce := CompletionError{Op: OpWrite, Status: WCRetryExcErr, QPN: 0x11, WRID: 1<<56 | 3}
	err := error(&VerbsError{Device: "rxe0", Port: 1, Op: opWrite, Kind: ErrCompletion, Completion: &ce,
		Cause: WCRetryExcErr.Cause()})
	want := "verbs rxe0/1: RDMA WRITE: write completion on QP 0x11: transport retry counter exceeded " +
		"(IBV_WC_RETRY_EXC_ERR, vendor_err 0x0): " + WCRetryExcErr.Cause()
	if err.Error() != want {
		t.Errorf("message\n got %q\nwant %q", err.Error(), want)
	}
	var got *CompletionError
	if !errors.Is(err, ErrCompletion) || !errors.As(err, &got) || got.Status != WCRetryExcErr || wrIDOp(got.WRID) != OpWrite {
		t.Errorf("errors.Is/As on %v", err)
	}
	if errors.Is(err, syscall.EINVAL) || errors.Is(err, ErrPathMTU) {
		t.Error("a completion error must not match unrelated kinds")
	}
	if !errors.Is(&ce, ErrCompletion) {
		t.Error("a bare CompletionError must match ErrCompletion")
	}
}

func TestDiagnoseSetup(t *testing.T) {
	for _, tc := range []struct {
		op    string
		errno syscall.Errno
		kind  error
		cause string
	}{
		{opToRTR, syscall.EINVAL, ErrQPTransition, "path MTU or GID invalid for this port"},
		{opToRTR, syscall.ETIMEDOUT, ErrQPTransition, "no route or neighbour"},
		{opToRTR, syscall.ENETUNREACH, ErrQPTransition, "no route or neighbour"},
		{opToRTR, syscall.EPERM, ErrQPTransition, "refused the remote address"},
		{opToInit, syscall.EINVAL, ErrQPTransition, "port number"},
		{opToRTS, syscall.EINVAL, ErrQPTransition, "retry/timeout"},
		{opRegMR, syscall.ENOMEM, ErrMemlock, "LimitMEMLOCK=infinity"},
		{opRegMR, syscall.EPERM, ErrMemlock, "RLIMIT_MEMLOCK"},
		{opQueryGID, syscall.ENODATA, ErrGIDInvalid, "gid_attrs/types"},
		{opQueryGID, syscall.EINVAL, ErrGIDInvalid, "out of the table"},
		{opOpenDevice, syscall.EACCES, nil, "/dev/infiniband/uverbs"},
		{opCreateQP, syscall.ENOMEM, nil, "max_qp_wr"},
		{opAllocPD, syscall.ENOMEM, nil, ""},
	} {
		cause, kind := diagnoseSetup(tc.op, tc.errno)
		if kind != tc.kind || !strings.Contains(cause, tc.cause) || (tc.cause == "") != (cause == "") {
			t.Errorf("%s %v: %v %q, want %v %q", tc.op, tc.errno, kind, cause, tc.kind, tc.cause)
		}
	}
	// The error built from it keeps the errno.
	cause, kind := diagnoseSetup(opToRTR, syscall.EINVAL)
	err := error(&VerbsError{Device: "mlx5_0", Port: 1, Op: opToRTR, Kind: kind, Errno: syscall.EINVAL, Cause: cause})
	if !errors.Is(err, syscall.EINVAL) || !errors.Is(err, ErrQPTransition) {
		t.Errorf("errors.Is on %v", err)
	}
	if want := "verbs mlx5_0/1: ibv_modify_qp INIT->RTR: invalid argument: " + cause; err.Error() != want {
		t.Errorf("message\n got %q\nwant %q", err.Error(), want)
	}
}

func TestPortError(t *testing.T) {
	e := portError("mlx5_1", 1, 1, linkLayerEthernet)
	if !errors.Is(e, ErrPortNotActive) || !strings.Contains(e.Error(), `port state is "down"`) {
		t.Errorf("down port: %v", e)
	}
	e = portError("mlx5_2", 1, portStateActive, linkLayerInfiniBand)
	if !errors.Is(e, ErrNotEthernet) || !strings.Contains(e.Error(), "link layer is InfiniBand") {
		t.Errorf("IB port: %v", e)
	}
	for s, want := range map[int]string{0: "no state change (NOP)", 2: "init", 3: "armed", 4: "active", 5: "active defer", 9: "unknown"} {
		if got := portStateName(s); got != want {
			t.Errorf("portStateName(%d) = %q, want %q (ibv_port_state_str)", s, got, want)
		}
	}
	if gidTypeName(gidTypeRoCEv2) != "RoCE v2" || gidTypeName(gidTypeRoCEv1) != "RoCE v1" {
		t.Error("gid type names")
	}
}

func TestWRIDOp(t *testing.T) {
	for wrid, want := range map[uint64]string{1<<56 | 5: OpWrite, 2 << 56: OpSend, 4<<56 | 0xffffffffffffff: OpSend,
		3 << 56: "recv", 9 << 56: "wr_id 0x900000000000000"} {
		if got := wrIDOp(wrid); got != want {
			t.Errorf("wrIDOp(%#x) = %q, want %q", wrid, got, want)
		}
	}
}

func TestCounterEvidence(t *testing.T) {
	// The stall of TestLabPathMTUTooBigOnTheWire: rxe's send_err raced up.
	got := counterEvidence(map[string]int64{"send_err": 6405, "sent_pkts": 0, "completer_retry_err": 3})
	if len(got) != 1 || !strings.HasPrefix(got[0], "send_err +6405: ") || !strings.Contains(got[0], "MTU mismatch") {
		t.Errorf("send_err evidence: %q", got)
	}
	// mlx5 loss: ACK timeouts and out-of-sequence, in that order; CNPs last.
	got = counterEvidence(map[string]int64{"np_cnp_sent": 12, "out_of_sequence": 4, "packet_seq_err": 2, "local_ack_timeout_err": 9})
	want := []string{
		"local_ack_timeout_err +9: ACK timeouts: requests or ACKs were lost on the path",
		"out_of_sequence +4, packet_seq_err +2: packets arrived out of sequence: loss on the fabric (is PFC enabled for this priority end to end?)",
		"np_cnp_sent +12: ECN congestion notifications: the path is congested",
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("mlx5 evidence\n got %q\nwant %q", got, want)
	}
	// A healthy rxe run (the lab's deltas) says nothing.
	if got := counterEvidence(rxeRunDelta); len(got) != 0 {
		t.Errorf("healthy run: %q", got)
	}
}

func TestExplainWithCounters(t *testing.T) {
	ve := &VerbsError{Device: "rxe0", Port: 1, Op: opWrite, Kind: ErrStalled, Cause: "no completion"}
	err := explainWithCounters(ve, map[string]int64{"send_err": 5}, nil)
	if err != error(ve) || !strings.Contains(err.Error(), "no completion [hw_counters: send_err +5: ") {
		t.Errorf("got %v", err)
	}
	if explainWithCounters(nil, nil, nil) != nil {
		t.Error("nil in, nil out")
	}
	var logged strings.Builder
	log := slog.New(slog.NewTextHandler(&logged, nil))
	if err := explainWithCounters(nil, map[string]int64{"out_of_sequence": 1}, log); err != nil || !strings.Contains(logged.String(), "out_of_sequence +1") {
		t.Errorf("a passing run with loss must be logged: %v %q", err, logged.String())
	}
	plain := errors.New("context canceled")
	if explainWithCounters(plain, map[string]int64{"send_err": 1}, nil) != plain {
		t.Error("a non-verbs error passes unchanged")
	}
}
