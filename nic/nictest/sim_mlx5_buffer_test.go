package nictest

import (
	"syscall"
	"testing"

	"github.com/rocectl/rocectl/nic/dcb"
)

// mlx5's buffer rules (port_buffer.c, en_dcbnl.c), as the simulator plays
// them: the manual-mode latch, 128-byte cells, the xoff check, and the
// link toggle on a PFC change.
func TestSimMLX5Buffers(t *testing.T) {
	s := NewSim(simState())
	st, _ := s.DCB("mlx")
	same := *st.Buffer
	if err := s.SetBuffer("mlx", same); err != nil || s.ManualBuffer("mlx") {
		t.Fatalf("an unchanged buffer write: %v, manual %v (the driver does nothing)", err, s.ManualBuffer("mlx"))
	}
	// 100 Gb/s, MTU 1500, cable 7 m: xoff = 316 × 100 + 4080 = 35680;
	// a lossless buffer needs 35680 + 9216 + 128 = 45024 bytes.
	buf := dcb.Buffer{PrioBuffer: [8]uint8{0, 0, 0, 1}, Size: [8]uint32{200001, 45023}}
	if err := s.SetBuffer("mlx", buf); err != nil {
		t.Fatalf("lossy buffers of any size: %v", err)
	}
	if !s.ManualBuffer("mlx") {
		t.Error("a changing buffer write did not latch manual mode")
	}
	st, _ = s.DCB("mlx")
	if st.Buffer.Size[0] != 199936 || st.Buffer.Size[1] != 44928 {
		t.Errorf("sizes read back %v, want whole 128-byte cells (199936, 44928)", st.Buffer.Size[:2])
	}
	// PFC on priority 3 makes buffer 1 lossless: too small. PFCC is
	// written (and the link toggled) before the check fails.
	wantErrno(t, s.SetPFC("mlx", dcb.PFC{Enable: 1 << 3}), syscall.ENOMEM)
	st, _ = s.DCB("mlx")
	if st.PFC.Enable != 1<<3 || s.LinkToggles("mlx") != 1 {
		t.Errorf("after the failed PFC write: pfc %#x, %d toggles; want PFCC written and one toggle", st.PFC.Enable, s.LinkToggles("mlx"))
	}
	// A buffer write judges losslessness by the current pfc_en.
	wantErrno(t, s.SetBuffer("mlx", dcb.Buffer{PrioBuffer: buf.PrioBuffer, Size: [8]uint32{150016, 44800}}), syscall.ENOMEM)
	if err := s.SetBuffer("mlx", dcb.Buffer{PrioBuffer: buf.PrioBuffer, Size: [8]uint32{150016, 49920}}); err != nil {
		t.Fatalf("a lossless buffer above the minimum: %v", err)
	}
	// A longer cable raises xoff: 30 m → (301 + 64) × 100 + 4080.
	wantErrno(t, s.SetPFC("mlx", dcb.PFC{Enable: 1 << 3, Delay: 30}), syscall.ENOMEM)
	if st, _ = s.DCB("mlx"); st.PFC.Delay != 7 {
		t.Errorf("cable length %d after a refused change, want 7 kept", st.PFC.Delay)
	}
	if n := s.LinkToggles("mlx"); n != 1 {
		t.Errorf("%d toggles: a write that leaves pfc_en alone does not toggle the link", n)
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
	s := NewSim(simState())
	if _, ok := s.Thresholds("mlx"); ok {
		t.Fatal("thresholds reported for a port the firmware still sizes")
	}
	buf := dcb.Buffer{PrioBuffer: [8]uint8{0, 0, 0, 1}, Size: [8]uint32{262144, 131072}}
	if err := s.SetBuffer("mlx", buf); err != nil {
		t.Fatal(err)
	}
	th, ok := s.Thresholds("mlx")
	if !ok || th != (MLX5Thresholds{Lossy: [8]bool{true, true, true, true, true, true, true, true}}) {
		t.Fatalf("after the buffer write without PFC: %+v, %v; want every buffer lossy, no thresholds", th, ok)
	}
	if err := s.SetPFC("mlx", dcb.PFC{Enable: 1 << 3, Delay: 7}); err != nil {
		t.Fatal(err)
	}
	// MTU 1500: xoff = 316 × 100 + 2.72 × 1500 = 35680; buffer 1 is
	// lossless: 131072 − 35680 = 95392 → 745 cells = 95360; xon
	// 95392 − 9216 = 86176 → 673 cells = 86144.
	at1500 := MLX5Thresholds{Lossy: [8]bool{true, false, true, true, true, true, true, true}}
	at1500.Xoff[1], at1500.Xon[1] = 95360, 86144
	if th, _ := s.Thresholds("mlx"); th != at1500 {
		t.Fatalf("after PFC on priority 3 at MTU 1500: %+v, want %+v", th, at1500)
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
	// 74880; 74992 − 9216 = 65776 → 513 cells = 65664.
	toggles := s.LinkToggles("mlx")
	if err := s.SetPFC("mlx", dcb.PFC{Enable: 1 << 3, Delay: 7}); err != nil {
		t.Fatal(err)
	}
	at9000 := at1500
	at9000.Xoff[1], at9000.Xon[1] = 74880, 65664
	if th, _ := s.Thresholds("mlx"); th != at9000 {
		t.Fatalf("after an identical PFC write at MTU 9000: %+v, want %+v", th, at9000)
	}
	if s.LinkToggles("mlx") != toggles {
		t.Error("an identical PFC write toggled the link")
	}
	// Speed: 200 Gb/s leaves them; the next PFC write computes
	// 316 × 200 + 24480 = 87680; 131072 − 87680 = 43392 (339 cells), xon
	// 34176 (267 cells).
	s.SetSpeed("mlx", 200000)
	if th, _ := s.Thresholds("mlx"); th != at9000 {
		t.Fatalf("a speed change recomputed the thresholds: %+v", th)
	}
	if err := s.SetPFC("mlx", dcb.PFC{Enable: 1 << 3, Delay: 7}); err != nil {
		t.Fatal(err)
	}
	at200G := at9000
	at200G.Xoff[1], at200G.Xon[1] = 43392, 34176
	if th, _ := s.Thresholds("mlx"); th != at200G {
		t.Fatalf("after an identical PFC write at 200 Gb/s: %+v, want %+v", th, at200G)
	}
}
