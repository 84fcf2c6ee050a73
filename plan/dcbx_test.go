package plan_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/rocectl/rocectl/host"
	"github.com/rocectl/rocectl/internal/testkit/fixturehost"
	"github.com/rocectl/rocectl/nic"
	"github.com/rocectl/rocectl/nic/dcb"
	"github.com/rocectl/rocectl/nic/nictest"
	"github.com/rocectl/rocectl/policy"
)

const bnxtNetdev = "enp202s0f1np1" // the bnxt-re-factory host's port

// planOn plans profile on the simulated host sim over root.
func planOn(t *testing.T, root string, sim *nictest.Sim, profile string) (*host.Host, *policy.Desired, *policy.Plan) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "p.toml")
	if err := os.WriteFile(path, []byte(profile), 0o600); err != nil {
		t.Fatal(err)
	}
	p, err := policy.Load(path, policy.LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	h := &host.Host{FS: nic.NewFS(root, false), K: sim}
	d := policy.Resolve(p, h.Ports(h.Discover(), false))
	if len(d.Ports) == 0 {
		t.Fatal("the profile matches no port")
	}
	d = host.Place(d)
	return h, d, buildPlan(h, d)
}

// warningsByKey returns the plan's warnings, message by key.
func warningsByKey(plan *policy.Plan) map[string]string {
	out := map[string]string{}
	for _, w := range plan.Warnings {
		out[w.Key] = w.Message
	}
	return out
}

// mlx5 in firmware (auto) DCBX is willing (mlx5e_dcbnl_set_dcbx_mode sets
// willing_admin): PFC/ETS/APP managed there can be overwritten by the
// switch later, so the plan warns on each such port, whether the profile
// leaves DCBX alone or asks for firmware; qos.dcbx = "host" silences it.
func TestPlanWarnsOfWillingMLX5FirmwareDCBX(t *testing.T) {
	const pfc = "[match]\ndrivers = [\"mlx5_core\"]\n[qos]\npfc_priorities = [3]\ntrust = \"dscp\"\n"
	root, sim := fixturehost.Copy(t, "cx6dx-ofed-factory") // dcbx 0x0c: no HOST
	_, d, plan := planOn(t, root, sim, pfc)
	warns := warningsByKey(plan)
	if len(warns) != len(d.Ports) {
		t.Fatalf("warnings %v, want one per port (%d)", warns, len(d.Ports))
	}
	for _, dp := range d.Ports {
		msg := warns[dp.Port.Netdev+".qos.dcbx"]
		if !strings.Contains(msg, "willing") || !strings.Contains(msg, "qos.trust, qos.pfc") || !strings.Contains(msg, `qos.dcbx = "host"`) {
			t.Errorf("%s: warning %q", dp.Port.Netdev, msg)
		}
		// What the warning says of the driver: in firmware mode the
		// Sim's mlx5 takes the PFC write (nothing refuses it).
		if err := sim.SetPFC(dp.Port.Netdev, dcb.PFC{Enable: 1 << 3}); err != nil {
			t.Errorf("%s: mlx5 PFC write in firmware DCBX: %v", dp.Port.Netdev, err)
		}
	}

	if _, _, plan := planOn(t, root, sim, pfc+"dcbx = \"host\"\n"); len(plan.Warnings) != 0 {
		t.Errorf("with qos.dcbx = \"host\": warnings %+v", plan.Warnings)
	}
	if _, _, plan := planOn(t, root, sim, "[match]\ndrivers = [\"mlx5_core\"]\n[link]\nmtu = 9000\n"); len(plan.Warnings) != 0 {
		t.Errorf("without PFC/ETS/APP: warnings %+v", plan.Warnings)
	}

	root, sim = fixturehost.Copy(t, "cx6dx-ofed-lossless") // dcbx 0x09: HOST
	if _, _, plan := planOn(t, root, sim, pfc); len(plan.Warnings) != 0 {
		t.Errorf("host DCBX left alone: warnings %+v", plan.Warnings)
	}
	if _, d, plan := planOn(t, root, sim, pfc+"dcbx = \"firmware\"\n"); len(plan.Warnings) != len(d.Ports) {
		t.Errorf("qos.dcbx = \"firmware\" asked for: warnings %+v, want one per port", plan.Warnings)
	}
}

// On bnxt_en "firmware" DCBX is dcbx_cap without HOST and nothing more
// (bnxt_dcbnl_setdcbx): the plan says so on the change, or as a warning
// when the port is already there.
func TestPlanSaysWhatBnxtFirmwareDCBXIs(t *testing.T) {
	const prof = "[match]\ndrivers = [\"bnxt_en\"]\n[qos]\ndcbx = \"firmware\"\n"
	root, sim := fixturehost.Copy(t, "bnxt-re-factory") // dcbx 0x08: no HOST
	_, _, plan := planOn(t, root, sim, prof)
	key := bnxtNetdev + ".qos.dcbx"
	if msg := warningsByKey(plan)[key]; !strings.Contains(msg, "only clears the host flag") || !strings.Contains(msg, "no firmware agent takes over") {
		t.Errorf("in sync: warnings %+v", plan.Warnings)
	}
	if err := sim.SetDCBX(bnxtNetdev, dcb.DCBXHost|dcb.DCBXVerIEEE); err != nil {
		t.Fatal(err)
	}
	h, d, plan := planOn(t, root, sim, prof)
	if len(plan.Changes) != 1 || plan.Changes[0].Key != key || !strings.Contains(plan.Changes[0].Note, "bnxt_dcbnl_setdcbx") || len(plan.Warnings) != 0 {
		t.Fatalf("from host mode: changes %+v warnings %+v", plan.Changes, plan.Warnings)
	}
	// The note is what the driver does: the write leaves dcbx_cap without
	// HOST (no agent bit appears), and the IEEE set ops refuse from then on.
	steps, err := host.Steps(plan)
	if err != nil {
		t.Fatal(err)
	}
	for _, st := range steps {
		if err := h.WriteStep(context.Background(), &host.Owed{}, d, st, false); err != nil {
			t.Fatal(err)
		}
	}
	st, _ := sim.DCB(bnxtNetdev)
	if *st.DCBX&(dcb.DCBXHost|dcb.DCBXLLDManaged) != 0 {
		t.Errorf("dcbx_cap after 'firmware' = %#x", *st.DCBX)
	}
	if err := sim.SetETS(bnxtNetdev, dcb.ETS{}); !errors.Is(err, syscall.EINVAL) {
		t.Errorf("ETS write after 'firmware': %v, want EINVAL", err)
	}
}

// A bnxt port whose firmware agent manages DCBX (LLD_MANAGED) takes no
// setdcbx at all: the plan refuses the change instead of failing mid-apply.
// In sync there, "firmware" is what it says: no warning.
func TestPlanRefusesDCBXChangeOnLLDManagedBnxt(t *testing.T) {
	root, sim := fixturehost.Copy(t, "bnxt-re-factory")
	ks := sim.State()
	*ks.Links[bnxtNetdev].DCB.DCBX = dcb.DCBXLLDManaged | dcb.DCBXVerIEEE
	sim = nictest.NewSim(ks)
	_, _, plan := planOn(t, root, sim, "[match]\ndrivers = [\"bnxt_en\"]\n[qos]\ndcbx = \"host\"\n")
	if len(plan.Refused) != 1 || plan.Refused[0].Key != bnxtNetdev+".qos.dcbx" || !strings.Contains(plan.Refused[0].Error, "LLD_MANAGED") {
		t.Fatalf("refused %+v", plan.Refused)
	}
	// The refusal predicts the driver's.
	if err := sim.SetDCBX(bnxtNetdev, dcb.DCBXHost|dcb.DCBXVerIEEE); !errors.Is(err, syscall.EINVAL) {
		t.Errorf("Sim setdcbx under LLD_MANAGED: %v, want EINVAL", err)
	}
	_, _, plan = planOn(t, root, sim, "[match]\ndrivers = [\"bnxt_en\"]\n[qos]\ndcbx = \"firmware\"\n")
	if plan.Changed() || len(plan.Refused)+len(plan.Warnings) != 0 {
		t.Errorf("firmware agent, firmware asked: %+v", plan)
	}
}
