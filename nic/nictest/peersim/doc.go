// Package peersim is the simulator's model of the drivers whose NIC
// firmware runs the DCBX agent and reports the link partner's DCBX
// through dcbnl's peer ops: qede (Qede) and cxgb4 (Cxgb4), each with its
// own gaps and quirks, function by function. What the switch announced
// is a Partner, which nictest's Sim.SetPartner hands to the link's model.
// Every write is dcbnl's (simstate.Generic).
//
// Test only: only nictest and tests import it; the shipped binaries do
// not link it. It may import nic/dcb, nic/snapshot and port (state types)
// and nic/nictest/simstate, and never package driver or its
// subpackages, nor package peer, whose reading of these reports it is
// checked against (internal/arch checks).
package peersim
