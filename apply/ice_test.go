package apply

import (
	"errors"
	"slices"
	"strings"
	"syscall"
	"testing"

	"github.com/rocectl/rocectl/nic"
	"github.com/rocectl/rocectl/nic/dcb"
	"github.com/rocectl/rocectl/nic/nictest"
	"github.com/rocectl/rocectl/policy"
)

const iceNetdev = "enp59s0f0" // the ice-e810-factory host's port

// iceLossless is the ConnectX recipe's QoS for an ice port, with an ETS
// ice takes (TCs 0 and 1, PFC on TC1 only).
const iceLossless = `[match]
drivers = ["ice"]
[qos]
dcbx = "host"
trust = "dscp"
dscp_to_priority = "default"
pfc_priorities = [3]
global_pause = false
[qos.ets]
priority_to_tc = [0, 0, 0, 1, 0, 0, 0, 0]
tc_tsa = ["ets", "ets", "strict", "strict", "strict", "strict", "strict", "strict"]
tc_bandwidth = [50, 50, 0, 0, 0, 0, 0, 0]
[roce]
default_tos = 106
`

// The lossless recipe on the ice factory host (firmware LLDP agent on):
// the plan stops the agent first, the DCB writes then reach the driver,
// and rollback from disk undoes them and starts the agent again last,
// leaving the host byte for byte as it was.
func TestIceLosslessApplyRollbackRoundTrip(t *testing.T) {
	r := driverRig(t, "ice-e810-factory", iceLossless, nil)
	if len(r.plan.Refused) != 0 {
		t.Fatalf("refused: %+v", r.plan.Refused)
	}
	keys := make([]string, len(r.plan.Changes))
	for i, c := range r.plan.Changes {
		keys[i] = c.Key
	}
	flag := slices.Index(keys, iceNetdev+".link.private_flags.fw-lldp-agent")
	ets := slices.Index(keys, iceNetdev+".qos.ets.priority_to_tc")
	if flag < 0 || ets < 0 || flag > ets || r.plan.Changes[flag].Value != "off" {
		t.Fatalf("the agent's flag is not turned off before the DCB writes: %v", keys)
	}
	before := r.sim.Config()
	if err := r.apply(t); err != nil {
		t.Fatal(err)
	}
	st, _ := r.sim.DCB(iceNetdev)
	flags, _ := r.sim.PrivFlags(iceNetdev)
	if flags["fw-lldp-agent"] || *st.DCBX&dcb.DCBXLLDManaged != 0 || st.PFC.Enable != 1<<3 || st.ETS.PrioTC[3] != 1 {
		t.Fatalf("after apply: flags %v dcbx %#x ETS %+v PFC %+v", flags, *st.DCBX, *st.ETS, *st.PFC)
	}
	// In sync afterwards: nothing left to change, qos.dcbx included.
	if _, again := planOf(r.h, r.d); len(again.Changes) != 0 || len(again.Refused) != 0 {
		t.Errorf("plan after apply: changes %+v refused %+v", again.Changes, again.Refused)
	}
	if err := r.rollBackFromDisk(t); err != nil {
		t.Fatal(err)
	}
	if after := r.sim.Config(); after != before {
		t.Errorf("rollback did not restore the host:\nbefore %s\nafter  %s", before, after)
	}
	if flags, _ := r.sim.PrivFlags(iceNetdev); !flags["fw-lldp-agent"] {
		t.Error("the firmware LLDP agent was not started again")
	}
}

// Without the agent's flag in the plan, ice refuses the first DCB write
// (ice_dcbnl_setdcbx/setets under the agent): the apply fails and
// restores the host. This is what the companion is for.
func TestIceDCBWithoutTheAgentCompanionFails(t *testing.T) {
	r := driverRig(t, "ice-e810-factory", iceLossless, nil)
	r.plan.Changes = slices.DeleteFunc(r.plan.Changes, func(c policy.Change) bool { return c.Kind == policy.KindPrivFlag })
	before := r.sim.Config()
	err := r.apply(t)
	if !errors.Is(err, syscall.EINVAL) {
		t.Fatalf("apply without the companion: %v, want the driver's EINVAL", err)
	}
	if r.sim.Config() != before {
		t.Error("the failed apply did not restore the host")
	}
}

// A global pause change while PFC is enabled: ice_set_pauseparam
// refuses it, so the plan refuses it in two lines instead of failing
// mid-apply.
func TestIcePauseUnderPFCRefusedAtPlanTime(t *testing.T) {
	prep := func(s *nictest.Sim) {
		if err := s.SetPrivFlags(iceNetdev, map[string]bool{"fw-lldp-agent": false}); err != nil {
			t.Fatal(err)
		}
		if err := s.SetPause(iceNetdev, nic.Pause{}); err != nil {
			t.Fatal(err)
		}
		if err := s.SetPFC(iceNetdev, dcb.PFC{Enable: 1 << 3}); err != nil {
			t.Fatal(err)
		}
	}
	r := driverRig(t, "ice-e810-factory", "[match]\ndrivers = [\"ice\"]\n[qos]\nglobal_pause = true\n", prep)
	if len(r.plan.Refused) != 1 || r.plan.Refused[0].Key != iceNetdev+".qos.global_pause" ||
		!strings.Contains(r.plan.Refused[0].Error, "ice_set_pauseparam") || strings.Count(r.plan.Refused[0].Error, "\n") != 1 {
		t.Fatalf("refused %+v", r.plan.Refused)
	}
	// The driver's own answer, which the refusal spares the apply.
	if err := r.sim.SetPause(iceNetdev, nic.Pause{Rx: true, Tx: true}); !errors.Is(err, syscall.EOPNOTSUPP) {
		t.Errorf("ice pause write under PFC: %v, want EOPNOTSUPP", err)
	}
}

// A priority table with a gap: ice takes it as one TC and reads it back
// otherwise (ice_dcb_get_num_tc), so the plan refuses it, naming what ice
// allows; PFC on two TCs is refused the same way (Intel's guide).
func TestIceTCLimitsRefusedAtPlanTime(t *testing.T) {
	gap := strings.Replace(iceLossless, "priority_to_tc = [0, 0, 0, 1, 0, 0, 0, 0]", "priority_to_tc = [0, 0, 0, 2, 0, 0, 0, 0]", 1)
	gap = strings.Replace(gap, `tc_tsa = ["ets", "ets", "strict"`, `tc_tsa = ["ets", "strict", "ets"`, 1)
	gap = strings.Replace(gap, "tc_bandwidth = [50, 50, 0,", "tc_bandwidth = [50, 0, 50,", 1)
	twoPFC := strings.Replace(iceLossless, "priority_to_tc = [0, 0, 0, 1, 0, 0, 0, 0]", "priority_to_tc = [0, 0, 0, 1, 2, 0, 0, 0]", 1)
	twoPFC = strings.Replace(twoPFC, "pfc_priorities = [3]", "pfc_priorities = [3, 4]", 1)
	twoPFC = strings.Replace(twoPFC, `tc_tsa = ["ets", "ets", "strict"`, `tc_tsa = ["ets", "ets", "ets"`, 1)
	twoPFC = strings.Replace(twoPFC, "tc_bandwidth = [50, 50, 0,", "tc_bandwidth = [40, 30, 30,", 1)
	for _, tc := range []struct{ profile, want string }{
		{gap, "not contiguous from TC0"},
		{twoPFC, "one PFC traffic class per port"},
	} {
		r := driverRig(t, "ice-e810-factory", tc.profile, nil)
		if len(r.plan.Refused) != 1 || !strings.Contains(r.plan.Refused[0].Error, tc.want) ||
			!strings.Contains(r.plan.Refused[0].Error, "\nice allows: up to 8 TCs") {
			t.Errorf("%s: refused %+v", tc.want, r.plan.Refused)
		}
	}
	// Written anyway, the gapped table is taken as one TC (TC0 at 100 %):
	// the read-back fails and the apply restores the host.
	r := driverRig(t, "ice-e810-factory", gap, nil)
	r.plan.Refused = nil
	before := r.sim.Config()
	if err := r.apply(t); err == nil || !strings.Contains(err.Error(), "verify") {
		t.Fatalf("apply of the gapped table: %v, want its read-back to fail", err)
	}
	if r.sim.Config() != before {
		t.Error("the failed apply did not restore the host")
	}
}
