package apply

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
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
	"github.com/rocectl/rocectl/statedir"
)

func profilePath(name string) string {
	return filepath.Join(fixturehost.RepoRoot(), "profiles", name)
}

type rig struct {
	root string
	sim  *nictest.Sim
	h    *host.Host
	d    *policy.Desired
	plan *policy.Plan
	opts Options
}

// hostState is the whole host as a rollback must leave it: the simulated
// kernel's configuration and every file under the root.
type hostState struct {
	kernel string
	files  map[string]string
}

// state records the host now.
func (r *rig) state(t *testing.T) hostState {
	t.Helper()
	return hostState{kernel: r.sim.Config(), files: fixturehost.Files(t, r.root)}
}

// assertRestored fails t unless the host is again as before, naming what
// differs; what says which case it is.
func (r *rig) assertRestored(t *testing.T, before hostState, what string) {
	t.Helper()
	if what != "" {
		what += ": "
	}
	if got := r.sim.Config(); got != before.kernel {
		t.Errorf("%skernel state not restored:\n got %s\nwant %s", what, got, before.kernel)
	}
	if d := fixturehost.DiffTrees(before.files, fixturehost.Files(t, r.root)); len(d) > 0 {
		t.Errorf("%sfiles not restored: %v", what, d)
	}
}

// newRig is a writable copy of a fixture host with a profile resolved and
// planned against it.
func newRig(t testing.TB, fixture, profile string) *rig {
	t.Helper()
	root, sim := fixturehost.Copy(t, fixture)
	if err := os.MkdirAll(filepath.Join(root, "etc"), 0o755); err != nil { // for [nccl] write
		t.Fatal(err)
	}
	h := &host.Host{FS: nic.NewFS(root, false), K: sim}
	p, err := policy.Load(profilePath(profile), policy.LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	d := policy.Resolve(p, h.Ports(h.Discover(), true))
	nccl.Resolve(d)
	if len(d.Ports) == 0 {
		t.Fatalf("profile %s matches no port of %s", profile, fixture)
	}
	d, pl := planOf(h, d)
	return &rig{root: root, sim: sim, h: h, d: d, plan: pl,
		opts: Options{Store: Store{Store: statedir.Store{Dir: t.TempDir()}}, Retries: 1}}
}

func (r *rig) apply(t *testing.T) error {
	t.Helper()
	txn, err := Begin(r.h, r.d, r.plan, "test", r.opts)
	if err != nil {
		t.Fatal(err)
	}
	return txn.Run(context.Background())
}

func TestApplyRecipeOnFactoryHostReachesProfile(t *testing.T) {
	r := newRig(t, "cx6dx-ofed-factory", "connectx-lossless.toml")
	if len(r.plan.Changes) != 46 {
		t.Fatalf("plan has %d changes, want the 46 of the factory host", len(r.plan.Changes))
	}
	txn, err := Begin(r.h, r.d, r.plan, "test", r.opts)
	if err != nil {
		t.Fatal(err)
	}
	if err := txn.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	// Until Finish, the journal on disk is still open: a crash now would be
	// recovered by rolling back.
	if open, _ := r.opts.Store.Open(); len(open) != 1 {
		t.Fatalf("open journals after Run: %v", open)
	}
	if err := txn.Finish(time.Time{}); err != nil {
		t.Fatal(err)
	}
	after := policy.Diff(r.d, r.h.Observe(r.d))
	if after.Changed() || len(after.Unsupported) > 0 || len(after.Errors) > 0 {
		t.Fatalf("after apply the host still differs: %+v", after)
	}
	// What the kernel and the files hold, independently of the backend's
	// own read path.
	st := r.sim.State().Links["ens1f0np0"]
	if st.Link.MTU != 9000 || st.DCB.PFC.Enable != 1<<3 || st.Pause.Rx || st.Pause.Tx || *st.DCB.DCBX&(dcb.DCBXHost|dcb.DCBXVerIEEE) != dcb.DCBXHost|dcb.DCBXVerIEEE {
		t.Errorf("kernel state: mtu %d pfc %#x pause %+v dcbx %#x", st.Link.MTU, st.DCB.PFC.Enable, *st.Pause, *st.DCB.DCBX)
	}
	dscp := 0
	for _, a := range st.DCB.Apps {
		if a.Selector == dcb.SelDSCP {
			if int(a.Priority) != int(a.Protocol)>>3 {
				t.Errorf("APP entry %+v is not the default map", a)
			}
			dscp++
		}
	}
	if dscp != 64 {
		t.Errorf("%d DSCP APP entries, want 64", dscp)
	}
	for file, want := range map[string]string{
		"sys/class/net/ens1f0np0/ecn/roce_np/enable/3":              "1",
		"sys/class/net/ens1f0np0/ecn/roce_np/enable/0":              "0",
		"sys/class/net/ens1f0np0/ecn/roce_rp/enable/3":              "1",
		"sys/kernel/config/rdma_cm/mlx5_0/ports/1/default_roce_tos": "106",
		"sys/class/infiniband/mlx5_0/tc/1/traffic_class":            "106",
	} {
		got, err := os.ReadFile(filepath.Join(r.root, file))
		if err != nil || strings.TrimSpace(string(got)) != want {
			t.Errorf("%s = %q (%v), want %q", file, got, err, want)
		}
	}
	// The journal is final and records every step.
	js, _ := r.opts.Store.List()
	if len(js) != 1 || js[0].State != StateCommitted || js[0].Done != len(js[0].Steps) {
		t.Fatalf("journal: %+v", js)
	}
}

func TestApplyOnLosslessHostChangesNothing(t *testing.T) {
	r := newRig(t, "cx6dx-ofed-lossless", "connectx-lossless.toml")
	if r.plan.Changed() {
		t.Fatalf("plan on an already configured host: %+v", r.plan.Changes)
	}
}

// The fault matrix: refuse each write of the recipe's apply in turn, every
// kernel call and every file it changes, and check the host afterwards is
// byte-identical to before. Kernel calls fail in the simulator (EINVAL, as a
// driver refuses a value); files fail at the kernel's file boundary (the
// attribute, or the directory of a file the apply creates, refuses
// changes with EPERM but reads as before), with no hook in nic.FS.
func TestFaultMatrixRestoresHostExactly(t *testing.T) {
	// The two slowest of the package (18 and 10 s), each on hosts and
	// a state dir of its own: they overlap, on a second core.
	t.Parallel()
	// First a clean run: the kernel writes it makes, the files it changes.
	clean := newRig(t, "cx6dx-ofed-factory", "fat-tree-32gpu-100g.toml")
	cleanF := fixturehost.Files(t, clean.root)
	if err := clean.apply(t); err != nil {
		t.Fatal(err)
	}
	kernelWrites := len(clean.sim.Ops())
	var refuse []string // the entries to make unchangeable, one per fault
	seen := map[string]bool{}
	for _, rel := range fixturehost.DiffTrees(cleanF, fixturehost.Files(t, clean.root)) {
		// A created entry fails where it would be created: at the
		// nearest directory that existed before.
		for rel = strings.TrimSuffix(rel, "/"); rel != "."; rel = filepath.Dir(rel) {
			if _, ok := cleanF[rel]; ok {
				break
			}
			if _, ok := cleanF[rel+"/"]; ok {
				break
			}
		}
		if !seen[rel] {
			seen[rel] = true
			refuse = append(refuse, rel)
		}
	}
	writes := kernelWrites + len(refuse)
	if writes < 40 {
		t.Fatalf("only %d writes in a full apply", writes)
	}
	t.Logf("%d writes in a full apply: %d kernel calls, %d files", writes, kernelWrites, len(refuse))

	// check runs the apply with one fault in place and checks the host.
	check := func(t *testing.T, r *rig, errno syscall.Errno, what func() string) {
		t.Helper()
		before := r.state(t)
		err := r.apply(t)
		var ae *ApplyError
		if !errors.As(err, &ae) || !errors.Is(err, errno) {
			t.Fatalf("%s: want an ApplyError wrapping %v, got %v", what(), errno, err)
		}
		if ae.RestoreErr != nil {
			t.Fatalf("%s: rollback failed: %v", what(), ae.RestoreErr)
		}
		r.assertRestored(t, before, what())
	}
	for k := range kernelWrites {
		t.Run(fmt.Sprintf("kernel-%02d", k), func(t *testing.T) {
			r := newRig(t, "cx6dx-ofed-factory", "fat-tree-32gpu-100g.toml")
			n, failed := 0, ""
			r.sim.Inject(func(op, ifname string) error {
				n++
				if n == k+1 {
					failed = op + " " + ifname
					return syscall.EINVAL
				}
				return nil
			})
			check(t, r, syscall.EINVAL, func() string { return failed })
		})
	}
	for _, rel := range refuse {
		t.Run("file-"+rel, func(t *testing.T) {
			r := newRig(t, "cx6dx-ofed-factory", "fat-tree-32gpu-100g.toml")
			nictest.RefuseWrites(t, filepath.Join(r.root, rel))
			check(t, r, syscall.EPERM, func() string { return "write to " + rel })
		})
	}
}

func TestWriteErrorNamesPortSettingValueAndReason(t *testing.T) {
	r := newRig(t, "cx6dx-ofed-factory", "connectx-lossless.toml")
	once := false
	r.sim.Inject(func(op, ifname string) error {
		if op == snapshot.OpSetPFC && ifname == "ens1f1np1" && !once {
			once = true
			return syscall.ENODEV
		}
		return nil
	})
	err := r.apply(t)
	want := "ens1f1np1: ens1f1np1.qos.pfc = [3]: "
	if err == nil || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), "ENODEV") || !strings.Contains(err.Error(), "host restored") {
		t.Fatalf("error %q should name port, key, value, errno and say the host was restored", err)
	}
}

func TestRollbackOfCommittedApply(t *testing.T) {
	r := newRig(t, "cx6dx-ofed-factory", "connectx-lossless.toml")
	before := r.state(t)
	txn, err := Begin(r.h, r.d, r.plan, "x", r.opts)
	if err != nil {
		t.Fatal(err)
	}
	if err := txn.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := txn.Finish(time.Time{}); err != nil {
		t.Fatal(err)
	}
	j, err := r.opts.Store.LastCommitted()
	if err != nil || j == nil {
		t.Fatal(err)
	}
	if err := Rollback(r.h, j, r.opts); err != nil {
		t.Fatal(err)
	}
	r.assertRestored(t, before, "")
	j2, _ := r.opts.Store.Load(j.ID)
	if j2.State != StateRolledBack || len(j2.Restored) != len(r.plan.Changes) {
		t.Errorf("journal after rollback: state %s, %d restored of %d", j2.State, len(j2.Restored), len(r.plan.Changes))
	}
}

// A crash after k steps (the journal on disk still says nothing was done,
// the process is gone) is recovered from the journal alone.
func TestRecoveryFromJournalAfterCrash(t *testing.T) {
	for _, k := range []int{0, 1, 5, 9, 20} {
		r := newRig(t, "cx6dx-ofed-factory", "connectx-lossless.toml")
		before := r.state(t)
		crash := errors.New("crash")
		r.opts.BeforeStep = func(i int, st host.Step) error {
			if i == k {
				return crash
			}
			return nil
		}
		txn, err := Begin(r.h, r.d, r.plan, "x", r.opts)
		if err != nil {
			t.Fatal(err)
		}
		// Write steps 0..k-1 the way Run does, then "die": no rollback.
		for i := 0; i < k; i++ {
			if err := r.h.WriteStep(context.Background(), &host.Owed{}, r.d, txn.J.Steps[i], false); err != nil {
				t.Fatal(err)
			}
		}
		// A new process: only the state dir survives.
		open, err := r.opts.Store.Open()
		if err != nil || len(open) != 1 || open[0].State != StateApplying {
			t.Fatalf("open journals: %v %v", open, err)
		}
		h2 := &host.Host{FS: nic.NewFS(r.root, false), K: r.sim}
		if err := Rollback(h2, open[0], Options{Store: r.opts.Store, Retries: 1}); err != nil {
			t.Fatal(err)
		}
		r.assertRestored(t, before, fmt.Sprintf("k=%d", k))
	}
}

func TestStepsGroupObjectsWrittenTogether(t *testing.T) {
	r := newRig(t, "cx6dx-ofed-factory", "fat-tree-32gpu-100g.toml")
	var groups []string
	steps, err := host.Steps(r.plan)
	if err != nil {
		t.Fatal(err)
	}
	for _, st := range steps {
		if st.Scope == "ens1f0np0" {
			groups = append(groups, st.Group)
		}
	}
	// The profile manages buffers and raises the MTU: the recompute of
	// mlx5's buffer thresholds that rollback needs goes first (xoff.go).
	// The buffers go before PFC: written after it, mlx5 would check the
	// new map (priority 3 into buffer 1) against buffer 1's size before
	// the write, 0 (plan/mlx5buffers.go). The PFC change toggles the link and
	// mlx5 computes the thresholds while it trains: they are recomputed
	// once it has its speed again, after the port's last buffer or PFC
	// write, and again after the rollback has put PFC back (xoff.go,
	// planToggleRecomputes).
	want := []string{"link.xoff_recompute_on_rollback", "link.mtu", "qos.global_pause", "qos.dcbx", "app", "buffer",
		"qos.pfc_xoff_recompute_on_rollback", "pfc", "qos.pfc_xoff_recompute", "qos.pfc_storm_prevention"}
	if !reflect.DeepEqual(groups, want) {
		t.Errorf("steps of ens1f0np0: %v, want %v", groups, want)
	}
}

func TestUnsupportedOnUpstreamMlx5(t *testing.T) {
	r := newRig(t, "cx7-upstream-factory", "connectx-lossless.toml")
	reasons := map[string]string{}
	for _, u := range r.plan.Unsupported {
		reasons[u.Key] = u.Reason
	}
	if !strings.Contains(reasons["rocep8s0f0.ecn.np.enable.3"], "DOCA-OFED") || !strings.Contains(reasons["rocep8s0f0.roce.traffic_class"], "DOCA-OFED") {
		t.Fatalf("unsupported reasons: %v", reasons)
	}
	// The rest applies, and audits clean afterwards.
	if err := r.apply(t); err != nil {
		t.Fatal(err)
	}
	if after := policy.Diff(r.d, r.h.Observe(r.d)); after.Changed() {
		t.Fatalf("drift after apply: %+v", after.Changes)
	}
}

// Broadcom: DCB needs DCBX host mode (bnxt_dcb.c), CNP marking goes to the
// out-of-tree bnxt_re configfs in hex and is committed through "apply".
func TestApplyOnBnxtFixture(t *testing.T) {
	root, sim := fixturehost.Copy(t, "bnxt-re-factory")
	h := &host.Host{FS: nic.NewFS(root, false), K: sim}
	prof := filepath.Join(t.TempDir(), "bnxt.toml")
	// bnxt takes PFC only after an ETS write (bnxt_hwrm_queue_pfc_cfg):
	// the profile gives [qos.ets].
	os.WriteFile(prof, []byte("[match]\ndrivers = [\"bnxt_en\"]\n[link]\nmtu = 9000\n[qos]\ndcbx = \"host\"\npfc_priorities = [3]\nglobal_pause = false\n"+
		"[qos.ets]\npriority_to_tc = [0, 0, 0, 1, 0, 0, 0, 0]\ntc_tsa = [\"ets\", \"ets\", \"strict\", \"strict\", \"strict\", \"strict\", \"strict\", \"strict\"]\ntc_bandwidth = [50, 50, 0, 0, 0, 0, 0, 0]\n"+
		"[ecn]\ncnp_dscp = 48\ncnp_priority = 6\n[roce]\ndefault_tos = 106\n"), 0o600)
	p, err := policy.Load(prof, policy.LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	d := policy.Resolve(p, h.Ports(h.Discover(), true))
	nccl.Resolve(d)
	d, plan := planOf(h, d)
	txn, err := Begin(h, d, plan, "x", Options{Store: Store{Store: statedir.Store{Dir: t.TempDir()}}, Retries: 1})
	if err != nil {
		t.Fatal(err)
	}
	if err := txn.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	if after := policy.Diff(d, h.Observe(d)); after.Changed() {
		t.Fatalf("drift after apply: %+v", after.Changes)
	}
	cc := "sys/kernel/config/bnxt_re/bnxt_re0/ports/1/cc/"
	for file, want := range map[string]string{cc + "cnp_dscp": "0x30", cc + "cnp_prio": "0x6", cc + "apply": "0x1",
		"sys/kernel/config/rdma_cm/bnxt_re0/ports/1/default_roce_tos": "106"} {
		got, _ := os.ReadFile(filepath.Join(root, file))
		if strings.TrimSpace(string(got)) != want {
			t.Errorf("%s = %q, want %q", file, got, want)
		}
	}
	if st := sim.State().Links["enp202s0f1np1"]; st.DCB.PFC.Enable != 1<<3 || st.Link.MTU != 9000 {
		t.Errorf("kernel: pfc %#x mtu %d", st.DCB.PFC.Enable, st.Link.MTU)
	}
}

// Without DCBX host mode bnxt refuses PFC: the kernel's EINVAL becomes one
// line naming port, setting and value, and nothing stays changed.
func TestBnxtRefusesPFCWithoutHostDCBX(t *testing.T) {
	root, sim := fixturehost.Copy(t, "bnxt-re-factory")
	before := sim.Config()
	h := &host.Host{FS: nic.NewFS(root, false), K: sim}
	prof := filepath.Join(t.TempDir(), "bnxt.toml")
	os.WriteFile(prof, []byte("[link]\nmtu = 9000\n[qos]\npfc_priorities = [3]\n"), 0o600)
	p, _ := policy.Load(prof, policy.LoadOptions{})
	d := policy.Resolve(p, h.Ports(h.Discover(), true))
	nccl.Resolve(d)
	txn, err := Begin(h, d, policy.Diff(d, h.Observe(d)), "x", Options{Store: Store{Store: statedir.Store{Dir: t.TempDir()}}, Retries: 1})
	if err != nil {
		t.Fatal(err)
	}
	err = txn.Run(context.Background())
	if err == nil || !strings.Contains(err.Error(), "enp202s0f1np1.qos.pfc = [3]: ") || !strings.Contains(err.Error(), "EINVAL") {
		t.Fatalf("error: %v", err)
	}
	if sim.Config() != before {
		t.Error("MTU change not rolled back")
	}
}

// [nccl] write: the managed block goes to the top of the user's file, NCCL
// (by its own parsing rules) sees the derived values, user lines stay byte
// for byte, and rollback restores the previous file exactly.
func TestNCCLFileIsJournalledAndRestoredByteForByte(t *testing.T) {
	r := newRig(t, "cx6dx-ofed-lossless", "base.toml")
	conf := filepath.Join(r.root, "etc", "nccl.conf")
	user := "# site defaults\r\nNCCL_DEBUG=WARN\r\nNCCL_IB_TC=96\nNCCL_SOCKET_IFNAME==eth0"
	if err := os.WriteFile(conf, []byte(user), 0o640); err != nil {
		t.Fatal(err)
	}
	r.plan = policy.Diff(r.d, r.h.Observe(r.d))
	txn, err := Begin(r.h, r.d, r.plan, "x", r.opts)
	if err != nil {
		t.Fatal(err)
	}
	if err := txn.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	data, _ := os.ReadFile(conf)
	seen := map[string]string{}
	for _, v := range nccl.ParseConf(data) {
		seen[v.Name] = v.Value
	}
	// What NCCL itself would set: the block wins over the user's IB_TC.
	if seen["NCCL_IB_TC"] != "106" || seen["NCCL_IB_HCA"] != "=mlx5_0:1,mlx5_1:1" || seen["NCCL_DEBUG"] != "WARN" {
		t.Fatalf("NCCL would see %v\n%s", seen, data)
	}
	if !strings.HasSuffix(string(data), user) {
		t.Errorf("user lines not kept byte for byte:\n%q", data)
	}
	if err := Rollback(r.h, txn.J, r.opts); err != nil {
		t.Fatal(err)
	}
	after, _ := os.ReadFile(conf)
	if string(after) != user {
		t.Errorf("after rollback:\n%q\nwant\n%q", after, user)
	}
	if fi, _ := os.Stat(conf); fi.Mode().Perm() != 0o640 {
		t.Errorf("mode after rollback %v, want 0640", fi.Mode().Perm())
	}
}

// An NCCL file that apply would refuse to rewrite (a symlink: rewriting it
// would replace the link; reading through it as root could copy another
// file's lines) is unreadable to the audit too, with the same reason, so
// the plan shows it before anything is written, as an error rather than a
// change: the apply leaves the link and the file it points to alone.
func TestNCCLFileSymlinkIsUnreadable(t *testing.T) {
	r := newRig(t, "cx6dx-ofed-lossless", "base.toml")
	real := filepath.Join(r.root, "etc", "nccl.real")
	if err := os.WriteFile(real, []byte("NCCL_IB_TC=106\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("nccl.real", filepath.Join(r.root, "etc", "nccl.conf")); err != nil {
		t.Fatal(err)
	}
	o := r.h.Observe(r.d)
	n := 0
	for _, s := range r.d.Host {
		if s.Kind != policy.KindNCCL {
			continue
		}
		n++
		if e := o.Errors[s.Key]; !strings.Contains(e, "is a symlink; point rocectl at the file it links to") {
			t.Errorf("%s: error %q, value %q; want it unreadable as a symlink", s.Key, e, o.Values[s.Key])
		}
	}
	if n == 0 {
		t.Fatal("the profile has no NCCL setting")
	}
	r.plan = policy.Diff(r.d, o)
	for _, c := range r.plan.Changes {
		if c.Kind == policy.KindNCCL {
			t.Errorf("planned %s although its file is unreadable", c.Key)
		}
	}
	if err := r.apply(t); err != nil {
		t.Fatal(err)
	}
	if got, _ := os.ReadFile(real); string(got) != "NCCL_IB_TC=106\n" {
		t.Errorf("the link's target now holds %q", got)
	}
	if target, err := os.Readlink(filepath.Join(r.root, "etc", "nccl.conf")); err != nil || target != "nccl.real" {
		t.Errorf("the link is now %q, %v", target, err)
	}
}

// mlx5's enable_roce is a driverinit parameter: rocectl sets it, reads it
// back, and says it takes effect only after a devlink reload.
func TestDevlinkDriverinitNeedsReload(t *testing.T) {
	root, sim := fixturehost.Copy(t, "cx6dx-ofed-factory")
	h := &host.Host{FS: nic.NewFS(root, false), K: sim}
	prof := filepath.Join(t.TempDir(), "dl.toml")
	os.WriteFile(prof, []byte("[devlink]\nenable_roce = false\n"), 0o600)
	p, err := policy.Load(prof, policy.LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	d := policy.Resolve(p, h.Ports(h.Discover(), true))
	nccl.Resolve(d)
	plan := policy.Diff(d, h.Observe(d))
	if len(plan.Changes) != 2 || !strings.Contains(plan.Changes[0].Note, "devlink dev reload pci/0000:3b:00.0") {
		t.Fatalf("plan: %+v", plan.Changes)
	}
	txn, _ := Begin(h, d, plan, "x", Options{Store: Store{Store: statedir.Store{Dir: t.TempDir()}}, Retries: 1})
	if err := txn.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	params := sim.State().Devlink["pci/0000:3b:00.0"]
	if len(params) != 1 || params[0].Values[0].Value != false {
		t.Fatalf("devlink state %+v", params)
	}
}

// TestRollbackRootSpelledDifferently is the reproducer: the
// journal recorded --root as typed, so an apply made with a relative root
// (through a symlink) was refused by a rollback given the absolute path.
// The journal now records the canonical root, and either spelling rolls
// back.
func TestRollbackRootSpelledDifferently(t *testing.T) {
	r := newRig(t, "cx6dx-ofed-factory", "connectx-lossless.toml")
	before := r.state(t)
	link := filepath.Join(t.TempDir(), "tree")
	if err := os.Symlink(r.root, link); err != nil {
		t.Fatal(err)
	}
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	rel, err := filepath.Rel(wd, link)
	if err != nil {
		t.Fatal(err)
	}
	r.h.FS = nic.NewFS(rel, false)
	if err := r.apply(t); err != nil {
		t.Fatal(err)
	}
	open, err := r.opts.Store.Open()
	if err != nil || len(open) != 1 {
		t.Fatalf("open journals: %v %v", open, err)
	}
	canon, err := filepath.EvalSymlinks(r.root)
	if err != nil {
		t.Fatal(err)
	}
	if open[0].Root != canon {
		t.Errorf("journal root %q, want the canonical %q", open[0].Root, canon)
	}
	h2 := &host.Host{FS: nic.NewFS(r.root, false), K: r.sim}
	if err := Rollback(h2, open[0], Options{Store: r.opts.Store, Retries: 1}); err != nil {
		t.Fatal(err)
	}
	r.assertRestored(t, before, "")
	// Another tree is still refused.
	other := &host.Host{FS: nic.NewFS(t.TempDir(), false), K: r.sim}
	if err := Rollback(other, open[0], Options{Store: r.opts.Store, Retries: 1}); err == nil {
		t.Error("rollback on another root was not refused")
	}
}

// A failure at the first write puts nothing back, and the error says so:
// every journalled setting reads back at its previous value, none is
// counted as restored (the output never says "restored" unless it was).
func TestFirstWriteFailedSaysNothingWasPutBack(t *testing.T) {
	r := newRig(t, "cx6dx-ofed-factory", "connectx-lossless.toml")
	before := r.state(t)
	writes := 0
	r.sim.Inject(func(op, ifname string) error {
		if strings.HasPrefix(op, "set") {
			writes++
			return syscall.EINVAL
		}
		return nil
	})
	txn, err := Begin(r.h, r.d, r.plan, "test", r.opts)
	if err != nil {
		t.Fatal(err)
	}
	err = txn.Run(context.Background())
	var ae *ApplyError
	if !errors.As(err, &ae) {
		t.Fatalf("Run: %v, want an *ApplyError", err)
	}
	r.assertRestored(t, before, "")
	if writes != 1 {
		t.Errorf("%d kernel writes, want the 1 that failed", writes)
	}
	if len(ae.Restored) != 0 || len(ae.Unchanged) != len(r.plan.Changes) {
		t.Errorf("restored %d, unchanged %d; want 0 and all %d", len(ae.Restored), len(ae.Unchanged), len(r.plan.Changes))
	}
	want := fmt.Sprintf("host as it was: all %d setting(s) read back at their previous values, nothing needed putting back", len(r.plan.Changes))
	if msg := err.Error(); !strings.Contains(msg, want) || strings.Contains(msg, "restored") {
		t.Errorf("error %q\nwant it to contain %q and not to say restored", msg, want)
	}
	j, lerr := r.opts.Store.Load(txn.J.ID)
	if lerr != nil || len(j.Restored) != 0 || len(j.Unchanged) != len(r.plan.Changes) {
		t.Errorf("journal on disk: %v; restored %d, unchanged %d", lerr, len(j.Restored), len(j.Unchanged))
	}
}

// The NCCL file's directory is the one its content was saved from, or
// nothing is written: a user who can rename a directory on the file's path
// (one in their home) and puts a symlink there between the save and the
// write, or between the apply and its rollback, would otherwise have root
// write the saved content (theirs) into the directory the link names
// (/etc/modprobe.d: root code execution), or remove a file there.
func TestNCCLWriteAndRestoreRefuseASwappedDirectory(t *testing.T) {
	const file = "/home/alice/jobs/nccl.conf"
	const evil = "install dummy0 /bin/sh -c id\n"
	for _, when := range []string{"before the write", "before the rollback"} {
		t.Run(when, func(t *testing.T) {
			r := newRig(t, "cx6dx-ofed-lossless", "base.toml")
			jobs := filepath.Join(r.root, "home", "alice", "jobs")
			target := filepath.Join(r.root, "etc", "modprobe.d")
			for _, d := range []string{jobs, target} {
				if err := os.MkdirAll(d, 0o755); err != nil {
					t.Fatal(err)
				}
			}
			if err := os.WriteFile(filepath.Join(jobs, "nccl.conf"), []byte(evil), 0o644); err != nil {
				t.Fatal(err)
			}
			*r.d.Profile.NCCL.Write = file
			r.plan = policy.Diff(r.d, r.h.Observe(r.d))
			swap := func() {
				t.Helper()
				if err := os.Rename(jobs, jobs+".old"); err != nil {
					t.Fatal(err)
				}
				if err := os.Symlink("/etc/modprobe.d", jobs); err != nil {
					t.Fatal(err)
				}
			}
			txn, err := Begin(r.h, r.d, r.plan, "x", r.opts)
			if err != nil {
				t.Fatal(err)
			}
			if when == "before the write" {
				swap()
			}
			runErr := txn.Run(context.Background())
			switch when {
			case "before the write":
				if !errors.Is(runErr, nccl.ErrDirChanged) {
					t.Errorf("Run: %v, want the write refused: %v", runErr, nccl.ErrDirChanged)
				}
			default:
				if runErr != nil {
					t.Fatal(runErr)
				}
				swap()
				if err := Rollback(r.h, txn.J, r.opts); !errors.Is(err, nccl.ErrDirChanged) {
					t.Errorf("Rollback: %v, want the restore refused: %v", err, nccl.ErrDirChanged)
				}
			}
			if ents, _ := os.ReadDir(target); len(ents) > 0 {
				t.Errorf("root wrote into the directory the symlink names: %v", ents)
			}
			if b, _ := os.ReadFile(filepath.Join(jobs+".old", "nccl.conf")); when == "before the write" && string(b) != evil {
				t.Errorf("the file in the original directory changed: %q", b)
			}
		})
	}
}
