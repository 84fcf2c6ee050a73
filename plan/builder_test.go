package plan

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/rocectl/rocectl/policy"
	"github.com/rocectl/rocectl/port"
)

// insertOne is the rule insertInOrder follows, one change at a time and
// written out plainly: c goes before the first change of a later kind in
// the first run of its netdev's changes, else right after that run, else
// at the end.
func insertOne(cs []policy.Change, c policy.Change) []policy.Change {
	at, seen := len(cs), false
	for i, x := range cs {
		if x.Port == nil || x.Port.Netdev != c.Port.Netdev {
			if seen {
				at = i
				break
			}
			continue
		}
		seen = true
		if x.Kind > c.Kind {
			at = i
			break
		}
	}
	return slices.Insert(slices.Clone(cs), at, c)
}

// insertInOrder puts a batch of changes where putting them one by one
// would: on plans whose netdevs come in several runs, with host changes
// (no port) between them, and changes for netdevs the plan has none of.
func TestInsertInOrderAsOneByOne(t *testing.T) {
	ports := []*port.Port{{Netdev: "a"}, {Netdev: "b"}, {Netdev: "c"}, {Netdev: "d"}}
	rng := rand.New(rand.NewPCG(1, 2))
	mk := func(n int, name string) policy.Change {
		c := policy.Change{Setting: policy.Setting{Key: fmt.Sprintf("%s%d", name, n), Kind: policy.Kind(rng.IntN(8))}}
		if k := rng.IntN(len(ports) + 1); k < len(ports) {
			c.Port = ports[k]
		}
		return c
	}
	for round := range 500 {
		var cs, add []policy.Change
		for i := range rng.IntN(12) {
			cs = append(cs, mk(i, "x"))
		}
		for i := range rng.IntN(6) {
			if c := mk(i, "new"); c.Port != nil {
				add = append(add, c)
			}
		}
		want := slices.Clone(cs)
		for _, c := range add {
			want = insertOne(want, c)
		}
		got := insertInOrder(slices.Clone(cs), add)
		if !slices.EqualFunc(got, want, func(x, y policy.Change) bool { return x.Key == y.Key && x.Port == y.Port }) {
			t.Fatalf("round %d: plan %v, adding %v: got %v, want %v", round, show(cs), show(add), show(got), show(want))
		}
	}
}

func show(cs []policy.Change) []string {
	var out []string
	for _, c := range cs {
		nd := "-"
		if c.Port != nil {
			nd = c.Port.Netdev
		}
		out = append(out, fmt.Sprintf("%s/%s/%d", c.Key, nd, c.Kind))
	}
	return out
}
