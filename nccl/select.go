package nccl

import (
	"fmt"
	"net"
	"strconv"
	"strings"

	"github.com/rocectl/rocectl/nic"
	"github.com/rocectl/rocectl/policy"
	"github.com/rocectl/rocectl/port"
)

// GIDSelected is the GIDChoice mode of IB_GID_INDEX = "select": no index
// is pinned (-1 is written); NCCL (2.21 and later) selects per device by the family,
// range and RoCE version rocectl writes, and every matched port's table
// was checked to hold a GID they select.
const GIDSelected = "select"

// Pick is what NCCL's selection settles on for one port under the
// variables rocectl writes for "select": the GID, or, when the port's
// table holds none that qualifies, what is wrong with the table.
type Pick struct {
	Port    string // dev:port
	GID     port.GID
	OK      bool
	Problem string // when !OK: the table, named, and why it fails
}

// Selection is the family, range and RoCE version NCCL should select by,
// and the pick on every port.
type Selection struct {
	Family  string // "AF_INET" or "AF_INET6"
	Range   string // "" when the profile sets none
	Version int
	Picks   []Pick
	// Notes are what the operator should know though nothing fails: a
	// port with qualifying GIDs on several netdevs or subnets, of which
	// NCCL takes the lowest index.
	Notes []string
}

// Failed returns the picks that found no GID.
func (s Selection) Failed() []Pick {
	var out []Pick
	for _, p := range s.Picks {
		if !p.OK {
			out = append(out, p)
		}
	}
	return out
}

// Select derives the selection variables for ports whose whole GID tables
// are known (port.Port.GIDs) and checks them on every port:
//   - the RoCE version is the profile's IB_ROCE_VERSION_NUM, else 2;
//   - the family is the profile's IB_ADDR_FAMILY, else the family of its
//     IB_ADDR_RANGE, else AF_INET when every port has a GID of that
//     family, AF_INET6 when not and every port has a global IPv6 GID
//     (IPv6-only fabrics, such as Broadcom Thor2 deployments), else
//     AF_INET, with the ports that lack one failing;
//   - each port's pick is nic.SelectGID's: the lowest index of the
//     family, range and version, neither unconfigured nor link-local,
//     which is where NCCL's ncclIbGetGidIndex ends (nccl's
//     TestSelectMatchesNCCL re-runs NCCL's own loop on every fixture).
//
// A range whose family is not the family NCCL selects by is ignored by
// NCCL (envIbAddrRange: inet_pton fails), and fails here on every port.
func Select(c *policy.NCCL, ports []port.Port) Selection {
	s := Selection{Version: 2, Family: "AF_INET"}
	if v, ok := c.Var("IB_ROCE_VERSION_NUM"); ok {
		if n, err := strconv.Atoi(v); err == nil {
			s.Version = n
		}
	}
	var subnet *net.IPNet
	rangeFamily := 0
	if r, ok := c.Var("IB_ADDR_RANGE"); ok {
		s.Range = r
		if _, n, err := net.ParseCIDR(r); err == nil {
			subnet = n
			rangeFamily = 6
			if n.IP.To4() != nil {
				rangeFamily = 4
			}
		}
	}
	family := 0
	if f, ok := c.Var("IB_ADDR_FAMILY"); ok {
		family = familyNum(f)
	}
	if family == 0 && rangeFamily != 0 {
		family = rangeFamily
	}
	if family == 0 {
		family = 4
		all4, all6 := true, true
		for _, p := range ports {
			_, ok4 := nic.SelectGID(p.GIDs, nic.GIDQuery{Family: 4, Subnet: subnet, RoCEVersion: s.Version})
			_, ok6 := nic.SelectGID(p.GIDs, nic.GIDQuery{Family: 6, Subnet: subnet, RoCEVersion: s.Version})
			all4, all6 = all4 && ok4, all6 && ok6
		}
		if !all4 && all6 && len(ports) > 0 {
			family = 6
		}
	}
	s.Family = familyName(family)
	for _, p := range ports {
		id := fmt.Sprintf("%s:%d", p.RDMADevice, p.PortNum)
		pick := Pick{Port: id}
		switch {
		case rangeFamily != 0 && rangeFamily != family:
			pick.Problem = fmt.Sprintf("%s: IB_ADDR_RANGE %s is not an %s range, and NCCL ignores a range of the other family", id, s.Range, s.Family)
		default:
			g, ok := nic.SelectGID(p.GIDs, nic.GIDQuery{Family: family, Subnet: subnet, RoCEVersion: s.Version})
			if ok {
				pick.GID, pick.OK = g, true
			} else {
				pick.Problem = id + ": " + tableProblem(p, family, subnet, s.Version)
			}
		}
		s.Picks = append(s.Picks, pick)
		if note := severalCandidates(p, family, subnet, s.Version); note != "" {
			s.Notes = append(s.Notes, id+": "+note)
		}
	}
	return s
}

func familyNum(f string) int {
	switch f {
	case "AF_INET":
		return 4
	case "AF_INET6":
		return 6
	}
	return 0
}

func familyName(f int) string {
	if f == 6 {
		return "AF_INET6"
	}
	return "AF_INET"
}

// gidText is a GID as an operator reads it: the IPv4 address for an
// IPv4-mapped GID, with its index, type and netdev.
func gidText(g port.GID) string {
	addr := g.GID.String()
	if v4 := g.GID.To4(); v4 != nil {
		addr = v4.String()
	}
	s := fmt.Sprintf("%s (index %d, %s", addr, g.Index, g.Type)
	if g.Netdev != "" {
		s += ", " + g.Netdev
	}
	return s + ")"
}

func gidList(gs []port.GID) string {
	const max = 4
	parts := make([]string, 0, max+1)
	for i, g := range gs {
		if i == max {
			parts = append(parts, fmt.Sprintf("and %d more", len(gs)-max))
			break
		}
		parts = append(parts, gidText(g))
	}
	return strings.Join(parts, ", ")
}

// linkLocal is NCCL's linkLocalGid and the unconfigured fe80:: of its
// configuredGid: fe80:0000:0000:0000/64.
func linkLocal(ip net.IP) bool {
	ip = ip.To16()
	return ip != nil && ip[0] == 0xfe && ip[1] == 0x80 && ip[2] == 0 && ip[3] == 0 && ip[4] == 0 && ip[5] == 0 && ip[6] == 0 && ip[7] == 0
}

// tableProblem says why no GID of the table qualifies, from the most
// basic lack up: nothing at all, link-local only, the other family only,
// none in the range, none of the RoCE version.
func tableProblem(p port.Port, family int, subnet *net.IPNet, version int) string {
	fam := familyName(family)
	if len(p.GIDs) == 0 {
		return fmt.Sprintf("its GID table is empty: %s has no address; NCCL would keep index 0, which holds no GID", orNetdev(p))
	}
	var routable, inFamily, inRange []port.GID
	for _, g := range p.GIDs {
		if g.GID.IsUnspecified() || linkLocal(g.GID) {
			continue
		}
		routable = append(routable, g)
		if _, v4 := isV4(g.GID); (family == 4) != v4 {
			continue
		}
		inFamily = append(inFamily, g)
		if _, ok := nic.SelectGID([]port.GID{g}, nic.GIDQuery{Family: family, Subnet: subnet, RoCEVersion: port.RoCEVersion(g.Type)}); ok {
			inRange = append(inRange, g)
		}
	}
	fallback := "NCCL would keep index 0, a link-local GID, and the connection fails or crosses the wrong network"
	switch {
	case len(routable) == 0:
		return fmt.Sprintf("link-local only (%s): no routable address on %s or an upper device (VLAN, bond); %s", gidList(p.GIDs), orNetdev(p), fallback)
	case len(inFamily) == 0 && family == 4:
		return fmt.Sprintf("IPv6-only (%s): NCCL_IB_ADDR_FAMILY=AF_INET finds no GID; %s. Set IB_ADDR_FAMILY = \"AF_INET6\" if the fabric is IPv6, or give %s an IPv4 address", gidList(routable), fallback, orNetdev(p))
	case len(inFamily) == 0:
		return fmt.Sprintf("IPv4-only (%s): NCCL_IB_ADDR_FAMILY=AF_INET6 finds no GID; %s", gidList(routable), fallback)
	case len(inRange) == 0:
		return fmt.Sprintf("no %s GID in IB_ADDR_RANGE %s (it has %s); %s", fam, subnet, gidList(inFamily), fallback)
	}
	return fmt.Sprintf("no RoCE v%d GID among its %s GIDs (%s); NCCL would take one of another RoCE version, which the peer does not speak", version, fam, gidList(inRange))
}

func orNetdev(p port.Port) string {
	if p.Netdev == "" {
		return "its netdev"
	}
	return p.Netdev
}

func isV4(ip net.IP) (net.IP, bool) {
	ip = ip.To16()
	if ip == nil {
		return nil, false
	}
	// IPv4-mapped, or NCCL's IPv4-mapped multicast ff0e::ffff:a.b.c.d
	// (getGidAddrFamily).
	for i := 4; i < 10; i++ {
		if ip[i] != 0 {
			return nil, false
		}
	}
	if ip[10] != 0xff || ip[11] != 0xff {
		return nil, false
	}
	head := ip[0] == 0 && ip[1] == 0 && ip[2] == 0 && ip[3] == 0 || ip[0] == 0xff && ip[1] == 0x0e && ip[2] == 0 && ip[3] == 0
	if !head {
		return nil, false
	}
	return net.IPv4(ip[12], ip[13], ip[14], ip[15]), true
}

// severalCandidates notes a port with more than one qualifying GID on
// different netdevs or subnets (an untagged address and a VLAN's): NCCL
// takes the lowest index, which may not be the network the operator
// means; IB_ADDR_RANGE chooses.
func severalCandidates(p port.Port, family int, subnet *net.IPNet, version int) string {
	var quals []port.GID
	for _, g := range p.GIDs {
		if _, ok := nic.SelectGID([]port.GID{g}, nic.GIDQuery{Family: family, Subnet: subnet, RoCEVersion: version}); ok {
			quals = append(quals, g)
		}
	}
	if len(quals) < 2 {
		return ""
	}
	distinct := false
	for _, g := range quals[1:] {
		if g.Netdev != quals[0].Netdev || !g.GID.Equal(quals[0].GID) {
			distinct = true
		}
	}
	if !distinct {
		return ""
	}
	return fmt.Sprintf("%d GIDs qualify (%s); NCCL takes the lowest index, %d: set IB_ADDR_RANGE to the subnet NCCL should use if that is not it",
		len(quals), gidList(quals), quals[0].Index)
}

// selectGID decides IB_GID_INDEX = "select": no index is pinned; the
// selection variables the profile does not set are returned as extra
// (ROCE_VERSION_NUM, ADDR_FAMILY). A port whose table is not known, or
// holds no GID the selection takes, refuses the choice with every such
// port named.
func selectGID(c *policy.NCCL, ports []port.Port) (GIDChoice, []Var, []string) {
	if len(ports) == 0 {
		return GIDChoice{Mode: GIDRefused, Reason: "no RDMA port matched the profile"}, nil, nil
	}
	if why := unknownGIDs(ports); len(why) > 0 {
		return GIDChoice{Mode: GIDUnknown, Reason: "unknown: " + strings.Join(why, "; ")}, nil, nil
	}
	var unread []string
	for _, p := range ports {
		if p.GIDs == nil {
			unread = append(unread, fmt.Sprintf("%s:%d", p.RDMADevice, p.PortNum))
		}
	}
	if len(unread) > 0 {
		return GIDChoice{Mode: GIDUnknown, Reason: "unknown: the GID tables of " + strings.Join(unread, ", ") + " were not read"}, nil, nil
	}
	s := Select(c, ports)
	how := fmt.Sprintf("NCCL ≥ 2.21 selects per device with ROCE_VERSION_NUM=%d, ADDR_FAMILY=%s", s.Version, s.Family)
	if s.Range != "" {
		how += ", ADDR_RANGE=" + s.Range
	}
	if failed := s.Failed(); len(failed) > 0 {
		problems := make([]string, len(failed))
		for i, f := range failed {
			problems[i] = f.Problem
		}
		return GIDChoice{Mode: GIDRefused, Reason: strings.Join(problems, "; ") + " (" + how + ")"}, nil, s.Notes
	}
	picks := make([]string, len(s.Picks))
	for i, p := range s.Picks {
		picks[i] = p.Port + " → " + gidText(p.GID)
	}
	var extra []Var
	if _, ok := c.Var("IB_ROCE_VERSION_NUM"); !ok {
		extra = append(extra, Var{"NCCL_IB_ROCE_VERSION_NUM", strconv.Itoa(s.Version)})
	}
	if _, ok := c.Var("IB_ADDR_FAMILY"); !ok {
		extra = append(extra, Var{"NCCL_IB_ADDR_FAMILY", s.Family})
	}
	return GIDChoice{Mode: GIDSelected, Reason: how + ": " + strings.Join(picks, ", ")}, extra, s.Notes
}
