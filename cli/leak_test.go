package cli

import (
	"testing"

	"github.com/rocectl/rocectl/internal/testkit/fakemst"
	"github.com/rocectl/rocectl/internal/testkit/leaktest"
)

// TestMain fails the package when a goroutine running rocectl's code
// outlives its tests (internal/testkit/leaktest). Run as the fake
// mstconfig (internal/testkit/fakemst), the binary is that and nothing else.
func TestMain(m *testing.M) {
	fakemst.Main()
	leaktest.Main(m)
}
