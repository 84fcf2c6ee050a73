package median

import "slices"

// Number is a type whose values can be averaged.
type Number interface {
	~int | ~int64 | ~uint64 | ~float64
}

// Mean returns the median of v, averaging the two middle values when the
// count is even, or zero for an empty v. v is not modified.
func Mean[T Number](v []T) T {
	if len(v) == 0 {
		return 0
	}
	s := slices.Clone(v)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}
