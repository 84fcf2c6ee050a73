package mlx5

import (
	"strings"
	"testing"

	"github.com/rocectl/rocectl/driver"
	"github.com/rocectl/rocectl/policy"
)

// The per-priority DCQCN enable of upstream mlx5 is the firmware's
// ROCE_CC_PRIO_MASK_P<port>: port 1 is PCI function 0; an unknown
// function is not guessed.
func TestInsteadNamesTheFirmwareMaskOfThePort(t *testing.T) {
	for pci, want := range map[string]string{
		"0000:08:00.0": "ROCE_CC_PRIO_MASK_P1 of 0000:08:00.0",
		"0000:08:00.1": "ROCE_CC_PRIO_MASK_P2 of 0000:08:00.1",
		"0000:08:00.5": "ROCE_CC_PRIO_MASK_P<n>",
		"":             "ROCE_CC_PRIO_MASK_P<n>",
	} {
		got := Driver{}.Instead(policy.KindECNEnable, driver.PortFacts{PCI: pci})
		if !strings.HasPrefix(got, "set in firmware: "+want) {
			t.Errorf("%q: %q, want it to start with the mask %q", pci, got, want)
		}
	}
	for _, k := range []policy.Kind{policy.KindPFC, policy.KindBufferSize, policy.KindTrafficClass, policy.KindECNParam} {
		if (Driver{}).Instead(k, driver.PortFacts{}) == "" {
			t.Errorf("kind %v: no place instead", k)
		}
	}
	if got := (Driver{}).Instead(policy.KindMTU, driver.PortFacts{}); got != "" {
		t.Errorf("MTU: %q, want nothing (mlx5 has it)", got)
	}
}
