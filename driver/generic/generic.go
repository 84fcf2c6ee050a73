package generic

import "github.com/rocectl/rocectl/driver"

// Driver is any driver rocectl knows no side effect of: a write does what
// it asks and nothing else, as far as the planner can tell.
type Driver struct {
	driver.Base
	// Module is the kernel module's name ("" when unknown), for messages.
	Module string
}

func (Driver) Name() string { return "generic" }

// FirmwareLLDP: for a driver without its own rule, a DCBX mode with
// LLD_MANAGED says the firmware runs DCBX and may take the frames.
func (d Driver) FirmwareLLDP(f driver.LLDPFacts) string {
	return driver.LLDManagedLLDP(d.Module, f)
}
