package policy

import (
	"testing"

	"github.com/rocectl/rocectl/internal/leaktest"
)

// TestMain fails the package when a goroutine running rocectl's code
// outlives its tests (internal/leaktest).
func TestMain(m *testing.M) { leaktest.Main(m) }
