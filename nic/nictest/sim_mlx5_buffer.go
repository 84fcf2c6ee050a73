package nictest

import (
	"syscall"

	"github.com/rocectl/rocectl/nic/dcb"
	"github.com/rocectl/rocectl/nic/snapshot"
)

// The mlx5 port buffer model (mlx5/core/en/port_buffer.c, en_dcbnl.c).
//
//   - mlx5e_dcbnl_ieee_setpfc writes PFCC and toggles the link
//     (mlx5_toggle_port_link) when pfc_en changes; with a cable length
//     change (0 < delay < 1000) and the port in manual buffer mode it then
//     reconfigures the buffers (mlx5e_port_manual_buffer_config) against
//     the current prio2buffer. A failure there is returned after PFCC was
//     written: pfc_en stays changed, the cable length goes back.
//   - mlx5e_dcbnl_setbuffer: nothing changed is nothing done; any change
//     sets manual_buffer for good (only driver init clears it) and runs the
//     same configuration, judging losslessness by the current pfc_en.
//   - A buffer is lossless when a PFC-enabled priority maps to it
//     (update_buffer_lossy). Whenever thresholds are recomputed, a lossless
//     buffer smaller than xoff + MLX5E_MAX_PORT_MTU (9216) + one cell is
//     -ENOMEM (update_xoff_threshold), and a zero-size lossless buffer in a
//     size change is -EINVAL.
//   - xoff = (301 + 2.16 × cable_len) × max(speed, 40 Gb/s) [Gb/s] + 2.72 ×
//     MTU, in integer arithmetic as calculate_xoff does.
//   - Sizes are programmed in 128-byte cells (size >> MLX5E_BUFFER_CELL_SHIFT)
//     and read back as cells × 128: a size that is not a multiple reads
//     back smaller.

const (
	mlx5CellSize   = 128
	mlx5MaxPortMTU = 9216
	// mlx5DefaultCableLen is MLX5E_DEFAULT_CABLE_LEN, the cable length the
	// driver assumes until one is set.
	mlx5DefaultCableLen = 7
)

// mlx5Xoff is calculate_xoff for a port of speed Mb/s, MTU mtu, cable
// length cable metres.
func mlx5Xoff(speed, mtu, cable int) int {
	if speed < 40000 {
		speed = 40000
	}
	return (301+216*cable/100)*speed/1000 + 272*mtu/100
}

// mlx5Lossless says which buffers a PFC-enabled priority maps to.
func mlx5Lossless(pfcEn uint8, prio2buffer [8]uint8) [8]bool {
	var out [8]bool
	for p := range 8 {
		if pfcEn&(1<<p) != 0 {
			out[prio2buffer[p]] = true
		}
	}
	return out
}

// mlx5CheckXoff is update_xoff_threshold's check over every lossless
// buffer.
func mlx5CheckXoff(sizes [8]uint32, lossless [8]bool, xoff int) error {
	for i, l := range lossless {
		if l && int(sizes[i]) < xoff+mlx5MaxPortMTU+mlx5CellSize {
			return syscall.ENOMEM
		}
	}
	return nil
}

func (s *Sim) mlx5Speed(name string) int {
	if v, ok := s.speed[name]; ok {
		return v
	}
	return 100000
}

// SetSpeed sets the link speed (Mb/s) the mlx5 buffer model computes xoff
// with (default 100000).
func (s *Sim) SetSpeed(name string, mbps int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.speed[name] = mbps
}

// LinkToggles counts the times a driver toggled the link of name (mlx5:
// every PFC enable change).
func (s *Sim) LinkToggles(name string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.toggles[name]
}

// ManualBuffer says whether the mlx5 driver of name is in manual buffer
// mode: set by the first buffer write that changed anything, cleared only
// by a driver reload.
func (s *Sim) ManualBuffer(name string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.manual[name]
}

// mlx5SetPFC is mlx5e_dcbnl_ieee_setpfc on d (the link's DCB state).
func (s *Sim) mlx5SetPFC(name string, ls *snapshot.LinkState, d *dcb.State, pfc dcb.PFC) error {
	cable := int(d.PFC.Delay)
	if cable == 0 {
		cable = mlx5DefaultCableLen
	}
	pfcChanged := pfc.Enable != d.PFC.Enable
	if pfcChanged {
		// mlx5_set_port_pfc zeroes pptx/pprx: global pause goes off.
		d.PFC.Enable = pfc.Enable
		if ls.Pause != nil {
			ls.Pause.Rx, ls.Pause.Tx = false, false
		}
		s.toggles[name]++
	}
	// ethtool -S names follow the port's pause configuration.
	mlx5GlobalPauseCounters(ls)
	mlx5PrioPauseCounters(ls, d.PFC.Enable)
	newCable := cable
	cableChanged := pfc.Delay > 0 && pfc.Delay < mlx5MaxCableLen && int(pfc.Delay) != cable
	if cableChanged {
		newCable = int(pfc.Delay)
	}
	if d.Buffer != nil && s.manual[name] && (pfcChanged || cableChanged) {
		xoff := mlx5Xoff(s.mlx5Speed(name), ls.Link.MTU, newCable)
		if err := mlx5CheckXoff(d.Buffer.Size, mlx5Lossless(d.PFC.Enable, d.Buffer.PrioBuffer), xoff); err != nil {
			return err // PFCC stays written; the cable length is not taken
		}
	}
	if cableChanged {
		d.PFC.Delay = uint16(newCable)
	}
	return nil
}

// mlx5SetBuffer is mlx5e_dcbnl_setbuffer on d.
func (s *Sim) mlx5SetBuffer(name string, ls *snapshot.LinkState, d *dcb.State, buf dcb.Buffer) error {
	var sizes [8]uint32
	for i, sz := range buf.Size {
		sizes[i] = sz / mlx5CellSize * mlx5CellSize // programmed in cells
	}
	if buf.PrioBuffer == d.Buffer.PrioBuffer && sizes == d.Buffer.Size {
		return nil // nothing changed: manual_buffer is not set
	}
	s.manual[name] = true
	lossless := mlx5Lossless(d.PFC.Enable, buf.PrioBuffer)
	var total uint64
	for i, sz := range sizes {
		if lossless[i] && sz == 0 && sizes != d.Buffer.Size {
			return syscall.EINVAL // "lossless buffer size cannot be zero"
		}
		total += uint64(sz)
	}
	if d.Buffer.TotalSize > 0 && total > uint64(d.Buffer.TotalSize) {
		return syscall.EINVAL
	}
	cable := int(d.PFC.Delay)
	if cable == 0 {
		cable = mlx5DefaultCableLen
	}
	if err := mlx5CheckXoff(sizes, lossless, mlx5Xoff(s.mlx5Speed(name), ls.Link.MTU, cable)); err != nil {
		return err
	}
	d.Buffer.PrioBuffer, d.Buffer.Size = buf.PrioBuffer, sizes
	return nil
}
