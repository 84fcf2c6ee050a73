// Package peer is the switch-peer check: what the switch port announces in
// DCBX against the profile, heard in LLDP or, where the NIC firmware runs
// DCBX and the driver reports the peer, read through dcbnl (driver.go).
// `rocectl peer` runs it once; the daemon keeps a passive listener and
// polls the drivers (agent/peerwatch.go). Both leave the last result in the state dir
// (StateFile) for audit's "switch peer" section.
//
// In internal/arch's table peer is layer 5: of this module it may import
// apply, host, verify, policy, nccl, nic, port, lldp and internal/lib.
package peer
