package agent

import (
	"strings"
	"testing"
)

func TestDriftTracker(t *testing.T) {
	// Each step feeds one check's drifted keys (space-separated; "" in
	// sync, "reset" a failed check) and wants what the tracker says.
	for _, tc := range []struct {
		name  string
		steps []string
		want  []DriftChange
	}{
		{"in sync from the start, said once", []string{"", "", ""},
			[]DriftChange{DriftCleared, DriftSame, DriftSame}},
		{"the same drift at every interval, said once", []string{"a b", "a b", "a b"},
			[]DriftChange{DriftChanged, DriftSame, DriftSame}},
		{"order and duplicates do not matter", []string{"b a", "a b", "a a b"},
			[]DriftChange{DriftChanged, DriftSame, DriftSame}},
		{"a setting more, a setting less", []string{"a", "a b", "b"},
			[]DriftChange{DriftChanged, DriftChanged, DriftChanged}},
		{"fixed, then drifts again", []string{"a", "", "", "a"},
			[]DriftChange{DriftChanged, DriftCleared, DriftSame, DriftChanged}},
		{"a failed check makes the next one news", []string{"a", "reset", "a", "a", "reset", ""},
			[]DriftChange{DriftChanged, -1, DriftChanged, DriftSame, -1, DriftCleared}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var tr DriftTracker
			for i, s := range tc.steps {
				if s == "reset" {
					tr.Reset()
					continue
				}
				if got := tr.Observe(strings.Fields(s)); got != tc.want[i] {
					t.Errorf("check %d (%q): %s, want %s", i, s, got, tc.want[i])
				}
			}
		})
	}
}

// Observe keeps its own copy: the caller may reuse its slice.
func TestDriftTrackerCopiesKeys(t *testing.T) {
	var tr DriftTracker
	keys := []string{"a", "b"}
	tr.Observe(keys)
	keys[0] = "z"
	if got := tr.Observe([]string{"a", "b"}); got != DriftSame {
		t.Errorf("after the caller changed its slice: %s, want same", got)
	}
}
