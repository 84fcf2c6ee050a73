package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/rocectl/rocectl/apply"
	"github.com/rocectl/rocectl/internal/testkit/fixturehost"
	"github.com/rocectl/rocectl/internal/testkit/hosts"
	"github.com/rocectl/rocectl/internal/testkit/median"
	"github.com/rocectl/rocectl/nic/snapshot"
	"github.com/rocectl/rocectl/statedir"
)

type config struct {
	runs       int
	ports      int
	rocectl    string
	baseline   string
	repo       string
	auditPorts string
	auditFloor string
	summary    string
	cpuprofile string
	memprofile string
	trace      string
	profRuns   int
	phaseRuns  int
	sysfsDir   string
}

func main() {
	var c config
	flag.IntVar(&c.runs, "n", 10, "runs of each side")
	flag.IntVar(&c.ports, "ports", 8, "ports of the applied host (even: one veth pair gives two)")
	flag.StringVar(&c.rocectl, "rocectl", "bin/rocectl", "the rocectl binary")
	flag.StringVar(&c.baseline, "baseline", "bench/baseline-apply.sh", "the bash baseline")
	flag.StringVar(&c.repo, "repo", ".", "rocectl source tree (profiles/, testdata/captures)")
	flag.StringVar(&c.auditPorts, "audit-ports", "8,64,256", "port counts for the audit timing (empty: skip)")
	flag.StringVar(&c.auditFloor, "auditfloor", "", "the bench/cmd/auditfloor binary: time each audit's file system calls alone beside it (needs strace on PATH)")
	flag.StringVar(&c.summary, "summary", "", "append result rows (name|value|baseline|target) to this file")
	flag.StringVar(&c.cpuprofile, "cpuprofile", "", "also run the apply in-process with a CPU profile written here (go tool pprof -tagfocus phase=apply)")
	flag.StringVar(&c.sysfsDir, "sysfs-dir", "auto", "where the host root (the sysfs/configfs stand-in) lives; auto: /dev/shm when it is tmpfs, else $TMPDIR")
	flag.StringVar(&c.memprofile, "memprofile", "", "with -cpuprofile: also write an allocation profile of the in-process applies here (go tool pprof -sample_index=alloc_space -focus=runApply)")
	flag.StringVar(&c.trace, "trace", "", "with -cpuprofile: also write a runtime trace of the in-process applies here (where the wall time goes, CPU or not: go tool trace -pprof=syscall FILE)")
	flag.IntVar(&c.phaseRuns, "phases", 16, "in-process applies timed phase by phase after the binary's runs (0: none)")
	flag.IntVar(&c.profRuns, "profile-runs", 100, "in-process applies under -cpuprofile (100 Hz sampling: a 20 ms apply gives 2 samples)")
	flag.Parse()
	missed, err := run(c)
	if err != nil {
		fmt.Fprintln(os.Stderr, "applybench:", err)
		os.Exit(1)
	}
	if len(missed) > 0 {
		fmt.Printf("\ntargets missed (%d): %s\n", len(missed), strings.Join(missed, "; "))
		os.Exit(exitMissed)
	}
}

// exitMissed is applybench's exit status when every measurement ran but a
// target was missed (1 is an error): apply-vs-shell.sh runs its other
// parts and then exits non-zero, and run-all.sh names the step.
const exitMissed = 3

// run measures and prints; missed names each target a measurement missed.
func run(c config) (missed []string, err error) {
	if os.Geteuid() != 0 {
		return nil, errors.New("needs root (a network namespace, MTU changes)")
	}
	if c.ports < 2 || c.ports%2 != 0 || c.runs < 1 {
		return nil, errors.New("-ports must be even and ≥ 2, -n ≥ 1")
	}
	for _, p := range []*string{&c.rocectl, &c.baseline, &c.repo, &c.auditFloor} {
		if *p == "" {
			continue
		}
		abs, err := filepath.Abs(*p)
		if err != nil {
			return nil, err
		}
		*p = abs
	}
	tmp, err := os.MkdirTemp("", "applybench-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(tmp)
	// The host root stands in for sysfs and configfs, which live in
	// memory: a write is a driver's store(), no block I/O. On a disk file
	// system every one of the ~150 writes of a run would also truncate a
	// file and journal its metadata, a cost neither side has on a real
	// host. So the root goes to a tmpfs where there is one; the state
	// dir, which rocectl fsyncs its journal into, stays on $TMPDIR, as
	// /var/lib/rocectl would be on disk.
	sysDir, sysFS, err := hostRootDir(c.sysfsDir, tmp)
	if err != nil {
		return nil, err
	}
	if sysDir != tmp {
		defer os.RemoveAll(sysDir)
	}
	caps := filepath.Join(c.repo, "testdata", "captures")
	tmpl := filepath.Join(sysDir, "template")
	if err := hosts.WriteCX6DxFactoryN(caps, tmpl, c.ports); err != nil {
		return nil, err
	}
	prof := filepath.Join(tmp, "bench.toml")
	recipe := filepath.Join(c.repo, "profiles", "connectx-lossless.toml")
	// As test/e2e: the recipe for whatever driver carries the names (veth),
	// no soak (nothing to watch on veth; the guard has its own benchmark).
	if err := os.WriteFile(prof, fmt.Appendf(nil, "name = \"bench\"\ninclude = [%q]\n[match]\ndrivers = [\"*\"]\n[guard]\nenabled = false\n", recipe), 0o600); err != nil {
		return nil, err
	}

	ns, err := newNetNS()
	if err != nil {
		return nil, err
	}
	defer ns.Close()
	var names []string
	for k := 1; k <= c.ports/2; k++ {
		left, right := fmt.Sprintf("ens%df0np0", k), fmt.Sprintf("ens%df1np1", k)
		if err := ns.addVethUp(left, right); err != nil {
			return nil, err
		}
		names = append(names, left, right)
	}
	b := &bench{c: c, ns: ns, tmp: tmp, sysDir: sysDir, tmpl: tmpl, names: names}
	fmt.Printf("host root on %s (%s), state dir on %s (%s)\n", sysDir, sysFS, tmp, fsName(tmp))
	calls, err := b.applyCallsPlan(prof)
	if err != nil {
		return nil, err
	}

	var roce, roceNV, shell, start, saves []time.Duration
	var roceTree, shellTree map[string]string
	var saver *journalSaver
	for i := range c.runs {
		// The apply, the apply without its final read-back, the bash
		// baseline and the apply's floor (start-up,
		// then its two journal saves) taken in turn, in an order that
		// alternates: load drift hits them all alike. (The floor used
		// to be timed after the loop, which made the ratio swing with
		// whatever the machine did meanwhile.)
		sides := []func() error{
			func() error {
				d, tree, err := b.once("rocectl", c.rocectl, "--root", b.root(), "--state-dir", b.state(), "apply", "-p", prof)
				roce, roceTree = append(roce, d), tree
				if err == nil && saver == nil {
					saver, err = b.newJournalSaver()
				}
				return err
			},
			// The same apply without its final read-back of every
			// setting: how much of the gap to the floor that pass is
			// (the per-step read-backs stay; no flag turns them off).
			func() error {
				d, tree, err := b.once("rocectl --no-verify", c.rocectl, "--root", b.root(), "--state-dir", b.state(), "apply", "--no-verify", "-p", prof)
				roceNV = append(roceNV, d)
				if err == nil {
					if d := fixturehost.DiffTrees(tree, roceTree); len(d) > 0 {
						err = fmt.Errorf("apply and apply --no-verify leave different files (%d), e.g. %s", len(d), d[0])
					}
				}
				return err
			},
			func() error {
				d, tree, err := b.once("baseline", "/bin/bash", c.baseline, b.root())
				shell, shellTree = append(shell, d), tree
				return err
			},
			func() error {
				d, err := b.startupOnce()
				start = append(start, d)
				if err != nil || saver == nil {
					return err
				}
				d, err = saver.save()
				saves = append(saves, d)
				return err
			},
			// The apply's own file calls alone, and the least of
			// them: the bound below the apply.
			func() error {
				if calls.why != "" {
					return nil
				}
				return calls.time(b)
			},
		}
		if i%2 == 1 {
			slices.Reverse(sides)
		}
		for _, s := range sides {
			if err := s(); err != nil {
				return nil, err
			}
		}
		if d := fixturehost.DiffTrees(roceTree, shellTree); len(d) > 0 {
			return nil, fmt.Errorf("rocectl and the baseline leave different files (%d), e.g. %s: not the same work", len(d), d[0])
		}
	}

	fmt.Printf("apply the ConnectX recipe, %d-port host (%d veth pairs in a fresh netns), %d runs each\n", c.ports, c.ports/2, c.runs)
	fmt.Printf("  %-32s %10s %10s %10s\n", "", "median", "min", "max")
	row("rocectl apply", roce)
	row("rocectl apply --no-verify", roceNV)
	row("bash baseline (ip/ethtool/dcb)", shell)
	ratio := float64(median.Mean(shell)) / float64(median.Mean(roce))
	fmt.Printf("  rocectl is %.1f× faster (medians; target ≥ 20×)\n", ratio)
	b.summary(fmt.Sprintf("apply %d ports (live veth, binary)|%s|%s (bash)|>= 20x faster: %.1fx", c.ports, ms(median.Mean(roce)), ms(median.Mean(shell)), ratio))
	if ratio < 20 {
		missed = append(missed, fmt.Sprintf("apply %.1f× faster than bash, target ≥ 20×", ratio))
	}

	// The floor: what starting the binary costs before it does any work,
	// and the two durable journal saves every apply makes. The baseline's
	// time is ~50 process starts, so this bounds the ratio any apply
	// could reach here; the apply over it is the work the apply adds
	// (issue "Performance at fleet scale": ≤ 1.5×).
	row("rocectl --version (start only)", start)
	fmt.Printf("  (with zero apply work the ratio could be at most %.1f×)\n", float64(median.Mean(shell))/float64(median.Mean(start)))
	row("the apply's 2 journal saves", saves)
	floor := median.Mean(start) + median.Mean(saves)
	bound := float64(median.Mean(shell)) / float64(floor)
	overFloor := float64(median.Mean(roce)) / float64(floor)
	fmt.Printf("  (start-up and the durable journal alone, no host access: %s, so at most %.1f×)\n", ms(floor), bound)
	fmt.Printf("  rocectl apply is %.2f× its floor (medians, taken in turn; target ≤ 1.5×)\n", overFloor)
	fmt.Printf("  without the final read-back (--no-verify) it is %.2f× its floor\n", float64(median.Mean(roceNV))/float64(floor))
	b.summary(fmt.Sprintf("apply floor: start-up + its 2 journal saves|%s|-|bounds the ratio at %.1fx", ms(floor), bound))
	b.summary(fmt.Sprintf("apply %d ports over its floor (taken in turn)|%.2fx|-|<= 1.5x", c.ports, overFloor))
	b.summary(fmt.Sprintf("apply --no-verify %d ports over its floor|%.2fx|-|(evidence, no target)", c.ports, float64(median.Mean(roceNV))/float64(floor)))
	for _, r := range calls.report(floor, c.ports) {
		b.summary(r)
	}
	if overFloor > 1.5 {
		missed = append(missed, fmt.Sprintf("apply %.2f× its floor, target ≤ 1.5×", overFloor))
	}

	if err := b.printDisruptions(recipe); err != nil {
		return nil, err
	}

	if c.phaseRuns > 0 {
		if err := b.phases(c.phaseRuns, prof); err != nil {
			return nil, err
		}
	}

	if c.cpuprofile != "" {
		ds, err := b.profile(c.cpuprofile, c.profRuns, prof)
		if err != nil {
			return nil, err
		}
		row("rocectl apply, in-process", ds)
		fmt.Printf("  (no fork/exec/runtime start; CPU profile of %d in-process applies in %s)\n", len(ds), c.cpuprofile)
	}

	if c.auditPorts != "" {
		// The floor's rows name their call count: a wider first column.
		why, w := b.floorMissing(), 32
		if why == "" {
			w = 62
		}
		fmt.Printf("\naudit --snapshot (the built binary, whole process), %d runs each\n", c.runs)
		fmt.Printf("  %-*s %10s %10s %10s   %s\n", w, "", "median", "min", "max", "target")
		for _, f := range strings.Split(c.auditPorts, ",") {
			n, err := strconv.Atoi(strings.TrimSpace(f))
			if err != nil {
				return nil, fmt.Errorf("-audit-ports: %w", err)
			}
			packed, ds, fl, err := b.audit(n, recipe, why == "")
			if err != nil {
				return nil, err
			}
			// The target is for the snapshot as capture writes it.
			target, met := "-", ""
			if n == auditTargetPorts {
				target = fmt.Sprintf("≤ %s (issue \"One table per setting kind\", Performance)", ms(auditTarget))
				met = "no"
				if median.Mean(packed) <= auditTarget {
					met = "yes"
				} else {
					missed = append(missed, fmt.Sprintf("audit of %d ports %s, target ≤ %s", n, ms(median.Mean(packed)), ms(auditTarget)))
				}
			}
			fmt.Printf("  %-*s %10s %10s %10s   %s\n", w, fmt.Sprintf("rocectl audit, %d ports (packed, as captured)", n), ms(median.Mean(packed)), ms(slices.Min(packed)), ms(slices.Max(packed)), target)
			if met != "" {
				target = fmt.Sprintf("≤ %s: %s", ms(auditTarget), met)
			}
			b.summary(fmt.Sprintf("audit --snapshot %d ports, packed (process, median / min)|%s / %s|-|%s", n, ms(median.Mean(packed)), ms(slices.Min(packed)), target))
			vs := fmt.Sprintf("packed takes %.0f %% of it", pct(median.Mean(packed), median.Mean(ds)))
			fmt.Printf("  %-*s %10s %10s %10s   %s\n", w, fmt.Sprintf("rocectl audit, %d ports (as a tree, capture --tree)", n), ms(median.Mean(ds)), ms(slices.Min(ds)), ms(slices.Max(ds)), vs)
			b.summary(fmt.Sprintf("audit --snapshot %d ports, tree (process, median / min)|%s / %s|-|%s", n, ms(median.Mean(ds)), ms(slices.Min(ds)), vs))
			switch {
			case fl.why != "":
				why = fl.why // the same for every port count: once, below
			case fl.ds != nil:
				share := fmt.Sprintf("%.0f %% of the audit's median", pct(median.Mean(fl.ds), median.Mean(ds)))
				if n == auditTargetPorts {
					share = fmt.Sprintf("of the %s target: %.0f %% (%s)", ms(auditTarget), pct(median.Mean(fl.ds), auditTarget), share)
				}
				fmt.Printf("  %-*s %10s %10s %10s   %s\n", w, fmt.Sprintf("audit floor, %d ports (the tree's %d file calls, nothing else)", n, fl.calls), ms(median.Mean(fl.ds)), ms(slices.Min(fl.ds)), ms(slices.Max(fl.ds)), share)
				b.summary(fmt.Sprintf("audit floor %d ports: its %d file calls alone (process, median / min)|%s / %s|-|%s", n, fl.calls, ms(median.Mean(fl.ds)), ms(slices.Min(fl.ds)), share))
				bound, verdict := fl.bound(), "-"
				if n == auditTargetPorts {
					verdict = fmt.Sprintf("for a tree, the target is %s", reach(bound))
				}
				fmt.Printf("  %-*s %10s %10s %10s   %s\n", w, fmt.Sprintf("audit bound, %d ports (floor − %s bare + %s start-up)", n, ms(median.Mean(fl.bare)), ms(median.Mean(fl.start))), ms(bound), "", "", verdict)
				b.summary(fmt.Sprintf("audit bound %d ports: floor − bare process + rocectl start-up|%s|-|%s", n, ms(bound), verdict))
			}
		}
		if why != "" {
			fmt.Printf("  audit floor not measured: %s\n", why)
			b.summary("audit floor (its file calls alone)|not measured (see the output)|-|-")
		}
	}
	return missed, nil
}

// reach says whether the audit's target is within a bound.
func reach(bound time.Duration) string {
	if bound > auditTarget {
		return fmt.Sprintf("out of reach for this binary here: %s over it before any JSON, logic or output", ms(bound-auditTarget))
	}
	return fmt.Sprintf("within reach: %s left for the JSON, logic and output", ms(auditTarget-bound))
}

// The audit's target: a 64-port snapshot audit, as a process, in 20 ms
// (issue "One table per setting kind…", Performance).
const (
	auditTargetPorts = 64
	auditTarget      = 20 * time.Millisecond
)

type bench struct {
	c      config
	ns     *netNS
	tmp    string
	sysDir string // holds the host root
	tmpl   string
	names  []string
}

func (b *bench) root() string  { return filepath.Join(b.sysDir, "root") }
func (b *bench) state() string { return filepath.Join(b.tmp, "state") }

// reset gives the next run a factory host: a fresh copy of the root, an
// empty state dir, MTU 1500 everywhere.
func (b *bench) reset() error {
	for _, d := range []string{b.root(), b.state()} {
		if err := os.RemoveAll(d); err != nil {
			return err
		}
		if err := os.Mkdir(d, 0o700); err != nil {
			return err
		}
	}
	if err := fixturehost.CopyTree(b.tmpl, b.root()); err != nil {
		return err
	}
	for _, n := range b.names {
		if err := b.ns.setMTU(n, 1500); err != nil {
			return fmt.Errorf("reset MTU of %s: %w", n, err)
		}
	}
	return nil
}

// once resets the host, runs one side inside the namespace and returns its
// wall time (fork to exit) and the file tree it left.
func (b *bench) once(side, name string, args ...string) (time.Duration, map[string]string, error) {
	if err := b.reset(); err != nil {
		return 0, nil, err
	}
	cmd := exec.Command(name, args...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	t0 := time.Now()
	err := b.ns.start(cmd)
	if err == nil {
		err = cmd.Wait()
	}
	d := time.Since(t0)
	if err != nil {
		return 0, nil, fmt.Errorf("%s: %v\n%s", side, err, out.String())
	}
	for _, n := range b.names {
		if m, err := b.ns.mtu(n); err != nil || m != 9000 {
			return 0, nil, fmt.Errorf("%s left %s at MTU %d (%v), want 9000\n%s", side, n, m, err, out.String())
		}
	}
	tree, err := fixturehost.ReadTree(b.root())
	return d, tree, err
}

// startupOnce times `rocectl --version`: fork, exec, runtime and package
// initialisation, flag parsing; no host access.
func (b *bench) startupOnce() (time.Duration, error) {
	cmd := exec.Command(b.c.rocectl, "--version")
	t0 := time.Now()
	if out, err := cmd.CombinedOutput(); err != nil {
		return 0, fmt.Errorf("rocectl --version: %v\n%s", err, out)
	}
	return time.Since(t0), nil
}

// journalSaver times the two saves every apply makes of its journal:
// Begin's, durable before the first write (temp file, fsync, rename, fsync
// of the directory), and the final one, which also moves it to done/. The
// journal is the one the first rocectl run of this benchmark wrote, the
// state dir the one rocectl uses: the same bytes on the same file system.
// Start-up plus these is the least an apply that keeps the design's
// durable journal could take here, before it reads or writes a single
// setting.
type journalSaver struct {
	st apply.Store
	j  *apply.Journal
	id string
	n  int
}

func (b *bench) newJournalSaver() (*journalSaver, error) {
	st := apply.Store{Store: statedir.Store{Dir: b.state()}}
	js, err := st.List()
	if err != nil {
		return nil, err
	}
	if len(js) != 1 || js[0].State != apply.StateCommitted {
		return nil, fmt.Errorf("want the one committed journal of the run in %s, found %d", b.state(), len(js))
	}
	return &journalSaver{st: st, j: js[0], id: js[0].ID}, nil
}

func (s *journalSaver) save() (time.Duration, error) {
	s.n++
	s.j.ID = fmt.Sprintf("%s-floor%03d", s.id, s.n)
	s.j.State = apply.StateApplying
	t0 := time.Now()
	if err := s.st.Save(s.j); err != nil {
		return 0, err
	}
	s.j.State = apply.StateCommitted
	if err := s.st.Save(s.j); err != nil {
		return 0, err
	}
	return time.Since(t0), nil
}

// audit times the binary's read-only audit of an n-port snapshot and,
// with floor, its floor beside it (see auditFloor).
//
// The snapshot is timed in both forms: packed, as `rocectl capture` writes
// it, and as a tree (capture --tree, the fixture hosts); the floor is the
// tree's, whose file calls it replays.
func (b *bench) audit(n int, recipe string, floor bool) (packed, tree []time.Duration, fl floorResult, err error) {
	dir := filepath.Join(b.tmp, fmt.Sprintf("audit-%d", n))
	packedDir := dir + "-packed"
	for _, d := range []string{dir, packedDir} {
		if err := hosts.WriteCX6DxFactoryN(filepath.Join(b.c.repo, "testdata", "captures"), d, n); err != nil {
			return nil, nil, fl, err
		}
	}
	if err := snapshot.Pack(packedDir); err != nil {
		return nil, nil, fl, err
	}
	packedArgs := []string{"audit", "-p", recipe, "--snapshot", packedDir}
	args := []string{"audit", "-p", recipe, "--snapshot", dir}
	var plan string
	if floor {
		if plan, fl, err = b.floorPlan(n, args); err != nil {
			return nil, nil, fl, err
		}
	}
	// A B C, A B C…: load drift hits both forms and the floor alike.
	for range b.c.runs {
		for _, a := range [][]string{packedArgs, args} {
			d, out, err := timed(b.c.rocectl, a...)
			var ee *exec.ExitError
			if !errors.As(err, &ee) || ee.ExitCode() != 2 { // drift found is the expected answer
				return nil, nil, fl, fmt.Errorf("audit of %d ports (%s): %v, want exit 2\n%s", n, a[len(a)-1], err, out)
			}
			if a[len(a)-1] == packedDir {
				packed = append(packed, d)
			} else {
				tree = append(tree, d)
			}
		}
		if plan == "" {
			continue
		}
		d, out, err := timed(b.c.auditFloor, "-plan", plan)
		if err != nil {
			return nil, nil, fl, fmt.Errorf("audit floor, %d ports: %v\n%s", n, err, out)
		}
		fl.ds = append(fl.ds, d)
		// The two start-ups, in the same loop: the bound below is
		// the floor with its own start swapped for rocectl's.
		if d, out, err = timed(b.c.rocectl, "--version"); err != nil {
			return nil, nil, fl, fmt.Errorf("rocectl --version: %v\n%s", err, out)
		}
		fl.start = append(fl.start, d)
		if d, out, err = timed(b.c.auditFloor, "-plan", plan, "-none"); err != nil {
			return nil, nil, fl, fmt.Errorf("auditfloor -plan %s -none: %v\n%s", plan, err, out)
		}
		fl.bare = append(fl.bare, d)
	}
	return packed, tree, fl, nil
}

// floorResult is an audit's floor: the times of auditfloor, the file
// system calls it makes per run, or why it was not measured. start and
// bare are the times of `rocectl --version` and of auditfloor with the
// same plan and -none (everything but the calls), taken in the same loop.
type floorResult struct {
	ds    []time.Duration
	start []time.Duration
	bare  []time.Duration
	calls int
	why   string
}

// bound is the least this rocectl binary's audit can take here: the
// floor's calls (the floor less its own bare process) after rocectl's
// start-up, with nothing between them, not even reading the snapshot's
// JSON. An audit cannot make its first call before it has started.
func (fl floorResult) bound() time.Duration {
	return median.Mean(fl.ds) - median.Mean(fl.bare) + median.Mean(fl.start)
}

// floorMissing says why the floors made of replayed calls (the audit's,
// the apply's own calls) cannot be measured ("" when they can):
// auditfloor replays the calls strace lists.
func (b *bench) floorMissing() string {
	if b.c.auditFloor == "" {
		return "no -auditfloor BINARY given (bench/apply-vs-shell.sh builds bench/cmd/auditfloor and passes it)"
	}
	if _, err := exec.LookPath("strace"); err != nil {
		return "strace is not on PATH (it lists the file system calls auditfloor replays; Debian: apt install strace)"
	}
	return ""
}

// floorPlan prepares the floor of `rocectl ARGS`: it runs the audit once
// under strace, which lists every openat2 and getdents64 it makes with
// the directories' paths; auditfloor parses that list, checks it by
// replaying it once against the same snapshot, says how many calls a
// replay makes and stores the list parsed (-write-plan) so that the timed
// runs do not parse strace's text. The floor is the least any process can
// take to make the audit's opens, reads and listings here: its start-up
// counts (it is a process too), the audit's JSON decoding, profile
// parsing, planning and output do not.
func (b *bench) floorPlan(n int, args []string) (string, floorResult, error) {
	list := filepath.Join(b.tmp, fmt.Sprintf("audit-%d.strace", n))
	plan := filepath.Join(b.tmp, fmt.Sprintf("audit-%d.floor", n))
	cmd := exec.Command("strace", append([]string{"-f", "-y", "-e", "trace=openat2,getdents64", "-o", list, b.c.rocectl}, args...)...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 2 {
		// strace that cannot trace here (no ptrace in a container) is
		// a missing tool, not a failed benchmark; a rocectl that fails
		// fails the timed runs next.
		first, _, _ := strings.Cut(strings.TrimSpace(out.String()), "\n")
		return "", floorResult{why: fmt.Sprintf("strace of the %d-port audit: %v, want exit 2 (%s)", n, err, first)}, nil
	}
	cmd = exec.Command(b.c.auditFloor, "-list", list, "-write-plan", plan, "-v")
	out.Reset()
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		return "", floorResult{}, fmt.Errorf("auditfloor -list %s: %v\n%s", list, err, out.String())
	}
	_, calls, ok := strings.Cut(out.String(), "\nfile calls: ")
	c, err := strconv.Atoi(strings.TrimSpace(calls))
	if !ok || err != nil {
		return "", floorResult{}, fmt.Errorf("auditfloor -v printed no \"file calls: N\" line:\n%s", out.String())
	}
	return plan, floorResult{calls: c}, nil
}

// timed runs a program to its exit and returns its wall time, fork to
// exit, and what it printed.
func timed(name string, args ...string) (time.Duration, string, error) {
	return timedCmd(exec.Command(name, args...))
}

// timedCmd runs cmd to its exit and returns its wall time, fork to exit,
// and what it printed.
func timedCmd(cmd *exec.Cmd) (time.Duration, string, error) {
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	t0 := time.Now()
	err := cmd.Run()
	return time.Since(t0), out.String(), err
}

// printDisruptions prints what the plan says applying the recipe disturbs
// on the ConnectX host itself (plan.Disruptions, in rocectl audit's JSON
// over the fixture root): the veths the timed runs write have no DCB, so
// their plans announce only the MTU's channel reset. Each line once, with
// the number of ports it is on.
func (b *bench) printDisruptions(recipe string) error {
	cmd := exec.Command(b.c.rocectl, "audit", "-o", "json", "-p", recipe, "--snapshot", b.tmpl)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 2 {
		return fmt.Errorf("audit of the %d-port host: %v, want exit 2\n%s", b.c.ports, err, errb.String())
	}
	var rep struct {
		Disruptions map[string][]string `json:"disruptions"`
	}
	if err := json.Unmarshal(out.Bytes(), &rep); err != nil {
		return fmt.Errorf("audit of the %d-port host: %w", b.c.ports, err)
	}
	var lines []string
	ports := map[string]int{}
	for _, nd := range slices.Sorted(maps.Keys(rep.Disruptions)) {
		for _, d := range rep.Disruptions[nd] {
			if ports[d] == 0 {
				lines = append(lines, d)
			}
			ports[d]++
		}
	}
	fmt.Printf("\nwhat the recipe's plan says it disrupts on the %d-port ConnectX host (rocectl audit --snapshot; the veths have no DCB)\n", b.c.ports)
	for _, d := range lines {
		fmt.Printf("  %d of %d ports: %s\n", ports[d], b.c.ports, d)
	}
	return nil
}

func (b *bench) summary(line string) {
	if b.c.summary == "" {
		return
	}
	f, err := os.OpenFile(b.c.summary, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		fmt.Fprintln(os.Stderr, "applybench:", err)
		return
	}
	defer f.Close()
	fmt.Fprintln(f, line)
}

func ms(d time.Duration) string { return fmt.Sprintf("%.1f ms", float64(d)/1e6) }

func pct(part, whole time.Duration) float64 { return 100 * float64(part) / float64(whole) }

func row(name string, ds []time.Duration) {
	fmt.Printf("  %-32s %10s %10s %10s\n", name, ms(median.Mean(ds)), ms(slices.Min(ds)), ms(slices.Max(ds)))
}

// hostRootDir makes the directory the host root is copied into: under dir,
// or with "auto" under /dev/shm when that is a tmpfs, else under tmp.
func hostRootDir(dir, tmp string) (string, string, error) {
	if dir == "auto" {
		dir = tmp
		if fsName("/dev/shm") == "tmpfs" {
			dir = "/dev/shm"
		}
	}
	if dir == tmp {
		return tmp, fsName(tmp), nil
	}
	d, err := os.MkdirTemp(dir, "applybench-root-")
	if err != nil {
		return "", "", err
	}
	return d, fsName(d), nil
}

// fsName names the file system holding path, for the report.
func fsName(path string) string {
	var st unix.Statfs_t
	if err := unix.Statfs(path, &st); err != nil {
		return "unknown"
	}
	switch st.Type {
	case unix.TMPFS_MAGIC:
		return "tmpfs"
	case unix.EXT4_SUPER_MAGIC:
		return "ext4"
	case unix.XFS_SUPER_MAGIC:
		return "xfs"
	case unix.BTRFS_SUPER_MAGIC:
		return "btrfs"
	case unix.OVERLAYFS_SUPER_MAGIC:
		return "overlayfs"
	}
	return fmt.Sprintf("fs type %#x", st.Type)
}
