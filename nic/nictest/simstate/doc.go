// Package simstate is what nictest's Sim and its driver models share: the
// Model interface a driver model implements (one method per kernel write
// whose outcome depends on the driver, plus the dcbnl read), Link (what a
// model sees of one link: its kernel state and the Sim's generic state of
// it), and Generic, the model of a driver that adds nothing to the kernel's
// own rules (dcbnl, ethtool core), which the other models embed and call.
//
// Test only: nictest and the model packages beside it (mlx5sim, bnxtsim,
// peersim) import it, nothing shipped does. It is a leaf of the
// simulator: it may import nic/dcb and nic/snapshot (the state types)
// and no other package of the module, and never package driver or its
// subpackages: the simulator's models share nothing with the product's
// (internal/arch checks).
package simstate
