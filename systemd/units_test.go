package systemd

import (
	"bytes"
	"context"
	"errors"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/rocectl/rocectl/internal/testkit/testbin"

	"github.com/rocectl/rocectl/policy"
)

// The binary path every unit's ExecStart names (README "Install"); the
// agent's unit runs the daemon's binary beside it.
const (
	unitBinary      = "/usr/local/sbin/rocectl"
	unitAgentBinary = unitBinary + "-agent"
)

// The state directory every rocectl on a host shares (journal, lock).
const stateDir = "/var/lib/rocectl"

var (
	repoRoot = ".."
	// rocectlBin is the CLI built from this tree by TestMain; empty when no
	// Go toolchain is available (the tests that need it skip).
	rocectlBin string
)

func TestMain(m *testing.M) {
	familiesWrapper() // returns only when not started as the wrapper
	testbin.Main(m, &rocectlBin)
}

func needBinary(t *testing.T) string {
	t.Helper()
	if rocectlBin == "" {
		t.Skip("no go toolchain on PATH to build rocectl")
	}
	return rocectlBin
}

// binaryOf is the binary built from this tree that a unit's ExecStart
// path names: rocectl, or rocectl-agent beside it.
func binaryOf(t *testing.T, path string) string {
	t.Helper()
	bin := needBinary(t)
	if path == unitAgentBinary {
		return filepath.Join(filepath.Dir(bin), filepath.Base(unitAgentBinary))
	}
	return bin
}

// unitPaths lists the shipped unit files.
func unitPaths(t *testing.T) []string {
	t.Helper()
	var out []string
	for _, pat := range []string{"rocectl*.service", "rocectl*.timer"} {
		m, err := filepath.Glob(pat)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, m...)
	}
	if len(out) == 0 {
		t.Fatal("no unit files found")
	}
	return out
}

func loadUnit(t *testing.T, path string) *unitFile {
	t.Helper()
	u, err := parseUnit(path)
	if err != nil {
		t.Fatal(err)
	}
	return u
}

func services(t *testing.T) map[string]*unitFile {
	t.Helper()
	out := map[string]*unitFile{}
	for _, p := range unitPaths(t) {
		if strings.HasSuffix(p, ".service") {
			out[p] = loadUnit(t, p)
		}
	}
	return out
}

// unitEnv is the environment systemd gives ExecStart: Environment=, then
// the EnvironmentFile (when envFile is not empty), which overrides it.
func unitEnv(t *testing.T, u *unitFile, envFile string) map[string]string {
	t.Helper()
	env, err := u.environment()
	if err != nil {
		t.Fatalf("%s: %v", u.path, err)
	}
	if envFile != "" {
		fileEnv, err := parseEnvFile(envFile)
		if err != nil {
			t.Fatal(err)
		}
		for k, v := range fileEnv {
			env[k] = v
		}
	}
	return env
}

// execStart returns the unit's single ExecStart= expanded with env.
func execStart(t *testing.T, u *unitFile, env map[string]string) []string {
	t.Helper()
	lines := u.values("Service", "ExecStart")
	if len(lines) != 1 {
		t.Fatalf("%s: want exactly one ExecStart=, have %d", u.path, len(lines))
	}
	argv, err := expandCommand(lines[0], env)
	if err != nil {
		t.Fatalf("%s: ExecStart: %v", u.path, err)
	}
	return argv
}

type result struct {
	stdout, stderr string
	code           int
}

// run executes argv with a deadline; argv[0] is replaced by the binary
// built from this tree (binaryOf).
func run(t *testing.T, argv []string, env []string, attr *syscall.SysProcAttr) result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, binaryOf(t, argv[0]), argv[1:]...)
	cmd.Env = append(os.Environ(), env...)
	cmd.SysProcAttr = attr
	var so, se bytes.Buffer
	cmd.Stdout, cmd.Stderr = &so, &se
	err := cmd.Run()
	code := 0
	var ee *exec.ExitError
	switch {
	case errors.As(err, &ee):
		code = ee.ExitCode()
	case err != nil:
		t.Fatalf("running %q: %v", argv, err)
	}
	return result{so.String(), se.String(), code}
}

// testEnvFile writes an /etc/default/rocectl for the tests: the shipped
// example, with the profile pointed at a profile of this tree.
func testEnvFile(t *testing.T, profile string) string {
	t.Helper()
	data, err := os.ReadFile("rocectl.default")
	if err != nil {
		t.Fatal(err)
	}
	abs, err := filepath.Abs(filepath.Join(repoRoot, profile))
	if err != nil {
		t.Fatal(err)
	}
	out := string(data) + "\n# test override\nROCECTL_PROFILE=" + abs + "\n"
	p := filepath.Join(t.TempDir(), "rocectl")
	if err := os.WriteFile(p, []byte(out), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestUnitsUseKnownDirectives(t *testing.T) {
	for _, p := range unitPaths(t) {
		u := loadUnit(t, p)
		allowed := sectionsFor[filepath.Ext(p)]
		if allowed == nil {
			t.Errorf("%s: unknown unit type", p)
			continue
		}
		for _, s := range u.sections {
			if !slices.Contains(allowed, s.name) {
				t.Errorf("%s:%d: section [%s] does not belong in a %s unit (allowed: %v)", p, s.line, s.name, filepath.Ext(p), allowed)
				continue
			}
			seen := map[string]int{}
			for _, e := range s.entries {
				if _, ok := knownDirectives[s.name][e.key]; !ok {
					t.Errorf("%s:%d: %s= is not a known [%s] directive (see directives_test.go)", p, e.line, e.key, s.name)
				}
				if first, dup := seen[e.key]; dup && !repeatable[e.key] {
					t.Errorf("%s:%d: %s= repeats line %d; the second silently wins", p, e.line, e.key, first)
				}
				seen[e.key] = e.line
				if e.value == "" {
					t.Errorf("%s:%d: %s= is empty (an empty assignment resets the setting)", p, e.line, e.key)
				}
			}
		}
		if u.section("Unit") == nil {
			t.Errorf("%s: needs [Unit]", p)
		}
		// A service its timer activates is not enabled itself.
		_, timerErr := os.Stat(strings.TrimSuffix(p, ".service") + ".timer")
		if hasTimer := strings.HasSuffix(p, ".service") && timerErr == nil; hasTimer != (u.section("Install") == nil) {
			t.Errorf("%s: [Install] present: %v, want it exactly when no timer activates the unit", p, u.section("Install") != nil)
		}
		if _, ok := u.value("Unit", "Description"); !ok {
			t.Errorf("%s: no Description=", p)
		}
	}
}

func TestDirectiveListIsUsed(t *testing.T) {
	used := map[string]bool{}
	for _, p := range unitPaths(t) {
		for _, s := range loadUnit(t, p).sections {
			for _, e := range s.entries {
				used[s.name+"."+e.key] = true
			}
		}
	}
	for sec, keys := range knownDirectives {
		for k := range keys {
			if !used[sec+"."+k] {
				t.Errorf("[%s] %s= is listed in directives_test.go but no unit uses it", sec, k)
			}
		}
	}
}

// TestExecStartFlagsExist runs every ExecStart= with --help appended: cobra
// parses every flag and its value first, so an unknown flag, a flag of
// another command or an unparsable value (say --interval 5x) fails.
func TestExecStartFlagsExist(t *testing.T) {
	envFile := testEnvFile(t, "profiles/connectx-lossless.toml")
	for p, u := range services(t) {
		for _, withFile := range []bool{false, true} {
			f := ""
			if withFile {
				f = envFile
			}
			argv := execStart(t, u, unitEnv(t, u, f))
			want := unitBinary
			if filepath.Base(p) == "rocectl-agent.service" {
				want = unitAgentBinary
			}
			if argv[0] != want {
				t.Errorf("%s: ExecStart runs %q, want %s (the path the README installs to)", p, argv[0], want)
			}
			if !filepath.IsAbs(argv[0]) {
				t.Errorf("%s: ExecStart path %q is not absolute", p, argv[0])
			}
			r := run(t, append(slices.Clone(argv), "--help"), nil, nil)
			if r.code != 0 || !strings.Contains(r.stdout, "Usage:") {
				t.Errorf("%s (env file %v): %q --help: exit %d\n%s%s", p, withFile, argv, r.code, r.stdout, r.stderr)
			}
		}
	}
}

// TestExecStartVariables: every ${VAR} (one word even when empty) needs a
// default in Environment=, or a missing /etc/default/rocectl turns it into
// an empty argument; the example environment file sets only variables the
// units read.
func TestExecStartVariables(t *testing.T) {
	read := map[string]bool{}
	for p, u := range services(t) {
		env := unitEnv(t, u, "")
		line, _ := u.value("Service", "ExecStart")
		for _, v := range braceVars(line) {
			read[v] = true
			if env[v] == "" {
				t.Errorf("%s: ExecStart uses ${%s} but Environment= gives it no default", p, v)
			}
		}
		for _, w := range strings.Fields(line) {
			if name, ok := strings.CutPrefix(w, "$"); ok && isVarName(name) {
				read[name] = true
			}
		}
		if got, _ := u.value("Service", "EnvironmentFile"); got != "-/etc/default/rocectl" {
			t.Errorf("%s: EnvironmentFile=%q, want -/etc/default/rocectl (optional)", p, got)
		}
		// EnvironmentFile= must come after Environment= to read as
		// "file overrides defaults" (systemd applies the file last anyway).
		s := u.section("Service")
		lastEnv, file := 0, 0
		for _, e := range s.entries {
			switch e.key {
			case "Environment":
				lastEnv = e.line
			case "EnvironmentFile":
				file = e.line
			}
		}
		if file < lastEnv {
			t.Errorf("%s:%d: EnvironmentFile= before Environment= reads backwards", p, file)
		}
	}
	fileEnv, err := parseEnvFile("rocectl.default")
	if err != nil {
		t.Fatal(err)
	}
	for k := range fileEnv {
		if !read[k] {
			t.Errorf("rocectl.default sets %s, which no unit reads", k)
		}
	}
	for k := range read {
		if _, ok := fileEnv[k]; !ok {
			t.Errorf("rocectl.default does not document %s", k)
		}
	}
}

// notifyListener is a NOTIFY_SOCKET, as systemd gives a Type=notify unit.
// Its reader ends with the test: the cleanup closes the socket and takes
// what is left on the channel until the reader closes it.
func notifyListener(t *testing.T) (string, <-chan string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "notify.sock")
	conn, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: path, Net: "unixgram"})
	if err != nil {
		t.Fatal(err)
	}
	ch := make(chan string, 64)
	t.Cleanup(func() {
		conn.Close()
		for range ch {
		}
	})
	go func() {
		buf := make([]byte, 4096)
		for {
			n, _, err := conn.ReadFromUnix(buf)
			if err != nil {
				close(ch)
				return
			}
			ch <- string(buf[:n])
		}
	}()
	return path, ch
}

// notifyEnd marks the end of what a unit sent: notifySent sends it itself.
const notifyEnd = "ROCECTL_TEST_END=1"

// notifySent returns the messages sent to sock before this call, once the
// sender has exited. A datagram is queued on the socket when its sendto
// returns and the socket delivers in order, so the messages read before
// a last one sent now are all there were.
func notifySent(t *testing.T, sock string, msgs <-chan string) []string {
	t.Helper()
	c, err := net.DialUnix("unixgram", nil, &net.UnixAddr{Name: sock, Net: "unixgram"})
	if err != nil {
		t.Fatal(err)
	}
	_, err = c.Write([]byte(notifyEnd))
	c.Close()
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for m := range msgs {
		if m == notifyEnd {
			return got
		}
		got = append(got, m)
	}
	t.Fatalf("the notify socket closed before the end mark; read %q", got)
	return nil
}

// TestUnitsRunAgainstSnapshots runs each unit's real command line (after
// /etc/default/rocectl) against captured hosts: the agent's first check and
// READY=1, the boot apply's plan, and the audit's exit codes. The appended
// flags only redirect the host (--snapshot), the state (--state-dir) and
// the metrics port; later flags win, as with ROCECTL_ARGS.
func TestUnitsRunAgainstSnapshots(t *testing.T) {
	needBinary(t)
	envFile := testEnvFile(t, "profiles/connectx-lossless.toml")
	factory := filepath.Join(repoRoot, "testdata/hosts/cx6dx-ofed-factory")
	lossless := filepath.Join(repoRoot, "testdata/hosts/cx6dx-ofed-lossless")
	argvOf := func(name string) []string {
		u := loadUnit(t, name)
		return slices.Clone(execStart(t, u, unitEnv(t, u, envFile)))
	}
	state := []string{"--state-dir", t.TempDir()}

	t.Run("agent", func(t *testing.T) {
		sock, msgs := notifyListener(t)
		argv := append(argvOf("rocectl-agent.service"), "--snapshot", lossless, "--once", "--metrics-addr", "127.0.0.1:0")
		r := run(t, append(argv, state...), []string{"NOTIFY_SOCKET=" + sock}, nil)
		if r.code != 0 {
			t.Fatalf("%q: exit %d\n%s", argv, r.code, r.stderr)
		}
		got := notifySent(t, sock, msgs)
		if !slices.Contains(got, "READY=1") {
			t.Errorf("Type=notify needs READY=1 from the agent; it sent %q", got)
		}
		if !slices.ContainsFunc(got, func(m string) bool { return strings.HasPrefix(m, "STATUS=in sync") }) {
			t.Errorf("want a STATUS= line saying the host is in sync; got %q", got)
		}
	})
	t.Run("apply", func(t *testing.T) {
		argv := append(argvOf("rocectl-apply.service"), "--snapshot", factory, "--dry-run")
		r := run(t, append(argv, state...), nil, nil)
		if r.code != 0 || !strings.Contains(r.stdout, "ens1f0np0") || !strings.Contains(r.stdout, "qos.pfc") {
			t.Errorf("%q: exit %d, want 0 and a plan for ens1f0np0 with qos.pfc\n%s%s", argv, r.code, r.stdout, r.stderr)
		}
	})
	t.Run("audit", func(t *testing.T) {
		for _, c := range []struct {
			host string
			want int
		}{{lossless, 0}, {factory, 2}} {
			argv := append(argvOf("rocectl-audit.service"), "--snapshot", c.host)
			r := run(t, append(argv, state...), nil, nil)
			if r.code != c.want {
				t.Errorf("%q: exit %d, want %d (2 = drift leaves the unit failed)\n%s%s", argv, r.code, c.want, r.stdout, r.stderr)
			}
		}
	})
}

func TestAgentUnit(t *testing.T) {
	u := loadUnit(t, "rocectl-agent.service")
	want := map[string]string{
		"Type":            "notify",
		"NotifyAccess":    "main",
		"Restart":         "on-failure",
		"LimitMEMLOCK":    "infinity",
		"ProtectSystem":   "strict",
		"StateDirectory":  "rocectl",
		"EnvironmentFile": "-/etc/default/rocectl",
	}
	for k, v := range want {
		if got, _ := u.value("Service", k); got != v {
			t.Errorf("%s=%q, want %q", k, got, v)
		}
	}
	for _, k := range []string{"WatchdogSec", "RestartSec", "TimeoutStartSec"} {
		v, _ := u.value("Service", k)
		d, err := time.ParseDuration(strings.ReplaceAll(v, "min", "m"))
		if err != nil || d <= 0 {
			t.Errorf("%s=%q: want a positive time span", k, v)
		}
	}
	// Back-off: a restart loop must end, and not hammer the NICs first.
	if v, _ := u.value("Service", "RestartSec"); v == "0" || v == "" {
		t.Errorf("RestartSec=%q: want a delay", v)
	}
	if _, ok := u.value("Unit", "StartLimitBurst"); !ok {
		t.Error("no StartLimitBurst=: an enforce-mode crash loop would apply (and flap links) forever")
	}
	// The watchdog must outlast a default enforce-mode apply: the guard's
	// default soak (60 s) plus read-back and verification.
	wd, _ := u.value("Service", "WatchdogSec")
	if d, _ := time.ParseDuration(strings.ReplaceAll(wd, "min", "m")); d < 3*time.Minute {
		t.Errorf("WatchdogSec=%s is shorter than an apply with the default 60 s soak may block the agent's loop", wd)
	}
	argv := execStart(t, u, unitEnv(t, u, ""))
	if argv[0] != unitAgentBinary || !hasFlagValue(argv, "--mode", "audit") {
		t.Errorf("ExecStart %q: want the agent (%s), audit mode by default", argv, unitAgentBinary)
	}
	if !hasFlagValue(argv, "--metrics-addr", "127.0.0.1:9469") {
		t.Errorf("ExecStart %q: want metrics on 127.0.0.1:9469 by default", argv)
	}
	if !slices.Contains(u.list("Unit", "After"), "rocectl-apply.service") {
		t.Error("the agent should start after the boot apply (first check on the applied host, no lock race)")
	}
	if got := u.list("Install", "WantedBy"); !slices.Equal(got, []string{"multi-user.target"}) {
		t.Errorf("WantedBy=%v", got)
	}
}

func TestApplyUnit(t *testing.T) {
	u := loadUnit(t, "rocectl-apply.service")
	for k, v := range map[string]string{"Type": "oneshot", "RemainAfterExit": "yes", "LimitMEMLOCK": "infinity"} {
		if got, _ := u.value("Service", k); got != v {
			t.Errorf("%s=%q, want %q", k, got, v)
		}
	}
	if got, _ := u.value("Unit", "DefaultDependencies"); got != "no" {
		t.Error("DefaultDependencies=no is required: After=sysinit.target (a default) plus Before=network-pre.target is a cycle with units such as cloud-init.service")
	}
	after, before, wants := u.list("Unit", "After"), u.list("Unit", "Before"), u.list("Unit", "Wants")
	for _, x := range []string{"local-fs.target", "systemd-udev-settle.service", "openibd.service", "rdma-hw.target", "sys-kernel-config.mount"} {
		if !slices.Contains(after, x) {
			t.Errorf("After= lacks %s", x)
		}
	}
	for _, x := range []string{"sysinit.target", "basic.target", "network.target", "network-online.target", "network-pre.target"} {
		if slices.Contains(after, x) {
			t.Errorf("After=%s: the boot apply must run before network configuration", x)
		}
	}
	if !slices.Contains(before, "network-pre.target") || !slices.Contains(wants, "network-pre.target") {
		t.Error("want Wants= and Before=network-pre.target (systemd.special(7): that is how a unit orders itself before network configuration)")
	}
	if !slices.Contains(wants, "systemd-udev-settle.service") {
		t.Error("After=systemd-udev-settle.service orders nothing without Wants=")
	}
	if !slices.Contains(u.list("Unit", "Conflicts"), "shutdown.target") || !slices.Contains(before, "shutdown.target") {
		t.Error("without default dependencies, add Conflicts= and Before=shutdown.target")
	}
	argv := execStart(t, u, unitEnv(t, u, ""))
	if argv[1] != "apply" {
		t.Fatalf("ExecStart %q: want apply", argv)
	}
	for _, bad := range []string{"--confirm", "--dry-run", "--wait"} {
		if slices.ContainsFunc(argv, func(a string) bool { return a == bad || strings.HasPrefix(a, bad+"=") }) {
			t.Errorf("ExecStart %q: %s has no place in an unattended boot apply", argv, bad)
		}
	}
}

func TestAuditTimer(t *testing.T) {
	tm := loadUnit(t, "rocectl-audit.timer")
	if got := tm.list("Install", "WantedBy"); !slices.Equal(got, []string{"timers.target"}) {
		t.Errorf("timer WantedBy=%v", got)
	}
	if _, err := os.Stat("rocectl-audit.service"); err != nil {
		t.Errorf("the timer activates rocectl-audit.service: %v", err)
	}
	u := loadUnit(t, "rocectl-audit.service")
	if argv := execStart(t, u, unitEnv(t, u, "")); argv[1] != "audit" {
		t.Errorf("ExecStart %q: want audit", argv)
	}
}

// TestSandboxKeepsKernelInterfaces: the hardening must not take away what
// rocectl exists to do.
func TestSandboxKeepsKernelInterfaces(t *testing.T) {
	forbidden := map[string]string{
		"PrivateNetwork": "rocectl configures the host's own NICs",
		"PrivateDevices": "hides /dev/infiniband (verbs)",
		"ProtectClock":   "an implicit DeviceAllow= on older systemd blocks /dev/infiniband",
		"DeviceAllow":    "turns the device policy into an allow-list",
		"DevicePolicy":   "verbs need /dev/infiniband",
		"PrivateUsers":   "capabilities in a user namespace do not reach the host's netdevs",
		"DynamicUser":    "rocectl runs as root (sysfs, configfs, debugfs are root-owned)",
		"User":           "rocectl runs as root",
		"ProcSubset":     "rocectl reads /proc/net",
	}
	for p, u := range services(t) {
		writer := !strings.Contains(p, "audit")
		for k, why := range forbidden {
			if _, ok := u.value("Service", k); ok {
				t.Errorf("%s: %s= must not be set: %s", p, k, why)
			}
		}
		if _, ok := u.value("Service", "ProtectKernelTunables"); ok && writer {
			t.Errorf("%s: ProtectKernelTunables= makes /sys read-only; this unit writes sysfs/configfs/debugfs", p)
		}
		fams := u.list("Service", "RestrictAddressFamilies")
		for _, f := range []string{"AF_UNIX", "AF_NETLINK", "AF_INET", "AF_INET6"} {
			if !slices.Contains(fams, f) {
				t.Errorf("%s: RestrictAddressFamilies=%v lacks %s", p, fams, f)
			}
		}
		if slices.ContainsFunc(fams, func(s string) bool { return strings.HasPrefix(s, "~") }) {
			t.Errorf("%s: RestrictAddressFamilies= must be an allow-list", p)
		}
		caps := u.list("Service", "CapabilityBoundingSet")
		if !slices.Contains(caps, "CAP_NET_ADMIN") {
			t.Errorf("%s: CapabilityBoundingSet=%v lacks CAP_NET_ADMIN", p, caps)
		}
		if v, _ := u.value("Service", "ProtectSystem"); v != "strict" {
			t.Errorf("%s: ProtectSystem=%q, want strict", p, v)
		}
		if !writer {
			continue
		}
		// The state directory systemd makes writable is the one rocectl uses.
		if v, _ := u.value("Service", "StateDirectory"); "/var/lib/"+v != stateDir {
			t.Errorf("%s: StateDirectory=%q, want rocectl", p, v)
		}
		argv := execStart(t, u, unitEnv(t, u, ""))
		if !hasFlagValue(argv, "--state-dir", stateDir) {
			t.Errorf("%s: ExecStart %q should name --state-dir %s (the StateDirectory=)", p, argv, stateDir)
		}
		if v, _ := u.value("Service", "LimitMEMLOCK"); v != "infinity" {
			t.Errorf("%s: LimitMEMLOCK=%q, want infinity (verbs memory registration)", p, v)
		}
		// Every NCCL file a shipped profile writes must be replaceable:
		// its directory under a ReadWritePaths= entry.
		rw := u.list("Service", "ReadWritePaths")
		for _, f := range ncclFiles(t) {
			dir := filepath.Dir(f)
			if !slices.ContainsFunc(rw, func(r string) bool {
				r = strings.TrimPrefix(r, "-")
				return dir == r || strings.HasPrefix(dir, strings.TrimSuffix(r, "/")+"/")
			}) {
				t.Errorf("%s: a shipped profile writes %s, but %s is not in ReadWritePaths=%v", p, f, dir, rw)
			}
		}
	}
}

// ncclFiles returns the [nccl] write paths of the shipped profiles.
func ncclFiles(t *testing.T) []string {
	t.Helper()
	paths, err := filepath.Glob(filepath.Join(repoRoot, "profiles", "*.toml"))
	if err != nil || len(paths) == 0 {
		t.Fatalf("no shipped profiles: %v", err)
	}
	var out []string
	for _, p := range paths {
		prof, err := policy.Load(p, policy.LoadOptions{AllowInsecure: true})
		if err != nil {
			t.Fatalf("%s: %v", p, err)
		}
		if prof.NCCL.Write != nil && !slices.Contains(out, *prof.NCCL.Write) {
			out = append(out, *prof.NCCL.Write)
		}
	}
	if len(out) == 0 {
		t.Fatal("no shipped profile writes an NCCL file; this check would check nothing")
	}
	return out
}

func hasFlagValue(argv []string, flag, value string) bool {
	for i, a := range argv {
		if a == flag+"="+value || (a == flag && i+1 < len(argv) && argv[i+1] == value) {
			return true
		}
	}
	return false
}

// TestUnitsRequireMatch: a host where no port matches the profile (NICs
// gone, driver not loaded) must fail the boot apply, the audit and the
// agent, not pass as "nothing to do" / "in sync".
func TestUnitsRequireMatch(t *testing.T) {
	for _, name := range []string{"rocectl-apply.service", "rocectl-audit.service", "rocectl-agent.service"} {
		u := loadUnit(t, name)
		if argv := execStart(t, u, unitEnv(t, u, "")); !slices.Contains(argv, "--require-match") {
			t.Errorf("%s: ExecStart %q lacks --require-match", name, argv)
		}
	}
}
