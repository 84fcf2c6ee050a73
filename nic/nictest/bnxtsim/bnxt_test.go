package bnxtsim_test

import (
	"errors"
	"syscall"
	"testing"

	"github.com/rocectl/rocectl/nic"
	"github.com/rocectl/rocectl/nic/dcb"
	"github.com/rocectl/rocectl/nic/nictest"
	"github.com/rocectl/rocectl/nic/nictest/bnxtsim"
	"github.com/rocectl/rocectl/nic/snapshot"
)

func u8p(v uint8) *uint8 { return &v }

// simState is a bnxt port whose DCBX is not host-managed (VER_IEEE alone:
// what bnxt_dcbnl_setdcbx leaves after the host flag was handed away), as
// nictest's tests have it.
func simState() *snapshot.KernelState {
	return &snapshot.KernelState{Links: map[string]*snapshot.LinkState{
		"bnxt": {
			Link:   &nic.LinkInfo{Index: 3, MTU: 1500, MinMTU: 60, MaxMTU: 9500},
			Driver: &nic.DriverInfo{Driver: snapshot.DriverBnxt},
			Pause:  &nic.Pause{Autoneg: true, Rx: true, Tx: true},
			DCB: &dcb.State{
				ETS:  &dcb.ETS{ETSCap: 8},
				PFC:  &dcb.PFC{Cap: 8},
				DCBX: u8p(dcb.DCBXVerIEEE),
			},
		},
	}}
}

func wantErrno(t *testing.T, err error, want syscall.Errno) {
	t.Helper()
	if !errors.Is(err, want) {
		t.Fatalf("err = %v, want %s", err, snapshot.ErrnoName(want))
	}
}

func TestSimPFCBnxtNeedsHost(t *testing.T) {
	s := nictest.NewSim(simState())
	wantErrno(t, s.SetPFC("bnxt", dcb.PFC{Enable: 0x08}), syscall.EINVAL)
	if err := s.SetDCBX("bnxt", dcb.DCBXHost|dcb.DCBXVerIEEE); err != nil {
		t.Fatal(err)
	}
	// bnxt_hwrm_queue_pfc_cfg: no ETS configuration yet (all zero).
	wantErrno(t, s.SetPFC("bnxt", dcb.PFC{Enable: 0x08}), syscall.EINVAL)
	ets := dcb.ETS{PrioTC: [8]uint8{0, 0, 0, 1}, TCTSA: [8]uint8{dcb.TSAETS, dcb.TSAETS}, TCTxBW: [8]uint8{50, 50}}
	if err := s.SetETS("bnxt", ets); err != nil {
		t.Fatal(err)
	}
	if err := s.SetPFC("bnxt", dcb.PFC{Enable: 0x08}); err != nil {
		t.Fatal(err)
	}
}

// A PFC priority moved by an ETS write alone stays paused by the firmware
// but may sit on a lossy queue; the next PFC write remaps it.
func TestUnprotectedAfterETSAlone(t *testing.T) {
	s := nictest.NewSim(simState())
	if err := s.SetDCBX("bnxt", dcb.DCBXHost|dcb.DCBXVerIEEE); err != nil {
		t.Fatal(err)
	}
	ets := dcb.ETS{PrioTC: [8]uint8{0, 0, 0, 1}, TCTSA: [8]uint8{dcb.TSAETS, dcb.TSAETS}, TCTxBW: [8]uint8{50, 50}}
	if err := s.SetETS("bnxt", ets); err != nil {
		t.Fatal(err)
	}
	if err := s.SetPFC("bnxt", dcb.PFC{Enable: 1 << 3}); err != nil {
		t.Fatal(err)
	}
	if u := s.UnprotectedPFC("bnxt"); len(u) != 0 {
		t.Fatalf("after ETS then PFC: unprotected %v", u)
	}
	ets.PrioTC[3] = 2
	if err := s.SetETS("bnxt", ets); err != nil {
		t.Fatal(err)
	}
	if u := s.UnprotectedPFC("bnxt"); len(u) != 1 || u[0] != 3 {
		t.Errorf("priority 3 moved to TC 2 by ETS alone: unprotected %v, want [3]", u)
	}
	if err := s.SetPFC("bnxt", dcb.PFC{Enable: 1 << 3}); err != nil {
		t.Fatal(err)
	}
	if u := s.UnprotectedPFC("bnxt"); len(u) != 0 {
		t.Errorf("after the PFC write that remaps: unprotected %v", u)
	}
}

func TestStarves(t *testing.T) {
	ets := dcb.ETS{TCTSA: [8]uint8{dcb.TSAETS, dcb.TSAETS}, TCTxBW: [8]uint8{100, 0}}
	if !bnxtsim.Starves(ets) {
		t.Error("an ETS TC at 0 % beside one at 100 %: not refused")
	}
	ets.TCTxBW = [8]uint8{50, 50}
	if bnxtsim.Starves(ets) {
		t.Error("50/50 refused")
	}
}

func TestTCBeyondMax(t *testing.T) {
	if !bnxtsim.TCBeyondMax(dcb.ETS{PrioTC: [8]uint8{3: 4}}, 3) {
		t.Error("a priority on TC 4 with max_tc 3 passes")
	}
	if bnxtsim.TCBeyondMax(dcb.ETS{PrioTC: [8]uint8{3: 3}}, 3) {
		t.Error("a priority on TC max_tc itself refused")
	}
	if !bnxtsim.TCBeyondMax(dcb.ETS{TCTSA: [8]uint8{5: dcb.TSAETS}}, 3) {
		t.Error("TC 5 with ETS, max_tc 3, passes")
	}
}

func TestPFCMasks(t *testing.T) {
	ets := &dcb.ETS{ETSCap: 2, PrioTC: [8]uint8{3: 1, 4: 2}}
	pri, tc := bnxtsim.PFCMasks(1<<3|1<<4, ets)
	if pri != 1<<3 || tc != 1<<1 {
		t.Errorf("masks %#x %#x, want priority 3 on TC 1 only (TC 2 is not below ets_cap)", pri, tc)
	}
}
