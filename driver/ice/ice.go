package ice

import "github.com/rocectl/rocectl/driver"

// Driver is Intel's ice (E810/E830) or i40e (X710/XL710): Module says
// which, since their firmware LLDP agents answer to private flags of
// different names and senses.
type Driver struct {
	driver.Base
	Module string // "ice" or "i40e"
	// DisableFlag: the agent's private flag is i40e's disable-fw-lldp
	// (on stops it), not ice's fw-lldp-agent (off stops it).
	DisableFlag bool
}

func (Driver) Name() string { return "ice" }

// FirmwareLLDP: ice with the private flag fw-lldp-agent on, i40e with
// disable-fw-lldp off, run the firmware's LLDP agent, which consumes the
// switch's frames before the host sees them (ice_set_priv_flags,
// i40e_set_priv_flags).
func (d Driver) FirmwareLLDP(f driver.LLDPFacts) string {
	if f.PrivFlags == nil {
		return ""
	}
	flags := f.PrivFlags()
	if flags == nil {
		return ""
	}
	if on, ok := flags["fw-lldp-agent"]; ok && on {
		return "ice firmware LLDP agent is on (ethtool private flag fw-lldp-agent): the firmware consumes the switch's LLDP; ethtool --set-priv-flags " + f.Netdev + " fw-lldp-agent off lets the host hear it"
	}
	if off, ok := flags["disable-fw-lldp"]; ok && !off {
		return "i40e firmware LLDP agent is on (ethtool private flag disable-fw-lldp off): the firmware consumes the switch's LLDP; ethtool --set-priv-flags " + f.Netdev + " disable-fw-lldp on lets the host hear it"
	}
	return ""
}
