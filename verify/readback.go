package verify

import (
	"github.com/rocectl/rocectl/policy"
)

// Mismatch is a setting that does not hold its desired value.
type Mismatch = policy.Mismatch

// Readback compares what the kernel holds now with every desired setting,
// as nmstate does after apply, through policy.Diff. Unsupported settings
// are not mismatches: audit and apply already reported them.
func Readback(d *policy.Desired, o *policy.Observed) []Mismatch {
	return policy.Diff(d, o).Mismatches()
}
