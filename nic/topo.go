package nic

import (
	"path"
	"slices"
	"strconv"
	"strings"

	"github.com/rocectl/rocectl/port"
)

// topology fills in p's role and its relations: the bond and its slaves
// for a bond master, the owning PF for a VF. It reads only sysfs links and
// attributes the kernel maintains (master, bonding/, lower_*,
// device/physfn, phys_port_name), never names. nd is p's netdev's class
// directory.
//
// A VF's representor (switchdev mode: the eswitch's port of a VF, on the
// PF's device) counts as a VF: it is no physical port, and the port's
// QoS is its uplink's, as for the VF itself.
func topology(fs FS, nd Dir, p *port.Port) {
	if nd.Exists("bonding") {
		p.Role = port.RoleBond
		p.Bond = readBond(fs, p.Netdev)
		return
	}
	// One listing of the device directory says whether the netdev is a
	// VF (physfn) and how many VFs a PF has (virtfn*). A physfn the
	// listing lacks is no link to follow; one it has must lead somewhere
	// (a capture may have left the PF out).
	devEnts, devErr := fs.ReadDir(nd.Path() + "/device")
	isVF := (devErr != nil || slices.Contains(devEnts, "physfn")) && fs.Exists(nd.Path()+"/device/physfn")
	switch {
	case isVF:
		p.Role = port.RoleVF
		p.PF = pciNetdev(fs, nd.Path()+"/device/physfn")
	case isVFRepresentorName(portName(nd.ReadTrimmed("phys_port_name"))):
		p.Role = port.RoleVF
		p.PF = uplinkOf(fs, p.Netdev)
	case p.PCI != "":
		p.Role = port.RolePF
		p.VFs = countVFs(devEnts) // none when the listing failed
	default:
		p.Role = port.RoleVirtual
	}
}

// readBond reads a bond's mode and slaves. Slaves come from bonding/slaves
// (in enslave order, which is the order mlx5 numbers the LAG's ports),
// falling back to the lower_* links every upper device has.
func readBond(fs FS, name string) *port.Bond {
	base := "/sys/class/net/" + name
	b := &port.Bond{Name: name}
	if m, err := fs.ReadTrimmed(base + "/bonding/mode"); err == nil {
		b.Mode, _, _ = strings.Cut(m, " ")
	}
	var names []string
	if s, err := fs.ReadTrimmed(base + "/bonding/slaves"); err == nil {
		names = strings.Fields(s)
	} else if ents, err := fs.ReadDir(base); err == nil {
		for _, e := range ents {
			if n, ok := strings.CutPrefix(e, "lower_"); ok {
				names = append(names, n)
			}
		}
	}
	for _, n := range names {
		s := port.Slave{Netdev: n}
		dev := "/sys/class/net/" + n + "/device"
		if real, err := fs.Resolve(dev); err == nil && IsPCIAddress(path.Base(real)) {
			s.PCI = path.Base(real)
		}
		if l, err := fs.Readlink(dev + "/driver"); err == nil {
			s.Driver = path.Base(l)
		}
		b.Slaves = append(b.Slaves, s)
	}
	return b
}

// bondMaster returns the bond a netdev is enslaved to, or "" (the
// netdev's "master" link, present for every upper device; only a bonding
// master counts). nd is the netdev's class directory.
func bondMaster(fs FS, nd Dir) string {
	real, err := nd.Resolve("master")
	if err != nil {
		return ""
	}
	m := path.Base(real)
	if !fs.Exists("/sys/class/net/" + m + "/bonding") {
		return ""
	}
	return m
}

// lagNetdev says whether an RDMA device whose PCI function carries netdev
// is the RoCE LAG device of netdev's bond, and returns the bond. It is when
// the port's GIDs live on the bond (the RoCE GID cache puts a LAG device's
// addresses on the bond master) and no other slave of the bond has an RDMA
// device of its own (mlx5 removes the PFs' devices while LAG is active; a
// bond over two HCAs keeps both, and is not a LAG). netdev may be any
// slave: RDMA netlink names the one mlx5_lag_get_roce_netdev picks (the
// active one of an active-backup bond), while the LAG device sits on
// PF0's PCI function, so the slave there lists dev itself. nd is
// netdev's class directory.
func lagNetdev(fs FS, nd Dir, dev string, pn int, netdev string) string {
	master := bondMaster(fs, nd)
	if master == "" {
		return ""
	}
	gids, _ := ReadGIDs(fs, dev, pn)
	onBond := slices.ContainsFunc(gids, func(g GID) bool { return g.Netdev == master })
	if !onBond {
		return ""
	}
	for _, s := range readBond(fs, master).Slaves {
		if s.Netdev == netdev {
			continue
		}
		ents, _ := fs.ReadDir("/sys/class/net/" + s.Netdev + "/device/infiniband")
		if slices.ContainsFunc(ents, func(e string) bool { return e != dev }) {
			return ""
		}
	}
	return master
}

// physPortName reads a netdev's phys_port_name, which the kernel makes
// from its devlink port (__devlink_port_phys_port_name_get): "p<N>" or
// "p<N>s<M>" for a physical port (split), "[c<C>]pf<N>" for a PF's
// representor, "[c<C>]pf<N>vf<M>" for a VF's, "[c<C>]pf<N>sf<M>" for a
// subfunction's; "" when the netdev has none (EOPNOTSUPP: no devlink
// port, e.g. a VF's own netdev or a veth).
func physPortName(fs FS, netdev string) string {
	return portName(fs.ReadTrimmed("/sys/class/net/" + netdev + "/phys_port_name"))
}

// portName is the phys_port_name read, "" when it could not be.
func portName(s string, err error) string {
	if err != nil {
		return ""
	}
	return s
}

// parsePortName splits a phys_port_name into its letters and numbers:
// "c1pf0vf3" is [c pf vf] and [1 0 3]; ok is false for anything that is
// not letters each followed by a decimal number.
func parsePortName(s string) (keys []string, nums []int, ok bool) {
	for s != "" {
		i := strings.IndexAny(s, "0123456789")
		if i <= 0 {
			return nil, nil, false
		}
		j := i + len(s[i:]) - len(strings.TrimLeft(s[i:], "0123456789"))
		n, err := strconv.Atoi(s[i:j])
		if err != nil {
			return nil, nil, false
		}
		keys, nums = append(keys, s[:i]), append(nums, n)
		s = s[j:]
	}
	return keys, nums, len(keys) > 0
}

// isVFRepresentorName says whether a phys_port_name is that of an SR-IOV
// VF's representor: "pf<N>vf<M>", or "c<C>pf<N>vf<M>" on an external
// controller (devlink port flavour pcivf).
func isVFRepresentorName(name string) bool {
	keys, _, ok := parsePortName(name)
	if !ok {
		return false
	}
	if keys[0] == "c" {
		keys = keys[1:]
	}
	return slices.Equal(keys, []string{"pf", "vf"})
}

// isPhysicalPortName: "p<N>" or "p<N>s<M>" (devlink port flavour
// physical).
func isPhysicalPortName(name string) bool {
	keys, _, ok := parsePortName(name)
	return ok && (slices.Equal(keys, []string{"p"}) || slices.Equal(keys, []string{"p", "s"}))
}

// uplinkOf is the physical port a VF representor's traffic leaves by: the
// one netdev of the representor's device (on mlx5 the PF's PCI function,
// whose net/ holds the uplink and the representors) with a physical
// phys_port_name; "" when there is none or more than one.
func uplinkOf(fs FS, rep string) string {
	nets, err := fs.ReadDir("/sys/class/net/" + rep + "/device/net")
	if err != nil {
		return ""
	}
	up := ""
	for _, n := range nets {
		if n == rep || !isPhysicalPortName(physPortName(fs, n)) {
			continue
		}
		if up != "" {
			return ""
		}
		up = n
	}
	return up
}

// pciNetdev is the single netdev of the PCI function at dev (a
// device/physfn link), or "".
func pciNetdev(fs FS, dev string) string {
	if nets, err := fs.ReadDir(dev + "/net"); err == nil && len(nets) > 0 {
		return nets[0]
	}
	return ""
}

// countVFs counts a PF's virtfn* links (the VFs enabled through
// sriov_numvfs) among the names in its device directory.
func countVFs(ents []string) int {
	n := 0
	for _, e := range ents {
		if strings.HasPrefix(e, "virtfn") {
			n++
		}
	}
	return n
}

// VFsOf lists the netdevs of a PF's VFs (device/virtfn*/net/*), in VF
// order, for the topology view.
func VFsOf(fs FS, pfNetdev string) []string {
	dev := "/sys/class/net/" + pfNetdev + "/device"
	ents, err := fs.ReadDir(dev)
	if err != nil {
		return nil
	}
	var fns []string
	for _, e := range ents {
		if strings.HasPrefix(e, "virtfn") {
			fns = append(fns, e)
		}
	}
	slices.SortFunc(fns, func(a, b string) int { return trailingNumber(a) - trailingNumber(b) })
	var out []string
	for _, f := range fns {
		if n := pciNetdev(fs, dev+"/"+f); n != "" {
			out = append(out, n)
		}
	}
	return out
}
