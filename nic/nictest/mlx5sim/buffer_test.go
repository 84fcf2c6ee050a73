package mlx5sim_test

import (
	"syscall"
	"testing"

	"github.com/rocectl/rocectl/nic"
	"github.com/rocectl/rocectl/nic/dcb"
	"github.com/rocectl/rocectl/nic/nictest"
	"github.com/rocectl/rocectl/nic/nictest/mlx5sim"
)

// mlx5's buffer rules (port_buffer.c, en_dcbnl.c), as the model plays
// them through nictest's Sim: the manual-mode latch, 128-byte cells, the xoff check, and the
// link toggle on a PFC change.
func TestSimMLX5Buffers(t *testing.T) {
	s := nictest.NewSim(simState())
	// Global pause off, so that PFC alone makes buffers lossless (with it
	// on, a map change makes every used buffer lossless: fill_pfc_en).
	noErr(t, "global pause off", s.SetPause("mlx", nic.Pause{}))
	st, _ := s.DCB("mlx")
	same := *st.Buffer
	if err := s.SetBuffer("mlx", same); err != nil || s.ManualBuffer("mlx") {
		t.Fatalf("an unchanged buffer write: %v, manual %v (the driver does nothing)", err, s.ManualBuffer("mlx"))
	}
	// 100 Gb/s, MTU 1500, cable 7 m, max_mtu 9978: xoff = 316 × 100 +
	// 4080 = 35680; a lossless buffer needs 35680 + 9978 + 128 = 45786
	// bytes. While a toggled link trains the driver computes for 40 Gb/s:
	// 316 × 40 + 4080 = 16720, needing 26826 bytes.
	buf := dcb.Buffer{PrioBuffer: [8]uint8{0, 0, 0, 1}, Size: [8]uint32{200001, 26825}}
	if err := s.SetBuffer("mlx", buf); err != nil {
		t.Fatalf("lossy buffers of any size: %v", err)
	}
	if !s.ManualBuffer("mlx") {
		t.Error("a changing buffer write did not latch manual mode")
	}
	st, _ = s.DCB("mlx")
	if st.Buffer.Size[0] != 199936 || st.Buffer.Size[1] != 26752 {
		t.Errorf("sizes read back %v, want whole 128-byte cells (199936, 26752)", st.Buffer.Size[:2])
	}
	// PFC on priority 3 makes buffer 1 lossless: too small even for the
	// 40 Gb/s the driver computes for while the link it toggled trains.
	// PFCC is written (and the link toggled) before the check fails.
	wantErrno(t, s.SetPFC("mlx", dcb.PFC{Enable: 1 << 3}), syscall.ENOMEM)
	st, _ = s.DCB("mlx")
	if st.PFC.Enable != 1<<3 || s.LinkToggles("mlx") != 1 {
		t.Errorf("after the failed PFC write: pfc %#x, %d toggles; want PFCC written and one toggle", st.PFC.Enable, s.LinkToggles("mlx"))
	}
	// The failed configuration left PBMC's lossy bits alone: buffer 1 is
	// still lossy there, and a size write judges by those bits (the size
	// step of mlx5e_port_manual_buffer_config), so a size below the
	// minimum passes.
	noErr(t, "a size write after the failed PFC write", s.SetBuffer("mlx", dcb.Buffer{PrioBuffer: buf.PrioBuffer, Size: [8]uint32{150016, 25344}}))
	if th, _ := s.Thresholds("mlx"); !th.Lossy[1] {
		t.Fatalf("buffer 1 lossless after a failed PFC write and a size write: %+v", th)
	}
	// PFC off, buffer 1 resized, PFC on again: now buffer 1 is lossless.
	noErr(t, "PFC off", s.SetPFC("mlx", dcb.PFC{}))
	noErr(t, "resize", s.SetBuffer("mlx", dcb.Buffer{PrioBuffer: buf.PrioBuffer, Size: [8]uint32{150016, 49920}}))
	noErr(t, "PFC on priority 3", s.SetPFC("mlx", dcb.PFC{Enable: 1 << 3}))
	// The toggled link has no speed once (training), then 100 Gb/s; its
	// operstate never shows the toggle (the carrier drops later).
	if li, _ := s.Link("mlx"); li.OperState != "up" {
		t.Errorf("link just toggled: operstate %q, want up still", li.OperState)
	}
	for i := range trainingReads {
		if mbps, _ := s.Speed("mlx"); mbps != 0 {
			t.Errorf("link just toggled, read %d: speed %d, want 0 (training)", i+1, mbps)
		}
	}
	if mbps, _ := s.Speed("mlx"); mbps != 100000 {
		t.Errorf("link toggled and trained: speed %d, want 100000", mbps)
	}
	// A size write judges by the lossy bits, which PFC has set, at the
	// link's speed: 45568 holds the 40 Gb/s need, not the 100 Gb/s one.
	wantErrno(t, s.SetBuffer("mlx", dcb.Buffer{PrioBuffer: buf.PrioBuffer, Size: [8]uint32{150016, 45568}}), syscall.ENOMEM)
	// So is an identical PFC write, which recomputes at 100 Gb/s now
	// (49920 holds 45786).
	th40, _ := s.Thresholds("mlx")
	noErr(t, "an identical PFC write, link up", s.SetPFC("mlx", dcb.PFC{Enable: 1 << 3}))
	if th, _ := s.Thresholds("mlx"); th == th40 {
		t.Errorf("thresholds %+v after the recompute at 100 Gb/s, still those computed while the link trained", th)
	}
	// A longer cable raises xoff: 30 m → (301 + 64) × 100 + 4080 = 40580,
	// needing 50686 bytes.
	wantErrno(t, s.SetPFC("mlx", dcb.PFC{Enable: 1 << 3, Delay: 30}), syscall.ENOMEM)
	if st, _ = s.DCB("mlx"); st.PFC.Delay != 7 {
		t.Errorf("cable length %d after a refused change, want 7 kept", st.PFC.Delay)
	}
	if n := s.LinkToggles("mlx"); n != 3 {
		t.Errorf("%d toggles, want 3: one per pfc_en change, none for a write that leaves pfc_en alone", n)
	}
}

// The xoff/xon thresholds mlx5 programs (update_xoff_threshold) follow the
// buffer and PFC writes that compute them, with the MTU and speed of that
// moment; an MTU or speed change alone leaves them as they were (the
// mainline patches that recomputed them were reverted), and an identical
// PFC write in manual mode recomputes them (mlx5e_port_manual_buffer_config
// compares the new xoff with the last one). Expected values are worked out
// here by hand from the driver's formula, 100 Gb/s and 7 m of cable.
func TestSimMLX5ThresholdsFollowWritesNotMTU(t *testing.T) {
	s := nictest.NewSim(simState())
	if _, ok := s.Thresholds("mlx"); ok {
		t.Fatal("thresholds reported for a port the firmware still sizes")
	}
	noErr(t, "global pause off", s.SetPause("mlx", nic.Pause{}))
	buf := dcb.Buffer{PrioBuffer: [8]uint8{0, 0, 0, 1}, Size: [8]uint32{262144, 131072}}
	if err := s.SetBuffer("mlx", buf); err != nil {
		t.Fatal(err)
	}
	th, ok := s.Thresholds("mlx")
	if !ok || th != (mlx5sim.Thresholds{Lossy: [8]bool{true, true, true, true, true, true, true, true}}) {
		t.Fatalf("after the buffer write without PFC: %+v, %v; want every buffer lossy, no thresholds", th, ok)
	}
	if err := s.SetPFC("mlx", dcb.PFC{Enable: 1 << 3, Delay: 7}); err != nil {
		t.Fatal(err)
	}
	// The PFC change toggled the link (mlx5_toggle_port_link) and computed
	// while it trained, without its speed: calculate_xoff takes 40 Gb/s.
	// MTU 1500: xoff = 316 × 40 + 2.72 × 1500 = 16720; buffer 1 is
	// lossless: 131072 − 16720 = 114352 → 893 cells = 114304; xon max_mtu
	// below: 114352 − 9978 = 104374 → 815 cells = 104320.
	at40G := mlx5sim.Thresholds{Lossy: [8]bool{true, false, true, true, true, true, true, true}}
	at40G.Xoff[1], at40G.Xon[1] = 114304, 104320
	if th, _ := s.Thresholds("mlx"); th != at40G {
		t.Fatalf("after PFC on priority 3 at MTU 1500, link training: %+v, want %+v", th, at40G)
	}
	// Nothing recomputes them when the link comes up (mlx5e_update_carrier
	// since 3fbfe251cc9f).
	noErr(t, "training", s.Train("mlx"))
	if th, _ := s.Thresholds("mlx"); th != at40G {
		t.Fatalf("the link coming up recomputed the thresholds: %+v", th)
	}
	// An identical PFC write, link up: 100 Gb/s. xoff = 316 × 100 + 4080
	// = 35680; 131072 − 35680 = 95392 → 745 cells = 95360; 95392 − 9978
	// = 85414 → 667 cells = 85376.
	if err := s.SetPFC("mlx", dcb.PFC{Enable: 1 << 3, Delay: 7}); err != nil {
		t.Fatal(err)
	}
	at1500 := at40G
	at1500.Xoff[1], at1500.Xon[1] = 95360, 85376
	if th, _ := s.Thresholds("mlx"); th != at1500 {
		t.Fatalf("after an identical PFC write at MTU 1500, link up: %+v, want %+v", th, at1500)
	}
	if err := s.SetMTU("mlx", 9000); err != nil {
		t.Fatal(err)
	}
	if th, _ := s.Thresholds("mlx"); th != at1500 {
		t.Fatalf("an MTU change recomputed the thresholds: %+v, want those of MTU 1500", th)
	}
	if err := s.SetBuffer("mlx", buf); err != nil {
		t.Fatal(err)
	}
	if th, _ := s.Thresholds("mlx"); th != at1500 {
		t.Fatalf("an unchanged buffer write recomputed the thresholds: %+v", th)
	}
	// An identical PFC write: no link toggle, thresholds for MTU 9000:
	// xoff = 31600 + 24480 = 56080; 131072 − 56080 = 74992 → 585 cells =
	// 74880; 74992 − 9978 = 65014 → 507 cells = 64896.
	toggles := s.LinkToggles("mlx")
	if err := s.SetPFC("mlx", dcb.PFC{Enable: 1 << 3, Delay: 7}); err != nil {
		t.Fatal(err)
	}
	at9000 := at1500
	at9000.Xoff[1], at9000.Xon[1] = 74880, 64896
	if th, _ := s.Thresholds("mlx"); th != at9000 {
		t.Fatalf("after an identical PFC write at MTU 9000: %+v, want %+v", th, at9000)
	}
	if s.LinkToggles("mlx") != toggles {
		t.Error("an identical PFC write toggled the link")
	}
	// Speed: 200 Gb/s leaves them; the next PFC write computes
	// 316 × 200 + 24480 = 87680; 131072 − 87680 = 43392 (339 cells), xon
	// 43392 − 9978 = 33414 (261 cells = 33408).
	s.SetSpeed("mlx", 200000)
	if th, _ := s.Thresholds("mlx"); th != at9000 {
		t.Fatalf("a speed change recomputed the thresholds: %+v", th)
	}
	if err := s.SetPFC("mlx", dcb.PFC{Enable: 1 << 3, Delay: 7}); err != nil {
		t.Fatal(err)
	}
	at200G := at9000
	at200G.Xoff[1], at200G.Xon[1] = 43392, 33408
	if th, _ := s.Thresholds("mlx"); th != at200G {
		t.Fatalf("after an identical PFC write at 200 Gb/s: %+v, want %+v", th, at200G)
	}
}

// A lossless buffer must hold xoff + max(netdev->max_mtu, 9216) + one
// cell (mlx5e_port_manual_buffer_config, MINIMUM_MAX_MTU): with the
// ConnectX max_mtu of 9978 that is 762 bytes more than with 9216, and xon
// sits max_mtu below the xoff threshold. 100 Gb/s, MTU 1500, 7 m: xoff =
// 316 × 100 + 4080 = 35680.
func TestSimMLX5LosslessMinimumUsesMaxMTU(t *testing.T) {
	for _, tc := range []struct {
		name      string
		maxMTU    int
		min       uint32 // smallest whole-cell size taken
		xoff, xon uint32
	}{
		// 35680 + 9978 + 128 = 45786 → 358 cells; thresholds for 45824:
		// 45824 − 35680 = 10144 → 79 cells = 10112; 10144 − 9978 = 166 →
		// 1 cell = 128.
		{"max_mtu 9978", 9978, 45824, 10112, 128},
		// max(4000, 9216): 35680 + 9216 + 128 = 45024 → 352 cells = 45056;
		// 45056 − 35680 = 9376 → 73 cells = 9344; 9376 − 9216 = 160 → 128.
		{"max_mtu below 9216", 4000, 45056, 9344, 128},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st := simState()
			st.Links["mlx"].Link.MaxMTU = tc.maxMTU
			s := nictest.NewSim(st)
			noErr(t, "global pause off", s.SetPause("mlx", nic.Pause{}))
			// Automatic buffer mode: the PFC write checks nothing.
			noErr(t, "PFC on priority 3", s.SetPFC("mlx", dcb.PFC{Enable: 1 << 3, Delay: 7}))
			noErr(t, "training", s.Train("mlx")) // the link the PFC change toggled
			// Buffer 0, lossless (priority 3 maps to it), one cell short.
			short := dcb.Buffer{Size: [8]uint32{tc.min - mlx5sim.CellSize}}
			wantErrno(t, s.SetBuffer("mlx", short), syscall.ENOMEM)
			noErr(t, "the minimum", s.SetBuffer("mlx", dcb.Buffer{Size: [8]uint32{tc.min}}))
			want := mlx5sim.Thresholds{Lossy: [8]bool{false, true, true, true, true, true, true, true}}
			want.Xoff[0], want.Xon[0] = tc.xoff, tc.xon
			if th, _ := s.Thresholds("mlx"); th != want {
				t.Errorf("thresholds %+v, want %+v", th, want)
			}
		})
	}
}

// A priority-to-buffer change while global pause is on makes every buffer
// a priority maps to lossless, whatever pfc_en says (fill_pfc_en, used by
// mlx5e_port_manual_buffer_config for MLX5E_PORT_BUFFER_PRIO2BUFFER only);
// a PFC write judges by the pfc_en it is given.
func TestSimMLX5GlobalPauseMakesMappedBuffersLossless(t *testing.T) {
	s := nictest.NewSim(simState()) // global pause on, PFC off, every priority in buffer 0
	sizes := [8]uint32{262144, 16384}
	// Sizes alone: no map change, nothing lossless by PFC: no check.
	noErr(t, "sizes", s.SetBuffer("mlx", dcb.Buffer{Size: sizes}))
	// Priority 3 into buffer 1 (16384 bytes, below the 45786 a lossless
	// buffer needs): lossless because global pause is on.
	moved := dcb.Buffer{PrioBuffer: [8]uint8{0, 0, 0, 1}, Size: sizes}
	wantErrno(t, s.SetBuffer("mlx", moved), syscall.ENOMEM)
	if st, _ := s.DCB("mlx"); st.Buffer.PrioBuffer != [8]uint8{} {
		t.Fatalf("map %v after the refused write, want it unchanged", st.Buffer.PrioBuffer)
	}
	// A PFC write uses its own pfc_en: priority 5 in buffer 0 (262144
	// bytes) passes although buffer 1 is small, and it turns global pause
	// off (mlx5_set_port_pfc).
	noErr(t, "PFC on priority 5 with global pause on", s.SetPFC("mlx", dcb.PFC{Enable: 1 << 5, Delay: 7}))
	if p, _ := s.Pause("mlx"); p.Rx || p.Tx {
		t.Fatalf("global pause %+v after a PFC change, want off", p)
	}
	// Global pause off, PFC on priority 5 only: buffer 1 stays lossy.
	noErr(t, "the map with global pause off", s.SetBuffer("mlx", moved))
	if th, _ := s.Thresholds("mlx"); th.Lossy != [8]bool{false, true, true, true, true, true, true, true} {
		t.Errorf("lossy %v, want buffer 0 lossless only", th.Lossy)
	}
}

// mlx5e_port_manual_buffer_config takes a new priority-to-buffer map
// before new sizes: a buffer the map makes lossless is checked with the
// size it has before the write, so moving a lossless priority into an
// empty buffer and sizing that buffer in one write fails; sizes first,
// then the map, passes.
func TestSimMLX5MapCheckedAgainstSizesBeforeTheWrite(t *testing.T) {
	s := nictest.NewSim(simState())
	noErr(t, "global pause off", s.SetPause("mlx", nic.Pause{}))
	noErr(t, "PFC on priority 3", s.SetPFC("mlx", dcb.PFC{Enable: 1 << 3, Delay: 7}))
	sizes := [8]uint32{262144, 131072}
	both := dcb.Buffer{PrioBuffer: [8]uint8{0, 0, 0, 1}, Size: sizes}
	wantErrno(t, s.SetBuffer("mlx", both), syscall.ENOMEM)
	noErr(t, "sizes first", s.SetBuffer("mlx", dcb.Buffer{Size: sizes}))
	noErr(t, "then the map", s.SetBuffer("mlx", both))
	if st, _ := s.DCB("mlx"); st.Buffer.PrioBuffer != both.PrioBuffer || st.Buffer.Size != sizes {
		t.Errorf("buffers %+v, want %+v", *st.Buffer, both)
	}
}
