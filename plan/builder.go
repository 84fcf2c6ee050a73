package plan

import (
	"slices"

	"github.com/rocectl/rocectl/policy"
)

// changeIndex is where each netdev's changes are in the plan, in plan
// order (changes without a port are not indexed). The driver planning
// looks at one port's changes at a time: scanning the whole plan for each
// port made a 64-port plan (about 1,700 changes) cost ports × changes in
// every step. Positions hold while changes move only among their own
// netdev's positions (moveBuffersFirst); whatever inserts or shifts
// changes indexes the plan again.
type changeIndex map[string][]int

func indexChanges(cs []policy.Change) changeIndex {
	at := changeIndex{}
	// A port's changes mostly come together: one map access and one
	// allocation per run of them, not per change.
	for i := 0; i < len(cs); {
		if cs[i].Port == nil {
			i++
			continue
		}
		nd := cs[i].Port.Netdev
		j := i + 1
		for j < len(cs) && cs[j].Port != nil && cs[j].Port.Netdev == nd {
			j++
		}
		pos := slices.Grow(at[nd], j-i)
		for ; i < j; i++ {
			pos = append(pos, i)
		}
		at[nd] = pos
	}
	return at
}

// first is the position of netdev's first change that is, or -1.
func (pl *planning) first(netdev string, is func(policy.Change) bool) int {
	for _, i := range pl.at[netdev] {
		if is(pl.plan.Changes[i]) {
			return i
		}
	}
	return -1
}

// insertInOrder puts each change of add among its port's changes in cs,
// in write order (Kind.WriteOrder): a companion is written before the change that
// causes it, and so restored after that change is undone. A change goes
// into the first run of its netdev's changes (before the first of a later
// kind, else after the run), or after everything when its netdev has none,
// each as if the ones before it had been put in already; cs is copied
// once, however many are added (one copy per change made a 64-port plan
// copy its thousands of changes for each port).
func insertInOrder(cs []policy.Change, add []policy.Change) []policy.Change {
	if len(add) == 0 {
		return cs
	}
	// Each netdev's first run: where it starts and ends in cs.
	type span struct{ from, to int }
	runs := map[string]span{}
	for i := 0; i < len(cs); {
		j := i + 1
		if cs[i].Port != nil {
			nd := cs[i].Port.Netdev
			for j < len(cs) && cs[j].Port != nil && cs[j].Port.Netdev == nd {
				j++
			}
			if _, ok := runs[nd]; !ok {
				runs[nd] = span{i, j}
			}
		}
		i = j
	}
	// The runs that get changes, with them put in; netdevs without a
	// run get one of their own at the end, in the order they come.
	grown := map[string][]policy.Change{}
	var fresh []string
	for _, c := range add {
		nd := c.Port.Netdev
		run, ok := grown[nd]
		if !ok {
			if r, ok := runs[nd]; ok {
				run = slices.Clone(cs[r.from:r.to])
			} else {
				fresh = append(fresh, nd)
			}
		}
		at := slices.IndexFunc(run, func(x policy.Change) bool { return x.Kind.WriteOrder() > c.Kind.WriteOrder() })
		if at < 0 {
			at = len(run)
		}
		grown[nd] = slices.Insert(run, at, c)
	}
	// cs with the grown runs in place of theirs, copied a stretch at a
	// time.
	var replaced []span
	for nd := range grown {
		if r, ok := runs[nd]; ok {
			replaced = append(replaced, r)
		}
	}
	slices.SortFunc(replaced, func(x, y span) int { return x.from - y.from })
	out := make([]policy.Change, 0, len(cs)+len(add))
	from := 0 // cs[from:] is not in out yet
	for _, r := range replaced {
		out = append(out, cs[from:r.from]...)
		out = append(out, grown[cs[r.from].Port.Netdev]...)
		from = r.to
	}
	out = append(out, cs[from:]...)
	for _, nd := range fresh {
		out = append(out, grown[nd]...)
	}
	return out
}

// around is what goes just before and after a port's MTU change.
type around struct {
	netdev, key string // the MTU change's
	pre, post   []policy.Change
}

// insertAround puts each around in the plan, found through the index,
// and indexes the plan again.
func (pl *planning) insertAround(arounds []around) {
	if len(arounds) == 0 {
		return
	}
	cs := pl.plan.Changes
	type place struct {
		at int
		a  *around
	}
	var places []place
	n := len(cs)
	for k := range arounds {
		a := &arounds[k]
		for _, i := range pl.at[a.netdev] {
			if cs[i].Key == a.key {
				places = append(places, place{i, a})
				n += len(a.pre) + len(a.post) // per place: the moves below count on it
			}
		}
	}
	slices.SortFunc(places, func(x, y place) int { return x.at - y.at })
	// In place, from the back: each change moves right by what goes in
	// before it. A copy of a 64-port plan's ~1500 changes is 300 KB of
	// fresh memory, and the plan is placed around twice.
	r := len(cs) // cs[:r] has not moved yet
	cs = slices.Grow(cs, n-len(cs))[:n]
	w := n // cs[w:] is final
	for k := len(places) - 1; k >= 0; k-- {
		p := places[k]
		w -= r - (p.at + 1)
		copy(cs[w:], cs[p.at+1:r])
		w -= len(p.a.post)
		copy(cs[w:], p.a.post)
		w--
		cs[w] = cs[p.at]
		w -= len(p.a.pre)
		copy(cs[w:], p.a.pre)
		r = p.at
	}
	pl.plan.Changes = cs
	pl.at = indexChanges(cs)
}

// insert puts the changes of add among their ports' changes in write
// order (insertInOrder) and indexes the plan again.
func (pl *planning) insert(add []policy.Change) {
	if len(add) == 0 {
		return
	}
	pl.plan.Changes = insertInOrder(pl.plan.Changes, add)
	pl.at = indexChanges(pl.plan.Changes)
}

// move puts the change at from at place to, in place: those between
// shift one place toward from and keep their order. The index follows.
func (pl *planning) move(from, to int) {
	cs := pl.plan.Changes
	c := cs[from]
	if from < to {
		copy(cs[from:to], cs[from+1:to+1])
	} else {
		copy(cs[to+1:from+1], cs[to:from])
	}
	cs[to] = c
	pl.at = indexChanges(cs)
}

// refuse refuses change c: the plan will not be applied, and says why.
func (pl *planning) refuse(c policy.Change, why string) {
	pl.plan.Refused = append(pl.plan.Refused, policy.PlanError{Key: c.Key, Want: c.Value, Port: c.Port, Error: why})
}

// joinNote adds b to a change's note a.
func joinNote(a, b string) string {
	if a == "" {
		return b
	}
	return a + "; " + b
}
