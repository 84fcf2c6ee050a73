// Package snapshot captures everything rocectl reads from a host into a
// directory and answers from it later: `rocectl audit --snapshot DIR` on a
// laptop, support bundles, and the fixture hosts under testdata/hosts.
//
// A snapshot directory holds snapshot.json (Meta), kernel.json (KernelState:
// what rtnetlink, dcbnl, ethtool and devlink said) and sys/..., the
// sysfs/configfs/debugfs files laid out as on the host with their real
// relative symlinks, so the directory itself is a root for nic.NewFS. The
// format is specified in docs/snapshot-format.md.
//
// A writable simulation of a KernelState (the kernel plus the driver's side
// effects) is nic/nictest.Sim; it is test support and not part of this
// package, which the shipped binary links.
//
// Part of row nic in internal/arch's table (layer 1): of this module it may
// import only port, other nic packages and internal/lib, never policy.
package snapshot
