package apply

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/rocectl/rocectl/driver/mlx5"
	"github.com/rocectl/rocectl/host"
	"github.com/rocectl/rocectl/internal/testkit/fixturehost"
	"github.com/rocectl/rocectl/nccl"
	"github.com/rocectl/rocectl/nic"
	"github.com/rocectl/rocectl/nic/dcb"
	"github.com/rocectl/rocectl/nic/nictest"
	"github.com/rocectl/rocectl/policy"
	"github.com/rocectl/rocectl/statedir"
)

// startState puts an mlx5 port in a random state the driver accepts,
// within the port's own buffer (its total as the NIC reports it):
// global pause on or off, a random priority-to-buffer map over three
// buffers, random sizes in whole cells, PFC on none, one or two
// priorities, through the simulator's own checked writes (a state the
// driver refuses is not generated: ok false).
//
// With target (a profile's [buffers], nil when it sets no whole state),
// one port in four starts with exactly those buffers: a partial earlier
// apply, or mlnx_qos run on one port. On a RoCE LAG that leaves one slave
// with no buffer write while the other has some, a case random sizes
// never drew (TestBondMTUWithASlaveAlreadyAtItsBuffers).
func startState(sim *nictest.Sim, nd string, rng *rand.Rand, target *dcb.Buffer) (desc string, ok bool) {
	st, err := sim.DCB(nd)
	if err != nil || st.Buffer == nil {
		return nd + ": no buffer", false
	}
	total := st.Buffer.TotalSize
	var b dcb.Buffer
	used := map[uint8]bool{}
	for p := range 8 {
		b.PrioBuffer[p] = uint8(rng.IntN(3))
		used[b.PrioBuffer[p]] = true
	}
	// Sixteenths of the port's buffer, in whole 128-byte cells.
	choices := []uint32{1, 2, 3, 4, 6, 8}
	var sum uint32
	for buf := range uint8(3) {
		if used[buf] {
			sz := total / 16 * choices[rng.IntN(len(choices))] / 128 * 128
			if sum+sz > total {
				sz = total / 16 / 128 * 128
			}
			b.Size[buf], sum = sz, sum+sz
		}
	}
	if target != nil && rng.IntN(4) == 0 {
		b = *target
	}
	pfcs := []uint8{0, 1 << 3, 1<<3 | 1<<4, 1 << 4}
	pfc := dcb.PFC{Enable: pfcs[rng.IntN(len(pfcs))], Delay: 7}
	pause := rng.IntN(2) == 0
	desc = fmt.Sprintf("%s: pause %v, map %v, sizes %v, pfc %08b", nd, pause, b.PrioBuffer, b.Size, pfc.Enable)
	// The buffers, PFC, then global pause as asked (with PFC on, mlx5
	// keeps pause off).
	// Global pause off (a factory port has it on, and a map write under
	// it makes every buffer in use lossless: fill_pfc_en), PFC off.
	if err := sim.SetPause(nd, nic.Pause{}); err != nil {
		return desc + ": pause off: " + err.Error(), false
	}
	if err := sim.SetPFC(nd, dcb.PFC{Delay: 7}); err != nil {
		return desc + ": PFC off: " + err.Error(), false
	}
	if err := sim.Train(nd); err != nil {
		return desc + ": " + err.Error(), false
	}
	if err := sim.SetBuffer(nd, b); err != nil {
		return desc + ": buffers: " + err.Error(), false
	}
	// The PFC write toggles the link and checks at the speed of a link
	// that trains (40 Gb/s); the same write again, once trained, checks
	// at today's speed: a state the driver would refuse now (which no
	// rollback could write back) is not generated (TestPlanPath has it).
	if err := sim.SetPFC(nd, pfc); err != nil {
		return desc + ": PFC: " + err.Error(), false
	}
	if err := sim.Train(nd); err != nil {
		return desc + ": " + err.Error(), false
	}
	if err := sim.SetPFC(nd, pfc); err != nil {
		return desc + ": PFC at today's speed: " + err.Error(), false
	}
	if pause && pfc.Enable == 0 {
		if sim.SetPause(nd, nic.Pause{Rx: true, Tx: true}) != nil {
			return desc, false
		}
	}
	return desc, true
}

// profileBuffers is p's [buffers] as one buffer state, nil unless it sets
// both the map and the sizes.
func profileBuffers(p *policy.Profile) *dcb.Buffer {
	m, sz := p.Buffers.PriorityToBuffer, p.Buffers.BufferSize
	if m == nil || sz == nil {
		return nil
	}
	var b dcb.Buffer
	for i := range 8 {
		b.PrioBuffer[i], b.Size[i] = uint8(m[i]), uint32(sz[i])
	}
	return &b
}

// bufferPorts are the host's ports with mlx5 receive buffers, and the
// netdevs whose MTU is theirs (a RoCE LAG's bond, from the fixture's
// sysfs master link, and its slaves).
func bufferPorts(root string, sim *nictest.Sim) (ports, mtuLinks []string) {
	for name, ls := range sim.State().Links {
		if ls.DCB != nil && ls.DCB.Buffer != nil {
			ports = append(ports, name)
			mtuLinks = append(mtuLinks, name)
			if m, err := os.Readlink(filepath.Join(root, "sys/class/net", name, "master")); err == nil && !slices.Contains(mtuLinks, filepath.Base(m)) {
				mtuLinks = append(mtuLinks, filepath.Base(m))
			}
		}
	}
	slices.Sort(ports)
	slices.Sort(mtuLinks)
	return ports, mtuLinks
}

// refusedOnItsOwnState says whether the simulated driver itself refuses
// a port's buffers as they are, at the link's speed of now: an identical
// PFC write, for which mlx5 runs its buffer configuration and checks the
// thresholds again when the xoff moved (the link trained since), fails.
// Then no rollback can write them back, and a refusal saying so is true.
func refusedOnItsOwnState(sim *nictest.Sim, ports []string) bool {
	for _, nd := range ports {
		st, err := sim.DCB(nd)
		if err == nil && st.PFC != nil && sim.SetPFC(nd, *st.PFC) != nil {
			return true
		}
	}
	return false
}

// Every shipped profile on every shipped mlx5 host (each port's buffer
// total and link speed its own, a RoCE LAG's slaves included) from
// generated start states, the MTU drawn too (issue "Reach any reachable
// target…"). What must always hold: a plan that is not refused either
// reaches the profile in one apply, the simulator's mlx5 checks passing
// at every write, or fails at a write the driver refuses and leaves the
// host exactly as it was; every reached state rolls back to its start
// exactly; nothing is ever left half done; a refusal that says no
// rollback could write the start state back is confirmed by the
// simulated driver refusing that state. The counts are logged, by
// outcome: reached; refused because the profile's own state is one the
// driver refuses (no path reaches it); refused because no rollback could
// restore the start state; refused because the search found no path
// (its bounds: driver/mlx5 path.go); and refused by the driver at apply
// time, host restored: a profile without [buffers] on a port that a
// start state left in manual buffer mode, which rocectl cannot read; the
// plan must have said so on the PFC change (mlx5.ManualModeNote).
func TestEveryProfileFromGeneratedStartStates(t *testing.T) {
	// The two slowest of the package (18 and 10 s), each on hosts and
	// a state dir of its own: they overlap, on a second core.
	t.Parallel()
	profiles, _ := filepath.Glob(filepath.Join(fixturehost.RepoRoot(), "profiles", "*.toml"))
	hosts, _ := os.ReadDir(filepath.Join(fixturehost.RepoRoot(), "testdata", "hosts"))
	const perPair = 4
	tried, reached, unreachable, stuck, noPath, driverRefused, skipped, mtuMoved, ccMode := 0, 0, 0, 0, 0, 0, 0, 0, 0
	pfcSplit, mtuLast := 0, 0 // plans with a PFC write split in two; with an MTU written last
	rng := rand.New(rand.NewPCG(3, 4))
	mtus := []int{1500, 4200, 9000}
	for _, hd := range hosts {
		fixture := hd.Name()
		if root, sim := fixturehost.Copy(t, fixture); func() bool { ps, _ := bufferPorts(root, sim); return len(ps) == 0 }() {
			continue // no mlx5 receive buffers (bnxt)
		}
		for _, pf := range profiles {
			p, err := policy.Load(pf, policy.LoadOptions{AllowInsecure: true})
			if err != nil {
				t.Fatal(err)
			}
			target := profileBuffers(p)
			for range perPair {
				root, sim := fixturehost.Copy(t, fixture)
				if err := os.MkdirAll(filepath.Join(root, "etc"), 0o755); err != nil {
					t.Fatal(err)
				}
				ports, mtuLinks := bufferPorts(root, sim)
				mtu := mtus[rng.IntN(len(mtus))]
				descs := []string{fmt.Sprintf("MTU %d", mtu)}
				valid := true
				for _, nd := range mtuLinks {
					if err := sim.SetMTU(nd, mtu); err != nil {
						descs, valid = append(descs, nd+": "+err.Error()), false
					}
				}
				for _, nd := range ports {
					d, ok := startState(sim, nd, rng, target)
					descs, valid = append(descs, d), valid && ok
				}
				if !valid {
					if testing.Verbose() {
						t.Logf("not generated: %s on %s: %s", filepath.Base(pf), fixture, strings.Join(descs, "; "))
					}
					skipped++
					continue
				}
				tried++
				what := fmt.Sprintf("%s on %s from %s", filepath.Base(pf), fixture, strings.Join(descs, "; "))
				h := &host.Host{FS: nic.NewFS(root, false), K: sim}
				d := policy.Resolve(p, h.Ports(h.Discover(), true))
				nccl.Resolve(d)
				d, pl := planOf(h, d)
				r := &rig{root: root, sim: sim, h: h, d: d, plan: pl, opts: Options{Store: Store{Store: statedir.Store{Dir: t.TempDir()}}, Retries: 1}}
				before := r.state(t)
				if len(pl.Refused) > 0 {
					why := pl.Refused[0].Error
					switch {
					case strings.HasSuffix(pl.Refused[0].Key, ".ecn.mode"):
						// A congestion-control mode the port's driver
						// cannot run: true when the port has no
						// DOCA-OFED ecn sysfs (the per-priority switch).
						if rp := pl.Refused[0].Port; rp == nil || nic.NewFS(root, false).Exists("/sys/class/net/"+rp.Netdev+"/ecn/roce_np") {
							t.Errorf("%s: mode refused on a port with DOCA-OFED's per-priority ECN: %s", what, why)
						}
						ccMode++
					case strings.Contains(why, "cannot be reached with a rollback"):
						if !refusedOnItsOwnState(sim, ports) {
							t.Errorf("%s: refused as unable to roll back, but the driver takes the start state's buffers: %s", what, why)
						}
						stuck++
					case strings.Contains(why, "cannot be reached"):
						// The search is bounded (driver/mlx5 path.go): a
						// refusal of this kind is not one this test can
						// confirm, so none may appear on the shipped hosts.
						noPath++
						for _, rf := range pl.Refused {
							t.Errorf("no path found, which nothing confirms: %s: %s: %s", what, rf.Key, rf.Error)
						}
					default:
						unreachable++
					}
					continue
				}
				if mtuAfterAStep(pl) {
					mtuMoved++
				}
				assertStepsKeepPortOrder(t, pl)
				for _, c := range pl.Changes {
					switch {
					case c.Arg == "split":
						pfcSplit++
					case c.Kind == policy.KindMTU && strings.Contains(c.Note, "written after the PFC and buffer changes"):
						mtuLast++
					}
				}
				txn, err := Begin(r.h, r.d, r.plan, "x", r.opts)
				if err != nil {
					t.Fatal(err)
				}
				if err := txn.Run(context.Background()); err != nil {
					if strings.Contains(err.Error(), "ROLLBACK FAILED") || !strings.Contains(err.Error(), "cannot allocate memory") {
						t.Errorf("%s: apply: %v", what, err)
					}
					r.assertRestored(t, before, what+", after the driver refused a write")
					if !slices.ContainsFunc(pl.Changes, func(c policy.Change) bool { return strings.Contains(c.Note, mlx5.ManualModeNote) }) {
						t.Errorf("%s: the driver refused a write the plan did not warn of: %v", what, err)
					}
					driverRefused++
					continue
				}
				if after := policy.Diff(r.d, r.h.Observe(r.d)); after.Changed() {
					t.Errorf("%s: drift after the apply: %v", what, after.Changes[0].Key)
				}
				if err := txn.RollbackNow(); err != nil {
					t.Errorf("%s: rollback: %v", what, err)
					continue
				}
				r.assertRestored(t, before, what)
				reached++
			}
		}
	}
	t.Logf("generated start states: %d tried (%d the driver refused were not generated): %d reached and rolled back exactly; "+
		"%d refused (the profile's own state is one the driver refuses); %d refused (the driver refuses the start state's own buffers at today's speed: no rollback); "+
		"%d refused (no path found); %d refused by the driver at apply time, host restored; %d refused (a congestion-control mode the driver cannot run)",
		tried, skipped, reached, unreachable, stuck, noPath, driverRefused, ccMode)
	t.Logf("%d of the plans write the MTU after a first buffer step (grown for the new MTU at the old one)", mtuMoved)
	t.Logf("%d of the plans split a PFC write in two (priorities, then cable length, or the other way); %d write a port's MTU after its PFC and buffer writes", pfcSplit, mtuLast)
	if pfcSplit == 0 || mtuLast == 0 {
		t.Error("no plan split a PFC write, or none wrote the MTU last: the start states no longer test those paths")
	}
	if mtuMoved == 0 {
		t.Error("no plan moved the MTU write: the start states no longer test that path")
	}
	if tried < 40 || reached < tried*3/4 {
		t.Errorf("%d start states tried, %d reached: the generator or the planner has regressed", tried, reached)
	}
}

// mtuAfterAStep says whether pl writes an MTU change after a buffer
// step of its own (an intermediate state, Arg "stepN").
func mtuAfterAStep(pl *policy.Plan) bool {
	step := false
	for _, c := range pl.Changes {
		switch {
		case strings.HasPrefix(c.Arg, "step"):
			step = true
		case c.Kind == policy.KindMTU && step:
			return true
		}
	}
	return false
}
