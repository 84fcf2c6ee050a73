package ice

import (
	"fmt"
	"slices"

	"github.com/rocectl/rocectl/driver"
	"github.com/rocectl/rocectl/policy"
)

// irdma's congestion control, as Intel's out-of-tree irdma implements it
// (configfs.c, read in its source; mainline irdma has no configfs):
// /sys/kernel/config/irdma/<dev>/, a group made by mkdir, holds one
// switch per RoCE algorithm — roce_dcqcn_enable, roce_dctcp_enable,
// roce_timely_enable. Each store parses kstrtobool (EINVAL otherwise)
// and sets iwdev->roce_{dcqcn,dctcp,timely}_en
// (irdma_configfs_set_vsi_attr); each show prints it ("%d\n"). Nothing
// is sent to the hardware then: the switches are copied into a QP's
// context when the QP is created, so a write reaches new QPs only.
// The other attributes (roce_cwnd 1..0x400, roce_ackcreds 1..0x1E,
// cnp_up_override 0..0x3F, ...) are not congestion-control switches
// rocectl manages.

// irdmaAlgorithms are the switches, in the order a mode is written.
var irdmaAlgorithms = []string{"roce_dcqcn_enable", "roce_dctcp_enable", "roce_timely_enable"}

// irdmaModes: which switch each [ecn] mode turns on ("off": none).
var irdmaModes = map[string]string{
	policy.CCDCQCN:  "roce_dcqcn_enable",
	policy.CCDCTCP:  "roce_dctcp_enable",
	policy.CCTimely: "roce_timely_enable",
	policy.CCOff:    "",
}

// irdmaGroup names the configfs group for messages.
const irdmaGroup = "irdma's configfs (/sys/kernel/config/irdma/<dev>/: roce_dcqcn_enable, roce_dctcp_enable, roce_timely_enable)"

// CCModes: with irdma's configfs, every mode; without it (probed), none,
// naming where the switch lives; not probed, unknown.
func (d Driver) CCModes(f driver.PortFacts) ([]string, string, bool) {
	switch f.ECN {
	case driver.ECNIrdma:
		return []string{policy.CCDCQCN, policy.CCDCTCP, policy.CCTimely, policy.CCOff}, "", true
	case driver.ECNUnknown:
		return nil, "", false
	}
	return nil, irdmaGroup + " selects the algorithm and is absent here: Intel's out-of-tree irdma has it once `mkdir /sys/kernel/config/irdma/<dev>` is done; mainline irdma has none", true
}

// CCSettings: on irdma a mode is its three switches, the mode's on and
// the others off.
func (d Driver) CCSettings(mode string, f driver.PortFacts) []driver.Companion {
	on, ok := irdmaModes[mode]
	if f.ECN != driver.ECNIrdma || !ok {
		return nil
	}
	var out []driver.Companion
	for _, a := range irdmaAlgorithms {
		v := "0"
		if a == on {
			v = "1"
		}
		out = append(out, driver.Companion{Kind: policy.KindECNParam, Name: "ecn.rp." + a, Arg: "rp/" + a, Value: v,
			Note: "irdma's congestion-control switch for [ecn] mode = \"" + mode + "\" (configfs.c " + a + "_store)"})
	}
	return out
}

// IrdmaValueProblem says why irdma's configfs would refuse v written to
// attr, "" when it takes it: the algorithm switches parse kstrtobool.
func IrdmaValueProblem(attr string, v int64) string {
	if !slices.Contains(irdmaAlgorithms, attr) || v == 0 || v == 1 {
		return ""
	}
	return fmt.Sprintf("irdma's %s takes 0 or 1: %s_store parses kstrtobool and refuses %d (EINVAL)", attr, attr, v)
}

// Disruptions: the firmware LLDP agent's flag hands DCB between the
// firmware and the host, and an irdma algorithm switch reaches new QPs
// only.
func (d Driver) Disruptions(c *policy.Change) []string {
	if name, _ := d.fwLLDPFlag(); c.Kind == policy.KindPrivFlag && c.Arg == name {
		return []string{"DCB reset: " + d.Module + "_set_priv_flags re-inits DCB when the firmware LLDP agent stops (every priority on TC0, no PFC) until the plan's DCB writes, and gives DCB back to the agent (the switch's DCBX) when it starts again"}
	}
	if c.Kind != policy.KindECNParam {
		return nil
	}
	arg, err := policy.ParseECNArg(c.Kind, c.Arg)
	if err != nil || !slices.Contains(irdmaAlgorithms, arg.Param) {
		return nil
	}
	return []string{"new QPs only: irdma copies its congestion-control switches into a QP's context when it creates the QP; connections open now keep their algorithm until they reconnect"}
}
