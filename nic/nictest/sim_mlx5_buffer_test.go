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
