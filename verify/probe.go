package verify

import (
	"context"
	"errors"
	"fmt"
	"net"
	"time"

	"github.com/rocectl/rocectl/port"
)

// Probes are the agent's continuous two-host tests: the same protocol and
// QPs as `verify --peer/--listen`, kept small and bounded so that they can
// run in service, every few tens of seconds, between configured peers.
// One probe is one RC QP pair for a few hundred small messages; the server
// end serves one probe at a time and refuses any test larger than a probe.

// ProbeSpec is the size of one probe: Messages RDMA WRITEs of MsgSize
// bytes (a bandwidth sample), then Messages SEND/RECV round trips
// (latency), over one connection and one QP pair on each end.
type ProbeSpec struct {
	Messages int
	MsgSize  int
	// Timeout bounds one probe from dial to the last message.
	Timeout time.Duration
}

// Probe bounds: what a probe server accepts from a client. A probe larger
// than this is a verify run, not a probe, and is refused.
const (
	MaxProbeMessages = 1000
	MaxProbeMsgSize  = 1 << 20
	MaxProbeTimeout  = 30 * time.Second
)

// DefaultProbeSpec is the agent's probe: 100 RDMA WRITEs of 16 KiB
// (1.6 MB) for a bandwidth sample and 100 round trips for the latency
// percentiles, at most 10 s. One connection, not one per operation: the
// fixed cost of a probe (QP creation, memory registration, the TCP
// handshake) is most of its CPU.
var DefaultProbeSpec = ProbeSpec{Messages: 100, MsgSize: 16 << 10, Timeout: 10 * time.Second}

// Check says why s is not a probe ("" when it is one).
func (s ProbeSpec) Check() error {
	switch {
	case s.Messages < 1 || s.Messages > MaxProbeMessages:
		return fmt.Errorf("probe messages must be 1..%d, not %d", MaxProbeMessages, s.Messages)
	case s.MsgSize < 1 || s.MsgSize > MaxProbeMsgSize:
		return fmt.Errorf("probe message size must be 1..%d bytes, not %d", MaxProbeMsgSize, s.MsgSize)
	case s.Timeout <= 0 || s.Timeout > MaxProbeTimeout:
		return fmt.Errorf("probe timeout must be above 0 and at most %v, not %v", MaxProbeTimeout, s.Timeout)
	}
	return nil
}

// probeTiming is the protocol's clocks for a probe: no half-minute dial
// retry (a peer that is not up is a failed probe, tried again at the next
// round), a short idle limit on the server.
func probeTiming(timeout time.Duration) twoHostTiming {
	return twoHostTiming{dial: min(2*time.Second, timeout), handshake: min(5*time.Second, timeout),
		heartbeat: time.Second, idle: min(5*time.Second, timeout)}
}

// PortConfig is the verbs configuration of traffic on p: its device, port
// and RoCE v2 GID, the profile's TOS.
func (c TrafficConfig) PortConfig(p port.Port) (LoopbackConfig, error) {
	if p.RoCEv2GID < 0 {
		return LoopbackConfig{}, noRoCEv2GID(p)
	}
	return c.config(p), nil
}

// Probe runs one probe from cfg's port against the probe server at peer
// (HOST:PORT): spec.Messages RDMA WRITEs then as many round trips, within
// spec.Timeout. The result has the latency percentiles and the write
// bandwidth; a failed probe returns what it measured before failing.
func Probe(ctx context.Context, peer string, cfg LoopbackConfig, spec ProbeSpec) (*LoopbackResult, error) {
	return probeWith(ctx, peer, cfg, spec, openRCEndpoint, dialTCP)
}

// probeWith runs a probe as one two-host run: both operations over one
// connection, no hw_counters window (the agent polls the counters
// itself; a probe reading every counter file twice would double its
// cost).
func probeWith(ctx context.Context, peer string, cfg LoopbackConfig, spec ProbeSpec, open openEndpointFunc, dial dialFunc) (*LoopbackResult, error) {
	if err := spec.Check(); err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, spec.Timeout)
	defer cancel()
	cfg.MsgSize, cfg.Duration, cfg.Iterations = spec.MsgSize, 0, spec.Messages
	cfg.Ops, cfg.noCounters = []string{OpWrite, OpSend}, true
	return connectWith(ctx, peer, cfg, open, dial, probeTiming(spec.Timeout))
}

// ErrProbeBusy is the server's answer while an apply or a verify runs on
// its host: the probe is skipped, not failed.
var ErrProbeBusy = errors.New("probe server busy")

// ServeProbes serves probes on ln, one at a time, until ctx ends. gate is
// asked before each: an error (an apply or verify holds the host) is
// answered to the client as busy, and the probe does not run; release is
// called when the probe ends. A client asking for more than a probe is
// refused. Each probe is bounded by MaxProbeTimeout.
func ServeProbes(ctx context.Context, ln net.Listener, cfg LoopbackConfig, gate func() (release func(), err error)) error {
	return serveProbesWith(ctx, ln, cfg, gate, openRCEndpoint, probeTiming(MaxProbeTimeout))
}

func serveProbesWith(ctx context.Context, ln net.Listener, cfg LoopbackConfig, gate func() (func(), error), open openEndpointFunc, tm twoHostTiming) error {
	cfg, err := cfg.normalize()
	if err != nil {
		return err
	}
	cfg.maxTest = &wireTest{MsgSize: MaxProbeMsgSize, Iterations: MaxProbeMessages}
	cfg.noCounters = true
	stop := context.AfterFunc(ctx, func() { ln.Close() })
	defer stop()
	for {
		conn, err := ln.Accept()
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return err
		}
		serveProbe(ctx, conn, cfg, gate, open, tm)
	}
}

// serveProbe serves one accepted probe connection and closes it.
func serveProbe(ctx context.Context, conn net.Conn, cfg LoopbackConfig, gate func() (func(), error), open openEndpointFunc, tm twoHostTiming) {
	defer conn.Close()
	pc := &peerConn{c: conn}
	release, err := gate()
	if err != nil {
		pc.tellPeer(fmt.Errorf("%w: %v", ErrProbeBusy, err), tm.handshake)
		return
	}
	defer release()
	pctx, cancel := context.WithTimeout(ctx, MaxProbeTimeout)
	defer cancel()
	stopConn := context.AfterFunc(pctx, func() { conn.Close() })
	defer stopConn()
	res, err := runServer(pctx, pc, cfg, open, tm)
	if err != nil && !errors.Is(err, ErrPeerFailed) {
		pc.tellPeer(err, tm.handshake)
	}
	if err != nil {
		cfg.Log.Warn("probe: failed", "peer", conn.RemoteAddr().String(), "err", ctxErr(pctx, err))
		return
	}
	cfg.Log.Debug("probe: served", "peer", conn.RemoteAddr().String(), "write_msgs", res.WriteMsgs, "send_msgs", res.SendMsgs)
}
