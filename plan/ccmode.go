package plan

import (
	"fmt"
	"slices"
	"strings"

	"github.com/rocectl/rocectl/driver"
	"github.com/rocectl/rocectl/driver/known"
	"github.com/rocectl/rocectl/policy"
	"github.com/rocectl/rocectl/port"
)

// ccMode checks [ecn] mode against what each matched port's driver can
// run through rocectl (driver.Driver.CCModes): a mode it cannot is
// refused on that port, naming the modes it can and where the others
// live; one whose answer depends on an ECN interface the host did not
// show is a warning, never a refusal (unknown is not unsupported).
func (pl *planning) ccMode() {
	if pl.d.Profile == nil || pl.d.Profile.ECN.Mode == nil {
		return
	}
	mode := *pl.d.Profile.ECN.Mode
	for i := range pl.d.Ports {
		p := &pl.d.Ports[i].Port
		if p.RDMADevice == "" {
			continue // no RDMA device: no congestion control to run
		}
		facts := driver.PortFacts{PCI: p.PCI, ECN: driver.ECNUnknown}
		if f := pl.h.Facts(p); f.ECN != nil {
			facts.ECN = f.ECN()
		}
		modes, elsewhere, ok := known.For(p.Driver).CCModes(facts)
		key := p.RDMAScope() + ".ecn.mode"
		if !ok {
			pl.plan.Warnings = append(pl.plan.Warnings, policy.Warning{Key: key, Port: p,
				Message: fmt.Sprintf("whether %s can run congestion-control mode %q is unknown: its ECN interface is not known", p.Driver, mode)})
			continue
		}
		if slices.Contains(modes, mode) {
			pl.ccSettings(p, mode, facts)
			continue
		}
		can := "none through rocectl"
		if len(modes) > 0 {
			can = strings.Join(modes, ", ")
		}
		why := fmt.Sprintf("%s cannot run congestion-control mode %q here; it can: %s", p.Driver, mode, can)
		if elsewhere != "" {
			why += "; " + elsewhere
		}
		pl.refuse(policy.Change{Setting: policy.Setting{Key: key, Scope: p.RDMAScope(), Value: mode, Port: p}}, why)
	}
}

// ccSettings puts in the plan the settings that make mode on p's driver
// (driver.Driver.CCSettings: irdma's algorithm switches), read and
// journalled like companions of the profile's [ecn] mode.
func (pl *planning) ccSettings(p *port.Port, mode string, facts driver.PortFacts) {
	cps := known.For(p.Driver).CCSettings(mode, facts)
	if len(cps) == 0 {
		return
	}
	cause := policy.Setting{Key: p.RDMAScope() + ".ecn.mode", Scope: p.RDMAScope(), Name: "ecn.mode", Value: mode, Port: p}
	// A switch that cannot be read refuses the mode: writing the others
	// alone would leave the device running another algorithm, or two.
	var unreadable []string
	for _, cp := range cps {
		s := policy.Setting{Key: cause.Scope + "." + cp.Name, Scope: cause.Scope, Name: cp.Name, Kind: cp.Kind, Arg: cp.Arg, Port: p}
		if _, present, err := pl.h.Read(s); err != nil || !present {
			why := "absent"
			if err != nil {
				why = err.Error()
			}
			unreadable = append(unreadable, cp.Name+": "+why)
		}
	}
	if len(unreadable) > 0 {
		pl.refuse(policy.Change{Setting: cause}, fmt.Sprintf("congestion-control mode %q needs every switch of %s read first; %s", mode, p.Driver, strings.Join(unreadable, "; ")))
		return
	}
	planned := plannedKeys(pl.plan)
	var added []policy.Change
	for _, cp := range cps {
		if ch, ok := pl.companionChange(cause, cp, "implied by ", planned); ok {
			added = append(added, ch)
		}
	}
	pl.insert(added)
}
