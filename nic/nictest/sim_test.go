package nictest

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync"
	"syscall"
	"testing"

	"github.com/rocectl/rocectl/nic"
	"github.com/rocectl/rocectl/nic/dcb"
	"github.com/rocectl/rocectl/nic/snapshot"
)

func u8p(v uint8) *uint8    { return &v }
func u16p(v uint16) *uint16 { return &v }

// simState is a small host: an mlx5 port at factory defaults (reference
// §A1.8), a bnxt port whose DCBX is not host-managed (VER_IEEE alone: what
// bnxt_dcbnl_setdcbx leaves after the host flag was handed away), and a
// veth without dcbnl.
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
				Rings:  &nic.Rings{Rx: 1024, Tx: 1024, RxMax: 8192, TxMax: 8192},
				PrivFlags: map[string]bool{
					"rx_cqe_compress": false, "rx_striding_rq": true,
				},
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
			"bnxt": {
				Link:   &nic.LinkInfo{Index: 3, MTU: 1500, MinMTU: 60, MaxMTU: 9500},
				Driver: &nic.DriverInfo{Driver: snapshot.DriverBnxt},
				Pause:  &nic.Pause{Autoneg: true, Rx: true, Tx: true},
				DCB: &dcb.State{
					ETS:  &dcb.ETS{ETSCap: 8},
					PFC:  &dcb.PFC{Cap: 8},
					DCBX: u8p(dcb.DCBXVerIEEE),
				},
				Errors: map[string]string{snapshot.OpTunable: "EOPNOTSUPP", snapshot.OpPrivFlags: "EOPNOTSUPP"},
			},
			"veth0": {
				Link:   &nic.LinkInfo{Index: 4, MTU: 1500, MinMTU: 68, MaxMTU: 65535},
				Driver: &nic.DriverInfo{Driver: "veth"},
				Stats:  map[string]uint64{"peer_ifindex": 5},
				Errors: map[string]string{snapshot.OpPause: "EOPNOTSUPP", snapshot.OpRings: "EOPNOTSUPP", snapshot.OpDCB: "EOPNOTSUPP"},
			},
		},
		Devlink: map[string][]nic.DevlinkParam{
			"pci/0000:3b:00.0": {{
				Name: "enable_roce", Generic: true, Type: "bool",
				Values: []nic.DevlinkParamValue{{Cmode: nic.CmodeDriverinit, Value: true}},
			}},
		},
	}
}

func wantErrno(t *testing.T, err error, want syscall.Errno) {
	t.Helper()
	if !errors.Is(err, want) {
		t.Fatalf("err = %v, want %s", err, snapshot.ErrnoName(want))
	}
	var oe *snapshot.OpError
	if !errors.As(err, &oe) {
		t.Fatalf("err %v is not an *snapshot.OpError", err)
	}
}

func TestSimMTU(t *testing.T) {
	s := NewSim(simState())
	if err := s.SetMTU("mlx", 9000); err != nil {
		t.Fatal(err)
	}
	if l, _ := s.Link("mlx"); l.MTU != 9000 {
		t.Errorf("MTU = %d", l.MTU)
	}
	wantErrno(t, s.SetMTU("mlx", 9979), syscall.EINVAL)
	wantErrno(t, s.SetMTU("mlx", 67), syscall.EINVAL)
	wantErrno(t, s.SetMTU("nope", 1500), syscall.ENODEV)
	if l, _ := s.Link("mlx"); l.MTU != 9000 {
		t.Errorf("rejected write changed MTU to %d", l.MTU)
	}
}

func TestSimPauseOthers(t *testing.T) {
	s := NewSim(simState())
	if err := s.SetPause("bnxt", nic.Pause{Autoneg: true}); err != nil {
		t.Errorf("bnxt autoneg: %v", err)
	}
	wantErrno(t, s.SetPause("veth0", nic.Pause{}), syscall.EOPNOTSUPP)
	_, err := s.Pause("veth0")
	wantErrno(t, err, syscall.EOPNOTSUPP)
}

func TestSimNoDCB(t *testing.T) {
	s := NewSim(simState())
	for name, err := range map[string]error{
		"dcbx":   s.SetDCBX("veth0", 0x09),
		"ets":    s.SetETS("veth0", dcb.ETS{}),
		"pfc":    s.SetPFC("veth0", dcb.PFC{Enable: 8}),
		"buffer": s.SetBuffer("veth0", dcb.Buffer{}),
		"add":    s.AddApps("veth0", []dcb.App{app(dcb.SelDSCP, 3, 26)}),
		"del":    s.DelApps("veth0", []dcb.App{app(dcb.SelDSCP, 3, 26)}),
	} {
		if !errors.Is(err, syscall.EOPNOTSUPP) {
			t.Errorf("%s on veth: %v, want EOPNOTSUPP", name, err)
		}
	}
	_, err := s.DCB("veth0")
	wantErrno(t, err, syscall.EOPNOTSUPP)
	if len(s.Ops()) != 0 {
		t.Errorf("failed writes logged: %v", s.Ops())
	}
}

func TestSimETS(t *testing.T) {
	s := NewSim(simState())
	ets := dcb.ETS{
		TCTSA:  [8]uint8{dcb.TSAETS, dcb.TSAETS, dcb.TSAETS, dcb.TSAETS, dcb.TSAStrict, dcb.TSAStrict, dcb.TSAStrict, dcb.TSAStrict},
		TCTxBW: [8]uint8{10, 10, 10, 70},
		PrioTC: [8]uint8{0, 1, 2, 3, 4, 5, 6, 7},
	}
	bad := ets
	bad.PrioTC[2] = 8
	wantErrno(t, s.SetETS("mlx", bad), syscall.EINVAL)
	bad = ets
	bad.TCTxBW[3] = 60
	wantErrno(t, s.SetETS("mlx", bad), syscall.EINVAL)
	bad = ets
	bad.TCTxBW[4] = 1 // bandwidth on a strict TC
	wantErrno(t, s.SetETS("mlx", bad), syscall.EINVAL)

	if err := s.SetETS("mlx", ets); err != nil {
		t.Fatal(err)
	}
	st, _ := s.DCB("mlx")
	want := dcb.ETS{ETSCap: 8, TCTSA: ets.TCTSA, PrioTC: ets.PrioTC, TCTxBW: [8]uint8{10, 10, 10, 70, 100, 100, 100, 100}}
	if *st.ETS != want {
		t.Errorf("mlx5 ETS read back\n got %+v\nwant %+v", *st.ETS, want)
	}
	// All strict: no ETS TC, zero bandwidth everywhere is valid.
	if err := s.SetETS("mlx", dcb.ETS{PrioTC: ets.PrioTC}); err != nil {
		t.Errorf("all strict: %v", err)
	}
	// bnxt_dcbnl_ieee_setets needs host DCBX with IEEE.
	wantErrno(t, s.SetETS("bnxt", ets), syscall.EINVAL)
	if err := s.SetDCBX("bnxt", dcb.DCBXHost|dcb.DCBXVerIEEE); err != nil {
		t.Fatal(err)
	}
	// Non-mlx5 stores what was asked (ets_cap stays the driver's).
	if err := s.SetETS("bnxt", ets); err != nil {
		t.Fatal(err)
	}
	st, _ = s.DCB("bnxt")
	want = ets
	want.ETSCap = 8
	if *st.ETS != want {
		t.Errorf("bnxt ETS = %+v", *st.ETS)
	}
}

// The NIC's own DSCP table follows each driver's APP writes, which
// dcbnl's APP table does not show: mlx5 resets a deleted DSCP to priority
// 0, bnxt clears a DSCP's entry on any delete of it.
func TestSimHardwareDSCP(t *testing.T) {
	s := NewSim(simState())
	if err := s.AddApps("mlx", []dcb.App{app(dcb.SelDSCP, 3, 26), app(dcb.SelDSCP, 6, 48)}); err != nil {
		t.Fatal(err)
	}
	wantErrno(t, s.DelApps("mlx", []dcb.App{app(dcb.SelDSCP, 5, 26)}), syscall.ENOENT)
	if err := s.DelApps("mlx", []dcb.App{app(dcb.SelDSCP, 3, 26)}); err != nil {
		t.Fatal(err)
	}
	if got, want := s.HardwareDSCP("mlx"), map[int]int{26: 0, 48: 6}; !maps.Equal(got, want) {
		t.Errorf("mlx5 firmware dscp2prio %v, want %v", got, want)
	}

	if err := s.SetDCBX("bnxt", dcb.DCBXHost|dcb.DCBXVerIEEE); err != nil {
		t.Fatal(err)
	}
	// Remap DSCP 26 from 3 to 4 the add-first way: the delete of the old
	// entry clears the mapping the add just installed.
	if err := s.AddApps("bnxt", []dcb.App{app(dcb.SelDSCP, 3, 26)}); err != nil {
		t.Fatal(err)
	}
	if err := s.AddApps("bnxt", []dcb.App{app(dcb.SelDSCP, 4, 26)}); err != nil {
		t.Fatal(err)
	}
	if err := s.DelApps("bnxt", []dcb.App{app(dcb.SelDSCP, 3, 26)}); err != nil {
		t.Fatal(err)
	}
	if got := s.HardwareDSCP("bnxt"); len(got) != 0 {
		t.Errorf("bnxt dscp2pri after add-new, delete-old: %v, want no entry", got)
	}
	st, _ := s.DCB("bnxt")
	if len(st.Apps) != 1 || st.Apps[0] != app(dcb.SelDSCP, 4, 26) {
		t.Errorf("dcbnl APP table %v: it still shows the new entry", st.Apps)
	}
}

func TestSimApps(t *testing.T) {
	s := NewSim(simState())
	wantErrno(t, s.AddApps("mlx", []dcb.App{app(dcb.SelPCP, 3, 3)}), syscall.EINVAL)
	wantErrno(t, s.AddApps("mlx", []dcb.App{app(dcb.SelDSCP, 3, 64)}), syscall.EINVAL)
	if err := s.AddApps("mlx", []dcb.App{app(dcb.SelDSCP, 3, 26), app(dcb.SelDSCP, 6, 48)}); err != nil {
		t.Fatal(err)
	}
	// A new mapping for DSCP 26 replaces the old one on mlx5.
	if err := s.AddApps("mlx", []dcb.App{app(dcb.SelDSCP, 4, 26)}); err != nil {
		t.Fatal(err)
	}
	st, _ := s.DCB("mlx")
	if want := []dcb.App{app(dcb.SelDSCP, 4, 26), app(dcb.SelDSCP, 6, 48)}; !slices.Equal(st.Apps, want) {
		t.Errorf("apps = %v, want %v", st.Apps, want)
	}
	wantErrno(t, s.DelApps("mlx", []dcb.App{app(dcb.SelDSCP, 3, 26)}), syscall.ENOENT)
	if err := s.DelApps("mlx", []dcb.App{app(dcb.SelDSCP, 4, 26)}); err != nil {
		t.Fatal(err)
	}

	// Generic dcbnl: exact duplicates are EEXIST, the first failure stops
	// the batch and earlier entries stay.
	if err := s.SetDCBX("bnxt", dcb.DCBXHost|dcb.DCBXVerIEEE); err != nil {
		t.Fatal(err)
	}
	err := s.AddApps("bnxt", []dcb.App{app(dcb.SelDgram, 3, 4791), app(dcb.SelDgram, 3, 4791), app(dcb.SelDSCP, 3, 26)})
	wantErrno(t, err, syscall.EEXIST)
	st, _ = s.DCB("bnxt")
	if want := []dcb.App{app(dcb.SelDgram, 3, 4791)}; !slices.Equal(st.Apps, want) {
		t.Errorf("bnxt apps = %v, want %v", st.Apps, want)
	}
	wantErrno(t, s.AddApps("bnxt", []dcb.App{app(0, 3, 1)}), syscall.EINVAL)
}

func TestSimBuffer(t *testing.T) {
	s := NewSim(simState())
	// Global pause off: with it on, mlx5 would make the remapped buffer 1
	// lossless (fill_pfc_en, TestSimMLX5GlobalPauseMakesMappedBuffersLossless).
	if err := s.SetPause("mlx", nic.Pause{}); err != nil {
		t.Fatal(err)
	}
	wantErrno(t, s.SetBuffer("mlx", dcb.Buffer{PrioBuffer: [8]uint8{0, 0, 0, 8}}), syscall.EINVAL)
	wantErrno(t, s.SetBuffer("mlx", dcb.Buffer{Size: [8]uint32{400000, 200000}}), syscall.EINVAL)
	buf := dcb.Buffer{PrioBuffer: [8]uint8{0, 0, 0, 1}, Size: [8]uint32{262016, 262016}}
	if err := s.SetBuffer("mlx", buf); err != nil {
		t.Fatal(err)
	}
	st, _ := s.DCB("mlx")
	buf.TotalSize = 524288 // the port's, not the caller's
	if *st.Buffer != buf {
		t.Errorf("buffer = %+v", *st.Buffer)
	}
	// bnxt reports no buffer object: dcbnl ignores the set, read-back shows it.
	if err := s.SetBuffer("bnxt", buf); err != nil {
		t.Fatal(err)
	}
	if st, _ := s.DCB("bnxt"); st.Buffer != nil {
		t.Errorf("bnxt buffer appeared: %+v", st.Buffer)
	}
}

func TestSimDCBX(t *testing.T) {
	s := NewSim(simState())
	wantErrno(t, s.SetDCBX("mlx", dcb.DCBXLLDManaged|dcb.DCBXVerIEEE), syscall.EINVAL)
	wantErrno(t, s.SetDCBX("mlx", dcb.DCBXVerIEEE), syscall.EINVAL)
	if err := s.SetDCBX("mlx", dcb.DCBXHost|dcb.DCBXVerIEEE); err != nil {
		t.Fatal(err)
	}
	if st, _ := s.DCB("mlx"); *st.DCBX != 0x09 {
		t.Errorf("dcbx = %#x", *st.DCBX)
	}
	if err := s.SetDCBX("mlx", 0); err != nil { // back to firmware
		t.Fatal(err)
	}
	if st, _ := s.DCB("mlx"); *st.DCBX != dcb.DCBXVerIEEE {
		t.Errorf("dcbx after fw mode = %#x", *st.DCBX)
	}
	// bnxt_dcbnl_setdcbx (recent kernels): HOST must come with IEEE
	// alone; any mode without HOST, 0 included, just becomes dcbx_cap.
	wantErrno(t, s.SetDCBX("bnxt", dcb.DCBXHost|dcb.DCBXVerCEE|dcb.DCBXVerIEEE), syscall.EINVAL)
	wantErrno(t, s.SetDCBX("bnxt", dcb.DCBXHost), syscall.EINVAL)
	if err := s.SetDCBX("bnxt", dcb.DCBXHost|dcb.DCBXVerIEEE); err != nil {
		t.Fatal(err)
	}
	if err := s.SetDCBX("bnxt", 0); err != nil {
		t.Fatal(err)
	}
	if st, _ := s.DCB("bnxt"); *st.DCBX != 0 {
		t.Errorf("bnxt dcbx after mode 0 = %#x, want 0 (dcbx_cap = mode)", *st.DCBX)
	}
	// While the firmware agent manages DCBX, bnxt refuses every mode.
	st := simState()
	*st.Links["bnxt"].DCB.DCBX = dcb.DCBXLLDManaged | dcb.DCBXVerIEEE
	s = NewSim(st)
	for _, mode := range []uint8{dcb.DCBXHost | dcb.DCBXVerIEEE, dcb.DCBXVerIEEE, 0} {
		wantErrno(t, s.SetDCBX("bnxt", mode), syscall.EINVAL)
	}
	if got, _ := s.DCB("bnxt"); *got.DCBX != dcb.DCBXLLDManaged|dcb.DCBXVerIEEE {
		t.Errorf("bnxt dcbx under LLD_MANAGED changed to %#x", *got.DCBX)
	}
}

func TestSimTunable(t *testing.T) {
	s := NewSim(simState())
	for _, v := range []uint16{0, 80, 8000, 0xffff} {
		if err := s.SetPFCPreventionTimeout("mlx", v); err != nil {
			t.Errorf("%d: %v", v, err)
		}
	}
	if v, _ := s.PFCPreventionTimeout("mlx"); v != 100 {
		t.Errorf("mlx5 auto reads back %d, want 100", v)
	}
	for _, v := range []uint16{1, 79, 8001, 0xfffe} {
		wantErrno(t, s.SetPFCPreventionTimeout("mlx", v), syscall.EINVAL)
	}
	wantErrno(t, s.SetPFCPreventionTimeout("bnxt", 100), syscall.EOPNOTSUPP)
	wantErrno(t, s.SetPFCPreventionTimeout("veth0", 100), syscall.EOPNOTSUPP)
}

func TestSimRingsPrivFlags(t *testing.T) {
	s := NewSim(simState())
	wantErrno(t, s.SetRings("mlx", nic.Rings{Rx: 8193, Tx: 1024}), syscall.EINVAL)
	if err := s.SetRings("mlx", nic.Rings{Rx: 8192, Tx: 4096, RxMax: 1, TxMax: 1}); err != nil {
		t.Fatal(err)
	}
	if r, _ := s.Rings("mlx"); r != (nic.Rings{Rx: 8192, Tx: 4096, RxMax: 8192, TxMax: 8192}) {
		t.Errorf("rings = %+v", r)
	}
	wantErrno(t, s.SetPrivFlags("mlx", map[string]bool{"dropless_rq": true}), syscall.EINVAL)
	if err := s.SetPrivFlags("mlx", map[string]bool{"rx_cqe_compress": true}); err != nil {
		t.Fatal(err)
	}
	if f, _ := s.PrivFlags("mlx"); !f["rx_cqe_compress"] || !f["rx_striding_rq"] {
		t.Errorf("flags = %v", f)
	}
	wantErrno(t, s.SetPrivFlags("bnxt", map[string]bool{}), syscall.EOPNOTSUPP)
}

func TestSimDevlink(t *testing.T) {
	s := NewSim(simState())
	const dev = "pci/0000:3b:00.0"
	if err := s.SetDevlinkParam(dev, "enable_roce", nic.CmodeDriverinit, false); err != nil {
		t.Fatal(err)
	}
	ps, _ := s.DevlinkParams(dev)
	if ps[0].Values[0].Value != false {
		t.Errorf("enable_roce = %v", ps[0].Values[0].Value)
	}
	wantErrno(t, s.SetDevlinkParam(dev, "enable_roce", nic.CmodeRuntime, true), syscall.EOPNOTSUPP)
	wantErrno(t, s.SetDevlinkParam(dev, "enable_roce", nic.CmodeDriverinit, uint8(1)), syscall.EINVAL)
	wantErrno(t, s.SetDevlinkParam(dev, "no_such", nic.CmodeDriverinit, true), syscall.EINVAL)
	wantErrno(t, s.SetDevlinkParam("pci/0000:99:00.0", "enable_roce", nic.CmodeDriverinit, true), syscall.ENODEV)
	_, err := s.DevlinkParams("pci/0000:99:00.0")
	wantErrno(t, err, syscall.ENODEV)
}

func TestSimInjectAndOps(t *testing.T) {
	s := NewSim(simState())
	refused := errors.New("injected")
	var seen []string
	s.Inject(func(op, ifname string) error {
		seen = append(seen, op+" "+ifname)
		s.AddStat("mlx", "inject_calls", 1) // the hook may call back in
		if op == snapshot.OpSetPFC {
			return fmt.Errorf("%w: %w", refused, syscall.EIO)
		}
		return nil
	})
	if err := s.SetMTU("mlx", 9000); err != nil {
		t.Fatal(err)
	}
	err := s.SetPFC("mlx", dcb.PFC{Enable: 0x08})
	if !errors.Is(err, refused) || !errors.Is(err, syscall.EIO) {
		t.Fatalf("err = %v", err)
	}
	if st, _ := s.DCB("mlx"); st.PFC.Enable != 0 {
		t.Error("refused write applied")
	}
	if err := s.SetDevlinkParam("pci/0000:3b:00.0", "enable_roce", nic.CmodeDriverinit, true); err != nil {
		t.Fatal(err)
	}
	if want := []string{"set_mtu mlx", "set_devlink_param pci/0000:3b:00.0"}; !slices.Equal(s.Ops(), want) {
		t.Errorf("ops = %v, want %v", s.Ops(), want)
	}
	if want := []string{"set_mtu mlx", "set_pfc mlx", "set_devlink_param pci/0000:3b:00.0"}; !slices.Equal(seen, want) {
		t.Errorf("hook saw %v", seen)
	}
	if st, _ := s.Stats("mlx"); st["inject_calls"] != 3 {
		t.Errorf("inject_calls = %d", st["inject_calls"])
	}
	s.Inject(nil)
	if err := s.SetPFC("mlx", dcb.PFC{Enable: 0x08}); err != nil {
		t.Fatal(err)
	}
}

func TestSimStateIsACopy(t *testing.T) {
	in := simState()
	s := NewSim(in)
	in.Links["mlx"].Link.MTU = 1
	st := s.State()
	st.Links["mlx"].DCB.PFC.Enable = 0xff
	st.Links["mlx"].Stats["x"] = 1
	if l, _ := s.Link("mlx"); l.MTU != 1500 {
		t.Errorf("NewSim shares the caller's state: MTU %d", l.MTU)
	}
	if d, _ := s.DCB("mlx"); d.PFC.Enable != 0 {
		t.Error("State() shares DCB")
	}
	s.DelStat("mlx", "rx_prio0_packets")
	if st, _ := s.Stats("mlx"); len(st) != 5 {
		t.Errorf("stats = %v", st)
	}
}

func TestSimRecordedErrno(t *testing.T) {
	st := simState()
	st.Links["mlx"].Errors = map[string]string{snapshot.OpStats: "EIO"}
	s := NewSim(st)
	_, err := s.Stats("mlx")
	wantErrno(t, err, syscall.EIO)
}

func TestSimConcurrent(t *testing.T) {
	s := NewSim(simState())
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Add(2)
		go func() {
			defer wg.Done()
			for j := range 50 {
				_ = s.SetMTU("mlx", 1500+i*10+j)
				s.AddStat("mlx", "tx_prio3_pause", 1)
			}
		}()
		go func() {
			defer wg.Done()
			for range 50 {
				_, _ = s.DCB("mlx")
				_ = s.State()
			}
		}()
	}
	wg.Wait()
	if st, _ := s.Stats("mlx"); st["tx_prio3_pause"] != 400 {
		t.Errorf("lost updates: %d", st["tx_prio3_pause"])
	}
}

func app(sel, prio uint8, proto uint16) dcb.App {
	return dcb.App{Selector: sel, Priority: prio, Protocol: proto}
}

// BenchmarkSimPFCToggle measures one mlx5 PFC write with its counter
// bookkeeping, the simulator's most expensive rule.
func BenchmarkSimPFCToggle(b *testing.B) {
	s := NewSim(simState())
	en := uint8(0)
	for b.Loop() {
		en ^= 0x08
		if err := s.SetPFC("mlx", dcb.PFC{Enable: en}); err != nil {
			b.Fatal(err)
		}
	}
}

// A driver without a model of its own gets dcbnl's rules
// (simstate.Generic): what is asked is stored, an exact duplicate APP
// entry is EEXIST, "auto" reads back as asked, and the hardware DSCP
// table keeps what the APP table held before the first write.
func TestSimGenericModel(t *testing.T) {
	s := NewSim(&snapshot.KernelState{Links: map[string]*snapshot.LinkState{
		"igb0": {
			Link:                 &nic.LinkInfo{Index: 7, MTU: 1500, OperState: "up", AdminUp: true},
			Driver:               &nic.DriverInfo{Driver: "igb"},
			Pause:                &nic.Pause{},
			PFCPreventionTimeout: u16p(0),
			DCB: &dcb.State{
				ETS: &dcb.ETS{ETSCap: 8}, PFC: &dcb.PFC{Cap: 8}, DCBX: u8p(dcb.DCBXHost | dcb.DCBXVerIEEE),
				Apps: []dcb.App{{Selector: dcb.SelDSCP, Priority: 1, Protocol: 10}},
			},
		},
	}})
	if err := s.SetPause("igb0", nic.Pause{Autoneg: true, Rx: true}); err != nil {
		t.Errorf("autoneg refused: %v", err)
	}
	ets := dcb.ETS{PrioTC: [8]uint8{3: 1}, TCTSA: [8]uint8{dcb.TSAETS, dcb.TSAETS}, TCTxBW: [8]uint8{100, 0}}
	noErr(t, "ETS", s.SetETS("igb0", ets))
	ets.ETSCap = 8
	if st, _ := s.DCB("igb0"); *st.ETS != ets {
		t.Errorf("ETS read back %+v, want %+v", *st.ETS, ets)
	}
	noErr(t, "PFC", s.SetPFC("igb0", dcb.PFC{Enable: 1 << 3, Delay: 30}))
	if st, _ := s.DCB("igb0"); st.PFC.Enable != 1<<3 || st.PFC.Delay != 30 || s.LinkToggles("igb0") != 0 {
		t.Errorf("PFC %+v, %d toggles", st.PFC, s.LinkToggles("igb0"))
	}
	noErr(t, "tunable", s.SetPFCPreventionTimeout("igb0", 0xffff))
	if v, _ := s.PFCPreventionTimeout("igb0"); v != 0xffff {
		t.Errorf("auto reads back %d", v)
	}
	a := dcb.App{Selector: dcb.SelDSCP, Priority: 3, Protocol: 26}
	noErr(t, "APP", s.AddApps("igb0", []dcb.App{a}))
	wantErrno(t, s.AddApps("igb0", []dcb.App{a}), syscall.EEXIST)
	if hw := s.HardwareDSCP("igb0"); len(hw) != 1 || hw[10] != 1 {
		t.Errorf("hardware DSCP %v, want the APP table before the first write", hw)
	}
	if _, ok := s.Thresholds("igb0"); ok || s.ManualBuffer("igb0") || !s.FirmwareWilling("igb0") || s.UnprotectedPFC("igb0") != nil {
		t.Error("another driver's state reported on a generic link")
	}
}

// noErr fails the test on a write the driver should take.
func noErr(t *testing.T, what string, err error) {
	t.Helper()
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}
