package port

import (
	"fmt"
	"net"
	"strings"
)

// Port is one RoCE port: an RDMA device port with an Ethernet link layer
// and the netdev that carries it. nic.Discover fills the fields with JSON
// names (they are the ports of `rocectl topo -o json`); the others are
// filled later, by host, and are not part of the discovery document.
type Port struct {
	// RDMADevice is the RDMA device, /sys/class/infiniband/<dev>; "" for
	// a netdev-only port (RoleNetdevOnly).
	RDMADevice string `json:"rdma_device"`
	// PortNum is the device's port, /sys/class/infiniband/<dev>/ports/<n>;
	// 0 for a netdev-only port.
	PortNum int `json:"port"`
	// Netdev is the port's netdev: <dev>/device/net/* (the PCI function's
	// single netdev), else <dev>/parent (rxe), else the netdev of the
	// port's GID entries; for a RoCE LAG device, the bond master.
	Netdev string `json:"netdev"`
	// PCI is the bus address, e.g. 0000:3b:00.0, the base name of
	// <dev>/device's target (for a netdev-only port ethtool's bus-info);
	// empty for virtual devices (rxe).
	PCI string `json:"pci,omitempty"`
	// Driver is the netdev driver, e.g. mlx5_core: ethtool driver info
	// (ETHTOOL_GDRVINFO), else /sys/class/net/<netdev>/device/driver. A
	// bond's is its first slave's, not "bonding".
	Driver string `json:"driver"`
	// Firmware is from ethtool driver info, else <dev>/fw_ver.
	Firmware string `json:"firmware,omitempty"`
	// NUMANode is <dev>/device/numa_node; -1 when unknown.
	NUMANode int `json:"numa_node"`
	// HCAType is <dev>/hca_type.
	HCAType string `json:"hca_type,omitempty"`
	// BoardID is <dev>/board_id.
	BoardID string `json:"board_id,omitempty"`
	// State is the RDMA port state, <dev>/ports/<n>/state without its
	// number, e.g. "ACTIVE"; "unknown" when unreadable.
	State string `json:"state"`
	// Rate is <dev>/ports/<n>/rate, e.g. "100 Gb/sec (4X EDR)".
	Rate string `json:"rate,omitempty"`
	// OperState is /sys/class/net/<netdev>/operstate.
	OperState string `json:"operstate,omitempty"`
	// SpeedMbps is /sys/class/net/<netdev>/speed; 0 when unknown.
	SpeedMbps int `json:"speed_mbps,omitempty"`

	// Role is the port's place in the host's topology (RolePF, RoleVF,
	// RoleBond, RoleVirtual, RoleNetdevOnly), from the sysfs links the
	// kernel maintains (nic/topo.go); "" when unknown: matched by no
	// [match] roles list.
	Role string `json:"role,omitempty"`
	// Bond is the bond whose master is Netdev (RoCE LAG: mlx5_bond_0 on
	// bond0), with its slaves; nil otherwise.
	Bond *Bond `json:"bond,omitempty"`
	// PF is, for a VF, the netdev of the PF that owns the port's QoS
	// (/sys/class/net/<netdev>/device/physfn/net/*).
	PF string `json:"pf,omitempty"`
	// VFs is, for a PF, how many SR-IOV VFs it has enabled (the virtfn*
	// links under /sys/class/net/<netdev>/device).
	VFs int `json:"vfs,omitempty"`

	// RoCEv2GID is the RoCE v2 IPv4 GID index NCCL would pick on this port
	// (on the port's netdev or an upper device such as a VLAN), from
	// <dev>/ports/<n>/gids and gid_attrs; -1 when there is none (no IPv4
	// address yet) or nobody looked: discovery does not (it costs three
	// reads per GID entry), host.Ports does when asked.
	RoCEv2GID int `json:"-"`
	// GIDUnknown says why host.Ports could not find RoCEv2GID (a GID
	// table that could not be read); "" when RoCEv2GID is known, an
	// index or -1 for none.
	GIDUnknown string `json:"-"`
	// GIDs is the port's whole GID table (populated entries, lowest index
	// first), read only for what needs more than RoCEv2GID: checking the
	// family, range and RoCE version NCCL selects by (nccl's "select").
	// nil when nobody read it; GIDUnknown then says why when a read
	// failed.
	GIDs []GID `json:"-"`
	// Master is, for a slave of a LAG's bond, the bond's netdev
	// (/sys/class/net/<slave>/master): host.Place sets it on the port it
	// makes for each slave, where per-physical-port settings are written.
	Master string `json:"-"`
}

// GID is one populated entry of a port's GID table. nic reads it (nic.GID
// is this type); it lives here so that a Port can carry its table to the
// packages that may not import nic's readers' callers (policy) or that
// reason over it (nccl).
type GID struct {
	// Index is i in /sys/class/infiniband/<dev>/ports/<p>/gids/<i>; it is the
	// value NCCL_IB_GID_INDEX and ibv_modify_qp's sgid_index take.
	Index int `json:"index"`
	// GID is the 16-byte address from gids/<i> (IPv4 addresses appear
	// IPv4-mapped, ::ffff:a.b.c.d).
	GID net.IP `json:"gid"`
	// Type is gid_attrs/types/<i>: "RoCE v2" or "IB/RoCE v1".
	Type string `json:"type"`
	// Netdev is gid_attrs/ndevs/<i>: the netdev the GID belongs to (for a
	// VLAN, bond or macvlan address, the upper device, e.g. "ens1f0.100").
	// Empty when the kernel has none to show (InfiniBand ports; reading
	// ndevs then fails with EINVAL).
	Netdev string `json:"netdev,omitempty"`
}

// RoCEVersion maps a GID's type (gid_attrs/types/<i>) to 1 or 2 the way
// NCCL's ncclIbRoceGetVersionNum does (prefix match), 0 for anything else.
func RoCEVersion(typ string) int {
	switch {
	case strings.HasPrefix(typ, "IB/RoCE v1"), strings.HasPrefix(typ, "RoCE v1"):
		return 1
	case strings.HasPrefix(typ, "RoCE v2"):
		return 2
	}
	return 0
}

// Bond is the bond a LAG port's netdev is the master of.
type Bond struct {
	// Name is the bond's netdev.
	Name string `json:"name"`
	// Mode is the bonding mode's name, "802.3ad" or "active-backup"
	// (/sys/class/net/<bond>/bonding/mode reads "802.3ad 4").
	Mode string `json:"mode,omitempty"`
	// Slaves are /sys/class/net/<bond>/bonding/slaves, in enslave order,
	// else its lower_* links.
	Slaves []Slave `json:"slaves"`
}

// Slave is one physical port under a bond: the netdev and the PCI function
// that carries it. Per-physical-port settings (DCB, pause, buffers, ECN,
// the storm tunable) are written here, and must agree on every slave:
// mlx5 activates RoCE LAG only when they match.
type Slave struct {
	Netdev string `json:"netdev"`
	// PCI is the base name of /sys/class/net/<slave>/device's target.
	PCI string `json:"pci,omitempty"`
	// Driver is the base name of /sys/class/net/<slave>/device/driver.
	Driver string `json:"driver,omitempty"`
}

// Roles of a RoCE port in the host's topology. A port's role says where
// the settings that live on a physical port are written: on the port
// itself (a PF), on every slave of its bond (an RDMA LAG device), or
// nowhere (a VF: its PF owns the port's QoS).
const (
	RolePF      = "pf"      // a physical function (with or without SR-IOV VFs)
	RoleVF      = "vf"      // an SR-IOV virtual function (device/physfn exists), or a VF's eswitch representor
	RoleBond    = "bond"    // the port's netdev is a bond master (RoCE LAG, or rxe on a bond)
	RoleVirtual = "virtual" // a software device on a netdev without a PCI function (rxe on a veth)
)

// RoleNetdevOnly is the role of a port known only from netdev-level
// facts: a netdev of a snapshot imported from text dumps (mlnx_qos,
// ethtool) that say nothing of an RDMA device on it. It has no RDMA device
// and no port number; profiles match it by netdev, driver or PCI address,
// and its RDMA-scoped settings read as unknown.
const RoleNetdevOnly = "netdev-only"

// Roles lists every role a [match] roles list may name, for validation and
// help text.
func Roles() []string { return []string{RolePF, RoleVF, RoleBond, RoleVirtual} }

// Slaves returns the physical ports under the port's bond (RoCE LAG),
// where per-physical-port settings are written; nil for a port that is
// not a bond master.
func (p Port) Slaves() []Slave {
	if p.Bond == nil {
		return nil
	}
	return p.Bond.Slaves
}

// BondMode returns the mode of the port's bond, or "".
func (p Port) BondMode() string {
	if p.Bond == nil {
		return ""
	}
	return p.Bond.Mode
}

// RDMAScope is the key prefix of settings that belong to the RDMA device
// port rather than the netdev: "mlx5_0", or "mlx5_0:2" for a second port.
// A port known without its RDMA device (netdev-only, from an imported
// snapshot) keeps them under its netdev.
func (p Port) RDMAScope() string {
	if p.RDMADevice == "" {
		return p.Netdev
	}
	if p.PortNum > 1 {
		return fmt.Sprintf("%s:%d", p.RDMADevice, p.PortNum)
	}
	return p.RDMADevice
}

// Describe is the port's place in the topology in one line, for headers:
// "mlx5_bond_0 (bond0: ens1f0np0 + ens1f1np1, 802.3ad)", "mlx5_2 (VF of
// ens1f0np0)", or the RDMA device alone.
func (p Port) Describe() string {
	switch {
	case p.Bond != nil:
		names := make([]string, len(p.Bond.Slaves))
		for i, s := range p.Bond.Slaves {
			names[i] = s.Netdev
		}
		d := p.Bond.Name + ": " + strings.Join(names, " + ")
		if p.Bond.Mode != "" {
			d += ", " + p.Bond.Mode
		}
		return p.RDMADevice + " (" + d + ")"
	case p.Role == RoleVF && p.PF != "":
		return p.RDMADevice + " (VF of " + p.PF + ")"
	}
	return p.RDMADevice
}
