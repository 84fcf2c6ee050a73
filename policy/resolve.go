package policy

import (
	"fmt"
	"path"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/rocectl/rocectl/port"
)

// Desired is a profile resolved against one host: the settings each matched
// port should have, and the host-wide ones (the NCCL file's, which package
// nccl derives: nccl.Resolve).
type Desired struct {
	Profile *Profile
	Ports   []DesiredPort
	Host    []Setting
	// Unresolved lists settings that cannot be derived on this host yet
	// (e.g. NCCL_IB_GID_INDEX = "auto" before any IPv4 address exists).
	Unresolved []Unsupported
	// Unknown lists settings that cannot be derived from what the source
	// holds (a snapshot without the facts they depend on).
	Unknown []Unknown
	// Unmatched names the RoCE ports the profile's [match] left out.
	Unmatched []port.Port
	// Placed says the settings are where they live on the host's
	// topology (host.Place: a bond's on its slaves, none a VF cannot
	// take): what observing and planning need.
	Placed bool
}

// DesiredPort is one matched port and its settings in apply order.
type DesiredPort struct {
	Port     port.Port
	Settings []Setting
}

// All returns every setting: the ports' in order, then the host's.
func (d *Desired) All() []Setting {
	n := len(d.Host)
	for _, p := range d.Ports {
		n += len(p.Settings)
	}
	out := make([]Setting, 0, n)
	for _, p := range d.Ports {
		out = append(out, p.Settings...)
	}
	return append(out, d.Host...)
}

// Matches reports whether the profile's [match] selects port. A port
// whose match depends on a fact nobody captured (MatchUnknown) does not
// match.
func (m Match) Matches(p port.Port) bool {
	return globAny(m.Drivers, p.Driver) && globAny(m.Netdevs, p.Netdev) &&
		globAny(m.RDMADevices, p.RDMADevice) && globAny(m.PCI, p.PCI) &&
		(len(m.Roles) == 0 || slices.Contains(m.Roles, p.Role))
}

// MatchUnknown says why whether [match] selects p cannot be known, or ""
// when it can: the criteria on facts the source holds all select p, and
// a criterion on one it does not hold is set. The facts a source can lack
// are the driver (a snapshot imported without ethtool -i) and, for a port
// known only from netdev dumps, its RDMA device and PCI address.
func (m Match) MatchUnknown(p port.Port) string {
	netdevOnly := p.Role == port.RoleNetdevOnly
	var missing []string
	known := globAny(m.Netdevs, p.Netdev) && (len(m.Roles) == 0 || slices.Contains(m.Roles, p.Role))
	check := func(globs []string, v, name string, unknown bool) {
		switch {
		case len(globs) == 0:
		case unknown && globAny(globs, v):
			// A glob that takes even the empty value ("*") takes
			// whatever the value is.
		case unknown:
			missing = append(missing, name)
		case !globAny(globs, v):
			known = false
		}
	}
	check(m.Drivers, p.Driver, "driver", p.Driver == "")
	check(m.RDMADevices, p.RDMADevice, "RDMA device", netdevOnly && p.RDMADevice == "")
	check(m.PCI, p.PCI, "PCI address", netdevOnly && p.PCI == "")
	if !known || len(missing) == 0 {
		return ""
	}
	return fmt.Sprintf("whether [match] selects %s is unknown: its %s is not known", p.Netdev, strings.Join(missing, " and "))
}

func globAny(globs []string, s string) bool {
	if len(globs) == 0 {
		return true
	}
	for _, g := range globs {
		if ok, _ := path.Match(g, s); ok {
			return true
		}
	}
	return false
}

// Resolve turns a profile into the desired settings of each matched port.
func Resolve(p *Profile, ports []port.Port) *Desired {
	d := &Desired{Profile: p}
	tmpl := portTemplate(p) // the same for every port: formatted and sorted once
	for _, pt := range ports {
		if why := p.Match.MatchUnknown(pt); why != "" {
			// Neither matched nor left out: each of the port's settings
			// is unknown, so nothing is read or written for it, and the
			// audit says so instead of "no port matches".
			pt := pt
			for _, s := range instantiate(tmpl, &pt) {
				d.Unknown = append(d.Unknown, Unknown{Key: s.Key, Scope: s.Scope, Reason: why, Want: s.Value, Port: s.Port})
			}
			continue
		}
		if !p.Match.Matches(pt) {
			d.Unmatched = append(d.Unmatched, pt)
			continue
		}
		pt := pt
		d.Ports = append(d.Ports, DesiredPort{Port: pt, Settings: instantiate(tmpl, &pt)})
	}
	// The NCCL file's host settings are derived by package nccl
	// (nccl.Resolve), which knows how NCCL selects devices and GIDs.
	return d
}

// scopeOf says which of a port's scopes a template setting belongs to: the
// netdev (link, DCB, devlink) or the RDMA device port (ECN, rdma_cm).
type scopeOf int

const (
	onNetdev scopeOf = iota
	onRDMAPort
)

// templateSetting is a setting of the port template, before it has a port.
type templateSetting struct {
	Setting
	scope scopeOf
}

// instantiate gives a port its copy of the template, with real scopes.
func instantiate(tmpl []templateSetting, pt *port.Port) []Setting {
	out := make([]Setting, len(tmpl))
	nd, rd := pt.Netdev, pt.RDMAScope()
	for i, t := range tmpl {
		s := t.Setting
		s.Scope = nd
		if t.scope == onRDMAPort {
			s.Scope = rd
		}
		s.Key = s.Scope + "." + s.Name
		s.Port = pt
		out[i] = s
	}
	return out
}

// builder accumulates a port template.
type builder struct {
	out []templateSetting
}

func (b *builder) add(scope scopeOf, name string, kind Kind, arg, value, from string) {
	b.out = append(b.out, templateSetting{Setting: Setting{Name: name, Kind: kind, Arg: arg, Value: value, From: from}, scope: scope})
}

// portTemplate is the settings every matched port gets, in apply order,
// with placeholder scopes (netdev or RDMA port) filled in by instantiate.
func portTemplate(p *Profile) []templateSetting {
	b := &builder{}
	nd, rd := onNetdev, onRDMAPort
	itoa := strconv.Itoa

	if v := p.Link.MTU; v != nil {
		b.add(nd, "link.mtu", KindMTU, "", itoa(*v), "link.mtu")
	}
	if v := p.Link.RxRing; v != nil {
		b.add(nd, "link.rx_ring", KindRxRing, "", itoa(*v), "link.rx_ring")
	}
	if v := p.Link.TxRing; v != nil {
		b.add(nd, "link.tx_ring", KindTxRing, "", itoa(*v), "link.tx_ring")
	}
	for _, f := range p.Link.PrivateFlags {
		b.add(nd, "link.private_flags."+f.Name, KindPrivFlag, f.Name, FormatBool(f.Value), "link.private_flags."+f.Name)
	}

	q := &p.QoS
	if v := q.GlobalPause; v != nil {
		b.add(nd, "qos.global_pause", KindGlobalPause, "", FormatBool(*v), "qos.global_pause")
	}
	if v := q.DCBX; v != nil {
		b.add(nd, "qos.dcbx", KindDCBX, "", *v, "qos.dcbx")
	}
	if v := q.Trust; v != nil {
		b.add(nd, "qos.trust", KindTrust, "", *v, "qos.trust")
	}
	if v := q.DSCPToPriority; v != nil {
		b.add(nd, "qos.dscp2prio", KindDSCPMap, "", FormatDSCPMap(v.Entries), "qos.dscp_to_priority")
	}
	if e := q.ETS; e != nil {
		b.add(nd, "qos.ets.priority_to_tc", KindETSPrioTC, "", FormatInts8(e.PriorityToTC), "qos.ets.priority_to_tc")
		b.add(nd, "qos.ets.tc_tsa", KindETSTSA, "", FormatStrings8(e.TCTSA), "qos.ets.tc_tsa")
		b.add(nd, "qos.ets.tc_bandwidth", KindETSBandwidth, "", FormatInts8(e.TCBandwidth), "qos.ets.tc_bandwidth")
	}
	if v := q.PFCPriorities; v != nil {
		b.add(nd, "qos.pfc", KindPFC, "", FormatPrioBitmap(uint8(*v)), "qos.pfc_priorities")
	}
	if v := q.CableLengthM; v != nil {
		b.add(nd, "qos.cable_length_m", KindCableLength, "", itoa(*v), "qos.cable_length_m")
	}
	if v := p.Buffers.PriorityToBuffer; v != nil {
		b.add(nd, "buffers.priority_to_buffer", KindPrioBuffer, "", FormatInts8(*v), "buffers.priority_to_buffer")
	}
	if v := p.Buffers.BufferSize; v != nil {
		b.add(nd, "buffers.buffer_size", KindBufferSize, "", FormatSizes8(*v), "buffers.buffer_size")
	}
	if v := q.PFCStormPrevention; v != nil {
		b.add(nd, "qos.pfc_storm_prevention", KindStormPrevention, "", v.canonical(), "qos.pfc_storm_prevention")
	}

	e := &p.ECN
	for _, dir := range []struct {
		name string
		set  *PrioSet
		from string
	}{{"rp", e.RPPriorities, "ecn.rp_priorities"}, {"np", e.NPPriorities, "ecn.np_priorities"}} {
		if dir.set == nil {
			// mode = "off": ECN off on each lossless priority, the
			// others left as they are (CNP settings too).
			if e.Mode != nil && *e.Mode == CCOff && p.QoS.PFCPriorities != nil {
				for _, prio := range p.QoS.PFCPriorities.List() {
					b.add(rd, fmt.Sprintf("ecn.%s.enable.%d", dir.name, prio), KindECNEnable, fmt.Sprintf("%s/%d", dir.name, prio), FormatBool(false), "ecn.mode")
				}
			}
			continue
		}
		// The list is the whole set: priorities left out are disabled.
		for prio := 0; prio < 8; prio++ {
			b.add(rd, fmt.Sprintf("ecn.%s.enable.%d", dir.name, prio), KindECNEnable, fmt.Sprintf("%s/%d", dir.name, prio), FormatBool(dir.set.Has(prio)), dir.from)
		}
	}
	if v := e.CNPDSCP; v != nil {
		b.add(rd, "ecn.np.cnp_dscp", KindECNParam, "np/cnp_dscp", itoa(*v), "ecn.cnp_dscp")
	}
	if v := e.CNPPriority; v != nil {
		b.add(rd, "ecn.np.cnp_802p_prio", KindECNParam, "np/cnp_802p_prio", itoa(*v), "ecn.cnp_priority")
	}
	for _, prm := range e.DCQCN {
		spec, _ := DCQCNSpecByName(prm.Name)
		b.add(rd, "ecn."+spec.Dir+"."+prm.Name, KindECNParam, spec.Dir+"/"+prm.Name, strconv.FormatInt(prm.Value, 10), "ecn.dcqcn."+prm.Name)
	}

	r := &p.RoCE
	if v := r.Mode; v != nil {
		b.add(rd, "roce.default_roce_mode", KindRoCEMode, "", *v, "roce.mode")
	}
	if v := r.DefaultTOS; v != nil {
		b.add(rd, "roce.default_roce_tos", KindRoCETOS, "", itoa(*v), "roce.default_tos")
	}
	if v := r.VerbsTrafficClass; v != nil {
		b.add(rd, "roce.traffic_class", KindTrafficClass, "", itoa(*v), "roce.verbs_traffic_class")
	}
	for _, dp := range p.Devlink {
		b.add(nd, "devlink."+dp.Name, KindDevlink, dp.Name, fmt.Sprint(dp.Value), "devlink."+dp.Name)
	}
	for _, fs := range p.Firmware.settings() {
		b.add(nd, "firmware."+fs.spec.Key, KindFirmware, fs.spec.Key, fs.value, "firmware."+fs.spec.Key)
	}
	// Write order: by kind (Kind.WriteOrder), then name.
	sort.SliceStable(b.out, func(i, j int) bool {
		if b.out[i].Kind != b.out[j].Kind {
			return b.out[i].Kind.WriteOrder() < b.out[j].Kind.WriteOrder()
		}
		return b.out[i].Name < b.out[j].Name
	})
	return b.out
}
