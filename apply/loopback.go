package apply

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/rocectl/rocectl/verify"
)

// Loopback is the verbs loopback traffic of one matched port.
type Loopback struct {
	Port   string // "ens1f0np0 (mlx5_0 port 1)"
	Result *verify.LoopbackResult
	Err    error
}

// Loopbacks runs verbs loopback traffic on every matched port with the
// profile's own parameters: the GID NCCL would pick, the RoCE TOS, the
// largest path MTU the netdev MTU allows. The ports need their RoCE v2 GID
// index (Prepare withGID, or a profile that needs it).
func Loopbacks(ctx context.Context, pr *Prepared, log *slog.Logger) []Loopback {
	var out []Loopback
	v := pr.Profile.Verify
	tc := 0
	if t := pr.Profile.RoCE.DefaultTOS; t != nil {
		tc = *t
	}
	for _, dp := range pr.Desired.Ports {
		p := dp.Port
		label := fmt.Sprintf("%s (%s port %d)", p.Netdev, p.RDMADevice, p.PortNum)
		if p.RoCEv2GID < 0 {
			out = append(out, Loopback{label, nil, fmt.Errorf("no RoCE v2 IPv4 GID on %s port %d: configure an IPv4 address on %s", p.RDMADevice, p.PortNum, p.Netdev)})
			continue
		}
		res, err := verify.Loopback(ctx, verify.LoopbackConfig{
			Device: p.RDMADevice, Port: p.PortNum, GIDIndex: p.RoCEv2GID, RequireRoCEv2: true,
			TrafficClass: uint8(tc), MsgSize: int(v.MessageSize), Duration: v.Duration,
			Root: pr.Host.FS.Root(), Log: log,
		})
		if err == nil && v.MinBandwidthGbps > 0 && res.WriteGbps < v.MinBandwidthGbps {
			err = fmt.Errorf("RDMA WRITE bandwidth %.2f Gb/s is below the profile's minimum %.2f Gb/s", res.WriteGbps, v.MinBandwidthGbps)
		}
		out = append(out, Loopback{label, res, err})
	}
	return out
}

// CounterSources reads the ethtool statistics of every matched port, for
// the pause-storm guard: verify.Sampler's sources, so that a bond (RoCE
// LAG), which has no NIC counters, is each of its slaves, a source of its
// own, "bond0/ens1f0np0" (verify.SlavePort).
func CounterSources(pr *Prepared) []verify.CounterSource {
	var src []verify.Source
	for _, dp := range pr.Desired.Ports {
		src = verify.AppendSources(src, dp.Port)
	}
	s := &verify.Sampler{K: pr.Host.K, Sources: src}
	return s.CounterSources(verify.Source.Name)
}
