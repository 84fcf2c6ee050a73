package mlx5sim

import (
	"syscall"

	"github.com/rocectl/rocectl/nic/dcb"
	"github.com/rocectl/rocectl/nic/nictest/simstate"
	"github.com/rocectl/rocectl/nic/snapshot"
)

// The mlx5 port buffer model (mlx5/core/en/port_buffer.c, en_dcbnl.c), as
// mainline and DOCA-OFED 25.10 have it.
//
//   - mlx5e_dcbnl_ieee_setpfc writes PFCC and toggles the link
//     (mlx5_toggle_port_link) when pfc_en changes, takes a cable length
//     change (0 < delay < 1000), and then, with the port in manual buffer
//     mode, always calls mlx5e_port_manual_buffer_config with what changed
//     (possibly nothing) and the pfc_en it was given. A failure there is
//     returned after PFCC was written: pfc_en stays changed, the cable
//     length goes back.
//   - mlx5e_dcbnl_setbuffer: nothing changed is nothing done; any change
//     sets manual_buffer for good (only driver init clears it) and runs the
//     same configuration with the new map and/or sizes.
//   - mlx5e_port_manual_buffer_config works on the buffers as PBMC holds
//     them (sizes and lossy bits) in a fixed order, and every step that
//     recomputes runs update_xoff_threshold over the buffers the lossy bits
//     call lossless at that point, with the sizes of that point:
//     1. a cable length change: the current lossy bits and sizes;
//     2. a pfc_en change: update_buffer_lossy with the given pfc_en and
//     the current priority-to-buffer map; checked if a lossy bit changes;
//     3. a map change: update_buffer_lossy with the new map and
//     fill_pfc_en — 0xff (every buffer a priority maps to is lossless)
//     while rx or tx global pause is on, else the port's pfc_en —
//     checked, if a bit changes, against the sizes before the write;
//     4. a size change: a lossless buffer of size 0 is -EINVAL, then the
//     new sizes are checked;
//     5. otherwise, when the xoff differs from the last one
//     (priv->dcbx.xoff), the current state is checked.
//     The check: a lossless buffer smaller than xoff + max_mtu + one cell
//     is -ENOMEM, max_mtu being max(netdev->max_mtu, MINIMUM_MAX_MTU 9216)
//     — in mainline since before "net/mlx5e: Query global pause state
//     before setting prio2buffer" (netdev, December 2019, which added
//     fill_pfc_en) and in MLNX_OFED/DOCA-OFED from 4.7 (fill_pfc_en from
//     5.1) to 25.10; MLNX_OFED 4.6 and older used the constant
//     MLX5E_MAX_PORT_MTU (9216), and had no fill_pfc_en (not modelled).
//   - xoff = (301 + 2.16 × cable_len) × max(speed, 40 Gb/s) [Gb/s] + 2.72 ×
//     MTU, in integer arithmetic as calculate_xoff does.
//   - Sizes are programmed in 128-byte cells (size / port_buff_cell_sz)
//     and read back as cells × 128: a size that is not a multiple reads
//     back smaller.
//
// The thresholds themselves (pbmc, Model.Thresholds, nictest's Sim.Thresholds) are what rocectl
// cannot read: no dcbnl attribute carries them, nor the lossy bits.
// update_xoff_threshold sets each lossless buffer's xoff threshold to size
// − xoff and its xon threshold max_mtu below that, both programmed in
// whole cells by port_set_buffer. Nothing but the configuration above
// recomputes them: setting the MTU (mlx5e_set_dev_port_mtu) and the
// carrier coming up at a new speed (mlx5e_update_carrier) leave them as
// they were. Mainline briefly recomputed them there ("net/mlx5e: Update
// and set Xon/Xoff upon MTU set", ceddedc969f0; "... upon port speed set",
// d24341740fe4) and reverted both (6f5dacf88a32, 3fbfe251cc9f: they broke
// the buffer-to-pool mapping of multi-host NICs); DOCA-OFED 25.10 has
// neither. And a PFC change toggles the link (mlx5_toggle_port_link) before
// the configuration runs: the link then trains, PTYS has no operational
// protocol, mlx5e_port_linkspeed fails, and calculate_xoff takes 40 Gb/s
// (training: simstate.Link.Speed); nictest's Sim lets the next Speed read
// find the link training and the one after at its speed. The lossy bits a
// port has when it enters manual buffer mode are the firmware's; the model
// takes them as its PFC makes them (pbmcOf).

const (
	// CellSize is the port buffer cell (port_buff_cell_sz): sizes are
	// programmed in whole cells.
	CellSize = 128
	// minMaxMTU is MINIMUM_MAX_MTU: the smallest max_mtu
	// mlx5e_port_manual_buffer_config sizes a lossless buffer for.
	minMaxMTU = 9216
	// defaultCableLen is MLX5E_DEFAULT_CABLE_LEN, the cable length the
	// driver assumes until one is set.
	defaultCableLen = 7
	// maxCableLen is MLX5E_MAX_CABLE_LENGTH: delay must be below it.
	maxCableLen = 1000
)

// Xoff is calculate_xoff for a port of speed Mb/s, MTU mtu, cable length
// cable metres.
func Xoff(speed, mtu, cable int) int {
	if speed < 40000 {
		speed = 40000
	}
	return (301+216*cable/100)*speed/1000 + 272*mtu/100
}

// MaxMTU is the max_mtu mlx5e_port_manual_buffer_config uses: the
// netdev's, at least MINIMUM_MAX_MTU.
func MaxMTU(ls *snapshot.LinkState) int {
	return max(ls.Link.MaxMTU, minMaxMTU)
}

// Lossy is update_buffer_lossy's rule: a buffer is lossy unless a
// PFC-enabled priority maps to it.
func Lossy(pfcEn uint8, prio2buffer [8]uint8) [8]bool {
	out := [8]bool{true, true, true, true, true, true, true, true}
	for p := range 8 {
		if pfcEn&(1<<p) != 0 {
			out[prio2buffer[p]] = false
		}
	}
	return out
}

// CheckXoff is update_xoff_threshold's check over every lossless buffer:
// ENOMEM for one smaller than xoff + maxMTU + one cell.
func CheckXoff(sizes [8]uint32, lossy [8]bool, xoff, maxMTU int) error {
	for i, l := range lossy {
		if !l && int(sizes[i]) < xoff+maxMTU+CellSize {
			return syscall.ENOMEM
		}
	}
	return nil
}

// pbmc is what the port's PBMC register holds beyond the sizes dcbnl
// reports (each buffer's lossy bit and thresholds), and the xoff the driver
// last computed (priv->dcbx.xoff).
type pbmc struct {
	lossy     [8]bool
	xoff, xon [8]uint32
	lastXoff  int
	computed  bool
}

// Thresholds is one mlx5 port's receive buffers as the driver last
// programmed them: which are lossy, and each lossless buffer's xoff and
// xon thresholds in bytes (whole cells; 0 for a lossy buffer).
type Thresholds struct {
	Lossy     [8]bool
	Xoff, Xon [8]uint32
}

// Thresholds returns the receive buffer thresholds the driver last
// computed. ok is false while it has computed none: the port is not in
// manual buffer mode, where the firmware sizes the buffers (not
// modelled).
func (m *Model) Thresholds() (th Thresholds, ok bool) {
	pb := m.pbmc
	if pb == nil || !pb.computed {
		return Thresholds{}, false
	}
	return Thresholds{Lossy: pb.lossy, Xoff: pb.xoff, Xon: pb.xon}, true
}

// ManualBuffer says whether the driver is in manual buffer mode: set by
// the first buffer write that changed anything, cleared only by a driver
// reload.
func (m *Model) ManualBuffer() bool { return m.manual }

// pbmcOf returns the link's PBMC state, made when the port enters manual
// buffer mode: the lossy bits the firmware left (taken as the port's PFC
// makes them), no thresholds computed.
func (m *Model) pbmcOf(d *dcb.State) *pbmc {
	if m.pbmc == nil {
		m.pbmc = &pbmc{lossy: Lossy(d.PFC.Enable, d.Buffer.PrioBuffer)}
	}
	return m.pbmc
}

// What mlx5e_port_manual_buffer_config is told changed
// (MLX5E_PORT_BUFFER_*).
const (
	changeCable = 1 << iota
	changePFC
	changePrio2Buffer
	changeSize
)

// bufferConfig is mlx5e_port_manual_buffer_config as far as the
// thresholds go, run on the link's current state d (map, sizes, pfc_en)
// and global pause: change says what the caller changed, pfcEn is the
// pfc_en a PFC write passes, cable the cable length it has already taken,
// p2b and sizes what a buffer write asks for. It checks in the driver's
// order (see the top of this file) and, when every check passes, stores
// what port_set_buffer programs.
func bufferConfig(l simstate.Link, d *dcb.State, pb *pbmc, change int, pfcEn uint8, cable int, p2b [8]uint8, sizes [8]uint32) error {
	ls := l.State()
	xoff := Xoff(l.Speed(), ls.Link.MTU, cable)
	maxMTU := MaxMTU(ls)
	lossy, cur := pb.lossy, d.Buffer.Size
	update := false
	if change&changeCable != 0 {
		update = true
		if err := CheckXoff(cur, lossy, xoff, maxMTU); err != nil {
			return err
		}
	}
	if change&changePFC != 0 {
		if l := Lossy(pfcEn, d.Buffer.PrioBuffer); l != lossy {
			lossy, update = l, true
			if err := CheckXoff(cur, lossy, xoff, maxMTU); err != nil {
				return err
			}
		}
	}
	if change&changePrio2Buffer != 0 {
		// fill_pfc_en: global pause makes every used buffer lossless.
		en := d.PFC.Enable
		if ls.Pause != nil && (ls.Pause.Rx || ls.Pause.Tx) {
			en = 0xff
		}
		if l := Lossy(en, p2b); l != lossy {
			lossy, update = l, true
			if err := CheckXoff(cur, lossy, xoff, maxMTU); err != nil {
				return err // checked against the sizes before the write
			}
		}
	}
	if change&changeSize != 0 {
		for i, sz := range sizes {
			if !lossy[i] && sz == 0 {
				return syscall.EINVAL // "lossless buffer size cannot be zero"
			}
		}
		var total uint64
		for _, sz := range sizes {
			total += uint64(sz)
		}
		if d.Buffer.TotalSize > 0 && total > uint64(d.Buffer.TotalSize) {
			return syscall.EINVAL // more than the port buffer has spare
		}
		cur, update = sizes, true
		if err := CheckXoff(cur, lossy, xoff, maxMTU); err != nil {
			return err
		}
	}
	if !update && xoff != pb.lastXoff {
		// "Need to update buffer configuration if xoff value is changed"
		update = true
		if err := CheckXoff(cur, lossy, xoff, maxMTU); err != nil {
			return err
		}
	}
	pb.lastXoff = xoff
	if !update {
		return nil
	}
	pb.lossy = lossy
	for i := range 8 {
		pb.xoff[i], pb.xon[i] = 0, 0
		if !lossy[i] {
			thr := int(cur[i]) - xoff
			pb.xoff[i] = uint32(thr / CellSize * CellSize)
			pb.xon[i] = uint32((thr - maxMTU) / CellSize * CellSize)
		}
	}
	pb.computed = true
	return nil
}

// SetPFC is mlx5e_dcbnl_ieee_setpfc on d (the link's DCB state).
func (m *Model) SetPFC(l simstate.Link, d *dcb.State, pfc dcb.PFC) error {
	ls := l.State()
	cable := int(d.PFC.Delay)
	if cable == 0 {
		cable = defaultCableLen
	}
	pfcChanged := pfc.Enable != d.PFC.Enable
	if pfcChanged {
		// mlx5_set_port_pfc zeroes pptx/pprx: global pause goes off.
		d.PFC.Enable = pfc.Enable
		if ls.Pause != nil {
			ls.Pause.Rx, ls.Pause.Tx = false, false
		}
		// mlx5_toggle_port_link: the link goes down and trains again,
		// and the buffer configuration below runs while it has no
		// operational speed (simstate.Link.Speed).
		l.ToggleLink()
	}
	// ethtool -S names follow the port's pause configuration.
	globalPauseCounters(ls)
	prioPauseCounters(ls, d.PFC.Enable)
	newCable, change := cable, 0
	if pfcChanged {
		change |= changePFC
	}
	if pfc.Delay > 0 && pfc.Delay < maxCableLen && int(pfc.Delay) != cable {
		newCable = int(pfc.Delay)
		change |= changeCable
	}
	if d.Buffer != nil && m.manual {
		// Called whatever changed: an identical write recomputes the
		// thresholds when the MTU or speed moved since the last time.
		pb := m.pbmcOf(d)
		if err := bufferConfig(l, d, pb, change, d.PFC.Enable, newCable, d.Buffer.PrioBuffer, d.Buffer.Size); err != nil {
			return err // PFCC stays written; the cable length is not taken
		}
	}
	if change&changeCable != 0 {
		d.PFC.Delay = uint16(newCable)
	}
	return nil
}

// SetBuffer is mlx5e_dcbnl_setbuffer on d.
func (m *Model) SetBuffer(l simstate.Link, d *dcb.State, buf dcb.Buffer) error {
	var sizes [8]uint32
	for i, sz := range buf.Size {
		sizes[i] = sz / CellSize * CellSize // programmed in cells
	}
	if buf.PrioBuffer == d.Buffer.PrioBuffer && sizes == d.Buffer.Size {
		return nil // nothing changed: manual_buffer is not set
	}
	pb := m.pbmcOf(d) // the firmware's lossy bits, taken over
	m.manual = true
	change := 0
	if buf.PrioBuffer != d.Buffer.PrioBuffer {
		change |= changePrio2Buffer
	}
	if sizes != d.Buffer.Size {
		change |= changeSize
	}
	cable := int(d.PFC.Delay)
	if cable == 0 {
		cable = defaultCableLen
	}
	if err := bufferConfig(l, d, pb, change, d.PFC.Enable, cable, buf.PrioBuffer, sizes); err != nil {
		return err
	}
	d.Buffer.PrioBuffer, d.Buffer.Size = buf.PrioBuffer, sizes
	return nil
}
