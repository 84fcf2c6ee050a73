// Package driver is what a NIC driver adds to a plain write of a setting:
// the settings it changes by itself (companions), the settings a managed
// one implies, the writes it refuses, the order its writes and their
// undos need, the link toggles and channel resets a write causes, and
// which of the planner's models apply to it (Caps). Driver is the one
// interface; each driver's knowledge lives in a package of its own —
// driver/mlx5, driver/bnxt, driver/ice, driver/generic — with its doc
// (README.md: each behaviour and the driver function it comes from) and
// its tests, and driver/known picks the one for a port, once, by the
// kernel module's name: the only place a driver's name is looked at.
//
// A driver reads no host: what an answer depends on is passed in (Facts,
// LLDPFacts, the dcbnl state), so every behaviour is a pure function a
// table test pins. The simulator's models of the same drivers (what the
// kernel does, for the tests) are nic/nictest's model packages
// (nic/nictest/mlx5sim, nic/nictest/bnxtsim, nic/nictest/peersim), and
// share no code with these (internal/arch checks): the planner's model
// and the simulator's are checked against each other, not derived from
// each other.
//
// It may import policy (setting kinds, changes), port and nic/dcb (the
// dcbnl value types); the driver packages import driver and those.
package driver
