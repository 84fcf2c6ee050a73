//go:build cgo && verbs

package verify

/*
#cgo LDFLAGS: -libverbs
#include <stdlib.h>
#include "verbs_shim.h"
*/
import "C"

import (
	"bytes"
	"context"
	"fmt"
	"hash/crc32"
	"log/slog"
	"math/rand/v2"
	"net/netip"
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/rocectl/rocectl/nic"
)

// verbsBuiltIn says whether this binary can run verbs traffic.
const verbsBuiltIn = true

// verbsDevice is one opened device/port with its protection domain and one
// registered buffer (steps 1-4 of reference §D).
type verbsDevice struct {
	name string
	port int
	log  *slog.Logger

	ctx    *C.struct_ibv_context
	pd     *C.struct_ibv_pd
	mr     *C.struct_ibv_mr
	buf    unsafe.Pointer // C memory: the MR must not move and Go must not own it
	bufLen int

	activeMTU int // bytes
	lid       uint16
	gidIndex  int
	gid       [16]byte
	gidType   int
}

func (d *verbsDevice) fail(op string, e C.int) *VerbsError {
	errno := syscall.Errno(e)
	cause, kind := diagnoseSetup(op, errno)
	return &VerbsError{Device: d.name, Port: d.port, Op: op, Kind: kind, Errno: errno, Cause: cause}
}

// openVerbsDevice opens cfg.Device, checks that cfg.Port can carry RoCE,
// reads the GID and registers a bufLen buffer. On error everything opened
// so far is released again.
func openVerbsDevice(cfg LoopbackConfig, bufLen int) (_ *verbsDevice, err error) {
	d := &verbsDevice{name: cfg.Device, port: cfg.Port, log: cfg.Log, gidIndex: cfg.GIDIndex}
	defer func() {
		if err != nil {
			d.close()
		}
	}()
	if err := d.open(); err != nil {
		return nil, err
	}

	var pa C.struct_ibv_port_attr
	if e := C.shim_query_port(d.ctx, C.uint8_t(d.port), &pa); e != 0 {
		return nil, d.fail(opQueryPort, e)
	}
	if int(pa.link_layer) != linkLayerEthernet || int(pa.state) != portStateActive {
		return nil, portError(d.name, d.port, int(pa.state), int(pa.link_layer))
	}
	d.activeMTU = ibMTUBytes(int(pa.active_mtu))
	d.lid = uint16(pa.lid)

	var ge C.struct_ibv_gid_entry
	if e := C.shim_query_gid(d.ctx, C.uint32_t(d.port), C.uint32_t(cfg.GIDIndex), &ge); e != 0 {
		ve := d.fail(opQueryGID, e)
		ve.Cause = fmt.Sprintf("GID index %d (table size %d): %s", cfg.GIDIndex, int(pa.gid_tbl_len), ve.Cause)
		return nil, ve
	}
	d.gid = *(*[16]byte)(unsafe.Pointer(&ge.gid))
	d.gidType = int(ge.gid_type)
	if d.gid == ([16]byte{}) {
		return nil, &VerbsError{Device: d.name, Port: d.port, Op: opQueryGID, Kind: ErrGIDInvalid,
			Cause: fmt.Sprintf("GID index %d is all zero: no address behind it", cfg.GIDIndex)}
	}
	if cfg.RequireRoCEv2 && d.gidType != gidTypeRoCEv2 {
		return nil, &VerbsError{Device: d.name, Port: d.port, Op: opQueryGID, Kind: ErrNotRoCEv2,
			Cause: fmt.Sprintf("GID index %d (%s) is %s: pick the RoCE v2 entry (gid_attrs/types/<index> says \"RoCE v2\")",
				cfg.GIDIndex, d.gidString(), gidTypeName(d.gidType))}
	}
	d.log.Debug("verbs port", "device", d.name, "port", d.port, "active_mtu", d.activeMTU,
		"gid_index", cfg.GIDIndex, "gid", d.gidString(), "gid_type", gidTypeName(d.gidType))

	if e := C.shim_alloc_pd(d.ctx, &d.pd); e != 0 {
		return nil, d.fail(opAllocPD, e)
	}
	if e := C.shim_alloc_buf(C.size_t(bufLen), &d.buf); e != 0 {
		return nil, d.fail("posix_memalign", e)
	}
	d.bufLen = bufLen
	if e := C.shim_reg_mr(d.pd, d.buf, C.size_t(bufLen), &d.mr); e != 0 {
		ve := d.fail(opRegMR, e)
		if ve.Kind == ErrMemlock {
			ve.Cause = memlockCause(bufLen)
		}
		return nil, ve
	}
	return d, nil
}

// open is step 1: find the device by name and open it.
func (d *verbsDevice) open() error {
	var n C.int
	list, errno := C.ibv_get_device_list(&n)
	if list == nil {
		ve := &VerbsError{Device: d.name, Port: d.port, Op: opDeviceList, Kind: ErrNoDevice,
			Cause: "no RDMA devices: load the RDMA driver (mlx5_ib, bnxt_re, irdma, rdma_rxe) and check /dev/infiniband"}
		if en, ok := errno.(syscall.Errno); ok {
			ve.Errno = en
		}
		return ve
	}
	defer C.ibv_free_device_list(list)
	var names []string
	for _, dev := range unsafe.Slice(list, int(n)) {
		name := C.GoString(C.ibv_get_device_name(dev))
		names = append(names, name)
		if name != d.name {
			continue
		}
		ctx, errno := C.ibv_open_device(dev)
		if ctx == nil {
			en, _ := errno.(syscall.Errno)
			if en == 0 {
				en = syscall.ENODEV
			}
			return d.fail(opOpenDevice, C.int(en))
		}
		d.ctx = ctx
		return nil
	}
	return &VerbsError{Device: d.name, Port: d.port, Op: opDeviceList, Kind: ErrNoDevice,
		Cause: fmt.Sprintf("no RDMA device %q (present: %v)", d.name, names)}
}

// memlockCause says how far the locked-memory limit is from what the
// buffer needs. ibv_reg_mr pins the pages; without CAP_IPC_LOCK the kernel
// refuses (ENOMEM) beyond RLIMIT_MEMLOCK, 8 MiB by default, which a
// systemd service raises with LimitMEMLOCK=.
func memlockCause(need int) string {
	var rl unix.Rlimit
	limit := "unknown"
	if unix.Getrlimit(unix.RLIMIT_MEMLOCK, &rl) == nil {
		if rl.Cur == unix.RLIM_INFINITY {
			limit = "unlimited"
		} else {
			limit = fmt.Sprintf("%d bytes", rl.Cur)
		}
	}
	return fmt.Sprintf("registering %d bytes of memory was refused; RLIMIT_MEMLOCK is %s: set LimitMEMLOCK=infinity in the systemd unit (or ulimit -l unlimited), or run with CAP_IPC_LOCK", need, limit)
}

// close is step 11 for the device: MR, buffer, PD, context.
func (d *verbsDevice) close() {
	if d.mr != nil {
		if e := C.ibv_dereg_mr(d.mr); e != 0 {
			d.log.Warn("ibv_dereg_mr failed", "device", d.name, "err", syscall.Errno(e))
		}
		d.mr = nil
	}
	if d.buf != nil {
		C.free(d.buf)
		d.buf = nil
	}
	if d.pd != nil {
		if e := C.ibv_dealloc_pd(d.pd); e != 0 {
			d.log.Warn("ibv_dealloc_pd failed", "device", d.name, "err", syscall.Errno(e))
		}
		d.pd = nil
	}
	if d.ctx != nil {
		if e := C.ibv_close_device(d.ctx); e != 0 {
			d.log.Warn("ibv_close_device failed", "device", d.name, "err", syscall.Errno(e))
		}
		d.ctx = nil
	}
}

func (d *verbsDevice) gidString() string { return netip.AddrFrom16(d.gid).String() }

// pathMTU picks the path MTU: the caller's, or the largest the port's
// active_mtu allows. RoCE's active_mtu is the largest IB MTU that fits in
// the netdev MTU minus the RoCE headers, so a bigger path MTU means packets
// the netdev (or the switch) drops: refuse it here with the reason instead
// of a retry-exceeded error later.
func (d *verbsDevice) pathMTU(want int, skipCheck bool) (int, error) {
	if want == 0 {
		return d.activeMTU, nil
	}
	if want > d.activeMTU && !skipCheck {
		return 0, &VerbsError{Device: d.name, Port: d.port, Op: "path MTU", Kind: ErrPathMTU,
			Cause: fmt.Sprintf("path MTU %d exceeds the port's active_mtu %d (the largest IB MTU that fits the netdev MTU minus the RoCE headers): lower the path MTU or raise the netdev MTU", want, d.activeMTU)}
	}
	return want, nil
}

// region returns the address of the i-th size-byte region of the buffer.
func (d *verbsDevice) region(i, size int) unsafe.Pointer { return unsafe.Add(d.buf, i*size) }

func (d *verbsDevice) bytesAt(i, size int) []byte {
	return unsafe.Slice((*byte)(d.region(i, size)), size)
}

// verbsEP is one RC QP with its CQ (steps 5-9).
type verbsEP struct {
	d   *verbsDevice
	ep  *C.shim_ep // C memory, read and written by the C loops
	psn uint32
}

// newEP creates a CQ and an RC QP in INIT with its receives posted. The QP
// sends from buffer region 2*slot and receives into region 2*slot+1.
func (d *verbsDevice) newEP(slot, size int) (_ *verbsEP, err error) {
	e := &verbsEP{d: d, ep: (*C.shim_ep)(C.calloc(1, C.sizeof_shim_ep)), psn: rand.Uint32() & 0xffffff}
	defer func() {
		if err != nil {
			e.close()
		}
	}()
	e.ep.send_buf = (*C.char)(d.region(2*slot, size))
	e.ep.recv_buf = (*C.char)(d.region(2*slot+1, size))
	e.ep.lkey = d.mr.lkey
	e.ep.buf_len = C.uint32_t(size)
	if c := C.shim_create_cq(d.ctx, C.int(qpSendDepth+qpRecvDepth), &e.ep.cq); c != 0 {
		return nil, d.fail(opCreateCQ, c)
	}
	e.ep.max_inline = qpMaxInline
	if c := C.shim_create_qp(d.pd, e.ep.cq, qpSendDepth, qpRecvDepth, &e.ep.max_inline, &e.ep.qp); c != 0 {
		return nil, d.fail(opCreateQP, c)
	}
	if c := C.shim_qp_to_init(e.ep.qp, C.uint8_t(d.port)); c != 0 {
		return nil, d.fail(opToInit, c)
	}
	// Receives may be posted in INIT; posting them before the peer can
	// send is what keeps the first SEND from meeting an empty queue.
	if c := C.shim_post_recvs(e.ep, qpRecvDepth); c != 0 {
		return nil, d.fail(opPostRecv, c)
	}
	return e, nil
}

func (e *verbsEP) qpn() uint32 { return uint32(e.ep.qp.qp_num) }

// connect moves the QP to RTR toward (qpn, psn, dgid) and on to RTS.
func (e *verbsEP) connect(qpn, psn uint32, dgid [16]byte, mtu int, tc, sl, hop uint8) error {
	mtuEnum, ok := ibMTUEnum(mtu)
	if !ok {
		return &VerbsError{Device: e.d.name, Port: e.d.port, Op: opToRTR, Kind: ErrPathMTU,
			Cause: fmt.Sprintf("path MTU %d is not an IB MTU", mtu)}
	}
	if c := C.shim_qp_to_rtr(e.ep.qp, C.uint8_t(e.d.port), C.int(mtuEnum), C.uint32_t(qpn), C.uint32_t(psn),
		(*C.uint8_t)(unsafe.Pointer(&dgid[0])), C.uint8_t(e.d.gidIndex), C.uint8_t(tc), C.uint8_t(sl),
		C.uint8_t(hop), qpMinRNRTimer); c != 0 {
		ve := e.d.fail(opToRTR, c)
		ve.Cause = fmt.Sprintf("%s [path MTU %d, port active_mtu %d, sgid index %d, dgid %s]",
			ve.Cause, mtu, e.d.activeMTU, e.d.gidIndex, netip.AddrFrom16(dgid))
		return ve
	}
	if c := C.shim_qp_to_rts(e.ep.qp, C.uint32_t(e.psn), qpTimeout, qpRetryCount, qpRNRRetry); c != 0 {
		return e.d.fail(opToRTS, c)
	}
	return nil
}

// close is step 11 for the QP: QP before its CQ.
func (e *verbsEP) close() {
	if e.ep == nil {
		return
	}
	if e.ep.qp != nil {
		if c := C.ibv_destroy_qp(e.ep.qp); c != 0 {
			e.d.log.Warn("ibv_destroy_qp failed", "device", e.d.name, "err", syscall.Errno(c))
		}
	}
	if e.ep.cq != nil {
		if c := C.ibv_destroy_cq(e.ep.cq); c != 0 {
			e.d.log.Warn("ibv_destroy_cq failed", "device", e.d.name, "err", syscall.Errno(c))
		}
	}
	C.free(unsafe.Pointer(e.ep))
	e.ep = nil
}

func (e *verbsEP) sendBytes() []byte {
	return unsafe.Slice((*byte)(unsafe.Pointer(e.ep.send_buf)), int(e.ep.buf_len))
}

func (e *verbsEP) recvBytes() []byte {
	return unsafe.Slice((*byte)(unsafe.Pointer(e.ep.recv_buf)), int(e.ep.buf_len))
}

// fillPattern writes a recognisable, position-dependent pattern into the
// send region and clears the receive region, so that a comparison after
// RDMA WRITE proves the bytes moved.
func (e *verbsEP) fillPattern(seed byte) {
	s := e.sendBytes()
	for i := range s {
		s[i] = byte(i*31) ^ seed
	}
	clear(e.recvBytes())
}

// traffic runs one C loop with the context wired to the loop's stop flag.
type traffic struct {
	d       *verbsDevice
	op      string
	size    int
	iters   int
	dur     time.Duration
	stall   time.Duration
	depth   int
	samples bool
	// rdma is the RDMA WRITE target (remote addr, rkey).
	remoteAddr uint64
	rkey       uint32
}

func (t traffic) run(ctx context.Context, loop func(r *C.shim_run)) (opStats, error) {
	r := (*C.shim_run)(C.calloc(1, C.sizeof_shim_run))
	defer C.free(unsafe.Pointer(r))
	r.size = C.uint32_t(t.size)
	r.iters = C.uint64_t(t.iters)
	r.stall_ns = C.int64_t(t.stall.Nanoseconds())
	r.depth = C.uint32_t(t.depth)
	r.remote_addr = C.uint64_t(t.remoteAddr)
	r.rkey = C.uint32_t(t.rkey)
	if t.samples {
		n := maxLatSamples
		if t.iters > 0 {
			n = min(t.iters, maxLatSamples)
		}
		r.samples = (*C.int64_t)(C.calloc(C.size_t(n), 8))
		defer C.free(unsafe.Pointer(r.samples))
		r.samples_cap = C.uint64_t(n)
	}
	if t.dur > 0 {
		r.deadline_ns = C.shim_now_ns() + C.int64_t(t.dur.Nanoseconds())
	}
	done := make(chan struct{})
	go func() {
		select {
		case <-ctx.Done():
			C.shim_stop(r)
		case <-done:
		}
	}()
	loop(r)
	close(done)

	st := opStats{msgs: int(r.msgs), bytes: int64(r.bytes), elapsed: time.Duration(r.end_ns - r.start_ns)}
	if r.samples_cap > 0 {
		n := min(uint64(r.nsamples), uint64(r.samples_cap))
		for _, s := range unsafe.Slice((*int64)(unsafe.Pointer(r.samples)), int(n)) {
			st.samples = append(st.samples, time.Duration(s))
		}
	}
	for i := range min(int(r.nerr), C.SHIM_MAX_ERRS) {
		e := r.errs[i]
		st.errs = append(st.errs, CompletionError{Op: wrIDOp(uint64(e.wr_id)), Status: WCStatus(e.status),
			VendorErr: uint32(e.vendor_err), QPN: uint32(e.qp_num), WRID: uint64(e.wr_id)})
	}
	return st, t.err(ctx, r, st)
}

// err turns the loop's outcome into an error, most telling cause first:
// a failed completion explains a stall or a mismatch, not the other way round.
func (t traffic) err(ctx context.Context, r *C.shim_run, st opStats) error {
	ve := &VerbsError{Device: t.d.name, Port: t.d.port, Op: t.op}
	switch {
	case len(st.errs) > 0:
		ve.Kind = ErrCompletion
		ve.Completion = &st.errs[0]
		ve.Cause = st.errs[0].Status.Cause()
		if r.nerr > 1 {
			ve.Op = fmt.Sprintf("%s (%d failed completions, first shown)", t.op, int(r.nerr))
		}
	case r.post_err != 0:
		ve.Op = t.op + ": ibv_post_send"
		if r.post_what == wrKindRecv {
			ve.Op = t.op + ": ibv_post_recv"
		}
		ve.Errno = syscall.Errno(r.post_err)
		ve.Cause = "the queue refused the work request: QP not in RTS or queue full"
	case r.bad_data != 0:
		ve.Kind = ErrDataMismatch
		ve.Cause = fmt.Sprintf("expected %d, got %d (length or sequence number of a received message)", uint64(r.bad_want), uint64(r.bad_got))
	case r.stalled != 0:
		ve.Kind = ErrStalled
		ve.Cause = fmt.Sprintf("no completion for %s, although a dead path fails within about a second (retry_cnt %d, timeout %d): the device keeps retrying on its own or the peer process is stuck", t.stall, qpRetryCount, qpTimeout)
	case r.stopped != 0:
		return fmt.Errorf("verbs %s/%d: %s: %w", t.d.name, t.d.port, t.op, context.Cause(ctx))
	default:
		return nil
	}
	return ve
}

// Loopback runs RDMA WRITE and SEND/RECV ping-pong between two RC QPs of
// the same port, each addressing the other through the port's own GID
// (reference §D). The traffic is looped inside the NIC (rxe: inside the
// kernel's IP stack): it proves the verbs path, the GID, the QP attributes
// (TOS, SL, MTU) and the device, not the fabric; use Listen/Connect for that.
//
// On a traffic failure the partial result (with Errors and counter deltas)
// is returned together with the error.
func Loopback(ctx context.Context, cfg LoopbackConfig) (*LoopbackResult, error) {
	cfg, err := cfg.normalize()
	if err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	size := cfg.MsgSize
	d, err := openVerbsDevice(cfg, 4*size)
	if err != nil {
		return nil, err
	}
	defer d.close()
	mtu, err := d.pathMTU(cfg.PathMTU, cfg.skipMTUCheck)
	if err != nil {
		return nil, err
	}
	a, err := d.newEP(0, size)
	if err != nil {
		return nil, err
	}
	defer a.close()
	b, err := d.newEP(1, size)
	if err != nil {
		return nil, err
	}
	defer b.close()
	if err := a.connect(b.qpn(), b.psn, d.gid, mtu, cfg.TrafficClass, cfg.SL, cfg.HopLimit); err != nil {
		return nil, err
	}
	if err := b.connect(a.qpn(), a.psn, d.gid, mtu, cfg.TrafficClass, cfg.SL, cfg.HopLimit); err != nil {
		return nil, err
	}

	res := &LoopbackResult{Device: d.name, Port: d.port, GIDIndex: cfg.GIDIndex, GID: d.gidString(),
		PeerGID: d.gidString(), PathMTU: mtu, TrafficClass: cfg.TrafficClass}
	fs := nic.NewFS(cfg.Root, true)
	before, cerr := readHWCounters(fs, d.name, d.port, cfg.Log)
	if cerr != nil {
		cfg.Log.Warn("hw_counters unreadable", "err", cerr)
	}

	tr := traffic{d: d, size: size, iters: cfg.Iterations, dur: cfg.Duration, stall: cfg.stall, depth: cfg.depth}
	var runErr error
	if cfg.wants(OpWrite) {
		a.fillPattern(0x5a)
		b.fillPattern(0xa5)
		t := tr
		t.op, t.remoteAddr, t.rkey = opWrite, uint64(uintptr(unsafe.Pointer(b.ep.recv_buf))), uint32(d.mr.rkey)
		st, err := t.run(ctx, func(r *C.shim_run) { C.shim_write_bw(a.ep, r) })
		res.WriteMsgs, res.WriteBytes, res.WriteGbps = st.msgs, st.bytes, gbps(st.bytes, st.elapsed)
		res.Errors = append(res.Errors, st.errs...)
		if err == nil && st.msgs > 0 && !bytes.Equal(a.sendBytes(), b.recvBytes()) {
			err = &VerbsError{Device: d.name, Port: d.port, Op: opWrite, Kind: ErrDataMismatch,
				Cause: fmt.Sprintf("target region crc32 0x%08x, source 0x%08x", crc32.ChecksumIEEE(b.recvBytes()), crc32.ChecksumIEEE(a.sendBytes()))}
		}
		runErr = err
	}
	// A failed phase leaves the QPs in the error state: the next would only flush.
	if runErr == nil && cfg.wants(OpSend) {
		t := tr
		t.op, t.samples = opPingPong, true
		st, err := t.run(ctx, func(r *C.shim_run) { C.shim_pp_loopback(a.ep, b.ep, r) })
		res.SendMsgs = st.msgs
		res.LatP50, res.LatP99 = latencyPercentiles(st.samples)
		res.Errors = append(res.Errors, st.errs...)
		runErr = err
	}

	if before != nil {
		time.Sleep(hwCountersSettle(fs, d.name, d.port))
		after, cerr := readHWCounters(fs, d.name, d.port, cfg.Log)
		if cerr != nil {
			cfg.Log.Warn("hw_counters unreadable", "err", cerr)
		}
		res.CounterDeltas = hwCounterDeltas(before, after)
	}
	runErr = explainWithCounters(runErr, res.CounterDeltas, cfg.Log)
	cfg.Log.Info("verbs loopback", "device", d.name, "port", d.port, "gid", res.GID, "path_mtu", mtu,
		"tos", cfg.TrafficClass, "write_gbps", res.WriteGbps, "write_msgs", res.WriteMsgs,
		"lat_p50", res.LatP50, "lat_p99", res.LatP99, "send_msgs", res.SendMsgs, "err", runErr)
	return res, runErr
}

// cgoEndpoint is the two-host end (twohost.go) on real verbs.
type cgoEndpoint struct {
	d     *verbsDevice
	e     *verbsEP
	size  int
	mtu   int
	stall time.Duration
	depth int
}

func openRCEndpoint(cfg LoopbackConfig) (rcEndpoint, error) {
	d, err := openVerbsDevice(cfg, 2*cfg.MsgSize)
	if err != nil {
		return nil, err
	}
	mtu, err := d.pathMTU(cfg.PathMTU, cfg.skipMTUCheck)
	if err != nil {
		d.close()
		return nil, err
	}
	e, err := d.newEP(0, cfg.MsgSize)
	if err != nil {
		d.close()
		return nil, err
	}
	return &cgoEndpoint{d: d, e: e, size: cfg.MsgSize, mtu: mtu, stall: cfg.stall, depth: cfg.depth}, nil
}

func (c *cgoEndpoint) local() qpInfo {
	return qpInfo{QPN: c.e.qpn(), PSN: c.e.psn, GID: c.d.gidString(), LID: c.d.lid, MTU: c.mtu,
		RKey: uint32(c.d.mr.rkey), Addr: uint64(uintptr(unsafe.Pointer(c.e.ep.recv_buf))), Size: c.size}
}

func (c *cgoEndpoint) connect(remote qpInfo, mtu int, tc, sl, hop uint8) error {
	gid, err := remote.gid16()
	if err != nil {
		return err
	}
	return c.e.connect(remote.QPN, remote.PSN, gid, mtu, tc, sl, hop)
}

func (c *cgoEndpoint) newTraffic(op string) traffic {
	return traffic{d: c.d, op: op, size: c.size, stall: c.stall, depth: c.depth}
}

func (c *cgoEndpoint) writeBW(ctx context.Context, remote qpInfo, iters int, dur time.Duration) (opStats, error) {
	t := c.newTraffic(opWrite)
	t.iters, t.dur, t.remoteAddr, t.rkey = iters, dur, remote.Addr, remote.RKey
	return t.run(ctx, func(r *C.shim_run) { C.shim_write_bw(c.e.ep, r) })
}

func (c *cgoEndpoint) pingInitiator(ctx context.Context, iters int, dur time.Duration) (opStats, error) {
	t := c.newTraffic(opPingPong)
	t.iters, t.dur, t.samples = iters, dur, true
	return t.run(ctx, func(r *C.shim_run) { C.shim_pp_initiator(c.e.ep, r) })
}

func (c *cgoEndpoint) pingResponder(ctx context.Context) (opStats, error) {
	return c.newTraffic(opPingPong).run(ctx, func(r *C.shim_run) { C.shim_pp_responder(c.e.ep, r) })
}

func (c *cgoEndpoint) preparePattern(seed byte) uint32 {
	c.e.fillPattern(seed)
	return crc32.ChecksumIEEE(c.e.sendBytes())
}

func (c *cgoEndpoint) recvChecksum() uint32 { return crc32.ChecksumIEEE(c.e.recvBytes()) }

func (c *cgoEndpoint) device() (string, int) { return c.d.name, c.d.port }

func (c *cgoEndpoint) close() {
	c.e.close()
	c.d.close()
}

// libibverbsWCStatusStr is ibv_wc_status_str, for the test that checks
// the Go status table against the installed libibverbs.
func libibverbsWCStatusStr(s int) string {
	return C.GoString(C.ibv_wc_status_str(C.enum_ibv_wc_status(s)))
}

// cgoNop is one empty cgo call, for BenchmarkCgoCall.
func cgoNop(x int) int { return int(C.shim_nop(C.int(x))) }

// cNowNS is the C loops' clock, CLOCK_MONOTONIC in ns.
func cNowNS() int64 { return int64(C.shim_now_ns()) }
