package main

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/rocectl/rocectl/internal/testkit/median"
)

// applyCalls is the apply's own file system calls under the host root,
// replayed by auditfloor as a process and nothing else: the opens, reads,
// writes and listings of one traced apply, spread over the CPUs and again
// on one CPU (the apply spreads its discovery and read-backs over the
// CPUs but makes its writes, and each one's read-back, one after the
// other: its calls alone take between the two), and the least of them,
// only a read, the write and a read back of each attribute written.
// Put after rocectl's start-up and its two journal saves, they bound the
// apply from below: no apply that makes these calls can be quicker here,
// whatever it does between them. The MTU changes (netlink) are in
// neither: the bound leaves them to the apply.
type applyCalls struct {
	plan, least       string          // auditfloor plan files
	calls, leastCalls int             // file calls one replay of each makes
	writes            int             // attributes the apply wrote
	all, one, few     []time.Duration // all over the CPUs, all on one CPU, the least over the CPUs
	bare              []time.Duration
	why               string // not measured: why
}

// applyCallsPlan traces one apply of prof on a fresh host with strace,
// lets auditfloor parse the list (and check it by replaying it once on
// another fresh copy) and store it as two plans, all of the calls and the
// least of them. Without strace or auditfloor it says why, and nothing
// is measured.
func (b *bench) applyCallsPlan(prof string) (applyCalls, error) {
	if why := b.floorMissing(); why != "" {
		return applyCalls{why: why}, nil
	}
	list := filepath.Join(b.tmp, "apply.strace")
	if err := b.reset(); err != nil {
		return applyCalls{}, err
	}
	cmd := exec.Command("strace", "-f", "-y", "-s", "4096", "-e", "trace=openat2,getdents64,write", "-o", list,
		b.c.rocectl, "--root", b.root(), "--state-dir", b.state(), "apply", "-p", prof)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := b.ns.start(cmd)
	if err == nil {
		err = cmd.Wait()
	}
	if err != nil {
		// strace that cannot trace here (no ptrace in a container) is a
		// missing tool; a rocectl that fails fails the timed runs.
		first, _, _ := strings.Cut(strings.TrimSpace(out.String()), "\n")
		return applyCalls{why: fmt.Sprintf("strace of the apply: %v (%s)", err, first)}, nil
	}
	ac := applyCalls{plan: filepath.Join(b.tmp, "apply.floor"), least: filepath.Join(b.tmp, "apply-least.floor")}
	for _, p := range []struct {
		file  string
		calls *int
		args  []string
	}{
		{ac.plan, &ac.calls, nil},
		{ac.least, &ac.leastCalls, []string{"-least"}},
	} {
		if err := b.reset(); err != nil {
			return applyCalls{}, err
		}
		args := append([]string{"-list", list, "-writes", "-under", b.root(), "-write-plan", p.file, "-v"}, p.args...)
		_, out, err := timed(b.c.auditFloor, args...)
		if err != nil {
			return applyCalls{}, fmt.Errorf("auditfloor %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		if *p.calls, err = lastNumber(out, "\nfile calls: "); err != nil {
			return applyCalls{}, err
		}
		if ac.writes, err = opensWritten(out); err != nil {
			return applyCalls{}, err
		}
	}
	return ac, nil
}

// lastNumber reads the number after key in auditfloor -v's report.
func lastNumber(out, key string) (int, error) {
	_, s, ok := strings.Cut(out, key)
	s, _, _ = strings.Cut(s, "\n")
	n, err := strconv.Atoi(strings.TrimSpace(s))
	if !ok || err != nil {
		return 0, fmt.Errorf("auditfloor -v printed no %q line:\n%s", strings.TrimSpace(key), out)
	}
	return n, nil
}

// opensWritten reads "written N," from auditfloor -v's "opens by kind".
func opensWritten(out string) (int, error) {
	return lastNumber(strings.ReplaceAll(out, ",", "\n"), " written ")
}

// time makes one run of each replay, each on a fresh host, and of the
// first plan's bare process (-none: fork, exec, the runtime's start and
// the plan read, no calls), which the bound takes off.
func (ac *applyCalls) time(b *bench) error {
	for _, p := range []struct {
		file string
		cpus string
		ds   *[]time.Duration
	}{{ac.plan, "", &ac.all}, {ac.plan, "1", &ac.one}, {ac.least, "", &ac.few}} {
		if err := b.reset(); err != nil {
			return err
		}
		cmd := exec.Command(b.c.auditFloor, "-plan", p.file, "-writes")
		if p.cpus != "" {
			cmd.Env = append(os.Environ(), "GOMAXPROCS="+p.cpus)
		}
		d, out, err := timedCmd(cmd)
		if err != nil {
			return fmt.Errorf("auditfloor -plan %s -writes: %v\n%s", p.file, err, out)
		}
		*p.ds = append(*p.ds, d)
	}
	d, out, err := timed(b.c.auditFloor, "-plan", ac.plan, "-none")
	if err != nil {
		return fmt.Errorf("auditfloor -plan %s -none: %v\n%s", ac.plan, err, out)
	}
	ac.bare = append(ac.bare, d)
	return nil
}

// report prints the replays and the bounds they give beside the floor, and
// returns summary rows.
func (ac *applyCalls) report(floor time.Duration, ports int) []string {
	if ac.why != "" {
		fmt.Printf("  its file calls alone not measured: %s\n", ac.why)
		return []string{"apply's file calls alone|not measured (see the output)|-|-"}
	}
	bare := median.Mean(ac.bare)
	callsOf := func(ds []time.Duration) time.Duration { return max(median.Mean(ds)-bare, 0) }
	row(fmt.Sprintf("its file calls alone (%d)", ac.calls), ac.all)
	row("the same on one CPU", ac.one)
	row(fmt.Sprintf("the least of them (%d)", ac.leastCalls), ac.few)
	fmt.Printf("  (replayed by auditfloor as a process, %s of it its start and plan, over the CPUs but for the\n   one-CPU row; the least: a read, the write and a read back of each of the %d attributes written;\n   no netlink. The apply writes in order, one attribute after the other, and spreads its reads over\n   the CPUs: its own calls take between the first two rows)\n", ms(bare), ac.writes)
	var rows []string
	for _, x := range []struct {
		name  string
		calls int
		d     time.Duration
		what  string
	}{
		{"its own calls", ac.calls, callsOf(ac.all), "no apply making its calls"},
		{"its own calls on one CPU", ac.calls, callsOf(ac.one), "no apply making its calls one after the other"},
		{"the least calls", ac.leastCalls, callsOf(ac.few), "no apply that journals each value and reads it back once"},
	} {
		bound := floor + x.d
		r := float64(bound) / float64(floor)
		verdict := fmt.Sprintf("%s leaves the apply's logic, netlink and output %s of the 1.5× target", ms(bound), ms(time.Duration(1.5*float64(floor))-bound))
		if r > 1.5 {
			verdict = fmt.Sprintf("%s: %s can meet the 1.5× target here", ms(bound), x.what)
		}
		fmt.Printf("  bound, floor + %s (%s): %.2f× its floor; %s\n", x.name, ms(x.d), r, verdict)
		rows = append(rows, fmt.Sprintf("apply %d ports: floor + %s (%d file calls)|%.2fx|-|%s", ports, x.name, x.calls, r, verdict))
	}
	return rows
}
