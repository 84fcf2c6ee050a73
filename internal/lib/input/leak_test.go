package input

import (
	"testing"

	"github.com/rocectl/rocectl/internal/testkit/leaktest"
)

// TestMain fails the package when a goroutine running rocectl's code
// outlives its tests (internal/testkit/leaktest).
func TestMain(m *testing.M) { leaktest.Main(m) }
