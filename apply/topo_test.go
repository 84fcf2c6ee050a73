package apply

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rocectl/rocectl/host"
	"github.com/rocectl/rocectl/internal/fixturehost"
	"github.com/rocectl/rocectl/nccl"
	"github.com/rocectl/rocectl/nic"
	"github.com/rocectl/rocectl/nic/dcb"
	"github.com/rocectl/rocectl/policy"
	"github.com/rocectl/rocectl/port"
)

const lagProfile = `name = "lag"
[match]
drivers = ["mlx5_core"]
[link]
mtu = 9000
[qos]
trust = "dscp"
dscp_to_priority = "default"
pfc_priorities = [3]
global_pause = false
pfc_storm_prevention = "auto"
[roce]
default_tos = 106
[nccl]
write = "/etc/nccl.conf"
IB_HCA = "auto"
IB_GID_INDEX = "auto"
`

// topoRig is newRig with an inline profile.
func topoRig(t *testing.T, fixture, profile string) *rig {
	t.Helper()
	root, sim := fixturehost.Copy(t, fixture)
	if err := os.MkdirAll(filepath.Join(root, "etc"), 0o755); err != nil {
		t.Fatal(err)
	}
	pf := filepath.Join(t.TempDir(), "p.toml")
	if err := os.WriteFile(pf, []byte(profile), 0o644); err != nil {
		t.Fatal(err)
	}
	p, err := policy.Load(pf, policy.LoadOptions{AllowInsecure: true})
	if err != nil {
		t.Fatal(err)
	}
	h := &host.Host{FS: nic.NewFS(root, false), K: sim}
	d := policy.Resolve(p, h.Ports(h.Discover(), true))
	nccl.Resolve(d)
	return &rig{root: root, sim: sim, h: h, d: d, plan: h.Plan(d),
		opts: Options{Store: Store{Dir: t.TempDir()}, Retries: 1}}
}

// On a RoCE LAG the per-physical-port settings go to both slaves, the MTU
// to the bond, rdma_cm and NCCL to the LAG device; apply then audit is in
// sync, and rollback restores both slaves byte for byte.
func TestLAGApplyAuditRollback(t *testing.T) {
	r := topoRig(t, "cx5-roce-lag", lagProfile)
	keys := map[string]bool{}
	for _, c := range r.plan.Changes {
		keys[c.Key] = true
		if strings.HasPrefix(c.Key, "bond0.qos.") {
			t.Errorf("%s: a per-physical-port setting planned on the bond", c.Key)
		}
	}
	for _, k := range []string{"bond0.link.mtu", "ens1f0np0.qos.pfc", "ens1f1np1.qos.pfc", "ens1f0np0.qos.trust",
		"ens1f1np1.qos.trust", "ens1f0np0.qos.global_pause", "ens1f1np1.qos.global_pause", "mlx5_bond_0.roce.default_roce_tos"} {
		if !keys[k] {
			t.Errorf("plan has no change %s (plan: %v)", k, keys)
		}
	}
	var hca string
	for _, s := range r.d.Host {
		if s.Arg == "NCCL_IB_HCA" {
			hca = s.Value
		}
	}
	if hca != "=mlx5_bond_0:1" {
		t.Errorf("NCCL_IB_HCA %q, want =mlx5_bond_0:1", hca)
	}
	before := r.sim.Config()
	beforeF := fixturehost.Files(t, r.root)
	txn, err := Begin(r.h, r.d, r.plan, "lag", r.opts)
	if err != nil {
		t.Fatal(err)
	}
	if err := txn.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := txn.Finish(time.Time{}); err != nil {
		t.Fatal(err)
	}
	if after := policy.Diff(r.d, r.h.Observe(r.d)); after.Changed() || len(after.Errors) > 0 {
		t.Fatalf("audit after apply: %+v", after)
	}
	st := r.sim.State().Links
	for _, nd := range []string{"ens1f0np0", "ens1f1np1"} {
		if st[nd].DCB.PFC.Enable != 1<<3 || st[nd].Pause.Rx || st[nd].Pause.Tx {
			t.Errorf("%s: pfc %#x pause %+v", nd, st[nd].DCB.PFC.Enable, *st[nd].Pause)
		}
	}
	if st["bond0"].Link.MTU != 9000 {
		t.Errorf("bond0 MTU %d", st["bond0"].Link.MTU)
	}
	j, err := r.opts.Store.LastCommitted()
	if err != nil || j == nil {
		t.Fatal(err)
	}
	if err := Rollback(r.h, j, r.opts); err != nil {
		t.Fatal(err)
	}
	if r.sim.Config() != before {
		t.Error("kernel state of the slaves and the bond not restored")
	}
	if d := fixturehost.DiffTrees(beforeF, fixturehost.Files(t, r.root)); len(d) > 0 {
		t.Errorf("files not restored: %v", d)
	}
}

// A LAG whose slaves differ is drift, and the plan says so on each slave.
func TestLAGSlavesThatDifferAreReported(t *testing.T) {
	root, sim := fixturehost.Copy(t, "cx5-roce-lag")
	if err := sim.SetPFC("ens1f0np0", pfcWith(t, sim, "ens1f0np0", 1<<3)); err != nil {
		t.Fatal(err)
	}
	h := &host.Host{FS: nic.NewFS(root, false), K: sim}
	pf := filepath.Join(t.TempDir(), "p.toml")
	if err := os.WriteFile(pf, []byte("name = \"x\"\n[qos]\npfc_priorities = [3]\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	p, err := policy.Load(pf, policy.LoadOptions{AllowInsecure: true})
	if err != nil {
		t.Fatal(err)
	}
	d := policy.Resolve(p, h.Ports(h.Discover(), false))
	plan := h.Plan(d)
	var pfc []policy.Change // the companion global pause change comes with it
	for _, c := range plan.Changes {
		if c.Kind == policy.KindPFC {
			pfc = append(pfc, c)
		}
	}
	if len(pfc) != 1 || pfc[0].Key != "ens1f1np1.qos.pfc" {
		t.Fatalf("PFC changes %+v, want ens1f1np1.qos.pfc only", pfc)
	}
	want := "LAG bond0: slaves differ (ens1f0np0 = [3], ens1f1np1 = [])"
	if !strings.Contains(pfc[0].Note, want) {
		t.Errorf("note %q, want it to contain %q", pfc[0].Note, want)
	}
}

// pfcWith is nd's PFC object with enable set.
func pfcWith(t *testing.T, k nic.Kernel, nd string, enable uint8) dcb.PFC {
	t.Helper()
	st, err := k.DCB(nd)
	if err != nil || st.PFC == nil {
		t.Fatalf("%s: no PFC (%v)", nd, err)
	}
	p := *st.PFC
	p.Enable = enable
	return p
}

// On an SR-IOV host the VFs' PF-owned settings are skipped with a line
// naming the PF, and the rest is left alone unless [match] roles names
// "vf"; the PF is configured as usual.
func TestVFsSkipPFOwnedSettings(t *testing.T) {
	r := topoRig(t, "cx4lx-sriov", lagProfile)
	reasons := map[string]string{}
	for _, u := range r.plan.Unsupported {
		reasons[u.Key] = u.Reason
	}
	if got := reasons["enp7s2f2.qos.pfc"]; !strings.HasPrefix(got, "set on enp7s0f0np0") {
		t.Errorf("enp7s2f2.qos.pfc: %q, want set on enp7s0f0np0", got)
	}
	if got := reasons["enp7s2f3.link.mtu"]; !strings.Contains(got, `roles includes "vf"`) {
		t.Errorf("enp7s2f3.link.mtu: %q", got)
	}
	for _, c := range r.plan.Changes {
		if c.Port != nil && c.Port.Role == port.RoleVF {
			t.Errorf("change on a VF: %s", c.Key)
		}
	}
	var hca string
	for _, s := range r.d.Host {
		if s.Arg == "NCCL_IB_HCA" {
			hca = s.Value
		}
	}
	if hca != "=mlx5_0:1" {
		t.Errorf("NCCL_IB_HCA %q, want the PF only", hca)
	}

	// Targeting VFs explicitly: they take what a VF can (MTU), never the
	// PF's QoS.
	r = topoRig(t, "cx4lx-sriov", strings.Replace(lagProfile, `drivers = ["mlx5_core"]`, `roles = ["vf"]`, 1))
	mtu := false
	for _, c := range r.plan.Changes {
		if c.Key == "enp7s2f2.link.mtu" {
			mtu = true
		}
		if c.Port != nil && c.Port.Role != port.RoleVF {
			t.Errorf("change on a non-VF port: %s", c.Key)
		}
	}
	if !mtu {
		t.Errorf("roles = [\"vf\"]: no MTU change on the VF: %+v", r.plan.Changes)
	}
}
