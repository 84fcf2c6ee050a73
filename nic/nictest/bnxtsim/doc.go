// Package bnxtsim is the simulator's model of bnxt_en: what the driver
// does on each kernel write — the IEEE set ops' need of host DCBX with
// VER_IEEE (HostIEEE), setdcbx (SetDCBX), ETS validation (Starves,
// TCBeyondMax), PFC refused until ETS has been set since the driver
// loaded, the firmware's PFC bitmap and lossless queues (pfcConfig,
// PFCMasks, Model.UnprotectedPFC, SetQueueCaps), the placeholder ETS and
// PFC it reports in host mode for what it does not hold (Hidden), and the
// HWRM dscp2pri table — each behaviour citing the driver function it
// plays. nictest's Sim uses a Model for every bnxt_en link. CC is the
// out-of-tree bnxt_re's configfs congestion-control group (stores that
// stage, apply that commits, the stores' ranges); the Sim does not play
// files, so tests drive it directly and check driver/bnxt against it.
//
// Test only: only nictest and tests import it; the shipped binaries do
// not link it. It may import nic/dcb, nic/snapshot and port (state types)
// and nic/nictest/simstate, and never package driver or its
// subpackages: the planner's bnxt model (driver/bnxt) and this one share
// nothing and are checked against each other (internal/arch checks).
package bnxtsim
