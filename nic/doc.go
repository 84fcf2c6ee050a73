// Package nic is rocectl's side of the kernel: discovery of RDMA ports and
// their netdevs (bonds, PF/VF), and one file per kernel interface
// (rtnetlink, ethtool, devlink, dcbnl through nic/dcb, GIDs, PCI, rdma
// netlink, ECN and tunables) behind Kernel, the one seam tests replace, and
// the confined, rooted file system (sysfs, configfs, debugfs, or a packed
// snapshot's files in memory). Subpackages: nic/dcb (the dcbnl protocol),
// nic/snapshot (captures and answering from them), nic/dump (text dumps of
// the usual tools); nic/nictest is the simulated kernel for tests.
//
// In internal/arch's table nic is layer 1: of this module it may import
// port and internal/lib only, never policy (policy and nic never import
// each other).
package nic
