// Package nictest is test support for code that drives NICs through
// nic.Kernel: Sim, a writable in-memory kernel that answers like the kernel
// plus the driver each link names, side effects included. Only tests and
// fixture generators import it; the shipped binary does not link it
// (internal/arch checks).
//
// The Sim keeps the kernel's generic state (links, counters, the NIC's
// DSCP table, link speed and toggles) and hands each write to the model
// of the link's driver (DriverModel, chosen per link by driver name in
// models.go). The models live beside it, one test-only package per
// driver: mlx5sim (mlx5_core), bnxtsim (bnxt_en), peersim (qede and cxgb4,
// the switch's DCBX they report); any other driver gets dcbnl's own rules
// (simstate.Generic). simstate is the leaf they share: the interface, what
// a model sees of a link, the generic rules. They share nothing with the
// product's driver layer (package driver and driver/*): the planner's
// models and the simulator's are checked against each other, not derived
// from each other.
//
// A test kit (row nic/nictest in internal/arch's table): it may import
// nic and its model packages; only tests, other test kits, tools and
// benchmark programs import it, never the shipped binaries.
package nictest
