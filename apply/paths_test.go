package apply

import (
	"context"
	"fmt"
	"math/rand/v2"
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
	"github.com/rocectl/rocectl/policy"
	"github.com/rocectl/rocectl/statedir"
)

// startState puts a ConnectX port in a random state the driver accepts:
// global pause on or off, a random priority-to-buffer map over three
// buffers, random sizes within the port's 512 KiB, PFC on none, one or
// two priorities, through the simulator's own checked writes (a state
// the driver refuses is not generated: ok false).
func startState(sim *nictest.Sim, nd string, rng *rand.Rand) (desc string, ok bool) {
	var b dcb.Buffer
	used := map[uint8]bool{}
	for p := range 8 {
		b.PrioBuffer[p] = uint8(rng.IntN(3))
		used[b.PrioBuffer[p]] = true
	}
	choices := []uint32{32768, 65536, 98304, 131072, 196608, 262144}
	var sum uint32
	for buf := range uint8(3) {
		if used[buf] {
			sz := choices[rng.IntN(len(choices))]
			if sum+sz > 524288 {
				sz = 32768
			}
			b.Size[buf], sum = sz, sum+sz
		}
	}
	pfcs := []uint8{0, 1 << 3, 1<<3 | 1<<4, 1 << 4}
	pfc := dcb.PFC{Enable: pfcs[rng.IntN(len(pfcs))], Delay: 7}
	pause := rng.IntN(2) == 0
	desc = fmt.Sprintf("%s: pause %v, map %v, sizes %v, pfc %08b", nd, pause, b.PrioBuffer, b.Size, pfc.Enable)
	// PFC off first (its write turns pause off), the buffers, PFC, then
	// global pause as asked (with PFC on, mlx5 keeps pause off).
	if sim.SetPFC(nd, dcb.PFC{Delay: 7}) != nil || sim.Train(nd) != nil || sim.SetBuffer(nd, b) != nil ||
		sim.SetPFC(nd, pfc) != nil || sim.Train(nd) != nil {
		return desc, false
	}
	if pause && pfc.Enable == 0 {
		if sim.SetPause(nd, nic.Pause{Rx: true, Tx: true}) != nil {
			return desc, false
		}
	}
	return desc, true
}

// Every shipped profile on the ConnectX hosts from generated start states
// (issue "Reach any reachable target…"). What must always hold: a plan
// that is not refused either reaches the profile in one apply, the
// simulator's mlx5 checks passing at every write, or fails at a write
// the driver refuses and leaves the host exactly as it was; every reached
// state rolls back to its start exactly; nothing is ever left half done.
// The counts are logged, by outcome: reached; refused because the
// profile's own state is one the driver refuses (no path reaches it);
// refused because the search found no path (its bounds: driver/mlx5
// path.go; a path that moves the MTU write between the buffer and PFC
// writes is not searched yet); and refused by the driver at apply time
// (a profile without [buffers] on a port a start state left in manual
// buffer mode, which rocectl cannot read), host restored.
func TestEveryProfileFromGeneratedStartStates(t *testing.T) {
	profiles, _ := filepath.Glob(filepath.Join(fixturehost.RepoRoot(), "profiles", "*.toml"))
	const perPair = 10
	tried, reached, unreachable, noPath, driverRefused, skipped := 0, 0, 0, 0, 0, 0
	rng := rand.New(rand.NewPCG(1, 2))
	for _, fixture := range []string{"cx6dx-ofed-factory", "cx6dx-ofed-lossless"} {
		for _, pf := range profiles {
			for range perPair {
				root, sim := fixturehost.Copy(t, fixture)
				if err := os.MkdirAll(filepath.Join(root, "etc"), 0o755); err != nil {
					t.Fatal(err)
				}
				var descs []string
				valid := true
				for _, nd := range []string{"ens1f0np0", "ens1f1np1"} {
					d, ok := startState(sim, nd, rng)
					descs, valid = append(descs, d), valid && ok
				}
				if !valid {
					skipped++
					continue
				}
				tried++
				what := fmt.Sprintf("%s on %s from %s", filepath.Base(pf), fixture, strings.Join(descs, "; "))
				h := &host.Host{FS: nic.NewFS(root, false), K: sim}
				p, err := policy.Load(pf, policy.LoadOptions{AllowInsecure: true})
				if err != nil {
					t.Fatal(err)
				}
				d := policy.Resolve(p, h.Ports(h.Discover(), true))
				nccl.Resolve(d)
				d, pl := planOf(h, d)
				r := &rig{root: root, sim: sim, h: h, d: d, plan: pl, opts: Options{Store: Store{Store: statedir.Store{Dir: t.TempDir()}}, Retries: 1}}
				before := r.state(t)
				if len(pl.Refused) > 0 {
					if strings.Contains(pl.Refused[0].Error, "cannot be reached") {
						noPath++
						t.Logf("no path found: %s: %s", what, pl.Refused[0].Error)
					} else {
						unreachable++
					}
					continue
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
		"%d refused (the profile's own state is one the driver refuses); %d refused (no path found); %d refused by the driver at apply time, host restored",
		tried, skipped, reached, unreachable, noPath, driverRefused)
	if tried < 30 || reached < tried/2 {
		t.Errorf("%d start states tried, %d reached: the generator or the planner has regressed", tried, reached)
	}
}
