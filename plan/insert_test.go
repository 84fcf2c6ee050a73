package plan

import (
	"slices"
	"testing"

	"github.com/rocectl/rocectl/policy"
	"github.com/rocectl/rocectl/port"
)

// insertAround puts each around's changes before and after every change
// of its key on its netdev: none when no change has the key, twice when
// two have it, and the plan's other changes keep their order.
func TestInsertAround(t *testing.T) {
	p0 := &port.Port{Netdev: "p0"}
	ch := func(key string) policy.Change {
		return policy.Change{Setting: policy.Setting{Key: key, Scope: "p0", Port: p0}}
	}
	keys := func(cs []policy.Change) []string {
		var out []string
		for _, c := range cs {
			out = append(out, c.Key)
		}
		return out
	}
	for _, c := range []struct {
		plan    []string
		arounds []around
		want    []string
	}{
		{[]string{"a", "b", "c"}, []around{{netdev: "p0", key: "b", pre: []policy.Change{ch("pre")}, post: []policy.Change{ch("post")}}},
			[]string{"a", "pre", "b", "post", "c"}},
		{[]string{"a", "b", "c"}, []around{{netdev: "p0", key: "a", pre: []policy.Change{ch("pre")}}, {netdev: "p0", key: "c", post: []policy.Change{ch("post")}}},
			[]string{"pre", "a", "b", "c", "post"}},
		{[]string{"a", "b"}, []around{{netdev: "p0", key: "a", post: []policy.Change{ch("x")}}, {netdev: "p0", key: "b", pre: []policy.Change{ch("y")}}},
			[]string{"a", "x", "y", "b"}},
		// No change of the key: nothing goes in.
		{[]string{"a", "b", "c"}, []around{{netdev: "p0", key: "z", pre: []policy.Change{ch("pre")}}},
			[]string{"a", "b", "c"}},
		{[]string{"a", "b", "c"}, []around{{netdev: "p9", key: "b", pre: []policy.Change{ch("pre")}}},
			[]string{"a", "b", "c"}},
		// Two changes of the key: around each.
		{[]string{"a", "b", "c", "b"}, []around{{netdev: "p0", key: "b", pre: []policy.Change{ch("pre")}}},
			[]string{"a", "pre", "b", "c", "pre", "b"}},
	} {
		var cs []policy.Change
		for _, k := range c.plan {
			cs = append(cs, ch(k))
		}
		for _, spare := range []int{0, 8} { // in place, and grown
			plan := &policy.Plan{Changes: slices.Grow(slices.Clone(cs), spare)}
			pl := &planning{plan: plan, at: indexChanges(plan.Changes)}
			pl.insertAround(c.arounds)
			if got := keys(plan.Changes); !slices.Equal(got, c.want) {
				t.Errorf("%v around %+v (spare %d): got %v, want %v", c.plan, c.arounds, spare, got, c.want)
			}
		}
	}
}
