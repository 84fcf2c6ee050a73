package mlx5

import (
	"fmt"
	"slices"
	"strings"
)

// mlx5's receive buffers, as the driver sizes them (mlx5/core/en/
// port_buffer.c, en_dcbnl.c; mainline and DOCA-OFED 25.10 alike):
//
//   - A buffer is lossless when PBMC's lossy bit says so, and then must
//     hold at least xoff + max_mtu + one 128-byte cell, or the driver
//     answers -ENOMEM (update_xoff_threshold), with xoff = (301 + 2.16 ×
//     cable m) × max(speed, 40) Gb/s + 2.72 × MTU (calculate_xoff) and
//     max_mtu = max(netdev->max_mtu, MINIMUM_MAX_MTU 9216)
//     (mlx5e_port_manual_buffer_config): 9978 on the ConnectX ports seen,
//     so 762 bytes more than 9216. MLNX_OFED 4.6 and older took 9216
//     whatever the max_mtu; they are not planned for.
//   - mlx5e_port_manual_buffer_config recomputes the lossy bits and
//     checks, in this order: a cable length change (current bits and
//     sizes); a PFC change (the pfc_en written, the current priority-to-
//     buffer map); a map change (the new map and fill_pfc_en: every
//     buffer a priority maps to is lossless while rx or tx global pause
//     is on, else the port's pfc_en — against the sizes the port has
//     before the write); a size change (the new sizes); and, whatever
//     changed, the current state when the xoff differs from the last one.
//     A PFC write (mlx5e_dcbnl_ieee_setpfc) runs it in manual buffer mode,
//     a buffer write (mlx5e_dcbnl_setbuffer) whenever it changes
//     something. So the order of the global pause, PFC and buffer writes
//     decides which intermediate states the driver checks, in the apply
//     and in its rollback.
//   - Sizes are programmed in 128-byte cells: a size that is not a
//     multiple reads back smaller, and the apply would fail its read-back.
//   - The first buffer write that changes something sets manual_buffer
//     for good: rollback restores sizes and mapping, not automatic sizing.
//
// rocectl cannot read what the checks depend on beyond dcbnl: the manual
// buffer mode, PBMC's lossy bits, the last xoff. The planner takes the
// strictest reading: the port is in manual mode (its PFC writes check),
// the lossy bits are what PFC makes them plus, while global pause is on,
// every buffer a priority maps to, and every write checks its final state.

const (
	// Cell is the size of a buffer cell (port_set_buffer programs
	// size / 128).
	Cell = 128
	// MinMaxMTU is MINIMUM_MAX_MTU, the smallest max_mtu the driver
	// sizes a lossless buffer for.
	MinMaxMTU = 9216
	// DefaultCable is MLX5E_DEFAULT_CABLE_LEN, in metres.
	DefaultCable = 7
	// MaxCable is MLX5E_MAX_CABLE_LENGTH: setpfc takes a delay below it.
	MaxCable = 1000
	// AllLossless is fill_pfc_en under global pause.
	AllLossless = 0xff
)

// Xoff is calculate_xoff: the bytes a lossless buffer receives after it
// sends pause, for a link of speedMbps (40 Gb/s at least), an MTU and a
// cable length in metres.
func Xoff(speedMbps, mtu, cable int) int {
	speedMbps = max(speedMbps, 40000)
	return (301+216*cable/100)*speedMbps/1000 + 272*mtu/100
}

// Port is one mlx5 port's receive buffers as the driver's checks see
// them, followed through a plan's writes.
type Port struct {
	Pause      bool // rx or tx global pause on
	PauseKnown bool
	PFC        uint8
	Prio2Buf   [8]uint8
	Sizes      [8]uint32
	Lossless   [8]bool // PBMC's lossy bits, inverted
	Cable, MTU int
	Speed      int // Mb/s, 0 unknown
	MaxMTU     int // the netdev's max_mtu, 0 unknown
	// Cell is the device's buffer cell in bytes (InferCell), 0 unknown;
	// CellHow says how it was found, or why not.
	Cell    int
	CellHow string
	// Total is the port's buffer size (DCB_ATTR_DCB_BUFFER total_size),
	// 0 unknown: the sizes a buffer write asks may not add up past it.
	Total uint32
}

// AssumeLossless sets p's lossy bits, which cannot be read, at their
// strictest: every buffer PFC makes lossless and, with global pause on,
// every buffer a priority maps to (what a map write under global pause
// leaves), so that no check is missed.
func (p *Port) AssumeLossless() {
	p.Lossless = LosslessBy(p.PFC, p.Prio2Buf)
	if p.Pause {
		for b, l := range LosslessBy(AllLossless, p.Prio2Buf) {
			p.Lossless[b] = p.Lossless[b] || l
		}
	}
}

// LosslessBy is update_buffer_lossy's rule: a buffer is lossless when a
// priority of pfcEn maps to it.
func LosslessBy(pfcEn uint8, prio2buf [8]uint8) [8]bool {
	var out [8]bool
	for p := range 8 {
		if pfcEn&(1<<p) != 0 {
			out[prio2buf[p]] = true
		}
	}
	return out
}

// Need is the least a lossless buffer may hold in p's state.
func (p Port) Need() int {
	return Xoff(p.Speed, p.MTU, p.Cable) + max(p.MaxMTU, MinMaxMTU) + p.cell()
}

// cell is the port's cell size, or the driver's 128-byte fallback when
// it is not known.
func (p Port) cell() int {
	if p.Cell > 0 {
		return p.Cell
	}
	return Cell
}

// MinimumText says where Need comes from, max_mtu in its three states.
func (p Port) MinimumText() string {
	var mtu string
	c := p.cell()
	switch {
	case p.MaxMTU <= 0:
		mtu = fmt.Sprintf("max(max_mtu, 9216) + %d with the port's max_mtu unknown: 9216 taken, the driver may need more", c)
	case p.MaxMTU < MinMaxMTU:
		mtu = fmt.Sprintf("9216 (max_mtu %d, raised to 9216) + %d", p.MaxMTU, c)
	default:
		mtu = fmt.Sprintf("max_mtu %d + %d", p.MaxMTU, c)
	}
	return fmt.Sprintf("xoff for %d m of cable at %s, MTU %d, plus %s: calculate_xoff, update_xoff_threshold", p.Cable, SpeedText(p.Speed), p.MTU, mtu)
}

// Shortfall is a lossless buffer below the driver's minimum at one of
// its checks.
type Shortfall struct {
	Buf  int
	Size uint32
	// Sum, when not 0, is the failure instead: the sizes add up to Sum,
	// past the port's total (At.Total), -EINVAL.
	Sum uint64
	At  Port   // the state checked
	Why string // what makes the buffer lossless or checked there, if not plain PFC
	// Write names the write that fails, and Rollback says it is an undo.
	Write    string
	Rollback bool
}

// Check is the driver's check of p's lossless buffers (-ENOMEM): the
// first one below Need, nil when none is.
func (p Port) Check(why string) *Shortfall {
	need := p.Need()
	for b := range 8 {
		if p.Lossless[b] && int(p.Sizes[b]) < need {
			return &Shortfall{Buf: b, Size: p.Sizes[b], At: p, Why: why}
		}
	}
	return nil
}

// SetPFC is mlx5e_dcbnl_ieee_setpfc with the port in manual buffer mode:
// p is left as the write leaves it, and the first failing check is
// returned.
func (p *Port) SetPFC(pfc uint8, cable int) (sf *Shortfall) {
	first := func(s *Shortfall) {
		if sf == nil {
			sf = s
		}
	}
	if cable > 0 && cable < MaxCable && cable != p.Cable {
		p.Cable = cable
		first(p.Check("mlx5 checks the lossless buffers for the new cable length first"))
	}
	if pfc != p.PFC {
		// mlx5_set_port_pfc writes PFCC with global pause off.
		p.PFC, p.Pause, p.PauseKnown = pfc, false, true
		p.Lossless = LosslessBy(pfc, p.Prio2Buf)
	}
	first(p.Check(""))
	return sf
}

// SetBuffer is mlx5e_dcbnl_setbuffer, leaving p as the write does.
func (p *Port) SetBuffer(prio2buf [8]uint8, sizes [8]uint32) (sf *Shortfall) {
	if prio2buf == p.Prio2Buf && sizes == p.Sizes {
		return nil // nothing changed: the driver does nothing
	}
	if sum := sumSizes(sizes); sizes != p.Sizes && p.Total > 0 && sum > uint64(p.Total) {
		// The port buffer has no more to give (-EINVAL); nothing written.
		return &Shortfall{Sum: sum, At: *p}
	}
	if prio2buf != p.Prio2Buf {
		en, why := p.PFC, "mlx5 takes a new priority-to-buffer map before new sizes and checks it against the sizes the port has (mlx5e_port_manual_buffer_config)"
		if p.Pause {
			en, why = AllLossless, "global pause is on, so mlx5 makes every buffer a priority maps to lossless when the map changes (fill_pfc_en), checked against the sizes the port has before the write"
		}
		p.Prio2Buf, p.Lossless = prio2buf, LosslessBy(en, prio2buf)
		sf = p.Check(why)
	}
	p.Sizes = sizes
	if sf == nil {
		sf = p.Check("")
	}
	return sf
}

// Write is one kernel write of a plan on an mlx5 port, as the planner
// follows it: Apply moves the state to the write's values, Undo back to
// the port's current ones.
type Write struct {
	Obj         string // "pause", "pfc", "buffer", "mtu"
	Name        string // for the plan: "the PFC write"
	Apply, Undo func(p *Port) *Shortfall
	// Pinned says a path may not move the write: a bond's MTU change,
	// which sets every slave's at once (bond_change_mtu).
	Pinned bool
	// AfterFirst, on a pinned MTU write, is the bond's choice for all its
	// slaves: every slave's path writes the MTU after its first buffer
	// write (the planner places the one MTU change after all of them).
	AfterFirst bool
	// Part, on a PFC write split in two (PFCWritesSplit), is what the
	// write changes: "priorities" or "cable"; "" for the whole write.
	Part string
}

// PauseWrite, PFCWrite, BufferWrite and MTUWrite are the writes the
// buffer checks depend on, from cur to final.
func PauseWrite(cur, final Port) Write {
	on := final.Pause
	return Write{Obj: "pause", Name: "the global pause write",
		Apply: func(p *Port) *Shortfall { p.Pause, p.PauseKnown = on, true; return nil },
		Undo:  func(p *Port) *Shortfall { p.Pause, p.PauseKnown = cur.Pause, cur.PauseKnown; return nil }}
}

func PFCWrite(cur, final Port) Write {
	return Write{Obj: "pfc", Name: "the PFC write",
		Apply: func(p *Port) *Shortfall { return p.SetPFC(final.PFC, final.Cable) },
		Undo:  func(p *Port) *Shortfall { return p.SetPFC(cur.PFC, cur.Cable) }}
}

// PFCWritesSplit is the PFC write as two: the priorities with the cable
// length of the moment, then the cable length (cableFirst false), or the
// cable length, then the priorities. Each is an ieee_setpfc of its own,
// and mlx5 checks the lossless buffers against a new cable length before
// it takes new priorities (mlx5e_port_manual_buffer_config:
// update_xoff_threshold, then update_buffer_lossy): the buffers lossless
// under today's priorities (or under global pause) may be too small for
// the new cable where those under the new ones are not, or the other way
// round.
func PFCWritesSplit(cur, final Port, cableFirst bool) []Write {
	prios := Write{Obj: "pfc", Part: "priorities", Name: "the PFC write (priorities only)",
		Apply: func(p *Port) *Shortfall { return p.SetPFC(final.PFC, p.Cable) },
		Undo:  func(p *Port) *Shortfall { return p.SetPFC(cur.PFC, p.Cable) }}
	cable := Write{Obj: "pfc", Part: "cable", Name: "the cable length write",
		Apply: func(p *Port) *Shortfall { return p.SetPFC(p.PFC, final.Cable) },
		Undo:  func(p *Port) *Shortfall { return p.SetPFC(p.PFC, cur.Cable) }}
	if cableFirst {
		return []Write{cable, prios}
	}
	return []Write{prios, cable}
}

func BufferWrite(cur, final Port) Write {
	return Write{Obj: "buffer", Name: "the buffer write",
		Apply: func(p *Port) *Shortfall { return p.SetBuffer(final.Prio2Buf, final.Sizes) },
		Undo:  func(p *Port) *Shortfall { return p.SetBuffer(cur.Prio2Buf, cur.Sizes) }}
}

func MTUWrite(cur, final Port) Write {
	return Write{Obj: "mtu", Name: "the MTU change",
		Apply: func(p *Port) *Shortfall { p.MTU = final.MTU; return nil },
		Undo:  func(p *Port) *Shortfall { p.MTU = cur.MTU; return nil }}
}

// RunWrites follows ws from cur: the apply, and the rollback from each
// point the apply can stop at. It returns the first check that fails.
func RunWrites(cur Port, ws []Write) *Shortfall {
	for k := 1; k <= len(ws); k++ {
		p := cur
		for _, w := range ws[:k] {
			if sf := w.Apply(&p); sf != nil {
				sf.Write = w.Name
				return sf
			}
		}
		for i := k - 1; i >= 0; i-- {
			if sf := ws[i].Undo(&p); sf != nil {
				sf.Write, sf.Rollback = ws[i].Name, true
				return sf
			}
		}
	}
	return nil
}

// BuffersBeforePFC is ws with the buffer write moved before the PFC
// write, or nil when it is not after it.
func BuffersBeforePFC(ws []Write) []Write {
	pfc := slices.IndexFunc(ws, func(w Write) bool { return w.Obj == "pfc" })
	buf := slices.IndexFunc(ws, func(w Write) bool { return w.Obj == "buffer" })
	if pfc < 0 || buf < pfc {
		return nil
	}
	out := slices.Delete(slices.Clone(ws), buf, buf+1)
	return slices.Insert(out, pfc, ws[buf])
}

func (sf *Shortfall) String() string {
	s := fmt.Sprintf("%s would leave buffer %d lossless with %d bytes; mlx5 needs at least %d (%s)",
		sf.Write, sf.Buf, sf.Size, sf.At.Need(), sf.At.MinimumText())
	if sf.Sum > 0 {
		s = fmt.Sprintf("%s would make the buffers add up to %d bytes, more than the port's %d (mlx5e_port_manual_buffer_config: EINVAL)", sf.Write, sf.Sum, sf.At.Total)
	}
	if sf.Rollback {
		s = "rolling back, " + s
	}
	if sf.Why != "" {
		s += "; " + sf.Why
	}
	return s
}

// Advice says what the operator can do about a shortfall that no order
// of a plan avoids.
func Advice(sf *Shortfall) string {
	switch {
	case sf.At.Pause && strings.Contains(sf.Why, "fill_pfc_en"):
		return ": turn global pause off before the map changes (qos.global_pause = false: rocectl writes it before the buffers)"
	case strings.Contains(sf.Why, "before new sizes"):
		return fmt.Sprintf(": give buffer %d its size in an apply before the one that maps priorities to it", sf.Buf)
	}
	return ""
}

// IrreversibleBufferNote is the note on a buffer change:
// mlx5e_dcbnl_setbuffer sets manual_buffer, which only driver init clears.
const IrreversibleBufferNote = "irreversible in part: switches mlx5 to manual buffer mode for good (manual_buffer is cleared only when the driver loads); rollback restores sizes and mapping, not automatic sizing"

// SpeedText names a link speed for the plan, or says it is unknown.
func SpeedText(mbps int) string {
	if mbps <= 0 {
		return "an unknown speed (40 Gb/s assumed, the driver's floor)"
	}
	return fmt.Sprintf("%d Gb/s", mbps/1000)
}

func sumSizes(sizes [8]uint32) uint64 {
	var sum uint64
	for _, s := range sizes {
		sum += uint64(s)
	}
	return sum
}
