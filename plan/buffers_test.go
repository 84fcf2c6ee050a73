package plan_test

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/rocectl/rocectl/apply"
	"github.com/rocectl/rocectl/driver/mlx5"
	"github.com/rocectl/rocectl/host"
	"github.com/rocectl/rocectl/internal/testkit/fixturehost"
	"github.com/rocectl/rocectl/nic"
	"github.com/rocectl/rocectl/nic/nictest"
	"github.com/rocectl/rocectl/nic/snapshot"
	"github.com/rocectl/rocectl/plan"
	"github.com/rocectl/rocectl/policy"
)

var lagSlaves = []string{"ens1f0np0", "ens1f1np1"}

// lagPlan plans profile on the RoCE LAG fixture (mlx5_bond_0 on bond0 over
// ens1f0np0 + ens1f1np1, 25 Gb/s each, MTU 1500), after prep.
func lagPlan(t *testing.T, profile string, prep func(*nictest.Sim)) *policy.Plan {
	t.Helper()
	root, sim := fixturehost.Copy(t, "cx5-roce-lag")
	if prep != nil {
		prep(sim)
	}
	pf := filepath.Join(t.TempDir(), "p.toml")
	if err := os.WriteFile(pf, []byte(profile), 0o600); err != nil {
		t.Fatal(err)
	}
	p, err := policy.Load(pf, policy.LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	h := &host.Host{FS: nic.NewFS(root, false), K: sim}
	d := policy.Resolve(p, h.Ports(h.Discover(), false))
	if len(d.Ports) != 1 || len(d.Ports[0].Port.Slaves()) != 2 {
		t.Fatalf("profile matches %+v, want the bond with its two slaves", d.Ports)
	}
	return buildPlan(h, d)
}

// A lossless buffer the driver would refuse is refused on each slave:
// planned on the bond, no buffer change was seen at all. 32768 bytes hold
// a lossless priority at the slaves' MTU of 1500 (xoff at the 40 Gb/s
// floor: 316 × 40 + 4080, + max_mtu 9978 + 128 = 26826), not at the MTU
// 9000 the bond gives them in the same apply (12640 + 24480 + 10106 =
// 47226).
func TestLAGBufferRefusedOnEachSlave(t *testing.T) {
	pl := lagPlan(t, `[match]
drivers = ["mlx5_core"]
[link]
mtu = 9000
[qos]
pfc_priorities = [3]
global_pause = false
[buffers]
priority_to_buffer = [0, 0, 0, 1, 0, 0, 0, 0]
buffer_size = [131072, 32768, 0, 0, 0, 0, 0, 0]
`, nil)
	var refused []string
	for _, r := range pl.Refused {
		refused = append(refused, r.Key)
		if !strings.Contains(r.Error, "mlx5 needs at least 47226") || !strings.Contains(r.Error, "at 25 Gb/s, MTU 9000") {
			t.Errorf("%s: %s, want the minimum at the slave's 25 Gb/s and MTU 9000 (47226)", r.Key, r.Error)
		}
	}
	slices.Sort(refused)
	if want := []string{"ens1f0np0.buffers.buffer_size", "ens1f1np1.buffers.buffer_size"}; !slices.Equal(refused, want) {
		t.Errorf("refused %q, want %q", refused, want)
	}
}

// Moving the lossless priority from 3 to 4 and priority 4 into buffer 1
// of a LAG in manual buffer mode: written PFC first, mlx5 would check
// priority 4 against the small buffer 0 on each slave; the buffer map goes
// before PFC on both. Disruptions name the slaves, the bond's MTU change
// too (the bond has no queues; it sets its slaves' MTU).
func TestLAGBuffersWrittenFirstOnEachSlave(t *testing.T) {
	pl := lagPlan(t, `[match]
drivers = ["mlx5_core"]
[link]
mtu = 9000
[qos]
pfc_priorities = [4]
global_pause = false
[buffers]
priority_to_buffer = [0, 0, 0, 1, 1, 0, 0, 0]
`, func(s *nictest.Sim) {
		for _, nd := range lagSlaves {
			if err := s.ManualLossless(nd, 16384, 200064); err != nil {
				t.Fatal(err)
			}
		}
	})
	if len(pl.Refused) != 0 {
		t.Fatalf("refused: %+v", pl.Refused)
	}
	for _, nd := range lagSlaves {
		var order []string
		for _, c := range pl.Changes {
			if c.Port != nil && c.Port.Netdev == nd && (c.Kind == policy.KindPFC || c.Kind == policy.KindPrioBuffer) {
				order = append(order, c.Name)
				if c.Kind == policy.KindPrioBuffer && !strings.Contains(c.Note, "written before PFC") {
					t.Errorf("%s: note %q", c.Key, c.Note)
				}
				// The buffer write is what switches mlx5 to manual mode
				// for good: its note stays on it when it moves before
				// PFC, not on the change that took its place.
				if irr := strings.Contains(c.Note, mlx5.IrreversibleBufferNote); irr != (c.Kind == policy.KindPrioBuffer) {
					t.Errorf("%s: note %q: the irreversible note belongs on the buffer change", c.Key, c.Note)
				}
			}
		}
		if want := []string{"buffers.priority_to_buffer", "qos.pfc"}; !slices.Equal(order, want) {
			t.Errorf("%s: changes in order %v, want %v", nd, order, want)
		}
	}

	dis := plan.Disruptions(pl)
	if _, ok := dis["bond0"]; ok {
		t.Errorf("disruptions on bond0 %q, want them on its slaves", dis["bond0"])
	}
	for _, nd := range lagSlaves {
		got := strings.Join(dis[nd], "\n")
		for _, want := range []string{"link toggle", "irreversible: manual buffer mode", "channel reset: an MTU change re-creates the NIC's queues (set through bond0)"} {
			if !strings.Contains(got, want) {
				t.Errorf("%s: disruptions %q lack %q", nd, dis[nd], want)
			}
		}
	}
}

// An MTU change on the bond of a LAG whose slaves are in manual buffer
// mode: bond_change_mtu sets each slave's MTU, and mlx5 recomputes no
// threshold for it, so each slave gets the recompute for rollback before
// the bond's MTU change and the one for the new MTU after it, written as
// an identical PFC write of the slave's own.
func TestLAGMTUChangeRecomputesEachSlave(t *testing.T) {
	pl := lagPlan(t, `[match]
drivers = ["mlx5_core"]
[link]
mtu = 9000
[qos]
pfc_priorities = [3]
global_pause = false
[buffers]
priority_to_buffer = [0, 0, 0, 1, 0, 0, 0, 0]
buffer_size = [16384, 200064, 0, 0, 0, 0, 0, 0]
`, func(s *nictest.Sim) {
		for _, nd := range lagSlaves {
			if err := s.ManualLossless(nd, 16384, 200064); err != nil {
				t.Fatal(err)
			}
		}
	})
	if len(pl.Refused) != 0 {
		t.Fatalf("refused: %+v", pl.Refused)
	}
	var got []string
	for _, c := range pl.Changes {
		got = append(got, c.Key+" = "+c.Before+" -> "+c.Value)
		if c.Kind == policy.KindXoffRecompute && !strings.Contains(c.Note, "3fbfe251cc9f") {
			t.Errorf("%s: note %q", c.Key, c.Note)
		}
	}
	want := []string{
		"ens1f0np0.link.xoff_recompute_on_rollback = 1500 -> 1500",
		"ens1f1np1.link.xoff_recompute_on_rollback = 1500 -> 1500",
		"bond0.link.mtu = 1500 -> 9000",
		"ens1f0np0.link.xoff_recompute = 9000 -> 9000",
		"ens1f1np1.link.xoff_recompute = 9000 -> 9000",
	}
	if !slices.Equal(got, want) {
		t.Errorf("pl\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	steps, err := host.Steps(pl)
	if err != nil {
		t.Fatal(err)
	}
	for _, st := range steps {
		if st.AlwaysUndo() != (st.Changes[0].Kind == policy.KindXoffRecompute) {
			t.Errorf("step %s/%s: AlwaysUndo %v", st.Scope, st.Group, st.AlwaysUndo())
		}
	}
}

// planWithState plans profile on the fixture host, its kernel state
// edited first.
func planWithState(t *testing.T, fixture, profile string, edit func(*snapshot.KernelState)) *policy.Plan {
	t.Helper()
	root, sim := fixturehost.Copy(t, fixture)
	st := sim.State()
	edit(st)
	pf := filepath.Join(t.TempDir(), "p.toml")
	if err := os.WriteFile(pf, []byte(profile), 0o600); err != nil {
		t.Fatal(err)
	}
	p, err := policy.Load(pf, policy.LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	h := &host.Host{FS: nic.NewFS(root, false), K: nictest.NewSim(st)}
	return buildPlan(h, policy.Resolve(p, h.Ports(h.Discover(), false)))
}

// mlx5 sizes a lossless buffer for max(netdev->max_mtu, 9216). A port
// whose max_mtu was not captured (IFLA_MAX_MTU absent: 0) is checked with
// 9216, the least the driver can need, and the plan says so: a size the
// 9216 minimum refuses is refused naming the unknown, a size it takes
// carries a note that the driver may need more.
func TestMLX5MinimumWithMaxMTUUnknown(t *testing.T) {
	const profile = "[match]\ndrivers = [\"mlx5_core\"]\n[link]\nmtu = 9000\n[qos]\npfc_priorities = [3]\nglobal_pause = false\n[buffers]\npriority_to_buffer = [0, 0, 0, 1, 0, 0, 0, 0]\n"
	unknown := func(st *snapshot.KernelState) {
		for _, ls := range st.Links {
			ls.Link.MaxMTU = 0
		}
	}
	// MTU 9000, 7 m, 100 Gb/s: 31600 + 24480 + 9216 + 128 = 65424.
	pl := planWithState(t, "cx6dx-ofed-factory", profile+"buffer_size = [131072, 32768, 0, 0, 0, 0, 0, 0]\n", unknown)
	if len(pl.Refused) != 2 {
		t.Fatalf("refused %+v, want both ports' buffer sizes", pl.Refused)
	}
	for _, e := range pl.Refused {
		for _, want := range []string{"needs at least 65424", "max_mtu unknown: 9216 taken, the driver may need more"} {
			if !strings.Contains(e.Error, want) {
				t.Errorf("%s: %s, want %q", e.Key, e.Error, want)
			}
		}
	}
	// 65536 passes 9216; with the fixture's max_mtu (9978) it would not.
	pl = planWithState(t, "cx6dx-ofed-factory", profile+"buffer_size = [131072, 65536, 0, 0, 0, 0, 0, 0]\n", unknown)
	if len(pl.Refused) != 0 {
		t.Fatalf("refused: %+v", pl.Refused)
	}
	noted := 0
	for _, c := range pl.Changes {
		if strings.Contains(c.Note, "max_mtu is unknown (not captured): checked with 9216, the driver may need more") {
			noted++
		}
	}
	if noted != 2 {
		t.Errorf("%d changes note the unknown max_mtu, want one per port", noted)
	}
	pl = planWithState(t, "cx6dx-ofed-factory", profile+"buffer_size = [131072, 65536, 0, 0, 0, 0, 0, 0]\n", func(*snapshot.KernelState) {})
	if len(pl.Refused) != 2 || !strings.Contains(pl.Refused[0].Error, "needs at least 66186") {
		t.Errorf("with max_mtu 9978 known: refused %+v, want the 66186 minimum", pl.Refused)
	}
}

// Each Plan reads the ports' buffers again: a Plan after the buffers
// changed (an apply, another tool) checks the MTU change against the
// buffers the port has now. 49152 bytes in the lossless buffer (enough at
// MTU 1500) are too few at MTU 9000 (100 Gb/s, 7 m, max_mtu 9978:
// 66186), 70016 enough.
func TestPlanReadsBuffersAgain(t *testing.T) {
	root, sim := fixturehost.Copy(t, "cx6dx-ofed-factory")
	pf := filepath.Join(t.TempDir(), "p.toml")
	profile := "[match]\ndrivers = [\"mlx5_core\"]\n[link]\nmtu = 9000\n[qos]\npfc_priorities = [3]\nglobal_pause = false\n[buffers]\npriority_to_buffer = [0, 0, 0, 1, 0, 0, 0, 0]\n"
	if err := os.WriteFile(pf, []byte(profile), 0o600); err != nil {
		t.Fatal(err)
	}
	p, err := policy.Load(pf, policy.LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	h := &host.Host{FS: nic.NewFS(root, false), K: sim}
	pl := func(size1 uint32) *policy.Plan {
		for _, nd := range []string{"ens1f0np0", "ens1f1np1"} {
			if err := sim.ManualLossless(nd, 131072, size1); err != nil {
				t.Fatal(err)
			}
		}
		return buildPlan(h, policy.Resolve(p, h.Ports(h.Discover(), false)))
	}
	refused := pl(49152).Refused
	if len(refused) != 2 {
		t.Fatalf("refused %+v, want both ports' MTU changes", refused)
	}
	for _, r := range refused {
		if !strings.HasSuffix(r.Key, ".link.mtu") || !strings.Contains(r.Error, "buffer 1 is lossless with 49152 bytes; at MTU 9000 mlx5 needs at least 66186") {
			t.Errorf("%s: %s", r.Key, r.Error)
		}
	}
	if refused := pl(70016).Refused; len(refused) != 0 {
		t.Errorf("with 70016 bytes: refused %+v", refused)
	}
}

// mlx5's buffer checks are never skipped without a word. A snapshot that
// lacks DCB members the checks do not need (an import from mlnx_qos has
// no maxrate or app_trust) is checked like a full one; one that lacks
// PFC or the buffers gets a warning per port naming what is missing, and
// its PFC and buffer changes are unchecked, which apply refuses unless
// --skip-unreadable.
func TestBufferChecksAreNeverSkippedSilently(t *testing.T) {
	const profile = "[match]\ndrivers = [\"mlx5_core\"]\n[link]\nmtu = 9000\n[qos]\npfc_priorities = [3]\nglobal_pause = false\n[buffers]\npriority_to_buffer = [0, 0, 0, 1, 0, 0, 0, 0]\nbuffer_size = [131072, 32768, 0, 0, 0, 0, 0, 0]\n"
	notCaptured := func(parts ...string) func(*snapshot.KernelState) {
		return func(st *snapshot.KernelState) {
			for _, ls := range st.Links {
				for _, p := range parts {
					ls.NotCaptured = append(ls.NotCaptured, "dcb."+p)
				}
			}
		}
	}
	pl := planWithState(t, "cx6dx-ofed-factory", profile, notCaptured("maxrate", "app_trust"))
	if len(pl.Refused) != 2 || !strings.Contains(pl.Refused[0].Error, "needs at least 66186") || len(pl.Unchecked) != 0 {
		t.Errorf("maxrate and app_trust not captured: refused %+v, unchecked %+v; want the 32768-byte buffer refused on both ports", pl.Refused, pl.Unchecked)
	}
	pl = planWithState(t, "cx6dx-ofed-factory", profile, notCaptured("buffer"))
	if len(pl.Refused) != 0 {
		t.Errorf("buffers not captured: refused %+v, want nothing refused that could not be checked", pl.Refused)
	}
	warned := map[string]bool{}
	for _, w := range pl.Warnings {
		if strings.Contains(w.Message, "buffer checks cannot run") && strings.Contains(w.Message, "its buffer state was not captured (dcb.buffer)") && w.Port != nil {
			warned[w.Port.Netdev] = true
		}
	}
	if len(warned) != 2 {
		t.Errorf("warnings %+v, want one per port naming dcb.buffer", pl.Warnings)
	}
	unchecked := map[string]bool{}
	for _, e := range pl.Unchecked {
		unchecked[e.Key] = true
	}
	// The buffers themselves are unknown (not in the plan), the writes
	// their checks would have covered are unchecked.
	for _, nd := range []string{"ens1f0np0", "ens1f1np1"} {
		for _, k := range []string{".qos.pfc", ".qos.global_pause", ".link.mtu"} {
			if !unchecked[nd+k] {
				t.Errorf("%s%s is not marked unchecked: %v", nd, k, unchecked)
			}
		}
	}
	if err := apply.Refusal(pl, false); err == nil || !strings.Contains(err.Error(), "the driver's checks cannot run") {
		t.Errorf("apply's refusal without --skip-unreadable: %v", err)
	}
	if err := apply.Refusal(pl, true); err != nil {
		t.Errorf("apply's refusal with --skip-unreadable: %v", err)
	}
}

// A ConnectX-7's buffer cells are not 128 bytes: its own sizes (19872,
// 220896 of a 4151520-byte port: gcd 288) are never refused, a size that
// is not whole cells is planned as the driver programs it (rounded down,
// port_set_buffer), and a port holding that rounded size is in sync with
// the profile that asked for it.
func TestBufferCellsAreTheDevices(t *testing.T) {
	const profile = "[match]\ndrivers = [\"mlx5_core\"]\n[qos]\npfc_priorities = [3]\nglobal_pause = false\n[buffers]\npriority_to_buffer = [0, 0, 0, 1, 0, 0, 0, 0]\nbuffer_size = [19872, 200000, 0, 0, 0, 0, 0, 0]\n"
	cx7 := func(prio2buf [8]uint8, sizes [8]uint32, pfc uint8) func(*snapshot.KernelState) {
		return func(st *snapshot.KernelState) {
			for _, ls := range st.Links {
				if ls.DCB == nil || ls.DCB.Buffer == nil {
					continue
				}
				ls.DCB.Buffer.Size, ls.DCB.Buffer.TotalSize, ls.DCB.Buffer.PrioBuffer = sizes, 4151520, prio2buf
				ls.DCB.PFC.Enable = pfc
			}
		}
	}
	pl := planWithState(t, "cx6dx-ofed-factory", profile, cx7([8]uint8{}, [8]uint32{19872, 220896}, 0))
	if len(pl.Refused) != 0 {
		t.Fatalf("refused %+v: the NIC's own sizes and a rounded one are the driver's to take", pl.Refused)
	}
	noted := 0
	for _, c := range pl.Changes {
		if strings.HasSuffix(c.Key, ".buffers.buffer_size") && strings.Contains(c.Note, "200000 bytes is programmed as 199872") && strings.Contains(c.Note, "288-byte cells") {
			noted++
		}
	}
	if noted != 2 {
		t.Errorf("%d buffer_size changes say how the driver rounds, want one per port: %+v", noted, pl.Changes)
	}
	pl = planWithState(t, "cx6dx-ofed-factory", profile, cx7([8]uint8{0, 0, 0, 1}, [8]uint32{19872, 199872}, 1<<3))
	for _, c := range pl.Changes {
		if strings.HasSuffix(c.Key, ".buffers.buffer_size") {
			t.Errorf("%s: %s -> %s, want in sync (whole 288-byte cells)", c.Key, c.Before, c.Value)
		}
	}
}
