package verify

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"

	"github.com/rocectl/rocectl/policy"
	"github.com/rocectl/rocectl/port"
)

// Run is the work of `rocectl verify`: read back every desired setting
// and, when asked, run verbs traffic (loopback on every port, or two-host
// on the first). The command prepares the inputs (profile, host, flags)
// and renders the result; Run takes them as values and functions, since
// verify imports neither apply nor host.

// TrafficConfig is how verbs traffic runs on the matched ports: the
// profile's [verify] section (flags applied), its roce.default_tos as the
// traffic class, and the host's file system root (its sysfs).
type TrafficConfig struct {
	Spec policy.VerifySpec
	TOS  *int
	Root string
	Log  *slog.Logger
}

func (c TrafficConfig) config(p port.Port) LoopbackConfig {
	tc := 0
	if c.TOS != nil {
		tc = *c.TOS
	}
	return LoopbackConfig{Device: p.RDMADevice, Port: p.PortNum, GIDIndex: p.RoCEv2GID, RequireRoCEv2: true,
		TrafficClass: uint8(tc), MsgSize: int(c.Spec.MessageSize), Duration: c.Spec.Duration, Root: c.Root, Log: c.Log}
}

func noRoCEv2GID(p port.Port) error {
	return fmt.Errorf("no RoCE v2 IPv4 GID on %s port %d: configure an IPv4 address on %s", p.RDMADevice, p.PortNum, p.Netdev)
}

// PortLoopback is the verbs loopback traffic of one port.
type PortLoopback struct {
	Port   string // "ens1f0np0 (mlx5_0 port 1)"
	Result *LoopbackResult
	Err    error
}

// Loopbacks runs verbs loopback traffic on every port with the profile's
// own parameters: the GID NCCL would pick, the RoCE TOS, the largest path
// MTU the netdev MTU allows. The ports need their RoCE v2 GID index.
// Below [verify] min_bandwidth_gbps, a port's traffic fails.
func Loopbacks(ctx context.Context, ports []port.Port, c TrafficConfig) []PortLoopback {
	var out []PortLoopback
	for _, p := range ports {
		label := fmt.Sprintf("%s (%s port %d)", p.Netdev, p.RDMADevice, p.PortNum)
		if p.RoCEv2GID < 0 {
			out = append(out, PortLoopback{label, nil, noRoCEv2GID(p)})
			continue
		}
		res, err := Loopback(ctx, c.config(p))
		if err == nil && c.Spec.MinBandwidthGbps > 0 && res.WriteGbps < c.Spec.MinBandwidthGbps {
			err = fmt.Errorf("RDMA WRITE bandwidth %.2f Gb/s is below the profile's minimum %.2f Gb/s", res.WriteGbps, c.Spec.MinBandwidthGbps)
		}
		out = append(out, PortLoopback{label, res, err})
	}
	return out
}

// RunConfig is what Run checks, as the command prepared it.
type RunConfig struct {
	// Desired are the profile's settings on the host; Observe reads the
	// host's values of them (host.Host.Observe).
	Desired *policy.Desired
	Observe func(*policy.Desired) *policy.Observed
	// K reads the tested port's pause counters during two-host traffic
	// (a Sampler's); nil reads none.
	K Kernel
	TrafficConfig
	// Loopback runs loopback traffic on every port (so does
	// Spec.Loopback); Peer or Listen runs two-host traffic on the first
	// port instead, connecting to Peer or waiting for one on Listen.
	Loopback     bool
	Peer, Listen string
	// Waiting, when set, is told that Listen waits for a peer.
	Waiting io.Writer
}

// TrafficError is traffic that failed: on one port (loopback: its label)
// or, Port "", the two-host run.
type TrafficError struct {
	Port string
	Err  error
}

// RunResult is what a verify run found: the content of the verify
// document.
type RunResult struct {
	Mismatches []Mismatch
	// Unknown are the settings whose value could not be known: not
	// checked, so not holding either.
	Unknown []policy.Unknown
	Traffic []*LoopbackResult
	Errors  []TrafficError
}

// OK says everything holds: no mismatch, nothing unknown, no failed
// traffic.
func (r *RunResult) OK() bool {
	return len(r.Mismatches) == 0 && len(r.Unknown) == 0 && len(r.Errors) == 0
}

// Run reads back the desired settings (policy.Diff, keeping what it could
// not compare: an unknown value holds nothing) and runs the traffic asked
// for.
func Run(ctx context.Context, c RunConfig) *RunResult {
	res := &RunResult{}
	readback := policy.Diff(c.Desired, c.Observe(c.Desired))
	res.Mismatches, res.Unknown = readback.Mismatches(), readback.Unknown
	switch {
	case c.Peer != "" || c.Listen != "":
		if r, err := c.twoHost(ctx); err != nil {
			res.Errors = append(res.Errors, TrafficError{Err: err})
		} else {
			res.Traffic = append(res.Traffic, r)
		}
	case c.Loopback || c.Spec.Loopback:
		ports := make([]port.Port, len(c.Desired.Ports))
		for i, dp := range c.Desired.Ports {
			ports[i] = dp.Port
		}
		for _, o := range Loopbacks(ctx, ports, c.TrafficConfig) {
			if o.Err != nil {
				res.Errors = append(res.Errors, TrafficError{Port: o.Port, Err: o.Err})
			}
			if o.Result != nil {
				res.Traffic = append(res.Traffic, o.Result)
			}
		}
	}
	return res
}

// twoHost runs traffic across the fabric with a peer rocectl: one side
// listens, the other connects; both use the first matched port.
func (c RunConfig) twoHost(ctx context.Context) (*LoopbackResult, error) {
	if c.Peer != "" && c.Listen != "" {
		return nil, errors.New("--peer and --listen exclude each other")
	}
	if len(c.Desired.Ports) == 0 {
		return nil, errors.New("no RoCE port matches the profile")
	}
	p := c.Desired.Ports[0].Port
	cfg, err := c.PortConfig(p)
	if err != nil {
		return nil, err
	}
	if c.K != nil {
		cfg.Pause = PauseSources(c.K, p)
	}
	if c.Listen != "" {
		if c.Waiting != nil {
			fmt.Fprintf(c.Waiting, "waiting for a peer on %s (%s port %d, gid %d)\n", c.Listen, p.RDMADevice, p.PortNum, p.RoCEv2GID)
		}
		return Listen(ctx, c.Listen, cfg)
	}
	return Connect(ctx, c.Peer, cfg)
}

// PauseSources read the ethtool statistics of the netdevs that carry the
// tested port's pause counters (Sampler's sources: a RoCE LAG bond has
// none of its own, its slaves, the physical ports, have them), each named
// by its netdev, as the pause deltas of the traffic result are.
func PauseSources(k Kernel, p port.Port) []CounterSource {
	s := &Sampler{K: k, Sources: Sources([]port.Port{p})}
	return s.CounterSources(func(src Source) string { return src.Netdev })
}
