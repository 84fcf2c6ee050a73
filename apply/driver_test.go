package apply

import (
	"context"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rocectl/rocectl/host"
	"github.com/rocectl/rocectl/internal/testkit/fixturehost"
	"github.com/rocectl/rocectl/nccl"
	"github.com/rocectl/rocectl/nic"
	"github.com/rocectl/rocectl/nic/dcb"
	"github.com/rocectl/rocectl/nic/nictest"
	"github.com/rocectl/rocectl/plan"
	"github.com/rocectl/rocectl/policy"
	"github.com/rocectl/rocectl/port"
	"github.com/rocectl/rocectl/statedir"
)

// Tests of what real drivers do beyond obeying the request: each one runs
// against nictest.Sim with the driver behaviour modelled (citing the
// driver function there), and fails on a planner that ignores it.

// driverRig is a fixture host prepared by prep (run on the simulator
// before planning) and a profile given as text, planned as the product
// plans (plan.Build: companions and driver ordering included).
func driverRig(t *testing.T, fixture, profile string, prep func(*nictest.Sim)) *rig {
	t.Helper()
	root, sim := fixturehost.Copy(t, fixture)
	if prep != nil {
		prep(sim)
	}
	path := filepath.Join(t.TempDir(), "p.toml")
	if err := os.WriteFile(path, []byte(profile), 0o600); err != nil {
		t.Fatal(err)
	}
	p, err := policy.Load(path, policy.LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	h := &host.Host{FS: nic.NewFS(root, false), K: sim}
	d := policy.Resolve(p, h.Ports(h.Discover(), true))
	nccl.Resolve(d)
	if len(d.Ports) == 0 {
		t.Fatalf("profile matches no port of %s", fixture)
	}
	d, pl := planOf(h, d)
	return &rig{root: root, sim: sim, h: h, d: d, plan: pl, opts: Options{Store: Store{Store: statedir.Store{Dir: t.TempDir()}}, Retries: 1}}
}

// applyAndRollBack applies the rig's plan, then rolls it back, and returns
// the simulated kernel state between the two.
func (r *rig) applyAndRollBack(t *testing.T) *nictest.Sim {
	t.Helper()
	txn, err := Begin(r.h, r.d, r.plan, "test", r.opts)
	if err != nil {
		t.Fatal(err)
	}
	if err := txn.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := txn.RollbackNow(); err != nil {
		t.Fatalf("rollback: %v", err)
	}
	return r.sim
}

// rollBackFromDisk rolls back the one open journal as `rocectl rollback`
// and the agent's recovery do: read back from the state dir.
func (r *rig) rollBackFromDisk(t *testing.T) error {
	t.Helper()
	open, err := r.opts.Store.Open()
	if err != nil || len(open) != 1 {
		t.Fatalf("open journals %v, %v", open, err)
	}
	return Rollback(r.h, open[0], r.opts)
}

// mlx5_set_port_pfc clears global pause: rolling PFC back on a factory host
// (pause on) must bring pause back, though the profile never names it.
func TestRollbackOfPFCRestoresGlobalPauseOnMLX5(t *testing.T) {
	r := driverRig(t, "cx6dx-ofed-factory", "[match]\ndrivers = [\"mlx5_core\"]\n[qos]\ndcbx = \"host\"\npfc_priorities = [3]\n", nil)
	var companion *policy.Change
	for i, c := range r.plan.Changes {
		if c.Key == "ens1f0np0.qos.global_pause" {
			companion = &r.plan.Changes[i]
		}
	}
	if companion == nil || companion.Before != "on" || companion.Value != "off" || !strings.Contains(companion.Note, "mlx5_set_port_pfc") {
		t.Fatalf("plan has no global pause companion of PFC: %+v", companion)
	}
	before := r.sim.Config()
	r.applyAndRollBack(t)
	if got := r.sim.State().Links["ens1f0np0"].Pause; !got.Rx || !got.Tx {
		t.Errorf("global pause after rollback: %+v, want rx and tx on as before", *got)
	}
	if r.sim.Config() != before {
		t.Error("host not byte-identical after rollback")
	}
}

// A port trusting DSCP with a custom map, moved to PCP trust and back: the
// map must come back entry for entry, in the kernel's APP table and in
// the firmware's dscp2prio, not as the default DSCP>>3 map.
func TestRollbackOfTrustRestoresCustomDSCPMap(t *testing.T) {
	custom := func(s *nictest.Sim) {
		for _, nd := range []string{"enp8s0f0np0", "enp8s0f1np1"} {
			var apps []dcb.App
			for d := 0; d < 64; d++ {
				apps = append(apps, dcb.App{Selector: dcb.SelDSCP, Protocol: uint16(d), Priority: uint8(d >> 3)})
			}
			apps[26].Priority, apps[48].Priority = 5, 7 // the custom part
			if err := s.AddApps(nd, apps); err != nil {
				t.Fatal(err)
			}
		}
	}
	for _, fromDisk := range []bool{false, true} {
		r := driverRig(t, "cx7-upstream-factory", "[match]\ndrivers = [\"mlx5_core\"]\n[qos]\ntrust = \"pcp\"\n", custom)
		nd := r.d.Ports[0].Port.Netdev
		before, hwBefore := r.sim.Config(), r.sim.HardwareDSCP(nd)
		if len(r.plan.Changes) == 0 {
			t.Fatal("nothing planned")
		}
		if fromDisk {
			// Crash recovery and `rocectl rollback` read the journal
			// back from the state dir: the saved table must survive it.
			if err := r.apply(t); err != nil {
				t.Fatal(err)
			}
			if err := r.rollBackFromDisk(t); err != nil {
				t.Fatal(err)
			}
		} else {
			r.applyAndRollBack(t)
		}
		if r.sim.Config() != before {
			t.Errorf("from disk %v: APP table not restored entry for entry", fromDisk)
		}
		if hw := r.sim.HardwareDSCP(nd); !maps.Equal(hw, hwBefore) {
			t.Errorf("from disk %v: firmware dscp2prio after rollback: 26→%d 48→%d, want 26→5 48→7", fromDisk, hw[26], hw[48])
		}
	}
}

// bnxt's APP delete clears the DSCP's hardware mapping: a remap must
// delete the old entry before adding the new one, forward and back.
func TestDSCPRemapKeepsHardwareMappingOnBnxt(t *testing.T) {
	prep := func(s *nictest.Sim) {
		nd := "enp202s0f1np1"
		if err := s.SetDCBX(nd, dcb.DCBXHost|dcb.DCBXVerIEEE); err != nil {
			t.Fatal(err)
		}
		if err := s.AddApps(nd, []dcb.App{{Selector: dcb.SelDSCP, Protocol: 26, Priority: 3}}); err != nil {
			t.Fatal(err)
		}
	}
	r := driverRig(t, "bnxt-re-factory", "[match]\ndrivers = [\"bnxt_en\"]\n[qos]\ntrust = \"dscp\"\ndscp_to_priority = { 26 = 4 }\n", prep)
	txn, err := Begin(r.h, r.d, r.plan, "test", r.opts)
	if err != nil {
		t.Fatal(err)
	}
	if err := txn.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	if hw := r.sim.HardwareDSCP("enp202s0f1np1"); hw[26] != 4 {
		t.Fatalf("hardware dscp2pri after the remap: %v, want 26→4", hw)
	}
	if err := txn.RollbackNow(); err != nil {
		t.Fatal(err)
	}
	if hw := r.sim.HardwareDSCP("enp202s0f1np1"); hw[26] != 3 {
		t.Fatalf("hardware dscp2pri after rollback: %v, want 26→3", hw)
	}
}

// bnxt takes PFC only after ETS was set: a profile without [qos.ets] is
// refused at plan time, before anything is written; with [qos.ets] in
// sync, ETS is written again ahead of PFC.
func TestBnxtPFCNeedsETS(t *testing.T) {
	const base = "[match]\ndrivers = [\"bnxt_en\"]\n[qos]\ndcbx = \"host\"\npfc_priorities = [3]\nglobal_pause = false\n"
	r := driverRig(t, "bnxt-re-factory", base, nil)
	if len(r.plan.Refused) != 1 || !strings.Contains(r.plan.Refused[0].Error, "[qos.ets]") {
		t.Fatalf("refused: %+v", r.plan.Refused)
	}
	before := r.sim.Config()
	pr := &Prepared{Profile: r.d.Profile, Host: r.h, Desired: r.d, Plan: r.plan}
	if _, err := Run(context.Background(), pr, RunOptions{Store: r.opts.Store}); err == nil || !strings.Contains(err.Error(), "nothing was changed") {
		t.Fatalf("Run of a refused plan: %v", err)
	}
	if r.sim.Config() != before {
		t.Fatal("a refused plan changed the host")
	}

	// The host's ETS already equals the profile's: written again anyway.
	const ets = "[qos.ets]\npriority_to_tc = [0, 0, 0, 0, 0, 0, 0, 0]\ntc_tsa = [\"ets\", \"strict\", \"strict\", \"strict\", \"strict\", \"strict\", \"strict\", \"strict\"]\ntc_bandwidth = [100, 0, 0, 0, 0, 0, 0, 0]\n"
	r = driverRig(t, "bnxt-re-factory", base+ets, nil)
	if len(r.plan.Refused) != 0 {
		t.Fatalf("refused with [qos.ets]: %+v", r.plan.Refused)
	}
	if err := r.apply(t); err != nil {
		t.Fatal(err)
	}
	if st := r.sim.State().Links["enp202s0f1np1"]; st.DCB.PFC.Enable != 1<<3 {
		t.Errorf("pfc %#x after apply", st.DCB.PFC.Enable)
	}
}

// Upstream mlx5 in np_cnp_prio_mode 1 ignores np_cnp_prio (CNPs follow the
// data priority): managing the CNP priority brings mode 0, journalled and
// restored like any change.
func TestCNPPriorityBringsPrioModeZeroOnUpstreamMLX5(t *testing.T) {
	modeFiles := func(root string) []string {
		m, _ := filepath.Glob(filepath.Join(root, "sys/kernel/debug/mlx5/*/cc_params/np_cnp_prio_mode"))
		return m
	}
	var root string
	r := driverRig(t, "cx7-upstream-factory", "[match]\ndrivers = [\"mlx5_core\"]\n[ecn]\ncnp_priority = 6\n", func(s *nictest.Sim) {})
	root = r.root
	files := modeFiles(root)
	if len(files) != 2 {
		t.Fatalf("fixture has %d np_cnp_prio_mode files", len(files))
	}
	for _, f := range files {
		if err := os.WriteFile(f, []byte("1\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	r.d, r.plan = planOf(r.h, r.d)
	var modes []string
	for _, c := range r.plan.Changes {
		if strings.HasSuffix(c.Key, ".ecn.np.cnp_prio_mode") {
			modes = append(modes, c.Key+" "+c.Before+"->"+c.Value)
		}
	}
	if len(modes) != 2 {
		t.Fatalf("plan's np_cnp_prio_mode changes: %v (plan %d changes)", modes, len(r.plan.Changes))
	}
	r.applyAndRollBack(t)
	for _, f := range files {
		if b, _ := os.ReadFile(f); strings.TrimSpace(string(b)) != "1" {
			t.Errorf("%s = %q after rollback, want 1", f, b)
		}
	}
}

// In host DCBX mode bnxt reports ETS and PFC as zeros until something sets
// them (bnxt_dcbnl_ieee_getets/getpfc return before asking the firmware):
// the planner's before-value is that placeholder, not the firmware's
// configuration. The plan says so on the change and lists it as
// irreversible, as the mlx5 manual buffer mode is, instead of presenting
// the placeholder as the host's state that a rollback restores.
func TestBnxtHostModeHidesETSUntilSet(t *testing.T) {
	const nd = "enp202s0f1np1"
	prep := func(s *nictest.Sim) {
		st, err := s.DCB(nd)
		if err != nil || st.ETS == nil || st.ETS.PrioTC == [dcb.NumTCs]uint8{} && st.ETS.TCTSA == [dcb.NumTCs]uint8{} {
			t.Fatalf("the fixture's firmware ETS should not be all zero: %+v %v", st, err)
		}
		if err := s.SetDCBX(nd, dcb.DCBXHost|dcb.DCBXVerIEEE); err != nil {
			t.Fatal(err)
		}
	}
	const profile = "[match]\ndrivers = [\"bnxt_en\"]\n[qos]\npfc_priorities = [3]\nglobal_pause = false\n" +
		"[qos.ets]\npriority_to_tc = [0, 0, 0, 1, 0, 0, 0, 0]\ntc_tsa = [\"ets\", \"ets\", \"strict\", \"strict\", \"strict\", \"strict\", \"strict\", \"strict\"]\ntc_bandwidth = [50, 50, 0, 0, 0, 0, 0, 0]\n"
	r := driverRig(t, "bnxt-re-factory", profile, prep)
	st, err := r.sim.DCB(nd)
	if err != nil {
		t.Fatal(err)
	}
	if st.ETS.PrioTC != [dcb.NumTCs]uint8{} || st.ETS.TCTSA != [dcb.NumTCs]uint8{} || st.ETS.ETSCap == 0 || st.PFC.Enable != 0 || st.PFC.Cap == 0 {
		t.Fatalf("bnxt in host mode, nothing set: ETS %+v PFC %+v; want zeros with the caps", st.ETS, st.PFC)
	}
	noted := 0
	for _, c := range r.plan.Changes {
		if c.Kind == policy.KindPFC || strings.Contains(c.Key, ".qos.ets") {
			if !strings.Contains(c.Note, "placeholder in host DCBX mode") {
				t.Errorf("%s: note %q, want the placeholder named", c.Key, c.Note)
			}
			noted++
		}
	}
	if noted == 0 {
		t.Fatalf("the plan changes neither ETS nor PFC: %+v", r.plan.Changes)
	}
	if d := plan.Disruptions(r.plan)[nd]; !strings.Contains(strings.Join(d, "\n"), "irreversible: bnxt's firmware ETS and PFC are not readable") {
		t.Errorf("disruptions of %s: %q", nd, d)
	}
}

// mlx5 makes its firmware DCBX willing whenever it leaves host mode
// (mlx5e_dcbnl_set_dcbx_mode sets willing_admin), and no dcbnl read shows
// the bit: a rollback of a change to host DCBX on a firmware configured
// not willing leaves it willing. The simulator does it; the plan says so
// on the change and lists it as irreversible.
func TestMLX5RollbackToFirmwareDCBXLeavesItWilling(t *testing.T) {
	const nd = "ens1f0np0"
	r := driverRig(t, "cx6dx-ofed-factory", "[match]\ndrivers = [\"mlx5_core\"]\n[qos]\ndcbx = \"host\"\n",
		func(s *nictest.Sim) { s.SetFirmwareNotWilling(nd) })
	var note string
	for _, c := range r.plan.Changes {
		if c.Key == nd+".qos.dcbx" {
			note = c.Note
		}
	}
	if !strings.Contains(note, "makes the firmware willing") {
		t.Errorf("note on %s.qos.dcbx: %q", nd, note)
	}
	if d := plan.Disruptions(r.plan)[nd]; !strings.Contains(strings.Join(d, "\n"), "irreversible: a rollback leaves the mlx5 firmware DCBX willing") {
		t.Errorf("disruptions of %s: %q", nd, d)
	}
	r.applyAndRollBack(t)
	if !r.sim.FirmwareWilling(nd) {
		t.Error("the simulated firmware is still not willing after the rollback to firmware DCBX")
	}
}

// An "ets" TC at 0 % is not taken as written by either driver: mlx5 reads
// it back as its share of 100 % when the other ETS bandwidth is all on one
// TC (mlx5e_build_tc_tx_bw, mlx5e_dcbnl_ieee_getets), bnxt refuses it
// (bnxt_ets_validate, "starving a TC"). The plan refuses both before any
// write; written anyway, the mlx5 apply fails its read-back.
func TestZeroBandwidthETSIsRefusedWhereTheDriverWouldNotTakeIt(t *testing.T) {
	const ets = "[qos.ets]\npriority_to_tc = [0, 1, 2, 3, 0, 0, 0, 0]\ntc_tsa = [\"ets\", \"ets\", \"ets\", \"ets\", \"strict\", \"strict\", \"strict\", \"strict\"]\ntc_bandwidth = [0, 0, 0, 100, 0, 0, 0, 0]\n"
	for _, c := range []struct{ fixture, profile, want string }{
		{"cx6dx-ofed-factory", "[match]\ndrivers = [\"mlx5_core\"]\n[qos]\ndcbx = \"host\"\n" + ets, "mlx5e_dcbnl_ieee_getets"},
		{"bnxt-re-factory", "[match]\ndrivers = [\"bnxt_en\"]\n[qos]\ndcbx = \"host\"\n" + ets, "starving a TC"},
	} {
		t.Run(c.fixture, func(t *testing.T) {
			r := driverRig(t, c.fixture, c.profile, nil)
			if len(r.plan.Refused) == 0 || !strings.Contains(r.plan.Refused[0].Error, c.want) {
				t.Fatalf("refused %+v, want the ETS refused (%s)", r.plan.Refused, c.want)
			}
			// Written anyway, the driver does not hold it as written.
			r.plan.Refused = nil
			before := r.sim.Config()
			if err := r.apply(t); err == nil {
				t.Fatal("the apply of the 0 % ETS passed; the driver would not have taken it as written")
			}
			if got := r.sim.Config(); got != before {
				t.Errorf("the failed apply did not restore the host:\n got %s\nwant %s", got, before)
			}
		})
	}
	// The same TCs with a share each, or with the other ETS bandwidth
	// split, are taken.
	r := driverRig(t, "cx6dx-ofed-factory", "[match]\ndrivers = [\"mlx5_core\"]\n[qos]\ndcbx = \"host\"\n"+
		"[qos.ets]\npriority_to_tc = [0, 1, 2, 3, 0, 0, 0, 0]\ntc_tsa = [\"ets\", \"ets\", \"ets\", \"ets\", \"strict\", \"strict\", \"strict\", \"strict\"]\ntc_bandwidth = [0, 0, 50, 50, 0, 0, 0, 0]\n", nil)
	if len(r.plan.Refused) != 0 {
		t.Fatalf("refused %+v", r.plan.Refused)
	}
	if err := r.apply(t); err != nil {
		t.Fatal(err)
	}
}

// bnxt takes any DCBX mode but LLD_MANAGED as its dcbx_cap whole
// (bnxt_dcbnl_setdcbx): the rollback of a change to host mode wrote mode 0,
// mlx5's "back to firmware", and left dcbx_cap 0 where it was VER_IEEE
// (0x08), while reading back "firmware" as before. The whole simulated
// host is compared after the rollback.
func TestBnxtDCBXRollbackRestoresTheCapability(t *testing.T) {
	r := driverRig(t, "bnxt-re-factory", "[match]\ndrivers = [\"bnxt_en\"]\n[qos]\ndcbx = \"host\"\n", nil)
	before := r.sim.Config()
	r.applyAndRollBack(t)
	if got := r.sim.Config(); got != before {
		t.Errorf("after the rollback:\n got %s\nwant %s", got, before)
	}
}

// What the plan says it disrupts follows the driver: mlx5 re-creates its
// queues on a trust change only where DSCP trust changes the minimum TX
// inline mode (the ConnectX-4 family, mlx5e_set_trust_state), and bnxt
// closes and reopens the NIC when ETS changes its number of TCs
// (bnxt_setup_mq_tc).
func TestDisruptionsOfTrustAndETSFollowTheNIC(t *testing.T) {
	const trust = "[match]\ndrivers = [\"mlx5_core\"]\n[qos]\ndcbx = \"host\"\ntrust = \"dscp\"\n"
	const reset = "channel reset on NICs that inline L2 headers"
	cx4 := driverRig(t, "cx4lx-sriov", trust, nil)
	if d := strings.Join(plan.Disruptions(cx4.plan)["enp7s0f0np0"], "\n"); !strings.Contains(d, reset) {
		t.Errorf("ConnectX-4 Lx trust change: disruptions %q, want the channel reset", d)
	}
	cx6 := driverRig(t, "cx6dx-ofed-factory", trust, nil)
	if d := strings.Join(plan.Disruptions(cx6.plan)["ens1f0np0"], "\n"); strings.Contains(d, reset) {
		t.Errorf("ConnectX-6 Dx trust change: disruptions %q, want no inline channel reset", d)
	}
	bnxt := driverRig(t, "bnxt-re-factory", "[match]\ndrivers = [\"bnxt_en\"]\n[qos]\ndcbx = \"host\"\n"+
		"[qos.ets]\npriority_to_tc = [0, 0, 0, 1, 0, 0, 0, 0]\ntc_tsa = [\"ets\", \"ets\", \"strict\", \"strict\", \"strict\", \"strict\", \"strict\", \"strict\"]\ntc_bandwidth = [50, 50, 0, 0, 0, 0, 0, 0]\n", nil)
	if d := strings.Join(plan.Disruptions(bnxt.plan)["enp202s0f1np1"], "\n"); !strings.Contains(d, "bnxt_setup_mq_tc") {
		t.Errorf("bnxt ETS change: disruptions %q, want the NIC reopened", d)
	}
}

// bnxtLossless is the bnxt fixture in host DCBX mode with PFC on pfc
// (every priority on TC 0, as the fixture's ETS has them) and a firmware
// of maxTC traffic classes and maxLLTC lossless queues.
func bnxtLossless(t *testing.T, pfc uint8, maxTC, maxLLTC uint8) func(*nictest.Sim) {
	return func(s *nictest.Sim) {
		const nd = "enp202s0f1np1"
		s.SetQueueCaps(nd, maxTC, maxLLTC)
		if err := s.SetDCBX(nd, dcb.DCBXHost|dcb.DCBXVerIEEE); err != nil {
			t.Fatal(err)
		}
		st, err := s.DCB(nd)
		if err != nil {
			t.Fatal(err)
		}
		ets := dcb.ETS{TCTxBW: [8]uint8{100}, TCTSA: [8]uint8{dcb.TSAETS}}
		if err := s.SetETS(nd, ets); err != nil {
			t.Fatal(err)
		}
		if err := s.SetPFC(nd, dcb.PFC{Cap: st.PFC.Cap, Enable: pfc}); err != nil {
			t.Fatal(err)
		}
		if u := s.UnprotectedPFC(nd); len(u) != 0 {
			t.Fatalf("prepared host: PFC priorities %v not lossless", u)
		}
	}
}

// bnxt reads PFC through the ETS it holds (bnxt_hwrm_queue_pfc_cfg): with
// one lossless queue, PFC on 3 and 4 is taken while both sit on TC 0, and
// refused while they sit on TCs 1 and 2. A rollback that undid PFC before
// ETS wrote the old PFC through the profile's ETS and failed; undoing ETS
// first puts the host back as it was.
func TestBnxtRollbackUndoesETSBeforePFC(t *testing.T) {
	const nd = "enp202s0f1np1"
	const profile = "[match]\ndrivers = [\"bnxt_en\"]\n[qos]\ndcbx = \"host\"\npfc_priorities = [3]\nglobal_pause = false\n" +
		"[qos.ets]\npriority_to_tc = [0, 0, 0, 1, 2, 0, 0, 0]\ntc_tsa = [\"ets\", \"ets\", \"ets\", \"strict\", \"strict\", \"strict\", \"strict\", \"strict\"]\ntc_bandwidth = [50, 25, 25, 0, 0, 0, 0, 0]\n"
	r := driverRig(t, "bnxt-re-factory", profile, bnxtLossless(t, 1<<3|1<<4, 8, 1))
	if len(r.plan.Refused) != 0 {
		t.Fatalf("refused: %+v", r.plan.Refused)
	}
	r.losslessThroughApplyAndRollback(t, nd)
}

// losslessThroughApplyAndRollback applies the rig's plan, rolls it back
// from disk, and checks that bnxt port nd keeps every PFC priority on a
// lossless queue after both, and is as it was after the rollback.
func (r *rig) losslessThroughApplyAndRollback(t *testing.T, nd string) {
	t.Helper()
	before := r.sim.Config()
	if err := r.apply(t); err != nil {
		t.Fatal(err)
	}
	if u := r.sim.UnprotectedPFC(nd); len(u) != 0 {
		t.Errorf("after apply, PFC priorities %v are not on lossless queues", u)
	}
	if err := r.rollBackFromDisk(t); err != nil {
		t.Fatalf("rollback: %v", err)
	}
	if r.sim.Config() != before {
		t.Error("host not as it was after the rollback")
	}
	if u := r.sim.UnprotectedPFC(nd); len(u) != 0 {
		t.Errorf("after rollback, PFC priorities %v are not on lossless queues", u)
	}
}

// bnxt moves the PFC priorities' TCs onto lossless queues only when PFC is
// written: an ETS change alone would leave priority 3, moved to TC 1, on a
// lossy queue. The plan writes the port's own PFC after the ETS change,
// and the rollback writes it again after ETS is restored.
func TestBnxtETSChangeRemapsLosslessQueues(t *testing.T) {
	const nd = "enp202s0f1np1"
	const profile = "[match]\ndrivers = [\"bnxt_en\"]\n[qos]\ndcbx = \"host\"\n" +
		"[qos.ets]\npriority_to_tc = [0, 0, 0, 1, 0, 0, 0, 0]\ntc_tsa = [\"ets\", \"ets\", \"strict\", \"strict\", \"strict\", \"strict\", \"strict\", \"strict\"]\ntc_bandwidth = [50, 50, 0, 0, 0, 0, 0, 0]\n"
	r := driverRig(t, "bnxt-re-factory", profile, bnxtLossless(t, 1<<3, 8, 8))
	var remap *policy.Change
	for i, c := range r.plan.Changes {
		if c.Kind == policy.KindLosslessRemap {
			remap = &r.plan.Changes[i]
		}
	}
	if remap == nil || remap.Key != nd+".qos.pfc_lossless_remap" || remap.Value != "[3]" || !strings.Contains(remap.Note, "bnxt_queue_remap") {
		t.Fatalf("plan has no lossless remap after the ETS change: %+v", remap)
	}
	if d := strings.Join(plan.Disruptions(r.plan)[nd], "\n"); !strings.Contains(d, "bnxt_queue_remap") {
		t.Errorf("disruptions of %s: %q, want the remap's channel reset", nd, d)
	}
	r.losslessThroughApplyAndRollback(t, nd)
}

// What bnxt_hwrm_queue_pfc_cfg would refuse, or take and leave unpaused,
// is refused at plan time: PFC priorities on more TCs than the firmware
// has lossless queues, and a PFC priority on a TC at or above its TC
// count (bnxt_ets_validate lets TC max_tc through). So is what
// bnxt_ets_validate refuses above max_tc: a priority there, or such a TC
// that is not strict at 0 %.
func TestBnxtLosslessLimitsAreRefusedAtPlanTime(t *testing.T) {
	const head = "[match]\ndrivers = [\"bnxt_en\"]\n[qos]\ndcbx = \"host\"\nglobal_pause = false\n"
	for _, tc := range []struct {
		name, profile  string
		maxTC, maxLLTC uint8
		want           string
	}{
		{"two classes, one lossless queue", head + "pfc_priorities = [3, 4]\n" +
			"[qos.ets]\npriority_to_tc = [0, 0, 0, 1, 2, 0, 0, 0]\ntc_tsa = [\"ets\", \"ets\", \"ets\", \"strict\", \"strict\", \"strict\", \"strict\", \"strict\"]\ntc_bandwidth = [50, 25, 25, 0, 0, 0, 0, 0]\n",
			8, 1, "on 2 traffic classes [1 2], and bnxt_en has 1 lossless queue"},
		{"ETS alone moves today's PFC apart", head +
			"[qos.ets]\npriority_to_tc = [0, 0, 0, 1, 2, 0, 0, 0]\ntc_tsa = [\"ets\", \"ets\", \"ets\", \"strict\", \"strict\", \"strict\", \"strict\", \"strict\"]\ntc_bandwidth = [50, 25, 25, 0, 0, 0, 0, 0]\n",
			8, 1, "on 2 traffic classes [1 2], and bnxt_en has 1 lossless queue"},
		{"priority on TC max_tc", head + "pfc_priorities = [3]\n" +
			"[qos.ets]\npriority_to_tc = [0, 0, 0, 4, 0, 0, 0, 0]\ntc_tsa = [\"ets\", \"strict\", \"strict\", \"strict\", \"strict\", \"strict\", \"strict\", \"strict\"]\ntc_bandwidth = [100, 0, 0, 0, 0, 0, 0, 0]\n",
			4, 4, "PFC priority 3 is on traffic class 4, and bnxt_en pauses only the priorities of its first 4"},
		{"priority above max_tc", head + "pfc_priorities = [3]\n" +
			"[qos.ets]\npriority_to_tc = [0, 0, 0, 5, 0, 0, 0, 0]\ntc_tsa = [\"ets\", \"strict\", \"strict\", \"strict\", \"strict\", \"strict\", \"strict\", \"strict\"]\ntc_bandwidth = [100, 0, 0, 0, 0, 0, 0, 0]\n",
			4, 4, "priority 3 is on traffic class 5, above bnxt_en's 4 (ets_cap)"},
		{"ETS class above max_tc", head + "pfc_priorities = [3]\n" +
			"[qos.ets]\npriority_to_tc = [0, 0, 0, 1, 0, 0, 0, 0]\ntc_tsa = [\"ets\", \"ets\", \"strict\", \"strict\", \"strict\", \"ets\", \"strict\", \"strict\"]\ntc_bandwidth = [40, 40, 0, 0, 0, 20, 0, 0]\n",
			4, 4, "traffic class 5 is above bnxt_en's 4 (ets_cap) and must stay strict at 0 %"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := driverRig(t, "bnxt-re-factory", tc.profile, bnxtLossless(t, 1<<3|1<<4, tc.maxTC, tc.maxLLTC))
			if len(r.plan.Refused) != 1 || !strings.Contains(r.plan.Refused[0].Error, tc.want) {
				t.Fatalf("refused: %+v, want one naming %q", r.plan.Refused, tc.want)
			}
			before := r.sim.Config()
			pr := &Prepared{Profile: r.d.Profile, Host: r.h, Desired: r.d, Plan: r.plan}
			if _, err := Run(context.Background(), pr, RunOptions{Store: r.opts.Store}); err == nil || !strings.Contains(err.Error(), "nothing was changed") {
				t.Fatalf("Run of a refused plan: %v", err)
			}
			if r.sim.Config() != before {
				t.Fatal("a refused plan changed the host")
			}
			// The driver itself, given the profile's ETS and then its
			// PFC (today's when it sets none), refuses one of them or
			// leaves a PFC priority unprotected.
			const nd = "enp202s0f1np1"
			e, ets := r.d.Profile.QoS.ETS, dcb.ETS{}
			for i := range dcb.NumTCs {
				ets.PrioTC[i], ets.TCTxBW[i] = uint8(e.PriorityToTC[i]), uint8(e.TCBandwidth[i])
				if e.TCTSA[i] == "ets" {
					ets.TCTSA[i] = dcb.TSAETS
				}
			}
			pfc := uint8(1<<3 | 1<<4)
			if p := r.d.Profile.QoS.PFCPriorities; p != nil {
				pfc = uint8(*p)
			}
			st, err := r.sim.DCB(nd)
			if err != nil {
				t.Fatal(err)
			}
			eerr := r.sim.SetETS(nd, ets)
			var perr error
			if eerr == nil {
				perr = r.sim.SetPFC(nd, dcb.PFC{Cap: st.PFC.Cap, Enable: pfc})
			}
			if eerr == nil && perr == nil && len(r.sim.UnprotectedPFC(nd)) == 0 {
				t.Error("the driver takes the profile's ETS and PFC and keeps every PFC priority lossless: nothing to refuse")
			}
		})
	}
}

// A port that negotiates pause (the bnxt fixture: autoneg on) keeps
// negotiating it through a global pause change and its rollback: the
// write used to send autoneg off, and the rollback put rx and tx back but
// left the link's flow control forced.
func TestGlobalPauseRollbackKeepsPauseAutoneg(t *testing.T) {
	const nd = "enp202s0f1np1"
	r := driverRig(t, "bnxt-re-factory", "[match]\ndrivers = [\"bnxt_en\"]\n[qos]\nglobal_pause = false\n", nil)
	p, err := r.sim.Pause(nd)
	if err != nil || !p.Autoneg || !p.Rx || !p.Tx {
		t.Fatalf("fixture pause %+v, %v: want autoneg, rx and tx on", p, err)
	}
	before := r.sim.Config()
	if err := r.apply(t); err != nil {
		t.Fatal(err)
	}
	if p, _ := r.sim.Pause(nd); p.Rx || p.Tx {
		t.Errorf("after apply: pause %+v, want rx and tx off", p)
	}
	if err := r.rollBackFromDisk(t); err != nil {
		t.Fatal(err)
	}
	if p, _ := r.sim.Pause(nd); r.sim.Config() != before {
		t.Errorf("after rollback: pause %+v, want autoneg, rx and tx on as before", p)
	}
}

// A bnxt bond: its ETS and PFC go to each slave (host.Place), and the
// lossless limits are planned there, where pl.first finds the changes.
// No fixture has a bnxt bond: the fixture's one port is put under a bond
// of one slave, as discovery reports a RoCE LAG's master.
func TestBnxtBondSlavesGetTheLosslessLimits(t *testing.T) {
	root, sim := fixturehost.Copy(t, "bnxt-re-factory")
	bnxtLossless(t, 1<<3|1<<4, 8, 1)(sim)
	h := &host.Host{FS: nic.NewFS(root, false), K: sim}
	ports := h.Ports(h.Discover(), true)
	if len(ports) != 1 {
		t.Fatalf("fixture ports %+v", ports)
	}
	slave := ports[0]
	bond := slave
	bond.Netdev, bond.Role = "bond0", port.RoleBond
	bond.Bond = &port.Bond{Name: "bond0", Slaves: []port.Slave{{Netdev: slave.Netdev, PCI: slave.PCI, Driver: slave.Driver}}}
	path := filepath.Join(t.TempDir(), "p.toml")
	const profile = "[match]\ndrivers = [\"bnxt_en\"]\n[qos]\ndcbx = \"host\"\nglobal_pause = false\npfc_priorities = [3, 4]\n" +
		"[qos.ets]\npriority_to_tc = [0, 0, 0, 1, 2, 0, 0, 0]\ntc_tsa = [\"ets\", \"ets\", \"ets\", \"strict\", \"strict\", \"strict\", \"strict\", \"strict\"]\ntc_bandwidth = [50, 25, 25, 0, 0, 0, 0, 0]\n"
	if err := os.WriteFile(path, []byte(profile), 0o600); err != nil {
		t.Fatal(err)
	}
	p, err := policy.Load(path, policy.LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	_, plan := planOf(h, policy.Resolve(p, []port.Port{bond}))
	var refused []string
	for _, e := range plan.Refused {
		if strings.Contains(e.Error, "bnxt_en has 1 lossless queue") {
			refused = append(refused, e.Key)
		}
	}
	if len(refused) != 1 || !strings.HasPrefix(refused[0], slave.Netdev+".") {
		t.Fatalf("refused %v (all: %+v), want the slave's PFC or ETS change refused for the lossless queues", refused, plan.Refused)
	}
}
