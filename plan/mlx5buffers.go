package plan

import (
	"fmt"
	"slices"

	"github.com/rocectl/rocectl/driver/known"
	"github.com/rocectl/rocectl/driver/mlx5"
	"github.com/rocectl/rocectl/policy"
	"github.com/rocectl/rocectl/port"
)

// The mlx5 buffer model (what the driver checks, and when) is
// driver/mlx5's; this file follows a plan's writes through it on each mlx5
// port whose buffers the profile manages.

// mlx5State is netdev's buffer state, read once per Plan; ok is false
// when the driver reports no PFC or buffers, or they cannot be read (the
// plan reports the settings' own errors). speedMbps is the netdev's link
// speed as discovery found it, 0 when unknown or not discovered (a bond's
// slave): then it is read here.
func (pl *planning) mlx5State(netdev string, speedMbps int) (mlx5.Port, bool) {
	if r, ok := pl.mlx5[netdev]; ok {
		return r.p, r.ok
	}
	p, ok, why := readMLX5State(pl.h, netdev, speedMbps)
	pl.mlx5[netdev] = mlx5Read{p, ok, why}
	if why != "" {
		// Never a silent skip: the checks that could not run are named.
		pl.plan.Warnings = append(pl.plan.Warnings, policy.Warning{Key: netdev + ".buffers", Port: pl.portOf(netdev),
			Message: "mlx5's buffer checks cannot run on " + netdev + ": " + why + "; its PFC, cable length, buffer and MTU changes are not checked against the driver's minimum (calculate_xoff), nor its buffer-threshold recomputes planned: apply writes them only with --skip-unreadable"})
	}
	return p, ok
}

// uncheckable marks c as a change whose mlx5 buffer checks could not run
// on netdev, when its state could not be read (apply refuses it unless
// --skip-unreadable); a driver without buffers has nothing to check.
func (pl *planning) uncheckable(netdev string, c policy.Change) {
	if why := pl.mlx5[netdev].why; why != "" {
		pl.plan.Unchecked = append(pl.plan.Unchecked, policy.PlanError{Key: c.Key, Want: c.Value, Port: c.Port, Error: why})
	}
}

// portOf is the port of netdev's changes in the plan, nil when it has
// none.
func (pl *planning) portOf(netdev string) *port.Port {
	for _, i := range pl.at[netdev] {
		if p := pl.plan.Changes[i].Port; p != nil {
			return p
		}
	}
	return nil
}

// readMLX5State reads what mlx5State returns; why says what kept it from
// being read, "" when it was or when the driver reports no PFC or buffer
// object (a driver without buffers: nothing to check).
func readMLX5State(h Host, netdev string, speedMbps int) (p mlx5.Port, ok bool, why string) {
	st, missing, err := h.DCB(netdev)
	if err != nil {
		return p, false, "its DCB state cannot be read (" + err.Error() + ")"
	}
	for _, part := range missing {
		if part == "pfc" || part == "buffer" {
			return p, false, "its " + part + " state was not captured (dcb." + part + ")"
		}
	}
	if st.PFC == nil || st.Buffer == nil {
		return p, false, ""
	}
	li, err := h.Link(netdev)
	if err != nil {
		return p, false, "its link cannot be read (" + err.Error() + ")"
	}
	p = mlx5.Port{PFC: st.PFC.Enable, Prio2Buf: st.Buffer.PrioBuffer, Sizes: st.Buffer.Size,
		Cable: int(st.PFC.Delay), MTU: li.MTU, MaxMTU: li.MaxMTU, Speed: speedMbps}
	if p.Speed <= 0 {
		p.Speed = h.Speed(netdev)
	}
	if p.Cable == 0 {
		p.Cable = mlx5.DefaultCable
	}
	if on, err := h.GlobalPause(netdev); err == nil {
		p.Pause, p.PauseKnown = on, true
	}
	p.Cell, p.CellHow = mlx5.InferCell(st.Buffer.Size, st.Buffer.TotalSize)
	p.Total = st.Buffer.TotalSize
	p.AssumeLossless() // the lossy bits cannot be read
	return p, true, ""
}

// mlx5Writes lists, in plan order, the writes that the changes at (a
// port's, and its bond's MTU change) make and that the buffer checks
// depend on, going from cur to final.
//
// mtuAfterFirst is the bond's placement of its MTU change for every
// slave (planMLX5Buffers): after each slave's first buffer write.
func mlx5Writes(plan *policy.Plan, at []int, cur, final mlx5.Port, mtuAfterFirst bool) []mlx5.Write {
	var ws []mlx5.Write
	for _, i := range at {
		var w mlx5.Write
		switch plan.Changes[i].Kind {
		case policy.KindGlobalPause:
			w = mlx5.PauseWrite(cur, final)
		case policy.KindPFC, policy.KindCableLength:
			w = mlx5.PFCWrite(cur, final)
		case policy.KindPrioBuffer, policy.KindBufferSize:
			w = mlx5.BufferWrite(cur, final)
		case policy.KindMTU:
			w = mlx5.MTUWrite(cur, final)
			// A bond's MTU is every slave's: no slave's path moves it.
			w.Pinned = len(plan.Changes[i].Port.Slaves()) > 0
			w.AfterFirst = w.Pinned && mtuAfterFirst
		default:
			continue
		}
		if !slices.ContainsFunc(ws, func(x mlx5.Write) bool { return x.Obj == w.Obj }) {
			ws = append(ws, w)
		}
	}
	return ws
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
		if !managesBuffers(desired) {
			pl.mtuAfterPFCIfManual(p.Netdev, []string{p.Netdev}, "")
		}
		pl.planMLX5Port(p.Netdev, p.SpeedMbps, "", desired)
		return
	}
	var slaves []string
	for _, m := range p.Slaves() {
		if m.Driver == "" || known.For(m.Driver).Caps().BufferChecks {
			slaves = append(slaves, m.Netdev)
		}
	}
	if !managesBuffers(desired) {
		pl.mtuAfterPFCIfManual(p.Netdev, slaves, p.Netdev)
	}
	// The bond's MTU change is every slave's at once: it cannot move on
	// one slave's path alone. When some slave has no path with it first
	// and every slave has one with it after its first buffer write (grown
	// or moved for the new MTU at the old one), all take that, and the
	// one change goes after all those writes (placeBondMTU).
	after := false
	if pl.bondMTUChange(p.Netdev) >= 0 {
		first, late, any := true, true, false
		for _, nd := range slaves {
			ok, relevant := pl.slavePathExists(nd, p.Netdev, desired, false)
			if !relevant {
				continue
			}
			any = true
			first = first && ok
			ok, _ = pl.slavePathExists(nd, p.Netdev, desired, true)
			late = late && ok
		}
		after = any && !first && late
	}
	pl.bondMTUAfter[p.Netdev] = after
	for _, nd := range slaves {
		pl.planMLX5Port(nd, 0, p.Netdev, desired)
	}
	if after {
		pl.placeBondMTU(p.Netdev, slaves)
	}
}

// bondMTUChange is where bond's MTU change is, -1 without one.
func (pl *planning) bondMTUChange(bond string) int {
	return pl.first(bond, func(c policy.Change) bool { return c.Kind == policy.KindMTU })
}

// slavePathExists says whether a slave's PFC and buffer writes have a
// path with its bond's MTU change first (mtuAfterFirst false) or after
// its first buffer write, planning nothing; relevant is false when the
// slave has no buffer write to plan.
func (pl *planning) slavePathExists(netdev, bond string, desired []policy.Setting, mtuAfterFirst bool) (ok, relevant bool) {
	at := pl.bufferDependencies(netdev, bond)
	idx := kindPositions(pl.plan, at)
	_, p2bChange := idx[policy.KindPrioBuffer]
	_, sizeChange := idx[policy.KindBufferSize]
	if !p2bChange && !sizeChange || !managesBuffers(desired) {
		return false, false
	}
	cur, ok := pl.mlx5State(netdev, 0)
	if !ok {
		return false, false
	}
	final, _, err := pl.finalState(cur, idx)
	if err != nil {
		return false, false
	}
	_, refused := mlx5.PlanPath(cur, final, mlx5Writes(pl.plan, at, cur, final, mtuAfterFirst), p2bChange)
	return refused == nil, true
}

// placeBondMTU moves bond's MTU change after every slave's first buffer
// write and before its PFC write, where the slaves' paths put it
// (mlx5.Write.AfterFirst); the recomputes leave it there
// (mtuAfterBuffers). A slave with no buffer write of its own has its path
// with the MTU before its PFC write (mlx5.Path): where the plan's order
// has that PFC or cable length change earlier (the plan goes kind by
// kind, port after port), it moves to just after the MTU; so do a slave's
// PFC write and the buffer writes after it when they come before another
// slave's first buffer write.
func (pl *planning) placeBondMTU(bond string, slaves []string) {
	mtuAt := pl.bondMTUChange(bond)
	pos := -1
	for _, nd := range slaves {
		// The first buffer write itself: a cable length change is part
		// of the PFC write (mlx5e_dcbnl_ieee_setpfc takes it as the
		// delay), which the MTU must precede.
		pos = max(pos, pl.first(nd, func(c policy.Change) bool { return isBufferWrite(c.Kind) }))
	}
	if mtuAt < 0 || pos < mtuAt {
		return
	}
	pfcWrite := func(c policy.Change) bool { return c.Kind == policy.KindPFC || c.Kind == policy.KindCableLength }
	// A slave whose PFC write the plan's kind-by-kind order puts before
	// pos (another slave's first buffer write) has it, and its buffer
	// writes after it, moved to just after the MTU, in their order: its
	// path (its first buffer write, the MTU, its PFC write, any later
	// buffer write) holds. A slave with no buffer write meets the MTU
	// before its PFC write, as its path has it (mlx5.Path).
	moved := map[int]bool{}
	for _, nd := range slaves {
		i := pl.first(nd, pfcWrite)
		if i < 0 || i > pos {
			continue
		}
		if b := pl.first(nd, func(c policy.Change) bool { return isBufferWrite(c.Kind) }); b > i {
			pl.refuse(pl.plan.Changes[mtuAt], fmt.Sprintf("cannot be reached: the slaves' paths need %s's MTU written after each one's first buffer write and before its PFC write, and %s's PFC write comes before its first buffer write", bond, nd))
			return
		}
		for _, k := range pl.at[nd] {
			if c := pl.plan.Changes[k]; k >= i && k < pos && (pfcWrite(c) || isBufferWrite(c.Kind)) {
				moved[k] = true
			}
		}
	}
	mtu := pl.plan.Changes[mtuAt]
	mtu.Note = joinNote(mtu.Note, "written after each slave's first buffer step: the slaves' buffers grow or move for the new MTU at the old one first (a bond's MTU is every slave's: bond_change_mtu)")
	// The changes up to pos in their order less the MTU and the moved
	// ones, then the MTU, the moved ones, and the rest.
	head := make([]policy.Change, 0, pos+1)
	var tail []policy.Change
	for k := mtuAt; k <= pos; k++ {
		switch {
		case k == mtuAt:
		case moved[k]:
			tail = append(tail, pl.plan.Changes[k])
		default:
			head = append(head, pl.plan.Changes[k])
		}
	}
	head = append(append(head, mtu), tail...)
	copy(pl.plan.Changes[mtuAt:pos+1], head)
	pl.at = indexChanges(pl.plan.Changes)
	for _, nd := range slaves {
		pl.mtuAfterBuffers[nd] = true
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
	at := pl.bufferDependencies(netdev, bond)
	idx := kindPositions(plan, at)
	_, pfcChange := idx[policy.KindPFC]
	_, cableChange := idx[policy.KindCableLength]
	_, p2bChange := idx[policy.KindPrioBuffer]
	_, sizeChange := idx[policy.KindBufferSize]
	if !pfcChange && !cableChange && !p2bChange && !sizeChange {
		return
	}
	manual := managesBuffers(desired)
	if cableChange && !manual {
		i := idx[policy.KindCableLength]
		plan.Changes[i].Note = joinNote(plan.Changes[i].Note, mlx5.CableOnlyInManualNote)
	}
	// A port whose buffers the profile manages is in manual buffer mode,
	// where a PFC or cable change is checked against the buffers too.
	if !manual {
		pl.noteIfManual(netdev, speedMbps, at, idx)
		return
	}
	cur, ok := pl.mlx5State(netdev, speedMbps)
	if !ok {
		for _, i := range idx {
			if plan.Changes[i].Port != nil && plan.Changes[i].Port.Netdev == netdev {
				pl.uncheckable(netdev, plan.Changes[i])
			}
		}
		return
	}
	final, bad, err := pl.finalState(cur, idx)
	if err != nil {
		pl.undecodable(plan.Changes[bad], err)
		return
	}
	if sizeChange {
		// What the driver will program: whole cells.
		if note := mlx5.CellNote(cur, &final); note != "" {
			c := &plan.Changes[idx[policy.KindBufferSize]]
			c.Note = joinNote(c.Note, note)
		}
	}
	ws := mlx5Writes(plan, at, cur, final, bond != "" && pl.bondMTUAfter[bond])
	path, refused := mlx5.PlanPath(cur, final, ws, p2bChange)
	if refused != nil {
		pl.refuseFirstOf(idx, refused)
		return
	}
	switch {
	case viaIntermediates(path):
		pl.placePath(netdev, cur, path)
		at = pl.bufferDependencies(netdev, bond)
		idx = kindPositions(plan, at)
	case bufferBeforePFC(path):
		moveBuffersFirst(plan, pl.at[netdev])
		// The port's changes now sit elsewhere among its positions: the
		// notes below go on the changes, not on the places they left.
		idx = kindPositions(plan, at)
	}
	if pl.splitPFC(netdev, path) {
		idx = kindPositions(plan, at)
	}
	if mlx5.MTULast(path) {
		pl.placeMTULast(netdev)
		idx = kindPositions(plan, at)
	}
	pauseWritten := slices.ContainsFunc(ws, func(w mlx5.Write) bool { return w.Obj == "pause" })
	pl.noteBufferChange(idx, cur, p2bChange && !pauseWritten)
}

// finalState is cur with the changes at idx (kindPositions) written;
// bad is the change whose value did not decode, with its error.
func (pl *planning) finalState(cur mlx5.Port, idx map[policy.Kind]int) (final mlx5.Port, bad int, err error) {
	final = cur
	for _, i := range idx {
		if err := setMLX5(&final, pl.plan.Changes[i]); err != nil {
			return final, i, err
		}
	}
	return final, -1, nil
}

// noteIfManual says, on a PFC or cable change of a port whose buffers the
// profile leaves alone, what mlx5 would refuse if an earlier buffer write
// (someone else's) left the port in manual buffer mode, which rocectl
// cannot read: there the PFC write is checked against today's buffers
// (mlx5e_dcbnl_ieee_setpfc), and the apply would be rolled back. In
// automatic mode, the firmware sizes the buffers and nothing is checked.
func (pl *planning) noteIfManual(netdev string, speedMbps int, at []int, idx map[policy.Kind]int) {
	i, ok := idx[policy.KindPFC]
	if !ok {
		if i, ok = idx[policy.KindCableLength]; !ok {
			return
		}
	}
	cur, ok := pl.mlx5State(netdev, speedMbps)
	if !ok {
		return
	}
	final, _, err := pl.finalState(cur, idx)
	if err != nil {
		return // the change's own error is the planner's to report
	}
	if sf := mlx5.RunWrites(cur, mlx5Writes(pl.plan, at, cur, final, false)); sf != nil {
		c := &pl.plan.Changes[i]
		c.Note = joinNote(c.Note, mlx5.ManualModeNote+": "+sf.String())
	}
}

// mtuAfterPFCIfManual orders the MTU change of owner (a port, or the bond
// over ports) after the ports' PFC and cable changes when the profile
// leaves their buffers alone and only that order would pass mlx5's
// checks, applied and rolled back, should an earlier buffer write (not
// the profile's) have left them in manual buffer mode, which cannot be
// read. In automatic buffer mode the driver checks neither order, so the
// move costs nothing there. The case: PFC [3,4] off and MTU 1500 → 9000
// on a LAG whose slave had a 32 KiB lossless buffer. The apply passed
// with the MTU first, but its rollback put PFC back at MTU 9000, which
// mlx5 refuses (update_xoff_threshold): ROLLBACK FAILED. With the MTU
// last, the rollback writes it back first. noteIfManual still warns of
// what neither order avoids.
func (pl *planning) mtuAfterPFCIfManual(owner string, ports []string, bond string) {
	mtuAt := pl.first(owner, func(c policy.Change) bool { return c.Kind == policy.KindMTU })
	if mtuAt < 0 {
		return
	}
	last := -1 // the ports' last PFC or cable change
	for _, nd := range ports {
		for _, i := range pl.at[nd] {
			if k := pl.plan.Changes[i].Kind; k == policy.KindPFC || k == policy.KindCableLength {
				last = max(last, i)
			}
		}
	}
	if last < mtuAt {
		return
	}
	// passes says whether every port's writes pass in the order at
	// gives, with the MTU change at mtuAt moved to after last when move.
	passes := func(move bool) bool {
		for _, nd := range ports {
			at := pl.bufferDependencies(nd, bond)
			if move { // the positions in the order they would be written
				at = slices.DeleteFunc(slices.Clone(at), func(i int) bool { return i == mtuAt })
				k, _ := slices.BinarySearch(at, last+1)
				at = slices.Insert(at, k, mtuAt)
			}
			cur, ok := pl.mlx5State(nd, 0)
			if !ok {
				return false
			}
			idx := kindPositions(pl.plan, at)
			final, _, err := pl.finalState(cur, idx)
			if err != nil {
				return false
			}
			if mlx5.RunWrites(cur, mlx5Writes(pl.plan, at, cur, final, false)) != nil {
				return false
			}
		}
		return true
	}
	if passes(false) || !passes(true) {
		return
	}
	mtu := &pl.plan.Changes[mtuAt]
	mtu.Note = joinNote(mtu.Note, "written after the PFC changes: should an earlier buffer write have left the port in manual buffer mode (which cannot be read), mlx5 checks the lossless buffers against the MTU, and only this order passes both the apply and its rollback")
	pl.move(mtuAt, last)
}

// bufferDependencies are the positions of the changes netdev's buffers
// depend on, in plan order: its own, and the MTU change of its bond, if
// it is a slave of one (bond_change_mtu sets every slave's).
func (pl *planning) bufferDependencies(netdev, bond string) []int {
	at := pl.at[netdev]
	if bond == "" {
		return at
	}
	var mtu []int
	for _, i := range pl.at[bond] {
		if pl.plan.Changes[i].Kind == policy.KindMTU {
			mtu = append(mtu, i)
		}
	}
	if len(mtu) == 0 {
		return at
	}
	at = append(slices.Clone(at), mtu...)
	slices.Sort(at)
	return at
}

// refuseFirstOf refuses r on the first change of r.On's kinds the port
// has (idx: its changes' positions by kind).
func (pl *planning) refuseFirstOf(idx map[policy.Kind]int, r *mlx5.Refusal) {
	for _, k := range r.On {
		if i, ok := idx[k]; ok {
			pl.refuse(pl.plan.Changes[i], r.Why)
			return
		}
	}
}

// noteBufferChange puts what the operator must know of a port's buffer
// plan on its first buffer (else PFC, else cable) change: that manual
// buffer mode is for good, what was assumed of the port's max_mtu, and,
// with pauseUnread, that global pause could not be read for a map change.
func (pl *planning) noteBufferChange(idx map[policy.Kind]int, cur mlx5.Port, pauseUnread bool) {
	for _, k := range []policy.Kind{policy.KindPrioBuffer, policy.KindBufferSize, policy.KindPFC, policy.KindCableLength} {
		i, ok := idx[k]
		if !ok {
			continue
		}
		c := &pl.plan.Changes[i]
		if k == policy.KindPrioBuffer || k == policy.KindBufferSize {
			c.Note = joinNote(c.Note, mlx5.IrreversibleBufferNote)
		}
		if cur.MaxMTU <= 0 {
			c.Note = joinNote(c.Note, mlx5.MaxMTUUnknownNote)
		}
		if !cur.PauseKnown && pauseUnread {
			c.Note = joinNote(c.Note, mlx5.PauseUnreadNote)
		}
		return
	}
}

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
		plan.Changes[i].Note = joinNote(plan.Changes[i].Note, mlx5.BuffersFirstNote)
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

// splitArg is the Arg of the second part of a PFC write split in two
// (mlx5.PFCWritesSplit): host.Steps makes it a step of its own.
const splitArg = "split"

// splitPFC puts netdev's PFC and cable length changes in the order path
// writes them when it splits the PFC write in two, the second with
// splitArg, and says why on it; false when path does not split it.
func (pl *planning) splitPFC(netdev string, path []mlx5.Step) bool {
	first := slices.IndexFunc(path, func(st mlx5.Step) bool { return st.Obj == "pfc" && st.Part != "" })
	if first < 0 {
		return false
	}
	plan := pl.plan
	iP := pl.first(netdev, func(c policy.Change) bool { return c.Kind == policy.KindPFC })
	iC := pl.first(netdev, func(c policy.Change) bool { return c.Kind == policy.KindCableLength })
	if iP < 0 || iC < 0 {
		return false // Path splits only a write that changes both
	}
	cableFirst := path[first].Part == "cable"
	if cableFirst != (iC < iP) {
		// The two trade places: the index of netdev's positions holds.
		plan.Changes[iP], plan.Changes[iC] = plan.Changes[iC], plan.Changes[iP]
		iP, iC = iC, iP
	}
	why := "the buffers lossless now are too small for the new cable length, those lossless under the new priorities are not"
	if cableFirst {
		why = "the buffers lossless under the new priorities are too small for today's cable length, those lossless now are not"
	}
	second := &plan.Changes[max(iP, iC)]
	second.Arg = splitArg
	second.Note = joinNote(second.Note, "written on its own, after the "+map[bool]string{true: "cable length", false: "PFC priorities"}[cableFirst]+
		": mlx5 checks the lossless buffers against a new cable length before it takes new priorities (mlx5e_port_manual_buffer_config), and "+why)
	return true
}

// placeMTULast moves netdev's own MTU change after its last PFC, cable
// length and buffer change, where its path writes it (mlx5.MTULast), and
// says why; mtuFirst and the recomputes leave it there.
func (pl *planning) placeMTULast(netdev string) {
	plan := pl.plan
	mtuAt := pl.first(netdev, func(c policy.Change) bool { return c.Kind == policy.KindMTU })
	if mtuAt < 0 {
		return
	}
	last := -1
	for _, i := range pl.at[netdev] {
		if k := plan.Changes[i].Kind; k == policy.KindPFC || isBufferKind(k) {
			last = max(last, i)
		}
	}
	pl.mtuLast[netdev], pl.mtuAfterBuffers[netdev] = true, true
	mtu := &plan.Changes[mtuAt]
	mtu.Note = joinNote(mtu.Note, "written after the PFC and buffer changes: the buffers lossless now hold enough at today's MTU only, and no order with the MTU first passes mlx5's buffer checks applied and rolled back; this one does, a rollback restoring the MTU first")
	if last > mtuAt {
		pl.move(mtuAt, last)
	}
}

// viaIntermediates says whether path writes intermediate buffer states.
func viaIntermediates(path []mlx5.Step) bool {
	return slices.ContainsFunc(path, func(st mlx5.Step) bool { return st.Via != "" })
}

// bufferBeforePFC says whether path writes the buffers before PFC.
func bufferBeforePFC(path []mlx5.Step) bool {
	pfc := slices.IndexFunc(path, func(st mlx5.Step) bool { return st.Obj == "pfc" })
	buf := slices.IndexFunc(path, func(st mlx5.Step) bool { return st.Obj == "buffer" })
	return pfc >= 0 && buf >= 0 && buf < pfc
}

// placePath puts a path through intermediate buffer states in the plan:
// each intermediate write becomes changes of its own (keys
// "<netdev>.buffers.stepN.…", Arg "stepN", so that it is a step of its
// own, journalled and undone on its own), the profile's buffer changes
// start from the last intermediate state, and the port's PFC and buffer
// changes are put in the path's order among the places they hold.
func (pl *planning) placePath(netdev string, cur mlx5.Port, path []mlx5.Step) {
	plan := pl.plan
	var pfcKeys []string
	partKey := map[string]string{} // a split PFC write's parts' changes (mlx5.Step.Part)
	var mtuKey string
	finals := map[policy.Kind]int{} // the profile's buffer changes, by kind
	for _, i := range pl.at[netdev] {
		switch c := plan.Changes[i]; c.Kind {
		case policy.KindMTU:
			mtuKey = c.Key
		case policy.KindPFC:
			pfcKeys, partKey["priorities"] = append(pfcKeys, c.Key), c.Key
		case policy.KindCableLength:
			pfcKeys, partKey["cable"] = append(pfcKeys, c.Key), c.Key
		case policy.KindPrioBuffer, policy.KindBufferSize:
			finals[c.Kind] = i
		}
	}
	written := map[policy.Kind]bool{} // a profile's change already placed
	n := 0
	for _, st := range path {
		if st.Obj == "buffer" {
			n++
		}
	}
	port := pl.portOf(netdev)
	prev := mlx5.BufferState{Prio2Buf: cur.Prio2Buf, Sizes: cur.Sizes}
	var added []policy.Change
	var order []string
	step := 0
	for _, st := range path {
		switch st.Obj {
		case "mtu":
			// Last: placeMTULast moves it on its own. Among the places
			// of the reordered keys, the MTU's own early one would go
			// to the PFC write, ahead of changes (global pause) that
			// must precede it.
			if mtuKey != "" && step > 0 && !mlx5.MTULast(path) {
				// Placed after the first buffer step: recomputes
				// leaves it there (mtuFirst).
				order = append(order, mtuKey)
				pl.mtuAfterBuffers[netdev] = true
			}
		case "pfc":
			if st.Part != "" {
				order = append(order, partKey[st.Part]) // splitPFC makes it a step of its own
				break
			}
			order = append(order, pfcKeys...)
		case "buffer":
			step++
			if st.Via == "" {
				for _, k := range []policy.Kind{policy.KindPrioBuffer, policy.KindBufferSize} {
					if i, ok := finals[k]; ok && !written[k] {
						c := &plan.Changes[i]
						c.Before, c.Absent = bufferValue(prev, c.Kind), false
						c.Arg = fmt.Sprintf("step%d", step)
						c.Note = joinNote(c.Note, fmt.Sprintf("step %d of %d", step, n))
						order = append(order, c.Key)
					}
				}
			} else {
				arg := fmt.Sprintf("step%d", step)
				for _, k := range []policy.Kind{policy.KindPrioBuffer, policy.KindBufferSize} {
					before, after := bufferValue(prev, k), bufferValue(st.Buffer, k)
					if before == after {
						continue
					}
					if i, ok := finals[k]; ok && plan.Changes[i].Value == after {
						// The profile's own value, reached here: its
						// change is this step's (a step of its own).
						c := &plan.Changes[i]
						c.Before, c.Absent, c.Arg = before, false, arg
						c.Note = joinNote(c.Note, fmt.Sprintf("step %d of %d: %s", step, n, st.Via))
						written[k] = true
						order = append(order, c.Key)
						continue
					}
					name := "buffers." + arg + "." + map[policy.Kind]string{policy.KindPrioBuffer: "priority_to_buffer", policy.KindBufferSize: "buffer_size"}[k]
					c := policy.Change{Setting: policy.Setting{Key: netdev + "." + name, Scope: netdev, Name: name, Kind: k, Arg: arg,
						Value: after, From: "buffers", Port: port}, Before: before,
						Note: fmt.Sprintf("step %d of %d: %s: no order of the profile's writes alone passes mlx5's buffer checks (mlx5e_port_manual_buffer_config), this path does, applied and rolled back", step, n, st.Via)}
					added = append(added, c)
					order = append(order, c.Key)
				}
			}
			prev = st.Buffer
		}
	}
	pl.insert(added)
	pl.reorder(netdev, order)
}

// bufferValue is a buffer state's value of kind k, in its canonical
// text.
func bufferValue(b mlx5.BufferState, k policy.Kind) string {
	if k == policy.KindPrioBuffer {
		var v [8]int
		for i, x := range b.Prio2Buf {
			v[i] = int(x)
		}
		return policy.Ints8Codec.Format(v)
	}
	var v [8]policy.Size
	for i, x := range b.Sizes {
		v[i] = policy.Size(x)
	}
	return policy.Sizes8Codec.Format(v)
}

// reorder puts netdev's changes of keys in that order, among the places
// they hold (the index stays right: each change stays on its netdev's
// positions).
func (pl *planning) reorder(netdev string, keys []string) {
	want := make(map[string]bool, len(keys))
	for _, k := range keys {
		want[k] = true
	}
	var places []int
	byKey := map[string]policy.Change{}
	for _, i := range pl.at[netdev] {
		if c := pl.plan.Changes[i]; want[c.Key] {
			places = append(places, i)
			byKey[c.Key] = c
		}
	}
	if len(places) != len(keys) {
		return // a key twice, or missing: leave the plan's order
	}
	for k, i := range places {
		pl.plan.Changes[i] = byKey[keys[k]]
	}
}
