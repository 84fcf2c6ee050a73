package generic

import (
	"github.com/rocectl/rocectl/driver"
	"github.com/rocectl/rocectl/policy"
)

// Instead, for a driver rocectl has no model of, says only what is true
// of every driver without the interface: the NIC's own firmware or
// vendor tool, if the NIC has the setting at all.
func (d Driver) Instead(k policy.Kind, _ driver.PortFacts) string {
	module := d.Module
	if module == "" {
		module = "this driver"
	}
	switch {
	case driver.IsDCB(k), k == policy.KindStormPrevention:
		return "not through the kernel on " + module + ": the NIC's firmware or its vendor's tool, if the NIC has it"
	case k == policy.KindECNEnable, k == policy.KindECNParam:
		return "no ECN/DCQCN interface rocectl knows on " + module + ": the NIC's firmware or its vendor's tool, if the NIC has it"
	case k == policy.KindTrafficClass:
		return driver.PerConnectionTC
	}
	return ""
}

// CCModes: no congestion-control interface rocectl knows on this driver.
func (d Driver) CCModes(driver.PortFacts) ([]string, string, bool) {
	return nil, "no congestion-control interface rocectl knows on " + d.Module, true
}
