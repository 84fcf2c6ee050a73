package e2e

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/vishvananda/netlink"

	"github.com/rocectl/rocectl/apply"
	"github.com/rocectl/rocectl/internal/testkit/fixturehost"
	"github.com/rocectl/rocectl/internal/testkit/netnstest"
	"github.com/rocectl/rocectl/internal/testkit/testbin"
	"github.com/rocectl/rocectl/statedir"
)

var bin string

func TestMain(m *testing.M) { testbin.Main(m, &bin) }

// host is a fixture host root plus a netns holding veth links named like
// its netdevs (ens1f0np0 <-> ens1f1np1: one pair gives both names).
type host struct {
	t       *testing.T
	ns      *netnstest.NS
	root    string
	state   string
	profile string
}

func newHost(t *testing.T) *host {
	ns := netnstest.New(t)
	root := t.TempDir()
	if err := fixturehost.CopyTree(fixturehost.Dir("cx6dx-ofed-factory"), root); err != nil {
		t.Fatal(err)
	}
	ns.AddVeth("ens1f0np0", "ens1f1np1")
	ns.SetUp("ens1f0np0")
	ns.SetUp("ens1f1np1")
	// The ConnectX recipe, for whatever driver carries these names here
	// (veth): its DCB and pause settings are then "unsupported", while MTU
	// and the sysfs/configfs knobs are applied for real.
	prof := filepath.Join(t.TempDir(), "e2e.toml")
	recipe := filepath.Join(fixturehost.RepoRoot(), "profiles", "connectx-lossless.toml")
	if err := os.WriteFile(prof, []byte(fmt.Sprintf("name = \"e2e\"\ninclude = [%q]\n[match]\ndrivers = [\"*\"]\n[guard]\nenabled = false\n", recipe)), 0o600); err != nil {
		t.Fatal(err)
	}
	return &host{t: t, ns: ns, root: root, state: t.TempDir(), profile: prof}
}

func (h *host) cmd(args ...string) *netnstest.Cmd {
	all := append([]string{"--root", h.root, "--state-dir", h.state}, args...)
	return h.ns.Command(bin, all...)
}

// slowCmd is cmd with every apply step delayed (kill -9 or pull a link
// mid-apply): the test build's hook, see cli/testhooks.go.
func (h *host) slowCmd(stepDelay string, args ...string) *netnstest.Cmd {
	c := h.cmd(args...)
	c.Env = append(os.Environ(), "ROCECTL_TEST_STEP_DELAY="+stepDelay)
	return c
}

func (h *host) run(args ...string) (int, string) {
	h.t.Helper()
	var out bytes.Buffer
	c := h.cmd(args...)
	c.Stdout, c.Stderr = &out, &out
	err := c.Run()
	var ee *exec.ExitError
	switch {
	case errors.As(err, &ee):
		return ee.ExitCode(), out.String()
	case err != nil:
		h.t.Fatalf("running rocectl: %v", err)
	}
	return 0, out.String()
}

func (h *host) mtu(name string) int {
	h.t.Helper()
	mtu := 0
	if err := h.ns.Do(func() error {
		l, err := netlink.LinkByName(name)
		if err == nil {
			mtu = l.Attrs().MTU
		}
		return err
	}); err != nil {
		h.t.Fatal(err)
	}
	return mtu
}

func (h *host) file(p string) string {
	b, err := os.ReadFile(filepath.Join(h.root, p))
	if err != nil {
		h.t.Fatal(err)
	}
	return strings.TrimSpace(string(b))
}

func TestApplyThenAuditOnVethsInNetns(t *testing.T) {
	h := newHost(t)
	code, out := h.run("apply", "-p", h.profile)
	if code != 0 {
		t.Fatalf("apply exit %d\n%s", code, out)
	}
	for _, want := range []string{
		"~ ens1f0np0.link.mtu = 1500 -> 9000",
		"5 settings unsupported: DCB not supported by driver veth",
		"ens1f0np0.qos.dcbx ens1f0np0.qos.trust ens1f0np0.qos.dscp2prio ens1f0np0.qos.pfc",
		"Applied ",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("apply output lacks %q\n%s", want, out)
		}
	}
	if m := h.mtu("ens1f0np0"); m != 9000 {
		t.Errorf("MTU in the kernel = %d, want 9000", m)
	}
	if v := h.file("sys/class/net/ens1f0np0/ecn/roce_np/enable/3"); v != "1" {
		t.Errorf("ecn np enable 3 = %q", v)
	}
	if v := h.file("sys/kernel/config/rdma_cm/mlx5_1/ports/1/default_roce_tos"); v != "106" {
		t.Errorf("default_roce_tos = %q", v)
	}
	code, out = h.run("audit", "-p", h.profile)
	if code != 0 || !strings.Contains(out, "No changes. Host matches profile.") {
		t.Fatalf("audit after apply: exit %d\n%s", code, out)
	}
	// The journal is committed.
	js, err := apply.Store{Store: statedir.Store{Dir: h.state}}.List()
	if err != nil || len(js) != 1 || js[0].State != apply.StateCommitted {
		t.Fatalf("journals: %+v %v", js, err)
	}
}

// A link that vanishes mid-apply: the kernel's ENODEV becomes one line
// naming port, setting, value and reason, and the rest is restored.
func TestLinkGoneMidApplyIsOneClearLine(t *testing.T) {
	h := newHost(t)
	c := h.slowCmd("300ms", "apply", "-p", h.profile)
	var out bytes.Buffer
	c.Stdout, c.Stderr = &out, &out
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	// The first step is ens1f0np0's MTU: once the kernel has it, the
	// apply is under way, ens1f1np1's steps still to come. (A fixed sleep
	// here deleted the link before the apply began on a busy machine, and
	// tested the before-apply case instead.)
	waitFor(t, 30*time.Second, func() bool { return h.mtu("ens1f0np0") == 9000 })
	// Deleting one end of a veth pair deletes both.
	if err := h.ns.Do(func() error {
		l, err := netlink.LinkByName("ens1f1np1")
		if err != nil {
			return err
		}
		return netlink.LinkDel(l)
	}); err != nil {
		t.Fatal(err)
	}
	err := c.Wait()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 1 {
		t.Fatalf("exit %v, want 1\n%s", err, out.String())
	}
	if !strings.Contains(out.String(), "no such device") {
		t.Errorf("output should carry the kernel's reason:\n%s", out.String())
	}
}

// kill -9 at many points of an apply; afterwards `rocectl rollback` puts the
// host back exactly (MTU in the kernel, every file of the root).
func TestKill9AnywhereThenRollback(t *testing.T) {
	for _, after := range []time.Duration{50 * time.Millisecond, 250 * time.Millisecond, 700 * time.Millisecond, 1500 * time.Millisecond, 3 * time.Second} {
		t.Run(after.String(), func(t *testing.T) {
			h := newHost(t)
			beforeFiles := fixturehost.Files(t, h.root)
			c := h.slowCmd("100ms", "apply", "-p", h.profile)
			if err := c.Start(); err != nil {
				t.Fatal(err)
			}
			time.Sleep(after)
			_ = c.Process.Signal(syscall.SIGKILL)
			_ = c.Wait()
			code, out := h.run("rollback")
			if code != 0 {
				t.Fatalf("rollback exit %d\n%s", code, out)
			}
			if m := h.mtu("ens1f0np0"); m != 1500 {
				t.Errorf("MTU = %d after rollback, want 1500\n%s", m, out)
			}
			if d := fixturehost.DiffTrees(beforeFiles, fixturehost.Files(t, h.root)); len(d) > 0 {
				t.Errorf("files differ after rollback: %v\n%s", d, out)
			}
		})
	}
}

// After a kill -9, the next apply first restores the unfinished one.
func TestNextApplyRecoversUnfinishedJournal(t *testing.T) {
	h := newHost(t)
	c := h.slowCmd("100ms", "apply", "-p", h.profile)
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	// Killed once the apply is under way (its first step, the MTU, is
	// in the kernel, so its journal is open): a fixed 400 ms sleep killed
	// it before it had a journal on a busy machine (4 runs in 40).
	waitFor(t, 30*time.Second, func() bool { return h.mtu("ens1f0np0") == 9000 })
	_ = c.Process.Signal(syscall.SIGKILL)
	_ = c.Wait()
	code, out := h.run("apply", "-p", h.profile)
	if code != 0 || !strings.Contains(out, "found an unfinished apply") {
		t.Fatalf("exit %d\n%s", code, out)
	}
	js, _ := apply.Store{Store: statedir.Store{Dir: h.state}}.List()
	if len(js) != 2 || js[0].State != apply.StateRolledBack || js[1].State != apply.StateCommitted {
		var states []string
		for _, j := range js {
			states = append(states, j.State)
		}
		t.Fatalf("journal states %v, want [rolled-back committed]", states)
	}
}

func TestConfirmWithoutCommitReverts(t *testing.T) {
	h := newHost(t)
	code, out := h.run("apply", "--confirm", "2s", "-p", h.profile)
	if code != 0 || !strings.Contains(out, "rocectl commit") {
		t.Fatalf("apply --confirm: exit %d\n%s", code, out)
	}
	t.Cleanup(func() { killWatchers(h.state) })
	if m := h.mtu("ens1f0np0"); m != 9000 {
		t.Fatalf("MTU %d right after apply", m)
	}
	// While the window is open, another apply is refused.
	if code, out := h.run("apply", "-p", h.profile); code != 1 || !strings.Contains(out, "confirm window is open") {
		t.Errorf("second apply during the window: exit %d\n%s", code, out)
	}
	// The revert is over when its journal says so: the MTU step is undone
	// last, but the journal is saved after it, so waiting for the MTU
	// alone raced the save on a busy machine.
	var js []*apply.Journal
	waitFor(t, 8*time.Second, func() bool {
		js, _ = apply.Store{Store: statedir.Store{Dir: h.state}}.List()
		return len(js) == 1 && js[0].Final()
	})
	if js[0].State != apply.StateRolledBack {
		t.Fatalf("journal %+v", js[0])
	}
	if m := h.mtu("ens1f0np0"); m != 1500 {
		t.Fatalf("MTU %d after the revert, want 1500", m)
	}
}

func TestConfirmWithCommitKeeps(t *testing.T) {
	h := newHost(t)
	if code, out := h.run("apply", "--confirm", "2s", "-p", h.profile); code != 0 {
		t.Fatalf("exit %d\n%s", code, out)
	}
	t.Cleanup(func() { killWatchers(h.state) })
	if code, out := h.run("commit"); code != 0 || !strings.Contains(out, "Committed") {
		t.Fatalf("commit: exit %d\n%s", code, out)
	}
	time.Sleep(3500 * time.Millisecond)
	if m := h.mtu("ens1f0np0"); m != 9000 {
		t.Fatalf("MTU %d after commit and deadline, want 9000 kept", m)
	}
}

// The applying process and its watcher both gone: the deadline still holds,
// honoured by the next rollback run (or the agent).
func TestConfirmHonouredAfterProcessesDie(t *testing.T) {
	for _, by := range [][]string{{"rollback"}, {"agent", "--once", "-p", ""}} {
		t.Run(by[0], func(t *testing.T) {
			h := newHost(t)
			if code, out := h.run("apply", "--confirm", "1s", "-p", h.profile); code != 0 {
				t.Fatalf("exit %d\n%s", code, out)
			}
			killWatchers(h.state)
			time.Sleep(1500 * time.Millisecond)
			if m := h.mtu("ens1f0np0"); m != 9000 {
				t.Fatalf("MTU %d: the killed watcher should not have reverted", m)
			}
			args := append([]string(nil), by...)
			if args[0] == "agent" {
				args[3] = h.profile
			}
			if code, out := h.run(args...); code != 0 {
				t.Fatalf("%s: exit %d\n%s", by[0], code, out)
			}
			if m := h.mtu("ens1f0np0"); m != 1500 {
				t.Fatalf("MTU %d after %s past the deadline, want 1500", m, by[0])
			}
		})
	}
}

func waitFor(t *testing.T, d time.Duration, ok func() bool) {
	t.Helper()
	end := time.Now().Add(d)
	for time.Now().Before(end) {
		if ok() {
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("condition not met within %v", d)
}

// killWatchers ends the detached confirm watchers a test started (their
// pid is in the journal's log name... found via /proc by state dir).
func killWatchers(state string) {
	procs, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	for _, p := range procs {
		b, err := os.ReadFile(p)
		if err != nil || !bytes.Contains(b, []byte("confirm-watch")) || !bytes.Contains(b, []byte(state)) {
			continue
		}
		var pid int
		fmt.Sscanf(filepath.Base(filepath.Dir(p)), "%d", &pid)
		_ = syscall.Kill(pid, syscall.SIGKILL)
	}
}

// capture with the live kernel: the veths' real rtnetlink/ethtool/dcbnl
// answers (including the EOPNOTSUPPs) and the root's files go into a
// snapshot that audits like the host itself.
func TestCaptureLiveKernelThenAuditOffline(t *testing.T) {
	h := newHost(t)
	out := filepath.Join(t.TempDir(), "cap")
	code, msg := h.run("capture", "-o", out)
	if code != 0 || !strings.Contains(msg, "2 RoCE port(s)") {
		t.Fatalf("capture: exit %d\n%s", code, msg)
	}
	kj, err := os.ReadFile(filepath.Join(out, "kernel.json"))
	if err != nil || !strings.Contains(string(kj), `"driver": "veth"`) || !strings.Contains(string(kj), `"dcb": "EOPNOTSUPP"`) {
		t.Fatalf("kernel.json should hold the veths' real answers:\n%.2000s", kj)
	}
	var live, offline bytes.Buffer
	c := h.cmd("audit", "-o", "json", "-p", h.profile)
	c.Stdout = &live
	_ = c.Run()
	cmd := exec.Command(bin, "audit", "-o", "json", "-p", h.profile, "--snapshot", out)
	cmd.Stdout = &offline
	_ = cmd.Run()
	// generated_at is when each audit ran: the only field allowed to differ.
	stamp := regexp.MustCompile(`"generated_at": "[^"]*"`)
	l, o := stamp.ReplaceAllString(live.String(), ""), stamp.ReplaceAllString(offline.String(), "")
	if l != o {
		t.Errorf("audit of the capture differs from the live audit\nlive:    %s\ncapture: %s", l, o)
	}
}

// --wait keeps apply in the foreground for the confirm window: a commit
// from another rocectl ends it with exit 0; no commit ends it with the
// change reverted, exit 3.
func TestConfirmWaitInForeground(t *testing.T) {
	h := newHost(t)
	t.Cleanup(func() { killWatchers(h.state) })
	c := h.cmd("apply", "--confirm", "20s", "--wait", "-p", h.profile)
	var out syncBuffer
	c.Stdout, c.Stderr = &out, &out
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 10*time.Second, func() bool { return strings.Contains(out.String(), "rocectl commit") })
	if code, msg := h.run("commit"); code != 0 {
		t.Fatalf("commit: exit %d\n%s", code, msg)
	}
	if err := c.Wait(); err != nil || !strings.Contains(out.String(), "Committed: apply") {
		t.Fatalf("apply --wait after commit: %v\n%s", err, out.String())
	}

	h2 := newHost(t)
	t.Cleanup(func() { killWatchers(h2.state) })
	code, msg := h2.run("apply", "--confirm", "1s", "--wait", "-p", h2.profile)
	if code != 3 || !strings.Contains(msg, "was not committed by its confirm deadline (") {
		t.Fatalf("apply --wait without commit: exit %d\n%s", code, msg)
	}
	if m := h2.mtu("ens1f0np0"); m != 1500 {
		t.Errorf("MTU %d after the unconfirmed window", m)
	}
}

// syncBuffer is a bytes.Buffer safe to read while a process writes to it.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// kill -9 at each point of the NCCL file's rewrite (the test build's kill
// points in nic.FileIn.Replace: its temp file created, written, fsynced,
// renamed over nccl.conf); afterwards `rocectl rollback`, or the next
// apply's recovery, leaves the root's files exactly as before: nccl.conf
// as it was and no temp file beside it (issue #34 item 1).
func TestKill9DuringNCCLWriteThenRecover(t *testing.T) {
	for _, point := range []string{"filein-created", "filein-written", "filein-synced", "filein-renamed"} {
		for _, recovery := range []string{"rollback", "apply"} {
			t.Run(point+"/"+recovery, func(t *testing.T) {
				h := newHost(t)
				// The e2e profile with the NCCL file written.
				prof, err := os.ReadFile(h.profile)
				if err != nil {
					t.Fatal(err)
				}
				prof = append(prof, "[nccl]\nwrite = \"/etc/nccl.conf\"\n"...)
				if err := os.WriteFile(h.profile, prof, 0o600); err != nil {
					t.Fatal(err)
				}
				if err := os.MkdirAll(filepath.Join(h.root, "etc"), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(filepath.Join(h.root, "etc", "nccl.conf"), []byte("NCCL_DEBUG=WARN\n"), 0o644); err != nil {
					t.Fatal(err)
				}
				beforeFiles := fixturehost.Files(t, h.root)
				var out bytes.Buffer
				c := h.cmd("apply", "-p", h.profile)
				c.Env = append(os.Environ(), "ROCECTL_TEST_KILL_AT="+point)
				c.Stdout, c.Stderr = &out, &out
				err = c.Run()
				var ee *exec.ExitError
				if !errors.As(err, &ee) || ee.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
					t.Fatalf("apply was not killed at %s: %v\n%s", point, err, out.String())
				}
				if recovery == "apply" {
					code, out := h.run("apply", "-p", h.profile)
					if code != 0 || !strings.Contains(out, "found an unfinished apply") {
						t.Fatalf("apply exit %d\n%s", code, out)
					}
					if temps, _ := filepath.Glob(filepath.Join(h.root, "etc", ".nccl.conf.*")); len(temps) > 0 {
						t.Errorf("temp files left after the next apply: %v", temps)
					}
				}
				code, out2 := h.run("rollback")
				if code != 0 {
					t.Fatalf("rollback exit %d\n%s", code, out2)
				}
				if m := h.mtu("ens1f0np0"); m != 1500 {
					t.Errorf("MTU = %d after rollback, want 1500\n%s", m, out2)
				}
				if d := fixturehost.DiffTrees(beforeFiles, fixturehost.Files(t, h.root)); len(d) > 0 {
					t.Errorf("files differ after recovery: %v\n%s", d, out2)
				}
			})
		}
	}
}
