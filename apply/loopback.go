package apply

import (
	"context"
	"log/slog"

	"github.com/rocectl/rocectl/port"
	"github.com/rocectl/rocectl/verify"
)

// Loopback is the verbs loopback traffic of one matched port.
type Loopback = verify.PortLoopback

// Loopbacks runs verbs loopback traffic on every matched port with the
// profile's own parameters (verify.Loopbacks). The ports need their RoCE
// v2 GID index (Prepare withGID, or a profile that needs it).
func Loopbacks(ctx context.Context, pr *Prepared, log *slog.Logger) []Loopback {
	ports := make([]port.Port, len(pr.Desired.Ports))
	for i, dp := range pr.Desired.Ports {
		ports[i] = dp.Port
	}
	return verify.Loopbacks(ctx, ports, TrafficConfig(pr, log))
}

// TrafficConfig is how verbs traffic runs on pr's ports: the profile's
// [verify] and roce.default_tos, the host's root.
func TrafficConfig(pr *Prepared, log *slog.Logger) verify.TrafficConfig {
	return verify.TrafficConfig{Spec: pr.Profile.Verify, TOS: pr.Profile.RoCE.DefaultTOS, Root: pr.Host.FS.Root(), Log: log}
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

// RDMASampler reads the RDMA hardware counters of every matched port (a
// bond's are the bond's), for the soak's GuardReport.RDMA.
func RDMASampler(pr *Prepared) *verify.Sampler {
	var src []verify.Source
	for _, dp := range pr.Desired.Ports {
		src = verify.AppendSources(src, dp.Port)
	}
	return &verify.Sampler{K: pr.Host.K, FS: &pr.Host.FS, Sources: src}
}
