// Command applybench times `rocectl apply` of the ConnectX recipe on an
// N-port fixture host against bench/baseline-apply.sh, the same recipe as a
// hand-written bash script, and times `rocectl audit --snapshot` on 8- and
// 64-port hosts. bench/apply-vs-shell.sh builds and runs it (as root).
//
// The host: a fixture root written by mkhosts (WriteCX6DxFactoryN) and veth
// pairs named like its netdevs in a network namespace this program creates
// (so MTU changes go to a real kernel; DCB, pause and tunables are
// unsupported on veth for both sides alike). Before every run the root is a
// fresh copy, the state dir empty and every MTU 1500. Runs alternate
// rocectl/baseline so that drift in machine load hits both. After each run
// the MTUs are checked, and the file tree each side leaves must be the same.
package main

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/rocectl/rocectl/internal/cmd/mkhosts/hosts"
	"github.com/rocectl/rocectl/internal/fixturehost"
)

type config struct {
	runs       int
	ports      int
	rocectl    string
	baseline   string
	repo       string
	auditPorts string
	summary    string
	cpuprofile string
	profRuns   int
}

func main() {
	var c config
	flag.IntVar(&c.runs, "n", 10, "runs of each side")
	flag.IntVar(&c.ports, "ports", 8, "ports of the applied host (even: one veth pair gives two)")
	flag.StringVar(&c.rocectl, "rocectl", "bin/rocectl", "the rocectl binary")
	flag.StringVar(&c.baseline, "baseline", "bench/baseline-apply.sh", "the bash baseline")
	flag.StringVar(&c.repo, "repo", ".", "rocectl source tree (profiles/, testdata/captures)")
	flag.StringVar(&c.auditPorts, "audit-ports", "8,64", "port counts for the audit timing (empty: skip)")
	flag.StringVar(&c.summary, "summary", "", "append result rows (name|value|baseline|target) to this file")
	flag.StringVar(&c.cpuprofile, "cpuprofile", "", "also run the apply in-process with a CPU profile written here (go tool pprof -tagfocus phase=apply)")
	flag.IntVar(&c.profRuns, "profile-runs", 100, "in-process applies under -cpuprofile (100 Hz sampling: a 20 ms apply gives 2 samples)")
	flag.Parse()
	if err := run(c); err != nil {
		fmt.Fprintln(os.Stderr, "applybench:", err)
		os.Exit(1)
	}
}

func run(c config) error {
	if os.Geteuid() != 0 {
		return errors.New("needs root (a network namespace, MTU changes)")
	}
	if c.ports < 2 || c.ports%2 != 0 || c.runs < 1 {
		return errors.New("-ports must be even and ≥ 2, -n ≥ 1")
	}
	for _, p := range []*string{&c.rocectl, &c.baseline, &c.repo} {
		abs, err := filepath.Abs(*p)
		if err != nil {
			return err
		}
		*p = abs
	}
	tmp, err := os.MkdirTemp("", "applybench-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	caps := filepath.Join(c.repo, "testdata", "captures")
	tmpl := filepath.Join(tmp, "template")
	if err := hosts.WriteCX6DxFactoryN(caps, tmpl, c.ports); err != nil {
		return err
	}
	prof := filepath.Join(tmp, "bench.toml")
	recipe := filepath.Join(c.repo, "profiles", "connectx-lossless.toml")
	// As test/e2e: the recipe for whatever driver carries the names (veth),
	// no soak (nothing to watch on veth; the guard has its own benchmark).
	if err := os.WriteFile(prof, fmt.Appendf(nil, "name = \"bench\"\ninclude = [%q]\n[match]\ndrivers = [\"*\"]\n[guard]\nenabled = false\n", recipe), 0o600); err != nil {
		return err
	}

	ns, err := newNetNS()
	if err != nil {
		return err
	}
	defer ns.Close()
	var names []string
	for k := 1; k <= c.ports/2; k++ {
		left, right := fmt.Sprintf("ens%df0np0", k), fmt.Sprintf("ens%df1np1", k)
		if err := ns.addVethUp(left, right); err != nil {
			return err
		}
		names = append(names, left, right)
	}
	b := &bench{c: c, ns: ns, tmp: tmp, tmpl: tmpl, names: names}

	var roce, shell []time.Duration
	var roceTree, shellTree map[string]string
	for i := range c.runs {
		sides := []func() error{
			func() error {
				d, tree, err := b.once("rocectl", c.rocectl, "--root", b.root(), "--state-dir", b.state(), "apply", "-p", prof)
				roce, roceTree = append(roce, d), tree
				return err
			},
			func() error {
				d, tree, err := b.once("baseline", "/bin/bash", c.baseline, b.root())
				shell, shellTree = append(shell, d), tree
				return err
			},
		}
		if i%2 == 1 {
			slices.Reverse(sides)
		}
		for _, s := range sides {
			if err := s(); err != nil {
				return err
			}
		}
		if d := diffTrees(roceTree, shellTree); len(d) > 0 {
			return fmt.Errorf("rocectl and the baseline leave different files (%d), e.g. %s: not the same work", len(d), d[0])
		}
	}

	fmt.Printf("apply the ConnectX recipe, %d-port host (%d veth pairs in a fresh netns), %d runs each\n", c.ports, c.ports/2, c.runs)
	fmt.Printf("  %-32s %10s %10s %10s\n", "", "median", "min", "max")
	row("rocectl apply", roce)
	row("bash baseline (ip/ethtool/dcb)", shell)
	ratio := float64(median(shell)) / float64(median(roce))
	fmt.Printf("  rocectl is %.1f× faster (medians; target ≥ 20×)\n", ratio)
	b.summary(fmt.Sprintf("apply %d ports (live veth, binary)|%s|%s (bash)|>= 20x faster: %.1fx", c.ports, ms(median(roce)), ms(median(shell)), ratio))

	if c.cpuprofile != "" {
		ds, err := b.profile(c.cpuprofile, c.profRuns, prof)
		if err != nil {
			return err
		}
		row("rocectl apply, in-process", ds)
		fmt.Printf("  (no fork/exec/runtime start; CPU profile of %d in-process applies in %s)\n", len(ds), c.cpuprofile)
	}

	if c.auditPorts != "" {
		fmt.Printf("\naudit --snapshot (the built binary, whole process), %d runs each\n", c.runs)
		fmt.Printf("  %-32s %10s %10s %10s\n", "", "median", "min", "max")
		for _, f := range strings.Split(c.auditPorts, ",") {
			n, err := strconv.Atoi(strings.TrimSpace(f))
			if err != nil {
				return fmt.Errorf("-audit-ports: %w", err)
			}
			ds, err := b.audit(n, recipe)
			if err != nil {
				return err
			}
			row(fmt.Sprintf("rocectl audit, %d ports", n), ds)
			b.summary(fmt.Sprintf("audit --snapshot %d ports (process)|%s|-|-", n, ms(median(ds))))
		}
	}
	return nil
}

type bench struct {
	c     config
	ns    *netNS
	tmp   string
	tmpl  string
	names []string
}

func (b *bench) root() string  { return filepath.Join(b.tmp, "root") }
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
	tree, err := treeOf(b.root())
	return d, tree, err
}

// audit times the binary's read-only audit of an n-port snapshot.
func (b *bench) audit(n int, recipe string) ([]time.Duration, error) {
	dir := filepath.Join(b.tmp, fmt.Sprintf("audit-%d", n))
	if err := hosts.WriteCX6DxFactoryN(filepath.Join(b.c.repo, "testdata", "captures"), dir, n); err != nil {
		return nil, err
	}
	var ds []time.Duration
	for range b.c.runs {
		cmd := exec.Command(b.c.rocectl, "audit", "-p", recipe, "--snapshot", dir)
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		t0 := time.Now()
		err := cmd.Run()
		ds = append(ds, time.Since(t0))
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.ExitCode() != 2 { // drift found is the expected answer
			return nil, fmt.Errorf("audit of %d ports: %v, want exit 2\n%s", n, err, out.String())
		}
	}
	return ds, nil
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

// treeOf is every file's content and link target under root.
func treeOf(root string) (map[string]string, error) { return fixturehost.ReadTree(root) }

func diffTrees(a, b map[string]string) []string {
	var d []string
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			d = append(d, k)
		}
	}
	for k := range b {
		if _, ok := a[k]; !ok {
			d = append(d, k)
		}
	}
	slices.Sort(d)
	return d
}

func median(ds []time.Duration) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

func ms(d time.Duration) string { return fmt.Sprintf("%.1f ms", float64(d)/1e6) }

func row(name string, ds []time.Duration) {
	fmt.Printf("  %-32s %10s %10s %10s\n", name, ms(median(ds)), ms(slices.Min(ds)), ms(slices.Max(ds)))
}
