// Package mlx5sim is the simulator's model of mlx5_core (mainline and
// DOCA-OFED): what the driver does on each kernel write — PFC (the PFCC
// write turning global pause off, the link toggle, the cable length),
// global pause (autoneg refused, the counters that follow it), the port
// buffers in manual mode (128-byte cells, the xoff check, the thresholds
// PBMC holds, fill_pfc_en), DCBX (mode 0 back to firmware, willing), the
// APP table (DSCP only, the firmware's dscp2prio), ETS read back (100 %
// for strict TCs, the 0 % shares), the storm prevention tunable — each
// behaviour citing the driver function it plays. nictest's Sim uses a
// Model for every mlx5_core link.
//
// Test only: only nictest and tests import it; the shipped binaries do
// not link it. It may import nic/dcb, nic/snapshot and port (state types)
// and nic/nictest/simstate, and never package driver or its
// subpackages: the planner's mlx5 model (driver/mlx5) and this one share
// nothing and are checked against each other (internal/arch checks).
package mlx5sim
