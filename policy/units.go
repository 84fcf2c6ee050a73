package policy

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Size is a byte count written as "130KiB", "4MiB", "133120" or "0".
type Size uint64

var sizeUnits = []struct {
	suffix string
	mult   uint64
}{
	{"KiB", 1 << 10}, {"MiB", 1 << 20}, {"GiB", 1 << 30},
	{"KB", 1000}, {"MB", 1000 * 1000}, {"GB", 1000 * 1000 * 1000},
	{"K", 1 << 10}, {"M", 1 << 20}, {"G", 1 << 30}, {"B", 1},
}

// ParseSize parses a size with an optional binary or decimal unit.
func ParseSize(s string) (Size, error) {
	t := strings.TrimSpace(s)
	mult := uint64(1)
	for _, u := range sizeUnits {
		if strings.HasSuffix(t, u.suffix) {
			t, mult = strings.TrimSpace(strings.TrimSuffix(t, u.suffix)), u.mult
			break
		}
	}
	n, err := strconv.ParseUint(t, 10, 64)
	if err != nil || (mult > 1 && n > (1<<64-1)/mult) {
		return 0, fmt.Errorf("%q is not a size", s)
	}
	return Size(n * mult), nil
}

// String prints the size in the largest binary unit that divides it.
func (s Size) String() string {
	switch {
	case s == 0:
		return "0"
	case s%(1<<30) == 0:
		return fmt.Sprintf("%dGiB", s>>30)
	case s%(1<<20) == 0:
		return fmt.Sprintf("%dMiB", s>>20)
	case s%(1<<10) == 0:
		return fmt.Sprintf("%dKiB", s>>10)
	}
	return strconv.FormatUint(uint64(s), 10)
}

// ParseDuration parses "200ms", "60s", "2m". Bare numbers are refused: go-toml
// would read them as nanoseconds, which no operator means.
func ParseDuration(s string) (time.Duration, error) {
	d, err := time.ParseDuration(strings.TrimSpace(s))
	if err != nil {
		return 0, fmt.Errorf("%q is not a duration", s)
	}
	return d, nil
}
