package apply

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/rocectl/rocectl/host"
	"github.com/rocectl/rocectl/internal/testkit/fixturehost"
	"github.com/rocectl/rocectl/nccl"
	"github.com/rocectl/rocectl/nic"
	"github.com/rocectl/rocectl/nic/dcb"
	"github.com/rocectl/rocectl/nic/nictest"
	"github.com/rocectl/rocectl/nic/snapshot"
	"github.com/rocectl/rocectl/policy"
	"github.com/rocectl/rocectl/port"
	"github.com/rocectl/rocectl/statedir"
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
	return topoRigWith(t, fixture, profile, nil)
}

// topoRigWith is topoRig with setup run on the simulated kernel before
// the host is discovered and planned.
func topoRigWith(t *testing.T, fixture, profile string, setup func(*nictest.Sim)) *rig {
	t.Helper()
	root, sim := fixturehost.Copy(t, fixture)
	if setup != nil {
		setup(sim)
	}
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
	d, pl := planOf(h, d)
	return &rig{root: root, sim: sim, h: h, d: d, plan: pl,
		opts: Options{Store: Store{Store: statedir.Store{Dir: t.TempDir()}}, Retries: 1}}
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
	before := r.state(t)
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
	r.assertRestored(t, before, "the slaves and the bond")
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
	_, plan := planOf(h, policy.Resolve(p, h.Ports(h.Discover(), false)))
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

// Every per-physical-port setting of a LAG is one step for both slaves,
// with each slave's saved state (its DSCP APP table for the APP step),
// and such a journal round-trips through its file format, version 3.
func TestLAGStepsSpanBothSlavesAndRoundTrip(t *testing.T) {
	// One slave with a DSCP entry of its own, the other with none: each
	// slave's saved table is its own.
	r := topoRigWith(t, "cx5-roce-lag", lagProfile, ownDSCPEntry(t))
	txn, err := Begin(r.h, r.d, r.plan, "lag", r.opts)
	if err != nil {
		t.Fatal(err)
	}
	slaves := []string{"ens1f0np0", "ens1f1np1"}
	groups := map[string]bool{}
	for _, st := range txn.J.Steps {
		for _, c := range st.Changes {
			if c.Port == nil || c.Port.Master == "" {
				continue
			}
			if !slices.Equal(st.Netdevs(), slaves) || st.Scope != "bond0" {
				t.Errorf("step %s/%s: slave change %s in a step on %v, want one step on bond0 for %v", st.Scope, st.Group, c.Key, st.Netdevs(), slaves)
			}
		}
		if len(st.Slaves) > 0 {
			groups[st.Group] = true
		}
		if st.Group == "app" {
			for _, s := range st.Slaves {
				if s.DSCPApps == nil {
					t.Errorf("APP step: no saved APP table for %s", s.Netdev)
				}
			}
		}
	}
	for _, g := range []string{"pfc", "app", "qos.global_pause"} {
		if !groups[g] {
			t.Errorf("no LAG step %q (have %v)", g, groups)
		}
	}
	raw, err := os.ReadFile(r.opts.Store.JournalPath(txn.J.ID))
	if err != nil {
		t.Fatal(err)
	}
	j, err := DecodeJournal(raw)
	if err != nil {
		t.Fatal(err)
	}
	if j.Version != 3 {
		t.Errorf("journal with LAG steps written as version %d, want 3", j.Version)
	}
	if again, err := encodeJournal(j); err != nil || !bytes.Equal(again, raw) {
		t.Errorf("decoded and encoded again, the journal differs (%v):\n%s\n%s", err, again, raw)
	}
	// What the undo needs survived: each step's slaves, each slave's saved
	// APP table, each change on its slave.
	for i, st := range j.Steps {
		want := txn.J.Steps[i]
		if st.Scope != want.Scope || !slices.Equal(st.Netdevs(), want.Netdevs()) {
			t.Errorf("step %d: %s on %v, want %s on %v", i, st.Scope, st.Netdevs(), want.Scope, want.Netdevs())
			continue
		}
		for k, s := range st.Slaves {
			w := want.Slaves[k].DSCPApps
			if (s.DSCPApps == nil) != (w == nil) || (w != nil && len(s.DSCPApps.Entries)+len(w.Entries) > 0 && !slices.Equal(s.DSCPApps.Entries, w.Entries)) {
				t.Errorf("step %d slave %s: saved APP table %+v, want %+v", i, s.Netdev, s.DSCPApps, w)
			}
		}
		if st.Group == "app" {
			custom := dcb.App{Selector: dcb.SelDSCP, Priority: 3, Protocol: 46}
			if len(st.Slaves) != 2 || !slices.Equal(st.Slaves[0].DSCPApps.Entries, []dcb.App{custom}) || len(st.Slaves[1].DSCPApps.Entries) != 0 {
				t.Errorf("APP step: saved tables %+v, want ens1f0np0's own entry and none on ens1f1np1", st.Slaves)
			}
		}
		for k, p := range st.Parts() {
			if len(st.Slaves) == 0 {
				break
			}
			if !slices.Equal(stepKeys(p), stepKeys(want.Parts()[k])) {
				t.Errorf("step %d part %d: keys %v, want %v", i, k, stepKeys(p), stepKeys(want.Parts()[k]))
			}
			for _, c := range p.Changes {
				if c.Port == nil || c.Port.Netdev != p.Scope {
					t.Errorf("step %d: %s is not on %s", i, c.Key, p.Scope)
				}
			}
		}
	}
}

// ownDSCPEntry gives ens1f0np0 a DSCP APP entry that the default map
// does not have (46 on priority 3, not 46>>3 = 5), and ens1f1np1 none.
func ownDSCPEntry(t *testing.T) func(*nictest.Sim) {
	return func(sim *nictest.Sim) {
		if err := sim.AddApps("ens1f0np0", []dcb.App{{Selector: dcb.SelDSCP, Priority: 3, Protocol: 46}}); err != nil {
			t.Fatal(err)
		}
	}
}

// A write refused on the second slave of a LAG step: the first slave,
// already written, is put back before the earlier steps are rolled back,
// both slaves end as they were, and the error says so.
func TestLAGFaultOnSecondSlaveUndoesTheFirst(t *testing.T) {
	for _, op := range []string{snapshot.OpSetPFC, snapshot.OpAddApps, snapshot.OpSetPause} {
		t.Run(op, func(t *testing.T) {
			r := topoRigWith(t, "cx5-roce-lag", lagProfile, ownDSCPEntry(t))
			before := r.state(t)
			setupOps := len(r.sim.Ops())
			failed := false
			r.sim.Inject(func(o, ifname string) error {
				if o == op && ifname == "ens1f1np1" && !failed {
					failed = true
					return syscall.EIO
				}
				return nil
			})
			err := r.apply(t)
			var ae *ApplyError
			var le *LAGStepError
			if !errors.As(err, &ae) || !errors.As(err, &le) || !errors.Is(err, syscall.EIO) {
				t.Fatalf("apply = %v; want an ApplyError from a LAGStepError wrapping EIO", err)
			}
			if ae.RestoreErr != nil || le.UndoErr != nil {
				t.Fatalf("restore failed: %v / %v", ae.RestoreErr, le.UndoErr)
			}
			if le.Bond != "bond0" || le.Slave != "ens1f1np1" || !slices.Equal(le.PutBack, []string{"ens1f0np0"}) {
				t.Errorf("LAGStepError %+v, want bond0, failed on ens1f1np1, ens1f0np0 put back", le)
			}
			for _, want := range []string{"bond0 (ens1f0np0 + ens1f1np1): ", "ens1f1np1.", "LAG bond0: ens1f0np0 put back",
				"every slave holds what it held before this step", "host restored"} {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("error %q does not say %q", err, want)
				}
			}
			// The first slave's undo is the write right after its forward
			// write: nothing else ran in between (the second slave's
			// write was refused), before the earlier steps' undo.
			ops := r.sim.Ops()[setupOps:]
			i := slices.Index(ops, op+" ens1f0np0")
			if i < 0 || i+1 >= len(ops) || !strings.HasSuffix(ops[i+1], " ens1f0np0") {
				t.Errorf("writes %v: the first slave's %s is not followed by its undo", ops, op)
			}
			r.assertRestored(t, before, "slaves")
		})
	}
}
