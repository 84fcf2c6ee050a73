package host

import (
	"fmt"
	"slices"
	"strings"

	"github.com/rocectl/rocectl/policy"
	"github.com/rocectl/rocectl/port"
)

// place says where on a host's topology a setting kind lives (its registry
// entry's where).
type place int

const (
	// onNetdev: the netdev that carries the port's traffic. For a RoCE LAG
	// that is the bond: an MTU set there propagates to the slaves.
	onNetdev place = iota
	// onPhysical: every physical port. A bond's setting is written to each
	// of its slaves, which must agree (mlx5 activates RoCE LAG only when
	// their DCB, pause, buffers and tunables match).
	onPhysical
	// onRDMAPort: the RDMA device port (rdma_cm, GIDs, verbs traffic
	// class): the LAG device itself for a bond.
	onRDMAPort
	// onHost: the host as a whole (the NCCL file).
	onHost
)

// Place puts d's settings where they live on this host's topology:
//
//   - on a bond (RoCE LAG), each per-physical-port setting becomes one
//     setting per slave, keyed by the slave's netdev, the slaves' copies
//     next to each other so the plan writes both in the same pass;
//   - on a VF, settings its PF owns are left out with a line naming the PF
//     ("set on <pf>"), and the rest too unless the profile's [match] roles
//     name "vf" explicitly.
//
// It returns the placed settings and leaves d as it was; placing a placed
// Desired returns it as it is.
func Place(d *policy.Desired) *policy.Desired {
	if d.Placed {
		return d
	}
	placed := *d
	d = &placed
	d.Placed = true
	d.Ports = slices.Clone(d.Ports)
	d.Unresolved = slices.Clip(d.Unresolved) // appending copies it
	targetsVFs := d.Profile != nil && slices.Contains(d.Profile.Match.Roles, port.RoleVF)
	for i := range d.Ports {
		dp := &d.Ports[i]
		p := &dp.Port
		switch {
		case len(p.Slaves()) > 0:
			dp.Settings = fanOut(p, dp.Settings)
		case p.Role == port.RoleVF:
			var keep []policy.Setting
			for _, s := range dp.Settings {
				k, err := kindOf(s.Kind)
				switch {
				case err == nil && k.pfOnly:
					d.Unresolved = append(d.Unresolved, policy.Unsupported{Key: s.Key, Scope: s.Scope, Port: s.Port,
						Reason: fmt.Sprintf("set on %s: the PF owns the port's %s (a VF cannot set it)", orUnknown(p.PF), s.Kind)})
				case !targetsVFs:
					d.Unresolved = append(d.Unresolved, policy.Unsupported{Key: s.Key, Scope: s.Scope, Port: s.Port,
						Reason: fmt.Sprintf("VF of %s: left alone unless [match] roles includes \"vf\"", orUnknown(p.PF))})
				default:
					keep = append(keep, s)
				}
			}
			dp.Settings = keep
		}
	}
	return d
}

// fanOut replaces the bond's per-physical-port settings by one per slave.
// Settings already placed on a slave are kept as they are.
func fanOut(bond *port.Port, ss []policy.Setting) []policy.Setting {
	slaves := make([]*port.Port, len(bond.Slaves()))
	for i, m := range bond.Slaves() {
		drv := m.Driver
		if drv == "" {
			drv = bond.Driver
		}
		slaves[i] = &port.Port{Netdev: m.Netdev, RDMADevice: bond.RDMADevice, PortNum: bond.PortNum,
			Driver: drv, PCI: m.PCI, HCAType: bond.HCAType, RoCEv2GID: -1, Role: port.RolePF, Master: bond.Netdev}
	}
	out := make([]policy.Setting, 0, len(ss)*len(slaves))
	for _, s := range ss {
		k, err := kindOf(s.Kind)
		if err != nil || k.where != onPhysical || s.Port == nil || s.Port.Master != "" {
			out = append(out, s)
			continue
		}
		for _, sp := range slaves {
			c := s
			c.Port, c.Scope = sp, sp.Netdev
			c.Key = c.Scope + "." + c.Name
			out = append(out, c)
		}
	}
	return out
}

// lagValues collects what each slave of a bond holds for one setting, to
// report slaves that differ: drift of its own kind, since the driver
// keeps (or takes down) the LAG only while they agree.
type lagValues map[string][]lagValue // by bond + "/" + setting name

type lagValue struct {
	key, netdev, value string
}

func (l lagValues) add(s policy.Setting, v string, present bool) {
	if !present {
		v = "(none)"
	}
	id := s.Port.Master + "/" + s.Name
	l[id] = append(l[id], lagValue{key: s.Key, netdev: s.Port.Netdev, value: v})
}

// noteDifferences adds a note to every slave's key of a setting the slaves
// do not agree on.
func (l lagValues) noteDifferences(o *policy.Observed) {
	for id, vs := range l {
		same := true
		for _, v := range vs[1:] {
			same = same && v.value == vs[0].value
		}
		if same {
			continue
		}
		bond, _, _ := strings.Cut(id, "/")
		parts := make([]string, len(vs))
		for i, v := range vs {
			parts[i] = v.netdev + " = " + v.value
		}
		note := fmt.Sprintf("LAG %s: slaves differ (%s); mlx5 keeps RoCE LAG only while they match", bond, strings.Join(parts, ", "))
		for _, v := range vs {
			if o.Notes[v.key] == "" {
				o.Notes[v.key] = note
			} else {
				o.Notes[v.key] += "; " + note
			}
		}
	}
}
