package mlx5sim_test

import (
	"errors"
	"syscall"
	"testing"

	"github.com/rocectl/rocectl/nic"
	"github.com/rocectl/rocectl/nic/dcb"
	"github.com/rocectl/rocectl/nic/nictest"
	"github.com/rocectl/rocectl/nic/nictest/mlx5sim"
	"github.com/rocectl/rocectl/nic/snapshot"
)

// The model's rules are tested through nictest's Sim, which hands each
// write of an mlx5_core link to it: what a caller sees.

func u8p(v uint8) *uint8    { return &v }
func u16p(v uint16) *uint16 { return &v }

// trainingReads is nictest's: how many Speed reads find a toggled link
// still training.
const trainingReads = 2

// simState is an mlx5 port at factory defaults (reference §A1.8), as
// nictest's tests have it.
func simState() *snapshot.KernelState {
	mlx5ETS := dcb.ETS{ETSCap: 8, PrioTC: [8]uint8{1, 0, 2, 3, 4, 5, 6, 7}}
	for i := range 8 {
		mlx5ETS.TCTxBW[i] = 100
		mlx5ETS.TCTSA[i] = dcb.TSAVendor
	}
	return &snapshot.KernelState{
		Links: map[string]*snapshot.LinkState{
			"mlx": {
				Link:   &nic.LinkInfo{Index: 2, MTU: 1500, MinMTU: 68, MaxMTU: 9978, OperState: "up", AdminUp: true},
				Driver: &nic.DriverInfo{Driver: snapshot.DriverMLX5},
				Pause:  &nic.Pause{Rx: true, Tx: true},
				Stats: map[string]uint64{
					"tx_global_pause": 5745042, "tx_global_pause_duration": 771103810,
					"rx_global_pause": 0, "rx_global_pause_duration": 0, "rx_global_pause_transition": 0,
					"rx_prio0_packets": 38460533605,
				},
				PFCPreventionTimeout: u16p(8000),
				DCB: &dcb.State{
					ETS:    &mlx5ETS,
					PFC:    &dcb.PFC{Cap: 8, Delay: 7},
					Buffer: &dcb.Buffer{Size: [8]uint32{524160}, TotalSize: 524288},
					DCBX:   u8p(dcb.DCBXVerCEE | dcb.DCBXVerIEEE),
				},
			},
		},
	}
}

func wantErrno(t *testing.T, err error, want syscall.Errno) {
	t.Helper()
	if !errors.Is(err, want) {
		t.Fatalf("err = %v, want %s", err, snapshot.ErrnoName(want))
	}
}

// noErr fails the test on a write the driver should take.
func noErr(t *testing.T, what string, err error) {
	t.Helper()
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}

func TestSimPauseMLX5(t *testing.T) {
	s := nictest.NewSim(simState())
	wantErrno(t, s.SetPause("mlx", nic.Pause{Autoneg: true}), syscall.EINVAL)
	if err := s.SetPause("mlx", nic.Pause{}); err != nil {
		t.Fatal(err)
	}
	st, _ := s.Stats("mlx")
	for _, n := range mlx5sim.GlobalPauseCounters() {
		if _, ok := st[n]; ok {
			t.Errorf("%s still present with pause off", n)
		}
	}
	if st["rx_prio0_packets"] != 38460533605 {
		t.Error("unrelated counter lost")
	}
	if err := s.SetPause("mlx", nic.Pause{Tx: true}); err != nil {
		t.Fatal(err)
	}
	st, _ = s.Stats("mlx")
	for _, n := range mlx5sim.GlobalPauseCounters() {
		if v, ok := st[n]; !ok || v != 0 {
			t.Errorf("%s = %d,%v after pause on, want 0,true", n, v, ok)
		}
	}
	if p, _ := s.Pause("mlx"); p != (nic.Pause{Tx: true}) {
		t.Errorf("pause = %+v", p)
	}
}

func TestSimPFCMLX5(t *testing.T) {
	s := nictest.NewSim(simState())
	if err := s.SetPFC("mlx", dcb.PFC{Enable: 1 << 3, Delay: 0}); err != nil {
		t.Fatal(err)
	}
	st, _ := s.DCB("mlx")
	if st.PFC.Enable != 0x08 || st.PFC.Delay != 7 || st.PFC.Cap != 8 {
		t.Errorf("PFC = %+v, want en 0x08, delay 7 kept, cap 8", st.PFC)
	}
	if p, _ := s.Pause("mlx"); p.Rx || p.Tx {
		t.Errorf("global pause still on after PFC: %+v", p)
	}
	stats, _ := s.Stats("mlx")
	for p := range 8 {
		for _, n := range mlx5sim.PrioPauseCounters(p) {
			_, ok := stats[n]
			if ok != (p == 3) {
				t.Errorf("%s present=%v with PFC on prio 3 only", n, ok)
			}
		}
	}
	for _, n := range mlx5sim.GlobalPauseCounters() {
		if _, ok := stats[n]; ok {
			t.Errorf("%s present after PFC turned global pause off", n)
		}
	}

	// Requests/indications are the per-priority pause counters.
	s.SetStat("mlx", "tx_prio3_pause", 217)
	s.AddStat("mlx", "rx_prio3_pause", 179)
	st, _ = s.DCB("mlx")
	if st.PFC.Requests[3] != 217 || st.PFC.Indications[3] != 179 {
		t.Errorf("requests/indications = %v / %v", st.PFC.Requests, st.PFC.Indications)
	}

	// Cable length: accepted below 1000 m only.
	if err := s.SetPFC("mlx", dcb.PFC{Enable: 0x08, Delay: 1000}); err != nil {
		t.Fatal(err)
	}
	if st, _ = s.DCB("mlx"); st.PFC.Delay != 7 {
		t.Errorf("delay 1000 accepted: %d", st.PFC.Delay)
	}
	if err := s.SetPFC("mlx", dcb.PFC{Enable: 0x08, Delay: 30}); err != nil {
		t.Fatal(err)
	}
	if st, _ = s.DCB("mlx"); st.PFC.Delay != 30 {
		t.Errorf("delay = %d, want 30", st.PFC.Delay)
	}

	if err := s.SetPFC("mlx", dcb.PFC{}); err != nil {
		t.Fatal(err)
	}
	stats, _ = s.Stats("mlx")
	for _, n := range mlx5sim.PrioPauseCounters(3) {
		if _, ok := stats[n]; ok {
			t.Errorf("%s present after PFC off", n)
		}
	}
}

// calculate_xoff in integer arithmetic, and the 40 Gb/s floor.
func TestXoff(t *testing.T) {
	for _, tc := range []struct{ speed, mtu, cable, want int }{
		{100000, 1500, 7, 35680}, // 316 × 100 + 4080
		{0, 1500, 7, 16720},      // training: 40 Gb/s
		{100000, 9000, 7, 56080}, // 31600 + 24480
		{100000, 1500, 30, 40580},
	} {
		if got := mlx5sim.Xoff(tc.speed, tc.mtu, tc.cable); got != tc.want {
			t.Errorf("Xoff(%d, %d, %d) = %d, want %d", tc.speed, tc.mtu, tc.cable, got, tc.want)
		}
	}
}

// ETS TCs at 0 % share 100 % among themselves unless another ETS TC is
// below 100 %.
func TestZeroBandwidthShares(t *testing.T) {
	ets := dcb.ETS{TCTSA: [8]uint8{dcb.TSAETS, dcb.TSAETS, dcb.TSAETS, dcb.TSAETS}, TCTxBW: [8]uint8{100}}
	var next dcb.ETS
	next.TCTxBW = ets.TCTxBW
	mlx5sim.ZeroBandwidthShares(ets, &next)
	if next.TCTxBW != [8]uint8{100, 33, 33, 34} {
		t.Errorf("shares %v, want 100 33 33 34", next.TCTxBW)
	}
	ets.TCTxBW = [8]uint8{60, 40}
	next = dcb.ETS{TCTxBW: ets.TCTxBW}
	mlx5sim.ZeroBandwidthShares(ets, &next)
	if next.TCTxBW != [8]uint8{60, 40} {
		t.Errorf("shares %v, want the zeros kept (a TC below 100 %%)", next.TCTxBW)
	}
}
