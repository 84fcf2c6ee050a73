package icesim_test

import (
	"errors"
	"syscall"
	"testing"

	"github.com/rocectl/rocectl/nic"
	"github.com/rocectl/rocectl/nic/dcb"
	"github.com/rocectl/rocectl/nic/nictest"
	"github.com/rocectl/rocectl/nic/nictest/icesim"
	"github.com/rocectl/rocectl/nic/snapshot"
)

func u8p(v uint8) *uint8 { return &v }

// An ice port as the driver leaves it with the firmware LLDP agent on.
func sim() *nictest.Sim {
	return nictest.NewSim(&snapshot.KernelState{Links: map[string]*snapshot.LinkState{
		"e0": {
			Link:      &nic.LinkInfo{Index: 2, MTU: 1500, OperState: "up", AdminUp: true},
			Driver:    &nic.DriverInfo{Driver: icesim.Driver},
			Pause:     &nic.Pause{Rx: true, Tx: true},
			PrivFlags: map[string]bool{icesim.FWLLDPAgent: true, "legacy-rx": false},
			DCB: &dcb.State{
				ETS:  &dcb.ETS{ETSCap: 8, TCTSA: [8]uint8{dcb.TSAETS}, TCTxBW: [8]uint8{100}},
				PFC:  &dcb.PFC{Cap: 8},
				DCBX: u8p(dcb.DCBXLLDManaged | dcb.DCBXVerIEEE),
			},
		},
	}})
}

func is(t *testing.T, what string, err, want error) {
	t.Helper()
	if !errors.Is(err, want) {
		t.Errorf("%s: %v, want %v", what, err, want)
	}
}

// While the agent runs, every DCB set op is refused (ice_dcbnl_setets,
// setpfc, setapp: LLD_MANAGED; setdcbx: ICE_FLAG_FW_LLDP_AGENT).
// Stopping it makes dcbx_cap HOST and the ops take writes; starting it
// again gives DCB back to the firmware's configuration.
func TestFirmwareAgentOwnsDCB(t *testing.T) {
	s := sim()
	ets := dcb.ETS{PrioTC: [8]uint8{3: 1}, TCTSA: [8]uint8{dcb.TSAETS, dcb.TSAETS}, TCTxBW: [8]uint8{50, 50}}
	is(t, "ETS under the agent", s.SetETS("e0", ets), syscall.EINVAL)
	is(t, "PFC under the agent", s.SetPFC("e0", dcb.PFC{Enable: 1 << 3}), syscall.EINVAL)
	is(t, "APP under the agent", s.AddApps("e0", []dcb.App{{Selector: dcb.SelDSCP, Priority: 3, Protocol: 26}}), syscall.EINVAL)
	is(t, "DCBX under the agent", s.SetDCBX("e0", dcb.DCBXHost|dcb.DCBXVerIEEE), syscall.EINVAL)

	is(t, "agent off", s.SetPrivFlags("e0", map[string]bool{icesim.FWLLDPAgent: false}), nil)
	st, _ := s.DCB("e0")
	if *st.DCBX != dcb.DCBXHost|dcb.DCBXVerIEEE {
		t.Fatalf("dcbx after agent off %#x", *st.DCBX)
	}
	is(t, "ETS", s.SetETS("e0", ets), nil)
	is(t, "PFC", s.SetPFC("e0", dcb.PFC{Enable: 1 << 3}), nil)
	app := dcb.App{Selector: dcb.SelDSCP, Priority: 3, Protocol: 26}
	is(t, "APP", s.AddApps("e0", []dcb.App{app}), nil)
	// DSCP QoS mode keeps the agent from starting (ice_set_priv_flags).
	is(t, "agent on in DSCP mode", s.SetPrivFlags("e0", map[string]bool{icesim.FWLLDPAgent: true}), syscall.EOPNOTSUPP)
	is(t, "APP delete", s.DelApps("e0", []dcb.App{app}), nil)
	is(t, "agent on", s.SetPrivFlags("e0", map[string]bool{icesim.FWLLDPAgent: true}), nil)
	st, _ = s.DCB("e0")
	if *st.DCBX != dcb.DCBXLLDManaged|dcb.DCBXVerIEEE || st.PFC.Enable != 0 || st.ETS.TCTxBW[0] != 100 {
		t.Errorf("after agent on: dcbx %#x ETS %+v PFC %+v", *st.DCBX, *st.ETS, *st.PFC)
	}
}

// ice_set_pauseparam refuses an autoneg change (ethtool -s owns it) and
// link flow control while PFC is enabled.
func TestPauseRefusedUnderPFC(t *testing.T) {
	s := sim()
	is(t, "agent off", s.SetPrivFlags("e0", map[string]bool{icesim.FWLLDPAgent: false}), nil)
	is(t, "pause autoneg change", s.SetPause("e0", nic.Pause{Autoneg: true}), syscall.EOPNOTSUPP)
	is(t, "pause without PFC", s.SetPause("e0", nic.Pause{}), nil)
	is(t, "PFC", s.SetPFC("e0", dcb.PFC{Enable: 1 << 3}), nil)
	is(t, "pause under PFC", s.SetPause("e0", nic.Pause{Rx: true, Tx: true}), syscall.EOPNOTSUPP)
}

// ice_dcb_get_num_tc takes non-contiguous TCs as one, and ice_dcb_bwchk
// then gives TC0 all the bandwidth: the write is taken and reads back
// otherwise. Counted TCs whose bandwidths do not sum to 100 are refused.
func TestETSTableChecks(t *testing.T) {
	if icesim.NumTC([8]uint8{0, 0, 0, 2}) != 1 || icesim.NumTC([8]uint8{0, 1, 2, 3}) != 4 || icesim.NumTC([8]uint8{}) != 1 {
		t.Error("NumTC")
	}
	s := sim()
	is(t, "agent off", s.SetPrivFlags("e0", map[string]bool{icesim.FWLLDPAgent: false}), nil)
	gap := dcb.ETS{PrioTC: [8]uint8{3: 2}, TCTSA: [8]uint8{dcb.TSAETS, dcb.TSAETS, dcb.TSAETS}, TCTxBW: [8]uint8{50, 0, 50}}
	is(t, "non-contiguous", s.SetETS("e0", gap), nil)
	if st, _ := s.DCB("e0"); st.ETS.TCTxBW[0] != 100 {
		t.Errorf("non-contiguous TCs read back %+v, want TC0 at 100", *st.ETS)
	}
}
