package agent

import "slices"

// DriftChange is what one drift check says compared with the last one.
type DriftChange int

const (
	// DriftSame: the same settings drift as at the last check (or the
	// host is still in sync): nothing new to log.
	DriftSame DriftChange = iota
	// DriftChanged: the set of drifted settings is new: the first drift,
	// or settings added to or gone from it.
	DriftChanged
	// DriftCleared: no drift now, and that was not said yet (the first
	// check, or drift at the last one).
	DriftCleared
)

func (c DriftChange) String() string {
	switch c {
	case DriftChanged:
		return "changed"
	case DriftCleared:
		return "cleared"
	}
	return "same"
}

// DriftTracker remembers the drifted set of the last check, so that the
// daemon logs drift when it changes and not at every check (46 identical
// lines a minute at --interval 1s otherwise). It is pure: fed each check's
// drifted keys, it says what changed.
type DriftTracker struct {
	keys  []string // sorted, no duplicates
	known bool     // keys holds a check's answer
}

// Observe takes the keys that differ from the profile at this check, in
// any order.
func (t *DriftTracker) Observe(keys []string) DriftChange {
	set := slices.Compact(slices.Sorted(slices.Values(keys)))
	if t.known && slices.Equal(set, t.keys) {
		return DriftSame
	}
	t.keys, t.known = set, true
	if len(set) == 0 {
		return DriftCleared
	}
	return DriftChanged
}

// Reset forgets the last check (it failed): the next one is reported
// afresh.
func (t *DriftTracker) Reset() { *t = DriftTracker{} }
