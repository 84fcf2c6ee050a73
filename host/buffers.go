package host

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/rocectl/rocectl/policy"
	"github.com/rocectl/rocectl/port"
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
	mlx5Cell = 128
	// mlx5MinMaxMTU is MINIMUM_MAX_MTU, the smallest max_mtu the driver
	// sizes a lossless buffer for.
	mlx5MinMaxMTU   = 9216
	mlx5CableLen    = 7    // MLX5E_DEFAULT_CABLE_LEN
	mlx5MaxCable    = 1000 // MLX5E_MAX_CABLE_LENGTH: setpfc takes delay below it
	mlx5AllLossless = 0xff // fill_pfc_en under global pause
)

func mlx5Xoff(speedMbps, mtu, cable int) int {
	speedMbps = max(speedMbps, 40000)
	return (301+216*cable/100)*speedMbps/1000 + 272*mtu/100
}

// mlx5Port is one mlx5 port's receive buffers as the driver's checks see
// them, followed through the plan's writes.
type mlx5Port struct {
	pause      bool // rx or tx global pause on
	pauseKnown bool
	pfc        uint8
	prio2buf   [8]uint8
	sizes      [8]uint32
	lossless   [8]bool // PBMC's lossy bits, inverted
	cable, mtu int
	speed      int // Mb/s, 0 unknown
	maxMTU     int // the netdev's max_mtu, 0 unknown
}

// mlx5State is netdev's buffer state, read once per Plan; ok is false
// when the driver reports no PFC or buffers, or they cannot be read (the
// plan reports the settings' own errors). speedMbps is the netdev's link
// speed as discovery found it, 0 when unknown or not discovered (a bond's
// slave): then it is read here.
func (pl *planning) mlx5State(netdev string, speedMbps int) (mlx5Port, bool) {
	if r, ok := pl.mlx5[netdev]; ok {
		return r.p, r.ok
	}
	p, ok := pl.h.readMLX5State(netdev, speedMbps)
	pl.mlx5[netdev] = mlx5Read{p, ok}
	return p, ok
}

// readMLX5State reads what mlx5State returns.
func (h *Host) readMLX5State(netdev string, speedMbps int) (p mlx5Port, ok bool) {
	st, err := h.K.DCB(netdev)
	if err != nil || st.PFC == nil || st.Buffer == nil {
		return p, false
	}
	li, err := h.K.Link(netdev)
	if err != nil {
		return p, false
	}
	p = mlx5Port{pfc: st.PFC.Enable, prio2buf: st.Buffer.PrioBuffer, sizes: st.Buffer.Size,
		cable: int(st.PFC.Delay), mtu: li.MTU, maxMTU: li.MaxMTU, speed: speedMbps}
	if p.speed <= 0 {
		p.speed = h.linkSpeed(netdev)
	}
	if p.cable == 0 {
		p.cable = mlx5CableLen
	}
	if pa, err := h.K.Pause(netdev); err == nil {
		p.pause, p.pauseKnown = pa.Rx || pa.Tx, true
	}
	// The lossy bits cannot be read: every buffer PFC makes lossless and,
	// with global pause on, every buffer a priority maps to (what a map
	// write under global pause leaves), so that no check is missed.
	p.lossless = losslessBy(p.pfc, p.prio2buf)
	if p.pause {
		for b, l := range losslessBy(mlx5AllLossless, p.prio2buf) {
			p.lossless[b] = p.lossless[b] || l
		}
	}
	return p, true
}

// losslessBy is update_buffer_lossy's rule: a buffer is lossless when a
// priority of pfcEn maps to it.
func losslessBy(pfcEn uint8, prio2buf [8]uint8) [8]bool {
	var out [8]bool
	for p := range 8 {
		if pfcEn&(1<<p) != 0 {
			out[prio2buf[p]] = true
		}
	}
	return out
}

// need is the least a lossless buffer may hold in p's state.
func (p mlx5Port) need() int {
	return mlx5Xoff(p.speed, p.mtu, p.cable) + max(p.maxMTU, mlx5MinMaxMTU) + mlx5Cell
}

// minimumText says where need comes from, max_mtu in its three states.
func (p mlx5Port) minimumText() string {
	var mtu string
	switch {
	case p.maxMTU <= 0:
		mtu = "max(max_mtu, 9216) + 128 with the port's max_mtu unknown: 9216 taken, the driver may need more"
	case p.maxMTU < mlx5MinMaxMTU:
		mtu = fmt.Sprintf("9216 (max_mtu %d, raised to 9216) + 128", p.maxMTU)
	default:
		mtu = fmt.Sprintf("max_mtu %d + 128", p.maxMTU)
	}
	return fmt.Sprintf("xoff for %d m of cable at %s, MTU %d, plus %s: calculate_xoff, update_xoff_threshold", p.cable, speedText(p.speed), p.mtu, mtu)
}

// shortfall is a lossless buffer below the driver's minimum at one of its
// checks.
type shortfall struct {
	buf  int
	size uint32
	at   mlx5Port // the state checked
	why  string   // what makes the buffer lossless or checked there, if not plain PFC
	// write names the write that fails, and rollback says it is an undo.
	write    string
	rollback bool
}

func (p mlx5Port) check(why string) *shortfall {
	need := p.need()
	for b := range 8 {
		if p.lossless[b] && int(p.sizes[b]) < need {
			return &shortfall{buf: b, size: p.sizes[b], at: p, why: why}
		}
	}
	return nil
}

// setPFC is mlx5e_dcbnl_ieee_setpfc with the port in manual buffer mode:
// p is left as the write leaves it, and the first failing check is
// returned.
func (p *mlx5Port) setPFC(pfc uint8, cable int) (sf *shortfall) {
	first := func(s *shortfall) {
		if sf == nil {
			sf = s
		}
	}
	if cable > 0 && cable < mlx5MaxCable && cable != p.cable {
		p.cable = cable
		first(p.check("mlx5 checks the lossless buffers for the new cable length first"))
	}
	if pfc != p.pfc {
		// mlx5_set_port_pfc writes PFCC with global pause off.
		p.pfc, p.pause, p.pauseKnown = pfc, false, true
		p.lossless = losslessBy(pfc, p.prio2buf)
	}
	first(p.check(""))
	return sf
}

// setBuffer is mlx5e_dcbnl_setbuffer, leaving p as the write does.
func (p *mlx5Port) setBuffer(prio2buf [8]uint8, sizes [8]uint32) (sf *shortfall) {
	if prio2buf == p.prio2buf && sizes == p.sizes {
		return nil // nothing changed: the driver does nothing
	}
	if prio2buf != p.prio2buf {
		en, why := p.pfc, "mlx5 takes a new priority-to-buffer map before new sizes and checks it against the sizes the port has (mlx5e_port_manual_buffer_config)"
		if p.pause {
			en, why = mlx5AllLossless, "global pause is on, so mlx5 makes every buffer a priority maps to lossless when the map changes (fill_pfc_en), checked against the sizes the port has before the write"
		}
		p.prio2buf, p.lossless = prio2buf, losslessBy(en, prio2buf)
		sf = p.check(why)
	}
	p.sizes = sizes
	if sf == nil {
		sf = p.check("")
	}
	return sf
}

// mlx5Write is one kernel write of the plan on an mlx5 port, as the
// planner follows it: apply moves the state to the write's values, undo
// back to the port's current ones.
type mlx5Write struct {
	obj         string // "pause", "pfc", "buffer", "mtu"
	name        string // for the plan: "the PFC write"
	apply, undo func(p *mlx5Port) *shortfall
}

// mlx5Writes lists, in plan order, the writes that the changes at (a
// port's, and its bond's MTU change) make and that the buffer checks
// depend on, going from cur to final.
func mlx5Writes(plan *policy.Plan, at []int, cur, final mlx5Port) []mlx5Write {
	var ws []mlx5Write
	for _, i := range at {
		c := plan.Changes[i]
		var w mlx5Write
		switch c.Kind {
		case policy.KindGlobalPause:
			on := final.pause
			w = mlx5Write{obj: "pause", name: "the global pause write",
				apply: func(p *mlx5Port) *shortfall { p.pause, p.pauseKnown = on, true; return nil },
				undo:  func(p *mlx5Port) *shortfall { p.pause, p.pauseKnown = cur.pause, cur.pauseKnown; return nil }}
		case policy.KindPFC, policy.KindCableLength:
			w = mlx5Write{obj: "pfc", name: "the PFC write",
				apply: func(p *mlx5Port) *shortfall { return p.setPFC(final.pfc, final.cable) },
				undo:  func(p *mlx5Port) *shortfall { return p.setPFC(cur.pfc, cur.cable) }}
		case policy.KindPrioBuffer, policy.KindBufferSize:
			w = mlx5Write{obj: "buffer", name: "the buffer write",
				apply: func(p *mlx5Port) *shortfall { return p.setBuffer(final.prio2buf, final.sizes) },
				undo:  func(p *mlx5Port) *shortfall { return p.setBuffer(cur.prio2buf, cur.sizes) }}
		case policy.KindMTU:
			w = mlx5Write{obj: "mtu", name: "the MTU change",
				apply: func(p *mlx5Port) *shortfall { p.mtu = final.mtu; return nil },
				undo:  func(p *mlx5Port) *shortfall { p.mtu = cur.mtu; return nil }}
		default:
			continue
		}
		if !slices.ContainsFunc(ws, func(x mlx5Write) bool { return x.obj == w.obj }) {
			ws = append(ws, w)
		}
	}
	return ws
}

// runWrites follows ws from cur: the apply, and the rollback from each
// point the apply can stop at. It returns the first check that fails.
func runWrites(cur mlx5Port, ws []mlx5Write) *shortfall {
	for k := 1; k <= len(ws); k++ {
		p := cur
		for _, w := range ws[:k] {
			if sf := w.apply(&p); sf != nil {
				sf.write = w.name
				return sf
			}
		}
		for i := k - 1; i >= 0; i-- {
			if sf := ws[i].undo(&p); sf != nil {
				sf.write, sf.rollback = ws[i].name, true
				return sf
			}
		}
	}
	return nil
}

// buffersBeforePFC is ws with the buffer write moved before the PFC write,
// or nil when it is not after it.
func buffersBeforePFC(ws []mlx5Write) []mlx5Write {
	pfc := slices.IndexFunc(ws, func(w mlx5Write) bool { return w.obj == "pfc" })
	buf := slices.IndexFunc(ws, func(w mlx5Write) bool { return w.obj == "buffer" })
	if pfc < 0 || buf < pfc {
		return nil
	}
	out := slices.Delete(slices.Clone(ws), buf, buf+1)
	return slices.Insert(out, pfc, ws[buf])
}

func (sf *shortfall) String() string {
	s := fmt.Sprintf("%s would leave buffer %d lossless with %d bytes; mlx5 needs at least %d (%s)",
		sf.write, sf.buf, sf.size, sf.at.need(), sf.at.minimumText())
	if sf.rollback {
		s = "rolling back, " + s
	}
	if sf.why != "" {
		s += "; " + sf.why
	}
	return s
}

// planMLX5Buffers checks and orders one mlx5 port's PFC, cable length and
// buffer changes; it refuses what the driver would refuse and notes what
// cannot be undone.
//
// The buffers belong to the physical port: on a bond (RoCE LAG) Place has
// made the bond's PFC, cable and buffer changes its slaves', and each
// slave is planned on its own, against its own buffers and link speed and
// the MTU the bond gives it (bond_change_mtu sets every slave's).
func (pl *planning) planMLX5Buffers(p *port.Port, desired []policy.Setting) {
	if len(p.Slaves()) == 0 {
		pl.planMLX5Port(p.Netdev, p.SpeedMbps, "", desired)
		return
	}
	for _, m := range p.Slaves() {
		if m.Driver == "" || strings.HasPrefix(m.Driver, "mlx5") {
			pl.planMLX5Port(m.Netdev, 0, p.Netdev, desired)
		}
	}
}

// kindPositions says where, among the positions at (in plan order), the
// last change of each kind the mlx5 buffer checks depend on is.
func kindPositions(plan *policy.Plan, at []int) map[policy.Kind]int {
	idx := map[policy.Kind]int{}
	for _, i := range at {
		switch k := plan.Changes[i].Kind; k {
		case policy.KindGlobalPause, policy.KindPFC, policy.KindCableLength, policy.KindMTU, policy.KindPrioBuffer, policy.KindBufferSize:
			idx[k] = i
		}
	}
	return idx
}

// planMLX5Port is planMLX5Buffers on one physical netdev, whose link speed
// discovery found (0: unknown, or a bond's slave); bond, when not "", is
// the bond over it, whose MTU change is the netdev's.
func (pl *planning) planMLX5Port(netdev string, speedMbps int, bond string, desired []policy.Setting) {
	plan := pl.plan
	// The changes the port's buffers depend on, in plan order: its own,
	// and its bond's MTU change.
	at := pl.at[netdev]
	if bond != "" {
		var mtu []int
		for _, i := range pl.at[bond] {
			if plan.Changes[i].Kind == policy.KindMTU {
				mtu = append(mtu, i)
			}
		}
		if len(mtu) > 0 {
			at = append(slices.Clone(at), mtu...)
			slices.Sort(at)
		}
	}
	idx := kindPositions(plan, at)
	_, pfcChange := idx[policy.KindPFC]
	_, cableChange := idx[policy.KindCableLength]
	_, p2bChange := idx[policy.KindPrioBuffer]
	_, sizeChange := idx[policy.KindBufferSize]
	if !pfcChange && !cableChange && !p2bChange && !sizeChange {
		return
	}
	managesBuffers := false
	for _, s := range desired {
		managesBuffers = managesBuffers || s.Kind == policy.KindPrioBuffer || s.Kind == policy.KindBufferSize
	}
	if cableChange && !managesBuffers {
		i := idx[policy.KindCableLength]
		plan.Changes[i].Note = joinNote(plan.Changes[i].Note, "mlx5 uses the cable length only in manual buffer mode: without [buffers] it changes nothing unless an earlier buffer write set that mode")
	}
	// A port whose buffers the profile manages is in manual buffer mode,
	// where a PFC or cable change is checked against the buffers too.
	if !managesBuffers {
		return
	}
	cur, ok := pl.mlx5State(netdev, speedMbps)
	if !ok {
		return
	}
	final := cur
	for k, i := range idx {
		v := plan.Changes[i].Value
		switch k {
		case policy.KindGlobalPause:
			if pa, err := parsePause(v); err == nil {
				final.pause, final.pauseKnown = pa.Rx || pa.Tx, true
			}
		case policy.KindPFC:
			final.pfc, _ = policy.ParsePrioBitmap(v)
		case policy.KindCableLength:
			final.cable, _ = strconv.Atoi(v)
		case policy.KindMTU:
			final.mtu, _ = strconv.Atoi(v)
		case policy.KindPrioBuffer:
			if ints, err := policy.ParseInts8(v); err == nil {
				for j, x := range ints {
					final.prio2buf[j] = uint8(x)
				}
			}
		case policy.KindBufferSize:
			if sizes, err := policy.ParseSizes8(v); err == nil {
				for j, x := range sizes {
					final.sizes[j] = uint32(x)
				}
			}
		}
	}
	refuse := func(why string, ks ...policy.Kind) {
		for _, k := range ks {
			if i, ok := idx[k]; ok {
				c := plan.Changes[i]
				plan.Refused = append(plan.Refused, policy.PlanError{Key: c.Key, Want: c.Value, Port: c.Port, Error: why})
				return
			}
		}
	}
	if sizeChange {
		for b, sz := range final.sizes {
			if sz%mlx5Cell != 0 {
				refuse(fmt.Sprintf("buffer %d: %d bytes is not a whole number of mlx5's %d-byte cells (port_set_buffer programs size/%d): use %d or %d",
					b, sz, mlx5Cell, mlx5Cell, sz/mlx5Cell*mlx5Cell, (sz/mlx5Cell+1)*mlx5Cell), policy.KindBufferSize)
				return
			}
		}
	}
	ws := mlx5Writes(plan, at, cur, final)
	// The state the plan leaves, whatever the order: refused with the
	// sizes it needs, before any question of order.
	end := cur
	for _, w := range ws {
		w.apply(&end)
	}
	if sf := end.check(""); sf != nil {
		why := fmt.Sprintf("buffer %d would be lossless with %d bytes; mlx5 needs at least %d (%s)", sf.buf, sf.size, end.need(), end.minimumText())
		switch {
		case losslessBy(end.pfc, end.prio2buf)[sf.buf]:
		case p2bChange:
			why += "; global pause is on, and mlx5 makes every buffer a priority maps to lossless when the map changes (fill_pfc_en): turn global pause off (qos.global_pause = false, written before the buffers) or size every buffer in use for it"
		default:
			why += "; global pause is on, under which a map write makes every buffer a priority maps to lossless (fill_pfc_en), and which buffers are lossless now cannot be read (PBMC's lossy bits), so it is taken as lossless"
		}
		refuse(why, policy.KindBufferSize, policy.KindPrioBuffer, policy.KindPFC, policy.KindCableLength)
		return
	}
	if sf := runWrites(cur, ws); sf != nil {
		alt := buffersBeforePFC(ws)
		altSF := (*shortfall)(nil)
		if alt != nil {
			altSF = runWrites(cur, alt)
		}
		switch {
		case alt != nil && altSF == nil:
			moveBuffersFirst(plan, pl.at[netdev])
			// The port's changes now sit elsewhere among its positions:
			// the notes below go on the changes, not on the places
			// they left.
			idx = kindPositions(plan, at)
		case alt != nil:
			refuse("no order of the PFC and buffer writes passes mlx5's buffer checks: PFC first, "+sf.String()+"; buffers first, "+altSF.String()+"; change PFC and buffers in two applies",
				policy.KindPFC, policy.KindCableLength, policy.KindPrioBuffer, policy.KindBufferSize)
			return
		default:
			refuse(sf.String()+advice(sf), policy.KindPrioBuffer, policy.KindBufferSize, policy.KindPFC, policy.KindCableLength)
			return
		}
	}
	for _, k := range []policy.Kind{policy.KindPrioBuffer, policy.KindBufferSize, policy.KindPFC, policy.KindCableLength} {
		i, ok := idx[k]
		if !ok {
			continue
		}
		if k == policy.KindPrioBuffer || k == policy.KindBufferSize {
			plan.Changes[i].Note = joinNote(plan.Changes[i].Note, irreversibleBuffer)
		}
		if cur.maxMTU <= 0 {
			plan.Changes[i].Note = joinNote(plan.Changes[i].Note, "mlx5 needs xoff + max(max_mtu, 9216) + 128 bytes in a lossless buffer and this port's max_mtu is unknown (not captured): checked with 9216, the driver may need more")
		}
		if !cur.pauseKnown && p2bChange && !slices.ContainsFunc(ws, func(w mlx5Write) bool { return w.obj == "pause" }) {
			plan.Changes[i].Note = joinNote(plan.Changes[i].Note, "global pause could not be read: if it is on when the map is written, mlx5 makes every buffer a priority maps to lossless (fill_pfc_en), which this plan has not checked")
		}
		break
	}
}

// advice says what the operator can do about a shortfall that no order
// of this plan avoids.
func advice(sf *shortfall) string {
	switch {
	case sf.at.pause && strings.Contains(sf.why, "fill_pfc_en"):
		return ": turn global pause off before the map changes (qos.global_pause = false: rocectl writes it before the buffers)"
	case strings.Contains(sf.why, "before new sizes"):
		return fmt.Sprintf(": give buffer %d its size in an apply before the one that maps priorities to it", sf.buf)
	}
	return ""
}

// irreversibleBuffer is the note on a buffer change: mlx5e_dcbnl_setbuffer
// sets manual_buffer, which only driver init clears.
const irreversibleBuffer = "irreversible in part: switches mlx5 to manual buffer mode for good (manual_buffer is cleared only when the driver loads); rollback restores sizes and mapping, not automatic sizing"

// moveBuffersFirst puts the port's buffer changes before its PFC write
// (PFC or cable length change), so the buffer step is written (and undone)
// on the other side of it. at is where the port's changes are, in plan
// order.
func moveBuffersFirst(plan *policy.Plan, at []int) {
	// Only this port's changes move, among the places they hold: the
	// plan is every port's, and copying it whole for each port made a
	// 64-port plan cost 100 MB of copies. So the plan's index of
	// positions stays right.
	var buf []int                   // positions of its buffer changes
	rest := make([]int, 0, len(at)) // of the others
	pfcAt := -1
	for _, i := range at {
		c := &plan.Changes[i]
		if c.Kind == policy.KindPrioBuffer || c.Kind == policy.KindBufferSize {
			buf = append(buf, i)
			continue
		}
		if (c.Kind == policy.KindPFC || c.Kind == policy.KindCableLength) && pfcAt < 0 {
			pfcAt = len(rest)
		}
		rest = append(rest, i)
	}
	if pfcAt < 0 {
		return
	}
	for _, i := range buf {
		plan.Changes[i].Note = joinNote(plan.Changes[i].Note, "written before PFC: mlx5 checks the buffers against the PFC setting and buffers of the moment, and only this order passes its checks, applied and rolled back")
	}
	// from[k] is where the change that goes to at[k] is now. Only the
	// stretch from the first change that moves to the last is copied: a
	// few changes, not the port's forty.
	from := slices.Concat(rest[:pfcAt], buf, rest[pfcAt:])
	lo, hi := 0, len(at)
	for lo < hi && from[lo] == at[lo] {
		lo++
	}
	for hi > lo && from[hi-1] == at[hi-1] {
		hi--
	}
	moved := make([]policy.Change, hi-lo)
	for k := range moved {
		moved[k] = plan.Changes[from[lo+k]]
	}
	for k := range moved {
		plan.Changes[at[lo+k]] = moved[k]
	}
}

func speedText(mbps int) string {
	if mbps <= 0 {
		return "an unknown speed (40 Gb/s assumed, the driver's floor)"
	}
	return fmt.Sprintf("%d Gb/s", mbps/1000)
}

func joinNote(a, b string) string {
	if a == "" {
		return b
	}
	return a + "; " + b
}

// mayInlineL2 says whether an mlx5 NIC of hca_type may have the minimum
// TX inline mode L2 (wqe_inline_mode, mlx5_query_min_inline): the
// ConnectX-4 family (MT4115..MT4118, VFs included); later NICs need no
// inline. An unknown type may.
func mayInlineL2(hcaType string) bool {
	switch hcaType {
	case "", "MT4115", "MT4116", "MT4117", "MT4118":
		return true
	}
	return false
}

// Disruptions says, per port, what applying the plan will disturb: link
// toggles, channel resets, changes that cannot be undone.
func Disruptions(plan *policy.Plan) map[string][]string {
	out := map[string][]string{}
	type said struct{ netdev, what string }
	seen := map[said]bool{}
	add := func(nd, what string) {
		if !seen[said{nd, what}] {
			seen[said{nd, what}] = true
			out[nd] = append(out[nd], what)
		}
	}
	for i := range plan.Changes {
		c := &plan.Changes[i]
		if c.Port == nil {
			continue
		}
		nd, mlx5 := c.Port.Netdev, strings.HasPrefix(c.Port.Driver, "mlx5")
		switch {
		case c.Kind == policy.KindPFC && mlx5:
			add(nd, "link toggle: mlx5 takes the link down and up when PFC changes (mlx5e_dcbnl_ieee_setpfc)")
		case c.Kind == policy.KindMTU && len(c.Port.Slaves()) > 0:
			// A bond has no queues: it sets the MTU of every slave
			// (bond_change_mtu), and their queues are re-created.
			for _, m := range c.Port.Slaves() {
				add(m.Netdev, "channel reset: an MTU change re-creates the NIC's queues (set through "+nd+")")
			}
		case c.Kind == policy.KindMTU:
			add(nd, "channel reset: an MTU change re-creates the NIC's queues")
		case (c.Kind == policy.KindPrioBuffer || c.Kind == policy.KindBufferSize) && mlx5:
			add(nd, "irreversible: manual buffer mode for good")
		case c.Kind == policy.KindTrust && mlx5 && mayInlineL2(c.Port.HCAType):
			// mlx5e_set_trust_state switches the channels when DSCP
			// trust changes the minimum TX inline mode (L2 → IP),
			// which only NICs that inline L2 headers have.
			add(nd, "channel reset on NICs that inline L2 headers (ConnectX-4, ConnectX-4 Lx): mlx5e_set_trust_state re-creates the queues when trust changes")
		case c.Kind == policy.KindETSPrioTC && c.Port.Driver == "bnxt_en":
			add(nd, "channel reset when the number of TCs changes: bnxt_dcbnl_ieee_setets closes and reopens the NIC (bnxt_setup_mq_tc)")
		case strings.Contains(c.Note, "devlink dev reload"):
			add(nd, "needs a devlink reload to take effect")
		case strings.Contains(c.Note, mlx5WillingUndoNote):
			add(nd, "irreversible: a rollback leaves the mlx5 firmware DCBX willing")
		case strings.Contains(c.Note, bnxtHiddenNote):
			add(nd, "irreversible: bnxt's firmware ETS and PFC are not readable in host DCBX mode; a rollback writes bnxt's placeholder, not them")
		}
		if (c.Kind == policy.KindPFC || c.Kind == policy.KindLosslessRemap) && c.Port.Driver == "bnxt_en" {
			add(nd, "channel reset when a PFC priority's TC is not on a lossless queue yet: bnxt_hwrm_queue_pfc_cfg closes and reopens the NIC to remap the queues (bnxt_queue_remap; older kernels stop TX while they reprogram the queues)")
		}
	}
	return out
}
