package verify

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"sync"
	"syscall"
	"time"

	"github.com/rocectl/rocectl/nic"
)

// Two-host mode, the way perftest does it: the two ends exchange their QP
// attributes over TCP, connect their RC QPs to each other, and then the
// active end (Connect) drives RDMA WRITE and SEND/RECV ping-pong across the
// fabric while the passive end (Listen) serves. Unlike loopback, this
// traffic crosses the switch, so it exercises PFC, ECN and the TOS marking.
//
// Wire format: each message is a frame
//
//	"RCTL" | uint32 big-endian length | JSON object (wireMsg, "v": 1)
//
// The magic rejects a stray client (an HTTP probe, perftest) with a clear
// error, the length bounds the read, and every read and write has a
// deadline, so a bad, truncated or silent peer ends in an error, never a
// hang. While traffic runs the active end sends "alive" frames, so the
// passive end notices a dead peer without guessing how long a run takes.
//
// Conversation (C = Connect, S = Listen):
//
//	C→S hello {qp, test}      S→C hello {qp}          (both QPs go RTR/RTS)
//	per op:  C→S start {op}   S→C ready {op}
//	         ... traffic, C→S alive every heartbeat ...
//	         C→S done {op, stats, crc}   S→C done {op, stats}
//	C→S bye
//	either side, any time: error {error}
//
// The active end's TrafficClass, SL and hop limit are used by both QPs
// (the passive end adopts them from the hello), so that data and ACKs of a
// run travel in one traffic class, as NCCL arranges it for its QPs.

const (
	twoHostVersion = 1
	twoHostMagic   = "RCTL"
	maxFrameLen    = 64 << 10
)

// Message types.
const (
	msgHello = "hello"
	msgStart = "start"
	msgReady = "ready"
	msgAlive = "alive"
	msgDone  = "done"
	msgBye   = "bye"
	msgError = "error"
)

// qpInfo is what one end tells the other about its QP (perftest's
// pingpong_dest: lid, qpn, psn, gid, plus the MR for RDMA WRITE).
type qpInfo struct {
	QPN      uint32 `json:"qpn"`
	PSN      uint32 `json:"psn"`
	GID      string `json:"gid"` // IPv6 text form; "::ffff:a.b.c.d" for RoCE v2 over IPv4
	LID      uint16 `json:"lid"` // 0 on RoCE
	MTU      int    `json:"mtu"` // largest path MTU this end accepts, bytes
	RKey     uint32 `json:"rkey"`
	Addr     uint64 `json:"addr"` // where the peer's RDMA WRITEs land
	Size     int    `json:"size"` // bytes at Addr
	TOS      uint8  `json:"tos"`
	SL       uint8  `json:"sl"`
	HopLimit uint8  `json:"hop_limit"`
}

// wireTest is the active end's test plan.
type wireTest struct {
	MsgSize    int      `json:"msg_size"`
	Iterations int      `json:"iterations,omitempty"`
	DurationNS int64    `json:"duration_ns,omitempty"`
	Ops        []string `json:"ops"`
}

type wireStats struct {
	Msgs      int   `json:"msgs"`
	Bytes     int64 `json:"bytes"`
	ElapsedNS int64 `json:"elapsed_ns"`
	P50NS     int64 `json:"p50_ns,omitempty"`
	P99NS     int64 `json:"p99_ns,omitempty"`
}

type wireMsg struct {
	V     int        `json:"v"`
	Type  string     `json:"type"`
	Op    string     `json:"op,omitempty"`
	QP    *qpInfo    `json:"qp,omitempty"`
	Test  *wireTest  `json:"test,omitempty"`
	Stats *wireStats `json:"stats,omitempty"`
	CRC   uint32     `json:"crc,omitempty"` // crc32 (IEEE) of the RDMA WRITE source region
	Error string     `json:"error,omitempty"`
}

func protoErr(format string, args ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{ErrHandshake}, args...)...)
}

// writeFrame writes one framed message.
func writeFrame(w io.Writer, m *wireMsg) error {
	body, err := json.Marshal(m)
	if err != nil {
		return err
	}
	if len(body) > maxFrameLen {
		return protoErr("message of %d bytes exceeds %d", len(body), maxFrameLen)
	}
	buf := make([]byte, 8, 8+len(body))
	copy(buf, twoHostMagic)
	binary.BigEndian.PutUint32(buf[4:], uint32(len(body)))
	_, err = w.Write(append(buf, body...))
	return err
}

// readFrame reads one framed message and checks its envelope.
func readFrame(r io.Reader) (*wireMsg, error) {
	var hdr [8]byte
	if _, err := io.ReadFull(r, hdr[:]); err != nil {
		switch {
		case errors.Is(err, io.EOF):
			return nil, protoErr("peer closed the connection")
		case errors.Is(err, syscall.ECONNRESET):
			// A peer that closed before our last write arrived resets instead.
			return nil, protoErr("peer closed the connection: %w", err)
		case errors.Is(err, io.ErrUnexpectedEOF):
			return nil, protoErr("truncated frame header: %w", err)
		}
		return nil, protoErr("reading frame header: %w", err)
	}
	if string(hdr[:4]) != twoHostMagic {
		return nil, protoErr("peer is not rocectl (frame starts with %q)", hdr[:4])
	}
	n := binary.BigEndian.Uint32(hdr[4:])
	if n == 0 || n > maxFrameLen {
		return nil, protoErr("frame length %d out of range 1..%d", n, maxFrameLen)
	}
	body := make([]byte, n)
	if _, err := io.ReadFull(r, body); err != nil {
		return nil, protoErr("truncated frame (%d bytes announced): %w", n, err)
	}
	var m wireMsg
	if err := json.Unmarshal(body, &m); err != nil {
		return nil, protoErr("bad message: %w", err)
	}
	if m.V != twoHostVersion {
		return nil, protoErr("peer speaks protocol version %d, this rocectl speaks %d", m.V, twoHostVersion)
	}
	if m.Type == "" {
		return nil, protoErr("message without a type")
	}
	return &m, nil
}

// gid16 parses the GID text into the 16 bytes the QP wants.
func (q qpInfo) gid16() ([16]byte, error) {
	a, err := netip.ParseAddr(q.GID)
	if err != nil || a.Zone() != "" {
		return [16]byte{}, protoErr("peer GID %q is not an IPv6/IPv4 address", q.GID)
	}
	return a.As16(), nil // an IPv4 address becomes its ::ffff: mapped GID
}

// validate checks what the peer sent before any of it reaches a QP.
func (q *qpInfo) validate(minSize int) error {
	if q == nil {
		return protoErr("hello without QP attributes")
	}
	// QPN 0 and 1 are the special SMI/GSI QPs; numbers are 24 bits.
	if q.QPN < 2 || q.QPN > 0xffffff {
		return protoErr("peer QP number %d out of range 2..0xffffff", q.QPN)
	}
	if q.PSN > 0xffffff {
		return protoErr("peer PSN %d exceeds 24 bits", q.PSN)
	}
	if _, err := q.gid16(); err != nil {
		return err
	}
	if _, ok := ibMTUEnum(q.MTU); !ok {
		return protoErr("peer MTU %d is not an IB MTU", q.MTU)
	}
	if q.Size < minSize || q.Addr == 0 {
		return protoErr("peer buffer (%d bytes at 0x%x) cannot take %d-byte messages", q.Size, q.Addr, minSize)
	}
	return nil
}

func (t *wireTest) validate() error {
	if t == nil {
		return protoErr("hello without a test plan")
	}
	cfg := LoopbackConfig{Device: "peer", MsgSize: t.MsgSize, Iterations: t.Iterations,
		Duration: time.Duration(t.DurationNS), Ops: t.Ops}
	if t.MsgSize == 0 || t.Ops == nil {
		return protoErr("test plan without message size or operations")
	}
	if _, err := cfg.normalize(); err != nil {
		return protoErr("test plan: %w", err)
	}
	return nil
}

// rcEndpoint is one end's QP on a device: verbs_cgo.go implements it on
// libibverbs, tests with a fake.
type rcEndpoint interface {
	local() qpInfo // QPN, PSN, GID, LID, MTU, RKey, Addr, Size
	connect(remote qpInfo, pathMTU int, tc, sl, hopLimit uint8) error
	writeBW(ctx context.Context, remote qpInfo, iters int, dur time.Duration) (opStats, error)
	pingInitiator(ctx context.Context, iters int, dur time.Duration) (opStats, error)
	pingResponder(ctx context.Context) (opStats, error)
	preparePattern(seed byte) uint32 // fill the send region, clear the receive region; crc32 of the send region
	recvChecksum() uint32            // crc32 of the receive region
	device() (string, int)
	close()
}

type openEndpointFunc func(LoopbackConfig) (rcEndpoint, error)

// dialFunc opens the TCP connection to the peer; tests replace it to make
// the first attempts fail.
type dialFunc func(ctx context.Context, network, addr string) (net.Conn, error)

// dialTCP is the dial of Connect: a plain net.Dialer.
func dialTCP(ctx context.Context, network, addr string) (net.Conn, error) {
	var d net.Dialer
	return d.DialContext(ctx, network, addr)
}

// twoHostTiming holds the protocol's clocks; tests shorten them.
type twoHostTiming struct {
	dial      time.Duration // Connect retries the dial this long (the listener may start later)
	handshake time.Duration // one message exchange
	heartbeat time.Duration // period of "alive" frames during traffic
	idle      time.Duration // the passive end gives up after this long without a frame
}

func defaultTwoHostTiming() twoHostTiming {
	return twoHostTiming{dial: 30 * time.Second, handshake: 10 * time.Second, heartbeat: 2 * time.Second, idle: 15 * time.Second}
}

// peerConn serialises writes (the heartbeat goroutine writes too) and puts
// a deadline on every read and write.
type peerConn struct {
	c  net.Conn
	mu sync.Mutex
}

func (p *peerConn) send(m wireMsg, timeout time.Duration) error {
	m.V = twoHostVersion
	p.mu.Lock()
	defer p.mu.Unlock()
	if err := p.c.SetWriteDeadline(time.Now().Add(timeout)); err != nil {
		return err
	}
	if err := writeFrame(p.c, &m); err != nil {
		return fmt.Errorf("sending %s to %s: %w", m.Type, p.c.RemoteAddr(), err)
	}
	return nil
}

// recv reads one message; an "error" message becomes ErrPeerFailed.
func (p *peerConn) recv(timeout time.Duration) (*wireMsg, error) {
	if err := p.c.SetReadDeadline(time.Now().Add(timeout)); err != nil {
		return nil, err
	}
	m, err := readFrame(p.c)
	if err != nil {
		return nil, err
	}
	if m.Type == msgError {
		return nil, fmt.Errorf("%w: %s", ErrPeerFailed, m.Error)
	}
	return m, nil
}

// expect reads one message and insists on its type (and op).
func (p *peerConn) expect(timeout time.Duration, typ, op string) (*wireMsg, error) {
	m, err := p.recv(timeout)
	if err != nil {
		return nil, err
	}
	return m, checkMsg(m, typ, op)
}

func checkMsg(m *wireMsg, typ, op string) error {
	if m.Type != typ || m.Op != op {
		return protoErr("expected %q %s, peer sent %q %s", typ, op, m.Type, m.Op)
	}
	return nil
}

// tellPeer reports a local failure to the peer, best effort.
func (p *peerConn) tellPeer(err error, timeout time.Duration) {
	_ = p.send(wireMsg{Type: msgError, Error: err.Error()}, timeout)
}

// ctxErr prefers the context's cause: a closed connection after a
// cancellation is the cancellation.
func ctxErr(ctx context.Context, err error) error {
	if err != nil && ctx.Err() != nil {
		return fmt.Errorf("%w (%v)", context.Cause(ctx), err)
	}
	return err
}

// Connect is the active end of a two-host test against a peer running
// Listen: it dials peer ("host:port"), retrying for a while if the
// listener is not up yet, and drives cfg's operations across the fabric.
func Connect(ctx context.Context, peer string, cfg LoopbackConfig) (*LoopbackResult, error) {
	return connectWith(ctx, peer, cfg, openRCEndpoint, dialTCP, defaultTwoHostTiming())
}

// Listen is the passive end: it accepts one Connect on addr, serves the
// test the active end asks for, and returns. The result carries the
// numbers the active end measured (bandwidth, latency) and this end's
// counter deltas.
func Listen(ctx context.Context, addr string, cfg LoopbackConfig) (*LoopbackResult, error) {
	cfg, err := cfg.normalize()
	if err != nil {
		return nil, err
	}
	if !verbsBuiltIn {
		return nil, fmt.Errorf("two-host listen on %s: %w", addr, ErrVerbsNotBuiltIn)
	}
	ln, err := (&net.ListenConfig{}).Listen(ctx, "tcp", addr)
	if err != nil {
		return nil, err
	}
	defer ln.Close()
	cfg.Log.Info("two-host: listening", "addr", ln.Addr().String(), "device", cfg.Device, "port", cfg.Port)
	return serve(ctx, ln, cfg, openRCEndpoint, defaultTwoHostTiming())
}

func dialRetry(ctx context.Context, dial dialFunc, addr string, within time.Duration) (net.Conn, error) {
	deadline := time.Now().Add(within)
	backoff := 50 * time.Millisecond
	for {
		dctx, cancel := context.WithDeadline(ctx, deadline)
		c, err := dial(dctx, "tcp", addr)
		cancel()
		if err == nil {
			return c, nil
		}
		if ctx.Err() != nil || time.Now().Add(backoff).After(deadline) {
			return nil, ctxErr(ctx, fmt.Errorf("two-host: cannot reach %s: %w", addr, err))
		}
		select {
		case <-ctx.Done():
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, time.Second)
	}
}

func toWire(st opStats) *wireStats {
	p50, p99 := latencyPercentiles(st.samples)
	return &wireStats{Msgs: st.msgs, Bytes: st.bytes, ElapsedNS: st.elapsed.Nanoseconds(),
		P50NS: p50.Nanoseconds(), P99NS: p99.Nanoseconds()}
}

// heartbeat runs f while sending "alive" frames to the peer.
func heartbeat(pc *peerConn, tm twoHostTiming, f func() (opStats, error)) (opStats, error) {
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		t := time.NewTicker(tm.heartbeat)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
				if pc.send(wireMsg{Type: msgAlive}, tm.handshake) != nil {
					return
				}
			}
		}
	})
	st, err := f()
	close(done)
	wg.Wait()
	return st, err
}

// counterWindow reads the hw_counters, and the ethtool pause counters of
// cfg.Pause, before a run and the deltas after.
type counterWindow struct {
	fs     nic.FS
	dev    string
	port   int
	before map[string]uint64
	pause  []map[string]uint64 // by cfg.Pause; nil where unreadable
	start  time.Time
	cfg    LoopbackConfig
}

func openCounterWindow(cfg LoopbackConfig, dev string, port int) *counterWindow {
	w := &counterWindow{fs: nic.NewFS(cfg.Root, true), dev: dev, port: port, cfg: cfg, start: time.Now()}
	var err error
	// Without counters (probes) before stays nil: close reads none either.
	if !cfg.noCounters {
		if w.before, err = readHWCounters(w.fs, dev, port, cfg.Log); err != nil {
			cfg.Log.Warn("hw_counters unreadable", "err", err)
		}
	}
	w.pause = make([]map[string]uint64, len(cfg.Pause))
	for i, src := range cfg.Pause {
		if w.pause[i], err = src.Read(); err != nil {
			cfg.Log.Warn("pause counters unreadable", "netdev", src.Port, "err", err)
		}
	}
	return w
}

// close records the deltas in res.
func (w *counterWindow) close(res *LoopbackResult) {
	if w.before != nil {
		time.Sleep(hwCountersSettle(w.fs, w.dev, w.port))
		after, err := readHWCounters(w.fs, w.dev, w.port, w.cfg.Log)
		if err != nil {
			w.cfg.Log.Warn("hw_counters unreadable", "err", err)
		}
		res.CounterDeltas = hwCounterDeltas(w.before, after)
	}
	for i, src := range w.cfg.Pause {
		if w.pause[i] == nil {
			continue
		}
		after, err := src.Read()
		if err != nil {
			w.cfg.Log.Warn("pause counters unreadable", "netdev", src.Port, "err", err)
			continue
		}
		res.PauseDeltas = append(res.PauseDeltas, pauseDeltas(src.Port, w.pause[i], after)...)
	}
	if res.PauseDeltas != nil {
		res.PauseWindow = time.Since(w.start)
	}
}

func connectWith(ctx context.Context, peer string, cfg LoopbackConfig, open openEndpointFunc, dial dialFunc, tm twoHostTiming) (*LoopbackResult, error) {
	cfg, err := cfg.normalize()
	if err != nil {
		return nil, err
	}
	ep, err := open(cfg)
	if err != nil {
		return nil, err
	}
	defer ep.close()
	conn, err := dialRetry(ctx, dial, peer, tm.dial)
	if err != nil {
		return nil, err
	}
	defer conn.Close()
	stop := context.AfterFunc(ctx, func() { conn.Close() })
	defer stop()
	pc := &peerConn{c: conn}
	res, err := runClient(ctx, pc, ep, cfg, tm)
	if err != nil && !errors.Is(err, ErrPeerFailed) {
		pc.tellPeer(err, tm.handshake)
	}
	return res, ctxErr(ctx, err)
}

func runClient(ctx context.Context, pc *peerConn, ep rcEndpoint, cfg LoopbackConfig, tm twoHostTiming) (*LoopbackResult, error) {
	local := ep.local()
	local.TOS, local.SL, local.HopLimit = cfg.TrafficClass, cfg.SL, cfg.HopLimit
	test := &wireTest{MsgSize: cfg.MsgSize, Iterations: cfg.Iterations, DurationNS: cfg.Duration.Nanoseconds(), Ops: cfg.Ops}
	if err := pc.send(wireMsg{Type: msgHello, QP: &local, Test: test}, tm.handshake); err != nil {
		return nil, err
	}
	m, err := pc.expect(tm.handshake, msgHello, "")
	if err != nil {
		return nil, err
	}
	remote := m.QP
	if err := remote.validate(cfg.MsgSize); err != nil {
		return nil, err
	}
	mtu := min(local.MTU, remote.MTU)
	if err := ep.connect(*remote, mtu, cfg.TrafficClass, cfg.SL, cfg.HopLimit); err != nil {
		return nil, err
	}
	dev, port := ep.device()
	res := &LoopbackResult{Device: dev, Port: port, GIDIndex: cfg.GIDIndex, GID: local.GID, PeerGID: remote.GID,
		PathMTU: mtu, TrafficClass: cfg.TrafficClass}
	cw := openCounterWindow(cfg, dev, port)
	cfg.Log.Info("two-host: connected", "peer", pc.c.RemoteAddr().String(), "peer_gid", remote.GID,
		"peer_qpn", remote.QPN, "path_mtu", mtu, "tos", cfg.TrafficClass)

	runErr := func() error {
		for _, op := range cfg.Ops {
			if err := pc.send(wireMsg{Type: msgStart, Op: op}, tm.handshake); err != nil {
				return err
			}
			if _, err := pc.expect(tm.handshake, msgReady, op); err != nil {
				return err
			}
			switch op {
			case OpWrite:
				crc := ep.preparePattern(0x5a)
				st, err := heartbeat(pc, tm, func() (opStats, error) { return ep.writeBW(ctx, *remote, cfg.Iterations, cfg.Duration) })
				res.WriteMsgs, res.WriteBytes, res.WriteGbps = st.msgs, st.bytes, gbps(st.bytes, st.elapsed)
				res.Errors = append(res.Errors, st.errs...)
				if err != nil {
					return err
				}
				if err := pc.send(wireMsg{Type: msgDone, Op: op, Stats: toWire(st), CRC: crc}, tm.handshake); err != nil {
					return err
				}
				if _, err := pc.expect(tm.handshake, msgDone, op); err != nil {
					return err
				}
			case OpSend:
				st, err := heartbeat(pc, tm, func() (opStats, error) { return ep.pingInitiator(ctx, cfg.Iterations, cfg.Duration) })
				res.SendMsgs = st.msgs
				res.LatP50, res.LatP99 = latencyPercentiles(st.samples)
				res.Errors = append(res.Errors, st.errs...)
				if err != nil {
					return err
				}
				if err := pc.send(wireMsg{Type: msgDone, Op: op, Stats: toWire(st)}, tm.handshake); err != nil {
					return err
				}
				m, err := pc.expect(tm.handshake, msgDone, op)
				if err != nil {
					return err
				}
				if m.Stats == nil || m.Stats.Msgs != st.msgs {
					return protoErr("peer echoed %v messages, %d were sent", m.Stats, st.msgs)
				}
			}
		}
		return pc.send(wireMsg{Type: msgBye}, tm.handshake)
	}()
	cw.close(res)
	return res, explainWithCounters(runErr, res.CounterDeltas, cfg.Log)
}

// serve runs the passive end on an accepted connection of ln.
func serve(ctx context.Context, ln net.Listener, cfg LoopbackConfig, open openEndpointFunc, tm twoHostTiming) (*LoopbackResult, error) {
	stopAccept := context.AfterFunc(ctx, func() { ln.Close() })
	conn, err := ln.Accept()
	stopAccept()
	if err != nil {
		return nil, ctxErr(ctx, err)
	}
	defer conn.Close()
	stop := context.AfterFunc(ctx, func() { conn.Close() })
	defer stop()
	pc := &peerConn{c: conn}
	res, err := runServer(ctx, pc, cfg, open, tm)
	if err != nil && !errors.Is(err, ErrPeerFailed) {
		pc.tellPeer(err, tm.handshake)
	}
	return res, ctxErr(ctx, err)
}

type frame struct {
	m   *wireMsg
	err error
}

// readFrames delivers the peer's messages on a channel, so that the
// passive end can wait for a message and the responder loop at once.
// It ends at the first error or when quit is closed.
func readFrames(pc *peerConn, idle time.Duration, quit <-chan struct{}) <-chan frame {
	ch := make(chan frame)
	go func() {
		for {
			m, err := pc.recv(idle)
			select {
			case ch <- frame{m, err}:
			case <-quit:
				return
			}
			if err != nil {
				return
			}
		}
	}()
	return ch
}

// nextFrame returns the next message that is not a heartbeat.
func nextFrame(frames <-chan frame) (*wireMsg, error) {
	for f := range frames {
		if f.err != nil {
			return nil, f.err
		}
		if f.m.Type != msgAlive {
			return f.m, nil
		}
	}
	return nil, protoErr("connection reader stopped")
}

func runServer(ctx context.Context, pc *peerConn, cfg LoopbackConfig, open openEndpointFunc, tm twoHostTiming) (*LoopbackResult, error) {
	m, err := pc.expect(tm.handshake, msgHello, "")
	if err != nil {
		return nil, err
	}
	if err := m.Test.validate(); err != nil {
		return nil, err
	}
	if lim := cfg.maxTest; lim != nil && (m.Test.MsgSize > lim.MsgSize || m.Test.Iterations > lim.Iterations || m.Test.Iterations == 0 || m.Test.DurationNS > 0) {
		return nil, protoErr("test plan of %d messages of %d bytes for %v is more than this end serves (at most %d of %d bytes, no duration)",
			m.Test.Iterations, m.Test.MsgSize, time.Duration(m.Test.DurationNS), lim.Iterations, lim.MsgSize)
	}
	remote := m.QP
	if err := remote.validate(1); err != nil {
		return nil, err
	}
	scfg := cfg
	scfg.MsgSize, scfg.Iterations, scfg.Duration, scfg.Ops = m.Test.MsgSize, m.Test.Iterations, time.Duration(m.Test.DurationNS), m.Test.Ops
	ep, err := open(scfg)
	if err != nil {
		return nil, err
	}
	defer ep.close()
	local := ep.local()
	local.TOS, local.SL, local.HopLimit = remote.TOS, remote.SL, remote.HopLimit
	mtu := min(local.MTU, remote.MTU)
	if remote.TOS != cfg.TrafficClass {
		cfg.Log.Info("two-host: using the active end's traffic class", "tos", remote.TOS, "configured", cfg.TrafficClass)
	}
	if err := ep.connect(*remote, mtu, remote.TOS, remote.SL, remote.HopLimit); err != nil {
		return nil, err
	}
	if err := pc.send(wireMsg{Type: msgHello, QP: &local}, tm.handshake); err != nil {
		return nil, err
	}
	dev, port := ep.device()
	res := &LoopbackResult{Device: dev, Port: port, GIDIndex: cfg.GIDIndex, GID: local.GID, PeerGID: remote.GID,
		PathMTU: mtu, TrafficClass: remote.TOS}
	cw := openCounterWindow(cfg, dev, port)
	cfg.Log.Info("two-host: peer connected", "peer", pc.c.RemoteAddr().String(), "peer_gid", remote.GID,
		"peer_qpn", remote.QPN, "path_mtu", mtu)

	quit := make(chan struct{})
	defer close(quit)
	frames := readFrames(pc, tm.idle, quit)
	runErr := func() error {
		for {
			m, err := nextFrame(frames)
			if err != nil {
				return err
			}
			switch {
			case m.Type == msgBye:
				return nil
			case m.Type == msgStart && m.Op == OpWrite:
				ep.preparePattern(0)
				if err := pc.send(wireMsg{Type: msgReady, Op: OpWrite}, tm.handshake); err != nil {
					return err
				}
				m, err := nextFrame(frames)
				if err != nil {
					return err
				}
				if err := checkMsg(m, msgDone, OpWrite); err != nil {
					return err
				}
				if m.Stats != nil {
					res.WriteMsgs, res.WriteBytes = m.Stats.Msgs, m.Stats.Bytes
					res.WriteGbps = gbps(m.Stats.Bytes, time.Duration(m.Stats.ElapsedNS))
				}
				// The written bytes must be here: the crc of what landed
				// in our region against the crc of the peer's source.
				if got := ep.recvChecksum(); m.Stats != nil && m.Stats.Msgs > 0 && got != m.CRC {
					return &VerbsError{Device: dev, Port: port, Op: opWrite, Kind: ErrDataMismatch,
						Cause: fmt.Sprintf("received region crc32 0x%08x, the peer wrote 0x%08x", got, m.CRC)}
				}
				if err := pc.send(wireMsg{Type: msgDone, Op: OpWrite}, tm.handshake); err != nil {
					return err
				}
			case m.Type == msgStart && m.Op == OpSend:
				st, m, err := respond(ctx, pc, ep, frames, tm)
				res.SendMsgs = st.msgs
				res.Errors = append(res.Errors, st.errs...)
				if err != nil {
					return err
				}
				if m == nil {
					if m, err = nextFrame(frames); err != nil {
						return err
					}
				}
				if err := checkMsg(m, msgDone, OpSend); err != nil {
					return err
				}
				if m.Stats != nil {
					res.LatP50, res.LatP99 = time.Duration(m.Stats.P50NS), time.Duration(m.Stats.P99NS)
				}
				if err := pc.send(wireMsg{Type: msgDone, Op: OpSend, Stats: toWire(st)}, tm.handshake); err != nil {
					return err
				}
			default:
				return protoErr("unexpected %q %s", m.Type, m.Op)
			}
		}
	}()
	cw.close(res)
	return res, explainWithCounters(runErr, res.CounterDeltas, cfg.Log)
}

// respond answers the ping-pong until the active end's STOP message,
// watching the connection meanwhile: a peer that fails or goes silent
// stops the responder at once instead of after the stall timeout. The
// active end's "done" may overtake the responder's last poll (it is sent
// once the STOP message is acknowledged, which can be before this end
// polled that completion); it is returned as next for the caller.
func respond(ctx context.Context, pc *peerConn, ep rcEndpoint, frames <-chan frame, tm twoHostTiming) (st opStats, next *wireMsg, err error) {
	rctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	type result struct {
		st  opStats
		err error
	}
	done := make(chan result, 1)
	go func() {
		st, err := ep.pingResponder(rctx)
		done <- result{st, err}
	}()
	if err := pc.send(wireMsg{Type: msgReady, Op: OpSend}, tm.handshake); err != nil {
		cancel(err)
		r := <-done
		return r.st, nil, err
	}
	for {
		select {
		case r := <-done:
			return r.st, nil, r.err
		case f := <-frames:
			switch {
			case f.err == nil && f.m.Type == msgAlive:
				continue
			case f.err == nil && f.m.Type == msgDone && f.m.Op == OpSend:
				r := <-done
				return r.st, f.m, r.err
			}
			err := f.err
			if err == nil {
				err = protoErr("unexpected %q %s during ping-pong", f.m.Type, f.m.Op)
			}
			cancel(err)
			r := <-done
			return r.st, nil, err
		}
	}
}
