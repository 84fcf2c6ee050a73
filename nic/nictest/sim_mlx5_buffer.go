package nictest

import (
	"fmt"
	"syscall"

	"github.com/rocectl/rocectl/nic"
	"github.com/rocectl/rocectl/nic/dcb"
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
// The thresholds themselves (mlx5PBMC, Sim.Thresholds) are what rocectl
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
// (training, mlx5Speed); the model lets the next Speed read find the link
// training and the one after at its speed. The lossy bits a port has when it enters manual buffer mode are
// the firmware's; the model takes them as its PFC makes them
// (pbmcOf).

const (
	mlx5CellSize = 128
	// mlx5MinMaxMTU is MINIMUM_MAX_MTU: the smallest max_mtu
	// mlx5e_port_manual_buffer_config sizes a lossless buffer for.
	mlx5MinMaxMTU = 9216
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

// mlx5MaxMTU is the max_mtu mlx5e_port_manual_buffer_config uses: the
// netdev's, at least MINIMUM_MAX_MTU.
func mlx5MaxMTU(ls *snapshot.LinkState) int {
	return max(ls.Link.MaxMTU, mlx5MinMaxMTU)
}

// mlx5Lossy is update_buffer_lossy's rule: a buffer is lossy unless a
// PFC-enabled priority maps to it.
func mlx5Lossy(pfcEn uint8, prio2buffer [8]uint8) [8]bool {
	out := [8]bool{true, true, true, true, true, true, true, true}
	for p := range 8 {
		if pfcEn&(1<<p) != 0 {
			out[prio2buffer[p]] = false
		}
	}
	return out
}

// mlx5CheckXoff is update_xoff_threshold's check over every lossless
// buffer.
func mlx5CheckXoff(sizes [8]uint32, lossy [8]bool, xoff, maxMTU int) error {
	for i, l := range lossy {
		if !l && int(sizes[i]) < xoff+maxMTU+mlx5CellSize {
			return syscall.ENOMEM
		}
	}
	return nil
}

// mlx5PBMC is what the port's PBMC register holds beyond the sizes dcbnl
// reports (each buffer's lossy bit and thresholds), and the xoff the driver
// last computed (priv->dcbx.xoff).
type mlx5PBMC struct {
	lossy     [8]bool
	xoff, xon [8]uint32
	lastXoff  int
	computed  bool
}

// MLX5Thresholds is one mlx5 port's receive buffers as the driver last
// programmed them: which are lossy, and each lossless buffer's xoff and
// xon thresholds in bytes (whole cells; 0 for a lossy buffer).
type MLX5Thresholds struct {
	Lossy     [8]bool
	Xoff, Xon [8]uint32
}

// Thresholds returns the receive buffer thresholds the mlx5 driver of name
// last computed. ok is false while the driver has computed none: the port
// is not in manual buffer mode, where the firmware sizes the buffers (not
// modelled).
func (s *Sim) Thresholds(name string) (th MLX5Thresholds, ok bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	pb := s.pbmc[name]
	if pb == nil || !pb.computed {
		return MLX5Thresholds{}, false
	}
	return MLX5Thresholds{Lossy: pb.lossy, Xoff: pb.xoff, Xon: pb.xon}, true
}

// pbmcOf returns the link's PBMC state, made when the port enters manual
// buffer mode: the lossy bits the firmware left (taken as the port's PFC
// makes them), no thresholds computed.
func (s *Sim) pbmcOf(name string, d *dcb.State) *mlx5PBMC {
	if pb := s.pbmc[name]; pb != nil {
		return pb
	}
	pb := &mlx5PBMC{lossy: mlx5Lossy(d.PFC.Enable, d.Buffer.PrioBuffer)}
	s.pbmc[name] = pb
	return pb
}

// What mlx5e_port_manual_buffer_config is told changed
// (MLX5E_PORT_BUFFER_*).
const (
	mlx5ChangeCable = 1 << iota
	mlx5ChangePFC
	mlx5ChangePrio2Buffer
	mlx5ChangeSize
)

// mlx5BufferConfig is mlx5e_port_manual_buffer_config as far as the
// thresholds go, run on the link's current state d (map, sizes, pfc_en)
// and global pause: change says what the caller changed, pfcEn is the
// pfc_en a PFC write passes, cable the cable length it has already taken,
// p2b and sizes what a buffer write asks for. It checks in the driver's
// order (see the top of this file) and, when every check passes, stores
// what port_set_buffer programs.
func (s *Sim) mlx5BufferConfig(name string, ls *snapshot.LinkState, d *dcb.State, pb *mlx5PBMC, change int, pfcEn uint8, cable int, p2b [8]uint8, sizes [8]uint32) error {
	xoff := mlx5Xoff(s.mlx5Speed(name), ls.Link.MTU, cable)
	maxMTU := mlx5MaxMTU(ls)
	lossy, cur := pb.lossy, d.Buffer.Size
	update := false
	if change&mlx5ChangeCable != 0 {
		update = true
		if err := mlx5CheckXoff(cur, lossy, xoff, maxMTU); err != nil {
			return err
		}
	}
	if change&mlx5ChangePFC != 0 {
		if l := mlx5Lossy(pfcEn, d.Buffer.PrioBuffer); l != lossy {
			lossy, update = l, true
			if err := mlx5CheckXoff(cur, lossy, xoff, maxMTU); err != nil {
				return err
			}
		}
	}
	if change&mlx5ChangePrio2Buffer != 0 {
		// fill_pfc_en: global pause makes every used buffer lossless.
		en := d.PFC.Enable
		if ls.Pause != nil && (ls.Pause.Rx || ls.Pause.Tx) {
			en = 0xff
		}
		if l := mlx5Lossy(en, p2b); l != lossy {
			lossy, update = l, true
			if err := mlx5CheckXoff(cur, lossy, xoff, maxMTU); err != nil {
				return err // checked against the sizes before the write
			}
		}
	}
	if change&mlx5ChangeSize != 0 {
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
		if err := mlx5CheckXoff(cur, lossy, xoff, maxMTU); err != nil {
			return err
		}
	}
	if !update && xoff != pb.lastXoff {
		// "Need to update buffer configuration if xoff value is changed"
		update = true
		if err := mlx5CheckXoff(cur, lossy, xoff, maxMTU); err != nil {
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
			pb.xoff[i] = uint32(thr / mlx5CellSize * mlx5CellSize)
			pb.xon[i] = uint32((thr - maxMTU) / mlx5CellSize * mlx5CellSize)
		}
	}
	pb.computed = true
	return nil
}

// mlx5Speed is what mlx5e_port_linkspeed finds for calculate_xoff: 0 (it
// fails, and calculate_xoff takes 40 Gb/s) while a toggled link trains,
// PTYS having no operational protocol then.
func (s *Sim) mlx5Speed(name string) int {
	if s.training[name] > 0 {
		return 0
	}
	if ls := s.st.Links[name]; ls != nil && ls.Link != nil && ls.Link.OperState != "up" {
		return 0 // a link down has no operational protocol either
	}
	if v, ok := s.speed[name]; ok {
		return v
	}
	return 100000
}

// Train reads the speed of name until it is known: a toggled link has
// trained. A link that is not up never does.
func (s *Sim) Train(name string) error {
	for range trainingReads + 1 {
		mbps, err := s.Speed(name)
		if err != nil || mbps > 0 {
			return err
		}
	}
	return fmt.Errorf("%s: no speed: the link is not up", name)
}

// SetSpeed sets the link speed (Mb/s) the mlx5 buffer model computes xoff
// with (default 100000). Like the driver's carrier-up path
// (mlx5e_update_carrier, since the revert 3fbfe251cc9f) it recomputes no
// thresholds: the next buffer configuration uses the new speed.
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
		// mlx5_toggle_port_link: the link goes down and trains again,
		// and the buffer configuration below runs while it has no
		// operational speed (mlx5Speed).
		s.toggles[name]++
		if ls.Link != nil && ls.Link.OperState == "up" {
			s.training[name] = trainingReads
		}
	}
	// ethtool -S names follow the port's pause configuration.
	mlx5GlobalPauseCounters(ls)
	mlx5PrioPauseCounters(ls, d.PFC.Enable)
	newCable, change := cable, 0
	if pfcChanged {
		change |= mlx5ChangePFC
	}
	if pfc.Delay > 0 && pfc.Delay < mlx5MaxCableLen && int(pfc.Delay) != cable {
		newCable = int(pfc.Delay)
		change |= mlx5ChangeCable
	}
	if d.Buffer != nil && s.manual[name] {
		// Called whatever changed: an identical write recomputes the
		// thresholds when the MTU or speed moved since the last time.
		pb := s.pbmcOf(name, d)
		if err := s.mlx5BufferConfig(name, ls, d, pb, change, d.PFC.Enable, newCable, d.Buffer.PrioBuffer, d.Buffer.Size); err != nil {
			return err // PFCC stays written; the cable length is not taken
		}
	}
	if change&mlx5ChangeCable != 0 {
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
	pb := s.pbmcOf(name, d) // the firmware's lossy bits, taken over
	s.manual[name] = true
	change := 0
	if buf.PrioBuffer != d.Buffer.PrioBuffer {
		change |= mlx5ChangePrio2Buffer
	}
	if sizes != d.Buffer.Size {
		change |= mlx5ChangeSize
	}
	cable := int(d.PFC.Delay)
	if cable == 0 {
		cable = mlx5DefaultCableLen
	}
	if err := s.mlx5BufferConfig(name, ls, d, pb, change, d.PFC.Enable, cable, buf.PrioBuffer, sizes); err != nil {
		return err
	}
	d.Buffer.PrioBuffer, d.Buffer.Size = buf.PrioBuffer, sizes
	return nil
}

// ManualLossless sets up an mlx5 netdev as a host a recipe already made
// lossless: global pause off, priority 3 mapped to buffer 1, buffers 0
// and 1 of size0 and size1 bytes (manual buffer mode), PFC on priority 3
// with a 7 m cable. Global pause goes first: with it on, mlx5 makes every
// buffer a priority maps to lossless (fill_pfc_en). Every write goes
// through the driver model, so its buffer checks apply. The PFC change
// toggles the link and computes the thresholds while it trains (40 Gb/s):
// once it is up, an identical PFC write computes them at its speed, as
// rocectl leaves a port.
func (s *Sim) ManualLossless(name string, size0, size1 uint32) error {
	if err := s.SetPause(name, nic.Pause{}); err != nil {
		return err
	}
	if err := s.SetBuffer(name, dcb.Buffer{PrioBuffer: [8]uint8{0, 0, 0, 1}, Size: [8]uint32{size0, size1}}); err != nil {
		return err
	}
	pfc := dcb.PFC{Enable: 1 << 3, Delay: 7}
	if err := s.SetPFC(name, pfc); err != nil {
		return err
	}
	if err := s.Train(name); err != nil {
		return err
	}
	return s.SetPFC(name, pfc)
}
