package verify

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"net"
	"os"
	"reflect"
	"strings"
	"sync"
	"syscall"
	"testing"
	"testing/iotest"
	"time"

	"github.com/rocectl/rocectl/nic/nictest"
)

// ---- framing ----------------------------------------------------------

func TestFrameBytes(t *testing.T) {
	var buf bytes.Buffer
	m := wireMsg{V: 1, Type: msgStart, Op: OpWrite}
	if err := writeFrame(&buf, &m); err != nil {
		t.Fatal(err)
	}
	body := `{"v":1,"type":"start","op":"write"}`
	want := append([]byte{'R', 'C', 'T', 'L', 0, 0, 0, byte(len(body))}, body...)
	if !bytes.Equal(buf.Bytes(), want) {
		t.Fatalf("frame\n got %q\nwant %q", buf.Bytes(), want)
	}
	got, err := readFrame(&buf)
	if err != nil || *got != m {
		t.Fatalf("read back %+v, %v", got, err)
	}
}

func TestFrameHelloRoundTrip(t *testing.T) {
	// The hello of the lab's rxe0 (QPN 0x11, IPv4 GID ::ffff:192.168.77.1, active_mtu 1024).
	qp := qpInfo{QPN: 0x11, PSN: 0x358a72, GID: "::ffff:192.168.77.1", MTU: 1024, RKey: 0x1a2b, Addr: 0x7f00_0000_1000,
		Size: 65536, TOS: 106, SL: 3, HopLimit: 255}
	in := wireMsg{V: 1, Type: msgHello, QP: &qp, Test: &wireTest{MsgSize: 65536, Iterations: 1000, Ops: []string{OpWrite, OpSend}}}
	var buf bytes.Buffer
	if err := writeFrame(&buf, &in); err != nil {
		t.Fatal(err)
	}
	wantBody := `{"v":1,"type":"hello","qp":{"qpn":17,"psn":3508850,"gid":"::ffff:192.168.77.1","lid":0,"mtu":1024,` +
		`"rkey":6699,"addr":139637976731648,"size":65536,"tos":106,"sl":3,"hop_limit":255},` +
		`"test":{"msg_size":65536,"iterations":1000,"ops":["write","send"]}}`
	if got := buf.String()[8:]; got != wantBody {
		t.Errorf("body\n got %s\nwant %s", got, wantBody)
	}
	out, err := readFrame(&buf)
	if err != nil {
		t.Fatal(err)
	}
	if *out.QP != qp || out.Test.MsgSize != 65536 || len(out.Test.Ops) != 2 {
		t.Errorf("round trip: %+v %+v", out.QP, out.Test)
	}
	if err := out.QP.validate(65536); err != nil {
		t.Errorf("valid hello rejected: %v", err)
	}
	gid, _ := out.QP.gid16()
	if want := [16]byte{10: 0xff, 11: 0xff, 12: 192, 13: 168, 14: 77, 15: 1}; gid != want {
		t.Errorf("gid bytes %x, want %x", gid, want)
	}
}

func frameOf(body string) []byte {
	b := []byte("RCTL\x00\x00\x00\x00" + body)
	binary.BigEndian.PutUint32(b[4:], uint32(len(body)))
	return b
}

func TestReadFrameRejects(t *testing.T) {
	big := make([]byte, 8)
	copy(big, "RCTL")
	binary.BigEndian.PutUint32(big[4:], maxFrameLen+1)
	for _, tc := range []struct {
		name string
		in   []byte
		want string
	}{
		{"closed", nil, "peer closed the connection"},
		{"short header", []byte("RCT"), "truncated frame header"},
		{"http client", []byte("GET / HTTP/1.1\r\n\r\n"), `peer is not rocectl (frame starts with "GET ")`},
		{"zero length", []byte("RCTL\x00\x00\x00\x00"), "frame length 0 out of range"},
		{"huge length", big, "frame length 65537 out of range"},
		{"truncated body", frameOf(`{"v":1,"type":"hello"}`)[:20], "truncated frame (22 bytes announced)"},
		{"not json", frameOf(`{"v":1,`), "bad message"},
		{"wrong version", frameOf(`{"v":2,"type":"hello"}`), "peer speaks protocol version 2, this rocectl speaks 1"},
		{"no version", frameOf(`{"type":"hello"}`), "protocol version 0"},
		{"no type", frameOf(`{"v":1}`), "message without a type"},
	} {
		_, err := readFrame(bytes.NewReader(tc.in))
		if !errors.Is(err, ErrHandshake) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: got %v, want ErrHandshake with %q", tc.name, err, tc.want)
		}
	}
	// A peer that closed before our write arrived answers with a reset.
	_, err := readFrame(iotest.ErrReader(syscall.ECONNRESET))
	if !errors.Is(err, syscall.ECONNRESET) || !strings.Contains(err.Error(), "peer closed the connection") {
		t.Errorf("reset: got %v", err)
	}
}

func TestQPInfoValidate(t *testing.T) {
	ok := qpInfo{QPN: 0x11, PSN: 1, GID: "fe80::1", MTU: 4096, Addr: 0x1000, Size: 4096}
	if err := ok.validate(4096); err != nil {
		t.Fatalf("valid: %v", err)
	}
	if err := (*qpInfo)(nil).validate(1); err == nil {
		t.Error("nil QP accepted")
	}
	for _, tc := range []struct {
		mod  func(*qpInfo)
		want string
	}{
		{func(q *qpInfo) { q.QPN = 1 }, "QP number 1 out of range"},
		{func(q *qpInfo) { q.QPN = 1 << 24 }, "out of range"},
		{func(q *qpInfo) { q.PSN = 1 << 24 }, "PSN 16777216 exceeds 24 bits"},
		{func(q *qpInfo) { q.GID = "mlx5_0" }, `peer GID "mlx5_0"`},
		{func(q *qpInfo) { q.GID = "fe80::1%lab0" }, "not an IPv6/IPv4 address"},
		{func(q *qpInfo) { q.MTU = 1500 }, "peer MTU 1500 is not an IB MTU"},
		{func(q *qpInfo) { q.Size = 2048 }, "cannot take 4096-byte messages"},
		{func(q *qpInfo) { q.Addr = 0 }, "cannot take"},
	} {
		q := ok
		tc.mod(&q)
		if err := q.validate(4096); !errors.Is(err, ErrHandshake) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: got %v, want %q", q, err, tc.want)
		}
	}
	// An IPv4 text GID is accepted and mapped, as ibv_rc_pingpong's gid_to_wire would carry it.
	q := ok
	q.GID = "192.168.77.2"
	if g, err := q.gid16(); err != nil || g[10] != 0xff || g[15] != 2 {
		t.Errorf("IPv4 GID: %x %v", g, err)
	}
}

// ---- the protocol against fake QPs -------------------------------------

// fakeFabric connects fake endpoints by QPN: RDMA WRITE copies into the
// target's receive region, SENDs travel over channels.
type fakeFabric struct {
	mu  sync.Mutex
	eps map[uint32]*fakeEP
	// behaviour switches
	corrupt     bool          // RDMA WRITE delivers a flipped byte
	writeErr    error         // RDMA WRITE fails on the initiator
	initiatorGo chan struct{} // when set, the initiator waits for it before pinging
	onWrite     func()        // when set, runs during each RDMA WRITE phase (a NIC pausing)
}

type fakeEP struct {
	f          *fakeFabric
	cfg        LoopbackConfig
	qpn        uint32
	send, recv []byte
	inbox      chan int
	peer       *fakeEP
	closed     bool
	connectTC  uint8
	connectMTU int
}

func newFakeFabric() *fakeFabric { return &fakeFabric{eps: map[uint32]*fakeEP{}} }

func (f *fakeFabric) open(cfg LoopbackConfig) (rcEndpoint, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	e := &fakeEP{f: f, cfg: cfg, qpn: uint32(0x11 + len(f.eps)), send: make([]byte, cfg.MsgSize),
		recv: make([]byte, cfg.MsgSize), inbox: make(chan int, 4)}
	f.eps[e.qpn] = e
	return e, nil
}

func (e *fakeEP) local() qpInfo {
	return qpInfo{QPN: e.qpn, PSN: e.qpn * 3, GID: fmt.Sprintf("::ffff:10.0.%d.%d", e.qpn>>8, e.qpn&0xff), MTU: 1024,
		RKey: 0xbeef, Addr: 0x10000 * uint64(e.qpn), Size: len(e.recv)}
}

func (e *fakeEP) connect(remote qpInfo, mtu int, tc, sl, hop uint8) error {
	e.f.mu.Lock()
	defer e.f.mu.Unlock()
	e.peer = e.f.eps[remote.QPN]
	e.connectTC, e.connectMTU = tc, mtu
	if e.peer == nil {
		return errors.New("fake: no such QP")
	}
	return nil
}

func (e *fakeEP) writeBW(ctx context.Context, remote qpInfo, iters int, dur time.Duration) (opStats, error) {
	if e.f.writeErr != nil {
		return opStats{errs: []CompletionError{{Op: OpWrite, Status: WCRetryExcErr}}}, e.f.writeErr
	}
	if e.f.onWrite != nil {
		e.f.onWrite()
	}
	copy(e.peer.recv, e.send)
	if e.f.corrupt {
		e.peer.recv[0] ^= 0xff
	}
	return opStats{msgs: iters, bytes: int64(iters * len(e.send)), elapsed: time.Millisecond}, nil
}

func (e *fakeEP) pingInitiator(ctx context.Context, iters int, dur time.Duration) (opStats, error) {
	if e.f.initiatorGo != nil {
		<-e.f.initiatorGo
	}
	st := opStats{}
	for i := range iters {
		e.peer.inbox <- i
		select {
		case <-e.inbox:
		case <-ctx.Done():
			return st, ctx.Err()
		}
		st.msgs++
		st.samples = append(st.samples, time.Duration(i+1)*time.Microsecond)
	}
	e.peer.inbox <- -1 // STOP
	return st, nil
}

func (e *fakeEP) pingResponder(ctx context.Context) (opStats, error) {
	st := opStats{}
	for {
		select {
		case v := <-e.inbox:
			if v < 0 {
				return st, nil
			}
			st.msgs++
			e.peer.inbox <- v
		case <-ctx.Done():
			return st, context.Cause(ctx)
		}
	}
}

func (e *fakeEP) preparePattern(seed byte) uint32 {
	for i := range e.send {
		e.send[i] = byte(i) ^ seed
	}
	clear(e.recv)
	return crc32.ChecksumIEEE(e.send)
}

func (e *fakeEP) recvChecksum() uint32  { return crc32.ChecksumIEEE(e.recv) }
func (e *fakeEP) device() (string, int) { return e.cfg.Device, e.cfg.Port }
func (e *fakeEP) close()                { e.closed = true }

func fastTiming() twoHostTiming {
	// Short enough for quick tests, long enough for a loaded 2-core CI box.
	return twoHostTiming{dial: 3 * time.Second, handshake: time.Second, heartbeat: 50 * time.Millisecond, idle: 700 * time.Millisecond}
}

// runPair runs serve and connectWith over loopback TCP and returns both ends.
func runPair(t *testing.T, f *fakeFabric, client LoopbackConfig, tm twoHostTiming) (cres, sres *LoopbackResult, cerr, serr error) {
	t.Helper()
	return runPairWith(t, f, client, LoopbackConfig{Device: "rxe1", GIDIndex: 1, TrafficClass: 0}, tm)
}

// runPairWith is runPair with the passive end's configuration.
func runPairWith(t *testing.T, f *fakeFabric, client, server LoopbackConfig, tm twoHostTiming) (cres, sres *LoopbackResult, cerr, serr error) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var wg sync.WaitGroup
	wg.Go(func() {
		server.Root = t.TempDir()
		scfg, _ := server.normalize()
		sres, serr = serve(ctx, ln, scfg, f.open, tm)
	})
	client.Root = t.TempDir()
	cres, cerr = connectWith(ctx, ln.Addr().String(), client, f.open, dialTCP, tm)
	wg.Wait()
	if ctx.Err() != nil {
		t.Fatal("the pair did not finish within 10 s")
	}
	return
}

func TestTwoHostFakeRun(t *testing.T) {
	f := newFakeFabric()
	cres, sres, cerr, serr := runPair(t, f, LoopbackConfig{Device: "rxe0", GIDIndex: 1, TrafficClass: 106, MsgSize: 4096, Iterations: 100}, fastTiming())
	if cerr != nil || serr != nil {
		t.Fatalf("connect: %v; serve: %v", cerr, serr)
	}
	for _, r := range []*LoopbackResult{cres, sres} {
		if r.WriteMsgs != 100 || r.WriteBytes != 409600 || r.WriteGbps != gbps(409600, time.Millisecond) ||
			r.SendMsgs != 100 || r.LatP50 != 50*time.Microsecond || r.LatP99 != 99*time.Microsecond ||
			r.PathMTU != 1024 || r.TrafficClass != 106 {
			t.Errorf("%s: %+v", r.Device, r)
		}
	}
	if cres.GID != sres.PeerGID || sres.GID != cres.PeerGID || cres.GID == sres.GID {
		t.Errorf("GIDs: %s->%s, %s->%s", cres.GID, cres.PeerGID, sres.GID, sres.PeerGID)
	}
	// The passive end sized its buffer from the active end's plan, adopted
	// its traffic class for its own QP, and both ends closed their QPs.
	for _, e := range f.eps {
		if len(e.recv) != 4096 || e.connectTC != 106 || e.connectMTU != 1024 || !e.closed {
			t.Errorf("endpoint %#x: buf %d tc %d mtu %d closed %v", e.qpn, len(e.recv), e.connectTC, e.connectMTU, e.closed)
		}
	}
}

// Each end records how its own port's pause counters moved during the
// test: the listener's NIC paused its peer on priority 3 (tx) and sent two
// 802.3x pause frames, the connector's NIC received the priority 3 pause.
func TestTwoHostRecordsPauseDeltas(t *testing.T) {
	const nd = "ens1f0np0"
	cSim, sSim := lossless(t), lossless(t)
	f := newFakeFabric()
	f.onWrite = func() {
		sSim.AddStat(nd, "tx_prio3_pause", 40)
		sSim.AddStat(nd, "tx_prio3_pause_duration", 1500)
		sSim.AddStat(nd, "tx_pause_ctrl_phy", 2)
		cSim.AddStat(nd, "rx_prio3_pause", 40)
		cSim.AddStat(nd, "rx_prio3_pause_duration", 1500)
	}
	src := func(sim *nictest.Sim) []CounterSource {
		return []CounterSource{{Port: nd, Read: func() (map[string]uint64, error) { return sim.Stats(nd) }}}
	}
	cres, sres, cerr, serr := runPairWith(t, f, LoopbackConfig{Device: "rxe0", MsgSize: 64, Iterations: 3, Pause: src(cSim)},
		LoopbackConfig{Device: "rxe1", Pause: src(sSim)}, fastTiming())
	if cerr != nil || serr != nil {
		t.Fatalf("connect: %v; serve: %v", cerr, serr)
	}
	prio3 := func(dir string, frames, us uint64) PauseDelta {
		return PauseDelta{Netdev: nd, PauseCounter: PauseCounter{Priority: 3, Direction: dir, Frames: frames, DurationUs: us,
			FramesName: dir + "_prio3_pause", DurationName: dir + "_prio3_pause_duration", HasDuration: true}}
	}
	global := func(dir string, frames uint64) PauseDelta {
		return PauseDelta{Netdev: nd, PauseCounter: PauseCounter{Priority: GlobalPause, Direction: dir, Frames: frames,
			FramesName: dir + "_pause_ctrl_phy"}}
	}
	for _, tc := range []struct {
		end  string
		res  *LoopbackResult
		want []PauseDelta
	}{
		{"connector", cres, []PauseDelta{prio3("rx", 40, 1500), prio3("tx", 0, 0), global("rx", 0), global("tx", 0)}},
		{"listener", sres, []PauseDelta{prio3("rx", 0, 0), prio3("tx", 40, 1500), global("rx", 0), global("tx", 2)}},
	} {
		if !reflect.DeepEqual(tc.res.PauseDeltas, tc.want) {
			t.Errorf("%s: pause deltas\n got %+v\nwant %+v", tc.end, tc.res.PauseDeltas, tc.want)
		}
		if tc.res.PauseWindow <= 0 {
			t.Errorf("%s: pause window %v", tc.end, tc.res.PauseWindow)
		}
	}
	// The document's shape, as rocectl report reads it.
	b, err := json.Marshal(sres.PauseDeltas[1])
	if want := `{"netdev":"ens1f0np0","priority":3,"direction":"tx","frames":40,"frames_counter":"tx_prio3_pause",` +
		`"duration_us":1500,"duration_counter":"tx_prio3_pause_duration","has_duration":true}`; err != nil || string(b) != want {
		t.Errorf("json %s (%v), want %s", b, err, want)
	}
	// Without sources there is nothing to record.
	cres, _, cerr, _ = runPair(t, newFakeFabric(), LoopbackConfig{Device: "rxe0", MsgSize: 64, Iterations: 3}, fastTiming())
	if cerr != nil || cres.PauseDeltas != nil || cres.PauseWindow != 0 {
		t.Errorf("no sources: %v, %+v, %v", cerr, cres.PauseDeltas, cres.PauseWindow)
	}
}

func TestTwoHostWriteDataMismatch(t *testing.T) {
	f := newFakeFabric()
	f.corrupt = true
	_, _, cerr, serr := runPair(t, f, LoopbackConfig{Device: "rxe0", MsgSize: 64, Iterations: 3}, fastTiming())
	if !errors.Is(serr, ErrDataMismatch) || !strings.Contains(serr.Error(), "crc32") {
		t.Errorf("serve: %v, want ErrDataMismatch", serr)
	}
	if !errors.Is(cerr, ErrPeerFailed) || !strings.Contains(cerr.Error(), "received region crc32") {
		t.Errorf("connect: %v, want the peer's mismatch report", cerr)
	}
}

func TestTwoHostWriteFailureReachesPeer(t *testing.T) {
	f := newFakeFabric()
	f.writeErr = &VerbsError{Device: "rxe0", Port: 1, Op: opWrite, Kind: ErrCompletion,
		Completion: &CompletionError{Op: OpWrite, Status: WCRetryExcErr}, Cause: WCRetryExcErr.Cause()}
	cres, _, cerr, serr := runPair(t, f, LoopbackConfig{Device: "rxe0", MsgSize: 64, Iterations: 3}, fastTiming())
	if !errors.Is(cerr, ErrCompletion) || cres == nil || len(cres.Errors) != 1 {
		t.Errorf("connect: %v, %+v", cerr, cres)
	}
	if !errors.Is(serr, ErrPeerFailed) || !strings.Contains(serr.Error(), "transport retry counter exceeded") {
		t.Errorf("serve: %v, want ErrPeerFailed with the diagnosis", serr)
	}
}

func TestTwoHostHeartbeatKeepsSlowPhaseAlive(t *testing.T) {
	// A ping-pong that starts later than the passive end's idle timeout
	// survives because the active end sends "alive" meanwhile.
	f := newFakeFabric()
	f.initiatorGo = make(chan struct{})
	time.AfterFunc(2*time.Second, func() { close(f.initiatorGo) }) // idle is 700 ms
	_, sres, cerr, serr := runPair(t, f, LoopbackConfig{Device: "rxe0", MsgSize: 64, Iterations: 5, Ops: []string{OpSend}}, fastTiming())
	if cerr != nil || serr != nil || sres.SendMsgs != 5 {
		t.Fatalf("connect: %v; serve: %v; %+v", cerr, serr, sres)
	}
}

// listenRaw runs fn (runPeer) on the connection the code under test makes
// to the address it returns.
func listenRaw(t *testing.T, fn func(c net.Conn)) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	runPeer(t, ln.Accept, fn)
	// Cleanups run last first: the listener is closed before runPeer's
	// join, which ends an Accept that no one dialled.
	t.Cleanup(func() { ln.Close() })
	return ln.Addr().String()
}

// runPeer runs fn, a raw peer of the code under test, on the connection
// connect makes, in a goroutine joined when the test ends: its connection
// is closed first, which ends an fn still waiting for the code under test
// to hang up (untilHangUp).
func runPeer(t *testing.T, connect func() (net.Conn, error), fn func(c net.Conn)) {
	conn := make(chan net.Conn, 1)
	done := make(chan struct{})
	go func() {
		defer close(done)
		c, err := connect()
		if err != nil {
			conn <- nil
			return
		}
		conn <- c
		defer c.Close()
		fn(c)
	}()
	t.Cleanup(func() {
		if c := <-conn; c != nil {
			c.Close()
		}
		<-done
	})
}

func TestConnectBadPeers(t *testing.T) {
	for _, tc := range []struct {
		name string
		peer func(c net.Conn)
		want string
	}{
		{"silent", func(c net.Conn) { io.Copy(io.Discard, c) }, "i/o timeout"},
		{"truncated", func(c net.Conn) { c.Write(frameOf(`{"v":1,"type":"hello","qp":{}}`)[:15]); untilHangUp(c) }, "truncated frame"},
		{"closes", func(c net.Conn) {}, "peer closed the connection"},
		{"http", func(c net.Conn) { c.Write([]byte("HTTP/1.1 400 Bad Request\r\n\r\n")) }, "peer is not rocectl"},
		{"future version", func(c net.Conn) { c.Write(frameOf(`{"v":2,"type":"hello"}`)) }, "protocol version 2"},
		{"no QP", func(c net.Conn) { c.Write(frameOf(`{"v":1,"type":"hello"}`)) }, "hello without QP attributes"},
		{"wrong type", func(c net.Conn) { c.Write(frameOf(`{"v":1,"type":"ready","op":"write"}`)) }, `expected "hello"`},
		{"refuses", func(c net.Conn) { c.Write(frameOf(`{"v":1,"type":"error","error":"port down"}`)) }, "peer reported a failure: port down"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			addr := listenRaw(t, tc.peer)
			start := time.Now()
			_, err := connectWith(context.Background(), addr, LoopbackConfig{Device: "rxe0", Root: t.TempDir()},
				newFakeFabric().open, dialTCP, fastTiming())
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("got %v, want %q", err, tc.want)
			}
			if tc.name == "silent" && !errors.Is(err, os.ErrDeadlineExceeded) {
				t.Errorf("silent peer: %v, want a deadline error", err)
			}
			// No hang: the handshake timeout is 1 s.
			if d := time.Since(start); d > 5*time.Second {
				t.Errorf("took %v", d)
			}
		})
	}
}

// untilHangUp is a peer that says nothing more and reads what the code
// under test sends until the connection closes: the code hanging up after
// its error, or runPeer closing it when the test ends.
func untilHangUp(c net.Conn) { io.Copy(io.Discard, c) }

func TestServeBadPeers(t *testing.T) {
	hello := func(c net.Conn) {
		qp := qpInfo{QPN: 0x99, GID: "::ffff:10.0.0.9", MTU: 1024, Addr: 0x1000, Size: 64}
		writeFrame(c, &wireMsg{V: 1, Type: msgHello, QP: &qp, Test: &wireTest{MsgSize: 64, Iterations: 1, Ops: []string{OpSend}}})
	}
	for _, tc := range []struct {
		name string
		peer func(c net.Conn)
		want string
	}{
		{"silent", untilHangUp, "i/o timeout"},
		{"truncated", func(c net.Conn) { c.Write([]byte("RCTL\x00\x00\x01\x00{\"v\":1")) }, "truncated frame (256 bytes announced)"},
		{"garbage", func(c net.Conn) { c.Write([]byte("\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03")) }, "peer is not rocectl"},
		{"bad plan", func(c net.Conn) {
			writeFrame(c, &wireMsg{V: 1, Type: msgHello, QP: &qpInfo{QPN: 0x99, GID: "::1", MTU: 1024, Addr: 1, Size: 64},
				Test: &wireTest{MsgSize: 64, Ops: []string{"read"}}})
		}, `unknown operation "read"`},
		{"goes silent after hello", func(c net.Conn) { hello(c); untilHangUp(c) }, "i/o timeout"},
		{"dies before ping-pong", func(c net.Conn) {
			hello(c)
			readFrame(c) // our hello
			writeFrame(c, &wireMsg{V: 1, Type: msgStart, Op: OpSend})
			readFrame(c) // ready: the responder is running now
		}, "peer closed the connection"},
		{"unknown op", func(c net.Conn) {
			hello(c)
			readFrame(c)
			writeFrame(c, &wireMsg{V: 1, Type: msgStart, Op: "atomic"})
			untilHangUp(c)
		}, `unexpected "start" atomic`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			defer ln.Close()
			runPeer(t, func() (net.Conn, error) { return net.Dial("tcp", ln.Addr().String()) }, tc.peer)
			cfg, _ := LoopbackConfig{Device: "rxe1", Root: t.TempDir()}.normalize()
			f := newFakeFabric()
			f.eps[0x99] = &fakeEP{f: f, qpn: 0x99, inbox: make(chan int, 4)} // the raw peer's "QP"
			start := time.Now()
			_, err = serve(context.Background(), ln, cfg, f.open, fastTiming())
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("got %v, want %q", err, tc.want)
			}
			if d := time.Since(start); d > 5*time.Second {
				t.Errorf("took %v", d)
			}
		})
	}
}

func TestServeCancelWhileWaiting(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(50*time.Millisecond, cancel)
	cfg, _ := LoopbackConfig{Device: "rxe1"}.normalize()
	_, err = serve(ctx, ln, cfg, newFakeFabric().open, fastTiming())
	if !errors.Is(err, context.Canceled) {
		t.Errorf("got %v, want context.Canceled", err)
	}
}

func TestConnectRetriesUntilListenerUp(t *testing.T) {
	// The listener is held from the start, so no other process can take
	// its port; the dial is refused (as by a peer whose listener is not up
	// yet) until the test lets it through after a few attempts.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	addr := ln.Addr().String()
	const refusals = 3
	attempts := make(chan struct{})
	up := make(chan struct{})
	dial := func(ctx context.Context, network, a string) (net.Conn, error) {
		select {
		case attempts <- struct{}{}:
		case <-up:
			return dialTCP(ctx, network, a)
		}
		return nil, &net.OpError{Op: "dial", Net: network, Err: os.NewSyscallError("connect", syscall.ECONNREFUSED)}
	}
	f := newFakeFabric()
	// sctx ends the passive end if the active end gives up.
	sctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var serr error
	var wg sync.WaitGroup
	wg.Go(func() {
		for range refusals {
			select {
			case <-attempts:
			case <-sctx.Done():
				serr = sctx.Err()
				return
			}
		}
		close(up)
		cfg, _ := LoopbackConfig{Device: "rxe1", Root: t.TempDir()}.normalize()
		_, serr = serve(sctx, ln, cfg, f.open, fastTiming())
	})
	res, err := connectWith(context.Background(), addr, LoopbackConfig{Device: "rxe0", MsgSize: 64, Iterations: 2, Root: t.TempDir()}, f.open, dial, fastTiming())
	if err != nil {
		cancel()
	}
	wg.Wait()
	if err != nil || serr != nil || res.WriteMsgs != 2 {
		t.Fatalf("connect: %v; serve: %v", err, serr)
	}
}
