// Package verify checks that a host really is what the profile asked for:
// read-back of every setting, real verbs traffic (loopback and two-host),
// and the pause-storm guard that watches PFC counters after a change.
package verify

import (
	"fmt"

	"github.com/rocectl/rocectl/policy"
)

// Mismatch is a setting that does not hold its desired value.
type Mismatch struct {
	Key    string `json:"key"`
	Want   string `json:"want"`
	Have   string `json:"have"`
	Reason string `json:"reason,omitempty"` // for unreadable settings
}

func (m Mismatch) String() string {
	if m.Reason != "" {
		return fmt.Sprintf("verify: %s: want %s, cannot read: %s", m.Key, m.Want, m.Reason)
	}
	return fmt.Sprintf("verify: %s: want %s, have %s", m.Key, m.Want, m.Have)
}

// Readback compares what the kernel holds now with every desired setting,
// as nmstate does after apply. Unsupported settings are not mismatches: audit
// and apply already reported them.
func Readback(d *policy.Desired, o *policy.Observed) []Mismatch {
	var out []Mismatch
	for _, s := range d.All() {
		if _, ok := o.Unsupported[s.Key]; ok {
			continue
		}
		if e, ok := o.Errors[s.Key]; ok {
			out = append(out, Mismatch{Key: s.Key, Want: s.Value, Reason: e})
			continue
		}
		have, ok := o.Values[s.Key]
		if !ok {
			have = "(none)"
		}
		if !ok || have != s.Value {
			out = append(out, Mismatch{Key: s.Key, Want: s.Value, Have: have})
		}
	}
	return out
}
