// Package icesim is the simulator's model of Intel's ice (E810): what the
// driver does on each kernel write — the DCB set ops refused while the
// firmware LLDP agent runs DCBX (Model.SetETS, SetPFC, AddApps, DelApps,
// SetDCBX), the fw-lldp-agent private flag that stops and starts the agent
// and hands DCB between the firmware and the host (Model.SetPrivFlags),
// link flow control refused while PFC is enabled (Model.RefusePause), and
// the TC table checks of a taken ETS (Model.SetETS) — each behaviour
// citing the driver function it plays. nictest's Sim uses a Model for
// every ice link.
//
// Test only: only nictest and tests import it. It may import nic/dcb,
// nic/snapshot and nic/nictest/simstate, and never package driver or its
// subpackages: the planner's ice model (driver/ice) and this one share
// nothing and are checked against each other (internal/arch checks).
package icesim
