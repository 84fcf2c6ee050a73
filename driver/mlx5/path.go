package mlx5

import (
	"fmt"
	"slices"
	"strconv"

	"github.com/rocectl/rocectl/policy"
)

// A port's PFC and buffer writes are checked by the driver at every
// write (buffers.go), in the apply and in its rollback. When no order of
// the plan's own writes passes, a path through intermediate buffer states
// may: a size-only write that grows the buffer a lossless priority moves
// to (while the old map still holds), then a map-only write that moves
// it, then the final sizes. Path searches those paths, bounded: the
// final state alone; of two buffer writes, map first or grow first (the
// room to grow reckoned as the port is now, as it is once PFC is
// written, and for the minimum the final cable length and MTU set); of
// three, grow, map, then the final sizes. Each is tried with the PFC
// write before, between or after the buffer writes, and, on a path of
// two or three, with the MTU write first or after the first buffer
// write (PFC then after it): at most 2 + 4 × (3 + 2) + 3 × (4 + 3) = 43
// candidate orders; then, with an MTU change of the port's own, each
// sequence again with the MTU last (1 + 2 + 4 × 3 + 3 × 4 = 27 more),
// each followed through the apply and the rollback
// from every point (RunWrites): a few hundred model writes a port, no
// state space to explore (BenchmarkPlanWorstStart: 64 ports).

// BufferState is what one buffer write writes: the map and the sizes.
type BufferState struct {
	Prio2Buf [8]uint8
	Sizes    [8]uint32
}

// Step is one write of a port's path.
type Step struct {
	// Obj is the object written: "pause", "pfc", "buffer" or "mtu".
	Obj string
	// Part is what a PFC write split in two writes ("priorities",
	// "cable"; Write.Part); "" for the whole PFC write.
	Part string
	// Buffer is what a buffer write writes.
	Buffer BufferState
	// Via says what a write to an intermediate buffer state does ("grow
	// buffer 1 to 196608 bytes"); "" for the plan's own writes.
	Via string
}

// Path is the order of a port's writes ws (the plan's, in plan order,
// from cur to final) that passes the driver's checks applied and rolled
// back from any point: the plan's order when it passes, else the
// shortest path through intermediate buffer states. refused says why no
// path exists, in two short lines.
//
// When no path with one PFC write exists and it changes both the
// priorities and the cable length, the same search runs with it split in
// two (PFCWritesSplit), priorities first, then cable first.
func Path(cur, final Port, ws []Write) (path []Step, refused *Refusal) {
	path, refused = search(cur, final, ws)
	i := slices.IndexFunc(ws, func(w Write) bool { return w.Obj == "pfc" })
	if refused == nil || i < 0 || cur.PFC == final.PFC || !cableChanges(cur, final) {
		return path, refused
	}
	for _, cableFirst := range []bool{false, true} {
		split := slices.Concat(ws[:i], PFCWritesSplit(cur, final, cableFirst), ws[i+1:])
		if p, r := search(cur, final, split); r == nil {
			return p, nil
		}
	}
	return nil, refused
}

// cableChanges says whether a PFC write from cur to final sets a new cable
// length (SetPFC takes one within 1..MaxCable-1 that differs).
func cableChanges(cur, final Port) bool {
	return final.Cable > 0 && final.Cable < MaxCable && final.Cable != cur.Cable
}

// search is Path with the PFC write as ws has it.
func search(cur, final Port, ws []Write) (path []Step, refused *Refusal) {
	pfcAt := slices.IndexFunc(ws, func(w Write) bool { return w.Obj == "pfc" })
	bufAt := slices.IndexFunc(ws, func(w Write) bool { return w.Obj == "buffer" })
	var others []Write // pause, MTU: before the PFC and buffer writes (write order)
	for _, w := range ws {
		if w.Obj != "pfc" && w.Obj != "buffer" {
			others = append(others, w)
		}
	}
	from := BufferState{cur.Prio2Buf, cur.Sizes}
	to := BufferState{final.Prio2Buf, final.Sizes}
	var nearest *Shortfall
	// try follows seq's buffer writes with the PFC write before each of
	// them and after the last, in that order; the first that passes is
	// the path.
	hasMTU := slices.ContainsFunc(others, func(w Write) bool { return w.Obj == "mtu" })
	mtuPinned := slices.ContainsFunc(others, func(w Write) bool { return w.Obj == "mtu" && w.Pinned })
	mtuAfter := slices.ContainsFunc(others, func(w Write) bool { return w.Obj == "mtu" && w.Pinned && w.AfterFirst })
	last := false // the second pass: the MTU write last only
	try := func(seq []intermediate) []Step {
		places := 1
		if pfcAt >= 0 && bufAt >= 0 {
			places = len(seq) + 1 // the PFC write before the k-th buffer write
		}
		// The MTU write first (before the buffers, so that the driver
		// sizes their thresholds for it), or, on a path through an
		// intermediate state, after that state's write: a larger MTU
		// raises the least a lossless buffer may hold, which the buffers
		// lossless now may have to grow to first.
		mtuPlaces, m0 := 1, 0
		switch {
		case mtuAfter && len(seq) > 0:
			// The bond placed it after every slave's first buffer
			// write: only such paths.
			mtuPlaces, m0 = 2, 1
		case mtuAfter:
			// A slave with no buffer write of its own: the bond's
			// MTU comes before its PFC write (placeBondMTU in plan
			// keeps it there), as on a path with the MTU first. This
			// case used to try no order at all and left refusal
			// nothing to report: the planner crashed on a LAG whose
			// other slave's buffers needed the MTU late.
		case hasMTU && len(seq) > 1 && !mtuPinned:
			mtuPlaces = 2
		}
		var msAt [2]int // the MTU's places to try (candidate's mtu)
		ms := msAt[:0]
		for m := m0; m < mtuPlaces; m++ {
			ms = append(ms, m)
		}
		if last {
			if !hasMTU || mtuPinned {
				return nil
			}
			ms = append(ms[:0], mtuLast)
		}
		for _, m := range ms {
			for k := range places {
				if m == 1 && k == 0 && places > 1 {
					// PFC stays after the MTU: the recomputes around a
					// PFC change are written for the final MTU.
					continue
				}
				steps, writes := candidate(from, seq, k, m, pfcAt >= 0, others, ws)
				sf := RunWrites(cur, writes)
				if sf == nil {
					return steps
				}
				if nearest == nil {
					nearest = sf // the plan's own order: the operator's reference
				}
			}
		}
		return nil
	}
	// The plan's own writes first (almost every plan passes here, and
	// nothing more is built), then paths of two buffer writes, then of
	// three: fewest writes first. When none passes, the same again with
	// the port's own MTU change written last, after every PFC and
	// buffer write: the buffers lossless now may hold enough at today's
	// MTU only, so the writes that make them lossy go first, and a
	// rollback restores the MTU before it makes them lossless again
	// (found by TestEveryProfileFromGeneratedStartStates). The planner
	// then writes its recomputes for the MTU of their moment.
	var longer [][]intermediate // built once, when the final state alone fails
	for _, last = range []bool{false, true} {
		if bufAt < 0 {
			if path := try(nil); path != nil {
				return path, nil
			}
			continue
		}
		if path := try([]intermediate{{to, ""}}); path != nil {
			return path, nil
		}
		if longer == nil {
			two, three := intermediateSeqs(cur, final, pfcAt >= 0)
			longer = append(two, three...)
		}
		for _, seq := range longer {
			if path := try(seq); path != nil {
				return path, nil
			}
		}
	}
	return nil, refusal(cur, nearest, final)
}

// intermediateSeqs are the sequences of buffer writes through
// intermediate states worth trying, of two writes and of three: a
// map-only write; the room the final map needs made with the current
// map, as the port is now and as it is once PFC is written (the buffers
// PFC no longer pauses need no minimum then), then the final state, or
// the map moved before the final sizes.
func intermediateSeqs(cur, final Port, hasPFC bool) (two, three [][]intermediate) {
	from := BufferState{cur.Prio2Buf, cur.Sizes}
	to := BufferState{final.Prio2Buf, final.Sizes}
	if mapOnly := (BufferState{final.Prio2Buf, cur.Sizes}); mapOnly != from && mapOnly != to {
		two = append(two, []intermediate{{mapOnly, "move the priorities to their buffers, sizes unchanged"}, {to, ""}})
	}
	grows := []Port{cur}
	if hasPFC {
		afterPFC := cur
		afterPFC.SetPFC(final.PFC, final.Cable)
		grows = append(grows, afterPFC)
	}
	var seen []BufferState
	for _, at := range grows {
		grow, via := growState(at, final, false)
		if grow == from || grow == to || slices.Contains(seen, grow) {
			continue
		}
		seen = append(seen, grow)
		two = append(two, []intermediate{{grow, via}, {to, ""}})
		if moved := (BufferState{final.Prio2Buf, grow.Sizes}); moved != grow && moved != to {
			three = append(three, []intermediate{{grow, via}, {moved, "move the priorities to their buffers"}, {to, ""}})
		}
	}
	// A longer cable or a larger MTU raises the least a lossless buffer
	// may hold, and mlx5 checks the buffers lossless now against it
	// before the PFC write changes which are (SetPFC): those buffers grow
	// first, to what the final cable and MTU need.
	if grow, via := growState(cur, final, true); grow != from && grow != to && !slices.Contains(seen, grow) {
		two = append(two, []intermediate{{grow, via}, {to, ""}})
		if moved := (BufferState{final.Prio2Buf, grow.Sizes}); moved != grow && moved != to {
			three = append(three, []intermediate{{grow, via}, {moved, "move the priorities to their buffers"}, {to, ""}})
		}
	}
	return two, three
}

// refusal is why no path exists, in two short lines: what fails, and the
// smallest change to the profile that would make the target reachable.
func refusal(cur Port, nearest *Shortfall, final Port) *Refusal {
	known := cur
	known.Lossless = LosslessBy(cur.PFC, cur.Prio2Buf) // not what global pause may have made lossless: that is assumed, not known
	if sf := known.Check(""); sf != nil {
		// A rollback writes today's buffers back, which the driver
		// refuses at the port's speed, cable and MTU of now (they were
		// sized while the link trained, at 40 Gb/s, or for a shorter
		// cable or a smaller MTU): no path can be undone.
		return &Refusal{On: refusedOn, Why: fmt.Sprintf("cannot be reached with a rollback: buffer %d holds %d bytes, lossless, below the %d mlx5 needs on this port now (%s), and the driver refuses to write that back\n"+
			"smallest change that makes it reachable: none in the profile; give buffer %d at least %d bytes first (a buffer write of its own), then apply", sf.Buf, sf.Size, cur.Need(), cur.MinimumText(), sf.Buf, RoundedUp(uint32(cur.Need()), cur.cell()))}
	}
	return &Refusal{On: refusedOn, Why: fmt.Sprintf("cannot be reached: no order of the PFC and buffer writes, through size-only and map-only buffer writes within the port's buffer, passes mlx5's buffer checks (%s)\nsmallest change that makes it reachable: %s", nearest.String(), smallestChange(nearest, final))}
}

var refusedOn = []policy.Kind{policy.KindPFC, policy.KindCableLength, policy.KindPrioBuffer, policy.KindBufferSize}

// intermediate is one buffer state a path writes, and what writing it
// does ("" for the final state).
type intermediate struct {
	st  BufferState
	via string
}

// candidate is one path: others (pause, MTU) first, then the buffer
// writes of seq with the PFC write (when hasPFC) before the k-th, as
// steps and as the writes RunWrites follows. With mtu 1 the MTU write
// waits until after the first buffer write, PFC's place counted without
// it; with mtuLast it comes after every other write.
func candidate(from BufferState, seq []intermediate, k, mtu int, hasPFC bool, others, ws []Write) ([]Step, []Write) {
	var steps []Step
	var writes []Write
	var mtuWrite *Write
	for _, w := range others {
		if w.Obj == "mtu" && mtu > 0 {
			mtuWrite = &w
			continue
		}
		steps, writes = append(steps, Step{Obj: w.Obj}), append(writes, w)
	}
	afterFirst := func() {
		if mtuWrite != nil && mtu == 1 {
			steps, writes = append(steps, Step{Obj: "mtu"}), append(writes, *mtuWrite)
			mtuWrite = nil
		}
	}
	pfc := func() {
		if !hasPFC {
			return
		}
		for _, w := range ws { // one PFC write, or its two parts in turn
			if w.Obj == "pfc" {
				steps, writes = append(steps, Step{Obj: "pfc", Part: w.Part}), append(writes, w)
			}
		}
	}
	prev := from
	for i, b := range seq {
		if i == k {
			pfc()
		}
		steps = append(steps, Step{Obj: "buffer", Buffer: b.st, Via: b.via})
		writes = append(writes, bufferWriteBetween(prev, b.st))
		prev = b.st
		afterFirst()
	}
	if k >= len(seq) {
		pfc()
	}
	if mtuWrite != nil && mtu == mtuLast {
		steps, writes = append(steps, Step{Obj: "mtu"}), append(writes, *mtuWrite)
	}
	return steps, writes
}

// mtuLast is candidate's mtu for the MTU write after every other write.
const mtuLast = 2

// MTULast says whether path writes the MTU after its PFC and buffer
// writes.
func MTULast(path []Step) bool {
	m := slices.IndexFunc(path, func(st Step) bool { return st.Obj == "mtu" })
	return m >= 0 && !slices.ContainsFunc(path[m+1:], func(st Step) bool { return st.Obj == "pfc" || st.Obj == "buffer" }) &&
		slices.ContainsFunc(path[:m], func(st Step) bool { return st.Obj == "pfc" || st.Obj == "buffer" })
}

// bufferWriteBetween is the buffer write from one state to the next.
func bufferWriteBetween(from, to BufferState) Write {
	return Write{Obj: "buffer", Name: "the buffer write",
		Apply: func(p *Port) *Shortfall { return p.SetBuffer(to.Prio2Buf, to.Sizes) },
		Undo:  func(p *Port) *Shortfall { return p.SetBuffer(from.Prio2Buf, from.Sizes) }}
}

// growState is the size-only write that readies the final map with the
// current one: every buffer lossless in the final state gets its final
// size first, then the buffers lossless now keep what they have, as far
// as the port's total allows, then the other buffers in use now; sizes
// in whole cells. With forNeed, the buffers lossless now and those the
// final map makes lossless under today's PFC get instead exactly the
// minimum the final cable length and the larger MTU make the driver's,
// so that a large buffer shrinks to make room.
func growState(cur, final Port, forNeed bool) (BufferState, string) {
	lossFinal := LosslessBy(final.PFC, final.Prio2Buf)
	if final.Pause {
		lossFinal = LosslessBy(AllLossless, final.Prio2Buf)
	}
	usedNow := LosslessBy(AllLossless, cur.Prio2Buf)
	budget := uint64(cur.Total)
	if budget == 0 {
		for b := range 8 {
			budget += uint64(max(cur.Sizes[b], final.Sizes[b]))
		}
	}
	var sizes [8]uint32
	var left uint64 = budget
	take := func(b int, want uint32) {
		w := uint64(Truncated(want, cur.Cell))
		if w > left {
			w = uint64(Truncated(uint32(left), cur.cell()))
		}
		sizes[b], left = uint32(w), left-w
	}
	var grown []int
	for b := range 8 {
		if lossFinal[b] {
			take(b, final.Sizes[b])
			if sizes[b] > cur.Sizes[b] {
				grown = append(grown, b)
			}
		}
	}
	// need is the least the buffers lossless now hold on the way.
	need := uint32(0)
	if forNeed {
		at := cur
		at.Cable = max(cur.Cable, final.Cable)
		at.MTU = max(cur.MTU, final.MTU)
		need = RoundedUp(uint32(at.Need()), cur.cell())
	}
	// With forNeed, the buffers the final map makes lossless while
	// today's PFC still holds (the map-only step between) get the
	// minimum too.
	var lossMid [8]bool
	if forNeed {
		lossMid = LosslessBy(cur.PFC, final.Prio2Buf)
	}
	for _, pass := range []([8]bool){lossMid, cur.Lossless, usedNow} {
		for b := range 8 {
			if pass[b] && !lossFinal[b] && sizes[b] == 0 {
				want := cur.Sizes[b]
				if forNeed && (cur.Lossless[b] || lossMid[b]) {
					// The minimum, no more: what a large lossy
					// buffer gives up is room for the others.
					want = need
				}
				take(b, want)
				if sizes[b] > cur.Sizes[b] {
					grown = append(grown, b)
				}
			}
		}
	}
	via := "make room for the final map's lossless buffers, map unchanged"
	if len(grown) > 0 {
		via = fmt.Sprintf("grow buffer %d to %s, map unchanged", grown[0], sizeText(sizes[grown[0]]))
	}
	return BufferState{cur.Prio2Buf, sizes}, via
}

// smallestChange says what change to the profile makes a refused port
// reachable, from the failure of its plan's own order.
func smallestChange(sf *Shortfall, final Port) string {
	switch {
	case sf.Sum > 0:
		return fmt.Sprintf("buffer sizes that add up to at most the port's %d bytes", sf.At.Total)
	case sf.At.Pause && LosslessBy(AllLossless, sf.At.Prio2Buf)[sf.Buf]:
		return "qos.global_pause = false (global pause makes every buffer in use lossless while the map changes: fill_pfc_en)"
	case LosslessBy(final.PFC, final.Prio2Buf)[sf.Buf] && int(final.Sizes[sf.Buf]) < sf.At.Need():
		return fmt.Sprintf("buffers.buffer_size[%d] of at least %d bytes", sf.Buf, sf.At.Need())
	}
	return fmt.Sprintf("buffer %d, lossless with %d bytes on the way, needs %d there: give it that first, or make the PFC and buffer changes in two applies", sf.Buf, sf.Size, sf.At.Need())
}

// sizeText is a size as the plan prints sizes: in KiB (or a larger unit)
// when it is a whole number of them, else in bytes.
func sizeText(n uint32) string {
	t := policy.Size(n).String()
	if _, err := strconv.Atoi(t); err == nil && n != 0 {
		return t + " bytes"
	}
	return t
}
