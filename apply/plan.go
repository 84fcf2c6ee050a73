package apply

import (
	"fmt"
	"strings"

	"github.com/rocectl/rocectl/host"
	"github.com/rocectl/rocectl/nccl"
	"github.com/rocectl/rocectl/nic"
	"github.com/rocectl/rocectl/plan"
	"github.com/rocectl/rocectl/policy"
)

// Prepared is a profile resolved and compared against a host: what audit
// prints, what Run applies, and what the daemon checks for drift.
type Prepared struct {
	Profile   *policy.Profile
	Host      *host.Host
	Inventory *nic.Inventory
	Desired   *policy.Desired
	Plan      *policy.Plan
	// Observed is what was read for Desired, which Plan compared; audit's
	// QoS chain section judges it as a whole (policy.HostViews).
	Observed *policy.Observed
}

// Prepare discovers the host's ports, resolves the profile on them, places
// the settings on the host's topology, reads every desired setting and
// plans (plan.Build). withGID asks for each port's RoCE v2
// GID index even when the profile itself does not need it (verbs traffic
// asked for on the command line).
func Prepare(h *host.Host, p *policy.Profile, withGID bool) *Prepared {
	inv := h.Discover()
	if h.Log != nil {
		for _, s := range inv.Skipped {
			h.Log.Debug("skipped RDMA device", "device", s.Device, "port", s.Port, "reason", s.Reason)
		}
	}
	ports := h.Ports(inv, p.NeedsGID() || withGID)
	if p.NeedsGIDTables() && p.NCCL.Write != nil {
		// IB_GID_INDEX = "select" checks NCCL's selection against every
		// entry of each port's table.
		h.ReadGIDTables(ports)
	}
	d := policy.Resolve(p, ports)
	nccl.Resolve(d)
	d = host.Place(d)
	obs := h.Observe(d)
	return &Prepared{Profile: p, Host: h, Inventory: inv, Desired: d, Plan: plan.Build(d, obs, h.ForPlan()), Observed: obs}
}

// NoPortsMessage explains an empty match, or "" when ports matched: the
// reason and that there is nothing to do.
func (pr *Prepared) NoPortsMessage() string {
	switch {
	case len(pr.Inventory.Ports) == 0:
		return "No RoCE devices found on this host: nothing to do."
	case len(pr.Desired.Ports) == 0 && len(pr.Desired.Unknown) == 0:
		return "No RoCE port matches the profile's [match]: nothing to do. Ports on this host: " + pr.portList()
	}
	return ""
}

// NoPortsReason is the reason alone ("" when ports matched), for the
// error of --require-match, which must not say "nothing to do".
func (pr *Prepared) NoPortsReason() string {
	switch {
	case len(pr.Inventory.Ports) == 0:
		return "no RoCE devices found on this host"
	case len(pr.Desired.Ports) == 0 && len(pr.Desired.Unknown) == 0:
		return "no RoCE port matches the profile's [match]; ports on this host: " + pr.portList()
	}
	return ""
}

func (pr *Prepared) portList() string {
	var names []string
	for _, p := range pr.Inventory.Ports {
		driver := p.Driver
		if driver == "" {
			driver = "-"
		}
		names = append(names, fmt.Sprintf("%s (%s, %s)", p.Netdev, p.RDMADevice, driver))
	}
	return strings.Join(names, ", ")
}

// DriftedKeys lists the keys of the settings that differ from the profile,
// in plan order.
func (pr *Prepared) DriftedKeys() []string {
	keys := make([]string, 0, len(pr.Plan.Changes))
	for _, c := range pr.Plan.Changes {
		keys = append(keys, c.Key)
	}
	return keys
}
