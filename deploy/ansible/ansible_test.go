package ansible

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/rocectl/rocectl/internal/testkit/testbin"
)

var (
	repoRoot = "../.."
	roleDir  = "roles/rocectl"
	// rocectlBin is the CLI built from this tree by TestMain ("" without Go).
	rocectlBin string
)

func TestMain(m *testing.M) { testbin.Main(m, &rocectlBin) }

func TestRoleUnitsAreTheShippedUnits(t *testing.T) {
	shipped, err := filepath.Glob(filepath.Join(repoRoot, "systemd", "rocectl*.*"))
	if err != nil {
		t.Fatal(err)
	}
	var units []string
	for _, p := range shipped {
		if ext := filepath.Ext(p); ext == ".service" || ext == ".timer" {
			units = append(units, filepath.Base(p))
		}
	}
	copies, err := filepath.Glob(filepath.Join(roleDir, "files", "*"))
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, c := range copies {
		names = append(names, filepath.Base(c))
	}
	slices.Sort(units)
	slices.Sort(names)
	if !slices.Equal(units, names) {
		t.Fatalf("role files %v, shipped units %v", names, units)
	}
	for _, u := range units {
		a, _ := os.ReadFile(filepath.Join(repoRoot, "systemd", u))
		b, _ := os.ReadFile(filepath.Join(roleDir, "files", u))
		if !bytes.Equal(a, b) {
			t.Errorf("%s/files/%s differs from systemd/%s: copy it again (cp systemd/rocectl*.service systemd/rocectl*.timer deploy/ansible/roles/rocectl/files/)", roleDir, u, u)
		}
	}
	// The role installs the units it lists; keep that list complete.
	tasks, _ := os.ReadFile(filepath.Join(roleDir, "tasks", "install.yml"))
	for _, u := range units {
		if !strings.Contains(string(tasks), "- "+u+"\n") {
			t.Errorf("tasks/install.yml does not install %s", u)
		}
	}
}

// yamlFiles lists the role's and the playbook's YAML files.
func yamlFiles(t *testing.T) []string {
	t.Helper()
	var out []string
	err := filepath.WalkDir(".", func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() && (strings.HasSuffix(p, ".yml") || strings.HasSuffix(p, ".yaml")) {
			out = append(out, p)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// loadYAML parses YAML files with PyYAML (python3), as JSON documents.
func loadYAML(t *testing.T, files []string) map[string]any {
	t.Helper()
	py, err := exec.LookPath("python3")
	if err != nil {
		t.Skip("python3 not installed")
	}
	if exec.Command(py, "-c", "import yaml").Run() != nil {
		t.Skip("PyYAML not installed for python3")
	}
	// BaseLoader keeps every scalar a string, which JSON can carry.
	script := `import json, sys, yaml
out = {}
for p in sys.argv[1:]:
    with open(p) as f:
        out[p] = yaml.load(f, Loader=yaml.BaseLoader)
json.dump(out, sys.stdout)`
	cmd := exec.Command(py, append([]string{"-c", script}, files...)...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("YAML parse: %v\n%s", err, stderr.String())
	}
	var docs map[string]any
	if err := json.Unmarshal(out, &docs); err != nil {
		t.Fatal(err)
	}
	return docs
}

// Task keywords (playbooks_keywords); any other key of a task is its module.
var taskKeywords = map[string]bool{
	"name": true, "when": true, "register": true, "loop": true, "loop_control": true,
	"notify": true, "changed_when": true, "failed_when": true, "check_mode": true,
	"block": true, "rescue": true, "always": true, "retries": true, "delay": true,
	"until": true, "become": true, "tags": true, "vars": true, "environment": true,
	"ignore_errors": true, "no_log": true, "listen": true, "throttle": true,
	"run_once": true, "delegate_to": true, "async": true, "poll": true,
}

func TestYAMLParsesAndUsesBuiltinModules(t *testing.T) {
	files := yamlFiles(t)
	docs := loadYAML(t, files)
	var walk func(file string, tasks []any)
	modules := 0
	walk = func(file string, tasks []any) {
		for _, raw := range tasks {
			task, ok := raw.(map[string]any)
			if !ok {
				t.Errorf("%s: a task that is not a mapping: %v", file, raw)
				continue
			}
			if task["name"] == nil {
				t.Errorf("%s: a task without a name: %v", file, task)
			}
			var mods []string
			for k, v := range task {
				switch {
				case k == "block" || k == "rescue" || k == "always":
					sub, _ := v.([]any)
					walk(file, sub)
				case !taskKeywords[k]:
					mods = append(mods, k)
				}
			}
			if _, isBlock := task["block"]; isBlock {
				if len(mods) != 0 {
					t.Errorf("%s: block %q also names %v", file, task["name"], mods)
				}
				continue
			}
			if len(mods) != 1 || !strings.HasPrefix(mods[0], "ansible.builtin.") {
				t.Errorf("%s: task %q uses %v; want exactly one ansible.builtin module", file, task["name"], mods)
			}
			modules++
		}
	}
	for file, doc := range docs {
		dir := filepath.Base(filepath.Dir(file))
		switch {
		case dir == "tasks" || dir == "handlers":
			tasks, ok := doc.([]any)
			if !ok {
				t.Errorf("%s: want a list of tasks", file)
				continue
			}
			walk(file, tasks)
		case file == "site.yml":
			plays, _ := doc.([]any)
			for _, p := range plays {
				play, _ := p.(map[string]any)
				if play["hosts"] == nil || play["become"] != "true" {
					t.Errorf("site.yml: each play needs hosts and become: true (rocectl runs as root): %v", play)
				}
			}
		}
	}
	if modules < 20 {
		t.Errorf("only %d tasks found: the walk is broken", modules)
	}
}

func needAnsible(t *testing.T) string {
	t.Helper()
	ap, err := exec.LookPath("ansible-playbook")
	if err != nil {
		t.Skip("ansible-playbook not installed (apt-get install ansible-core)")
	}
	return ap
}

func TestSyntaxCheck(t *testing.T) {
	ap := needAnsible(t)
	cmd := exec.Command(ap, "--syntax-check", "-i", "inventory.example.yml", "site.yml")
	cmd.Env = ansibleEnv(t)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("ansible-playbook --syntax-check: %v\n%s", err, out)
	}
}

// ansibleEnv keeps ansible away from the user's configuration and home.
func ansibleEnv(t *testing.T) []string {
	t.Helper()
	tmp := t.TempDir()
	cfg := filepath.Join(tmp, "ansible.cfg")
	if err := os.WriteFile(cfg, []byte("[defaults]\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	roles, err := filepath.Abs("roles")
	if err != nil {
		t.Fatal(err)
	}
	return append(os.Environ(),
		"ANSIBLE_CONFIG="+cfg,
		"ANSIBLE_ROLES_PATH="+roles,
		"ANSIBLE_LOCAL_TEMP="+filepath.Join(tmp, "local"),
		"ANSIBLE_REMOTE_TEMP="+filepath.Join(tmp, "remote"),
		"ANSIBLE_NOCOLOR=1",
		"ANSIBLE_RETRY_FILES_ENABLED=0",
		"ANSIBLE_DEPRECATION_WARNINGS=0",
	)
}

// fixture is one host's worth of temporary directories the role installs
// into, in place of /usr/local/sbin, /etc/rocectl, /etc/systemd/system and
// /etc/default.
type fixture struct {
	dir                        string
	bin, config, units, deflt  string
	stage, state               string
	vars                       map[string]any
	stubDir                    string // the scripted rocectl's behaviour files
	playbook, inventory, vfile string
}

func newFixture(t *testing.T, snapshot string) *fixture {
	t.Helper()
	if rocectlBin == "" {
		t.Skip("no go toolchain to build rocectl")
	}
	if os.Geteuid() != 0 {
		t.Skip("the role installs files owned by root: run as root")
	}
	d := t.TempDir()
	fx := &fixture{
		dir:    d,
		bin:    filepath.Join(d, "root/usr/local/sbin/rocectl"),
		config: filepath.Join(d, "root/etc/rocectl"),
		units:  filepath.Join(d, "root/etc/systemd/system"),
		deflt:  filepath.Join(d, "root/etc/default/rocectl"),
		stage:  filepath.Join(d, "stage"),
		state:  filepath.Join(d, "state"),
	}
	for _, p := range []string{filepath.Dir(fx.bin), fx.units, filepath.Dir(fx.deflt), fx.stage} {
		if err := os.MkdirAll(p, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	fx.vars = map[string]any{
		"rocectl_binary_src":      rocectlBin,
		"rocectl_binary_path":     fx.bin,
		"rocectl_config_dir":      fx.config,
		"rocectl_units_dir":       fx.units,
		"rocectl_default_file":    fx.deflt,
		"rocectl_stage_parent":    fx.stage,
		"rocectl_manage_services": false,
		"rocectl_profile_src":     abs(t, filepath.Join(repoRoot, "profiles/connectx-lossless.toml")),
		"rocectl_global_args":     []string{"--snapshot", abs(t, filepath.Join(repoRoot, "testdata/hosts", snapshot)), "--state-dir", fx.state},
	}
	fx.playbook = filepath.Join(d, "play.yml")
	fx.inventory = filepath.Join(d, "inventory.yml")
	fx.vfile = filepath.Join(d, "vars.json")
	write(t, fx.playbook, "- hosts: localhost\n  gather_facts: false\n  roles:\n    - role: rocectl\n")
	write(t, fx.inventory, "all:\n  hosts:\n    localhost:\n      ansible_connection: local\n      ansible_python_interpreter: \"{{ ansible_playbook_python }}\"\n")
	return fx
}

func abs(t *testing.T, p string) string {
	t.Helper()
	a, err := filepath.Abs(p)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

func write(t *testing.T, p, s string) {
	t.Helper()
	if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
		t.Fatal(err)
	}
}

type play struct {
	out     string
	ok      bool
	changed int
	failed  int
}

// run runs the role; the vars file is JSON (which YAML reads).
func (fx *fixture) run(t *testing.T, args ...string) play {
	t.Helper()
	v, err := json.Marshal(fx.vars)
	if err != nil {
		t.Fatal(err)
	}
	write(t, fx.vfile, string(v))
	cmd := exec.Command(needAnsible(t), append([]string{"-i", fx.inventory, fx.playbook, "-e", "@" + fx.vfile}, args...)...)
	cmd.Env = ansibleEnv(t)
	out, err := cmd.CombinedOutput()
	p := play{out: string(out), ok: err == nil}
	m := regexp.MustCompile(`localhost\s*:\s*ok=\d+\s+changed=(\d+)\s+unreachable=\d+\s+failed=(\d+)`).FindStringSubmatch(p.out)
	if m == nil {
		t.Fatalf("no PLAY RECAP in the output:\n%s", p.out)
	}
	fmt.Sscan(m[1], &p.changed)
	fmt.Sscan(m[2], &p.failed)
	return p
}

// status returns the result lines' states ("ok", "changed", "skipping",
// "fatal", "failed") of the role's task with this name.
func (p play) status(task string) []string {
	i := strings.Index(p.out, "TASK [rocectl : "+task+"]")
	if i < 0 {
		return nil
	}
	rest := p.out[i:]
	rest = rest[strings.Index(rest, "\n")+1:]
	if j := regexp.MustCompile(`\n(TASK|RUNNING HANDLER|PLAY RECAP) `).FindStringIndex(rest); j != nil {
		rest = rest[:j[0]]
	}
	var out []string
	for _, m := range regexp.MustCompile(`(?m)^(ok|changed|skipping|fatal|failed): \[localhost\]`).FindAllStringSubmatch(rest, -1) {
		out = append(out, m[1])
	}
	return out
}

func (p play) expect(t *testing.T, task string, want ...string) {
	t.Helper()
	if got := p.status(task); !slices.Equal(got, want) {
		t.Errorf("task %q: %v, want %v\n%s", task, got, want, p.out)
	}
}

func exists(p string) bool { _, err := os.Stat(p); return err == nil }

func TestCheckModeReportsDriftAndWritesNothing(t *testing.T) {
	t.Parallel() // its own fixture, ansible config and temp dirs (ansibleEnv)
	fx := newFixture(t, "cx6dx-ofed-factory")
	p := fx.run(t, "--check")
	if !p.ok {
		t.Fatalf("check run failed:\n%s", p.out)
	}
	p.expect(t, "Validate the profile", "ok")
	p.expect(t, "Audit the host against the profile", "changed")
	p.expect(t, "Apply the profile with rocectl", "skipping")
	for _, want := range []string{`"ens1f0np0.qos.pfc: [] -> [3]"`, `"ens1f1np1.link.mtu: 1500 -> 9000"`} {
		if !strings.Contains(p.out, want) {
			t.Errorf("the drift report lacks %s:\n%s", want, p.out)
		}
	}
	for _, f := range []string{fx.bin, fx.bin + "-agent", fx.config, fx.deflt, filepath.Join(fx.units, "rocectl-agent.service")} {
		if exists(f) {
			t.Errorf("check mode wrote %s", f)
		}
	}
	if left, _ := os.ReadDir(fx.stage); len(left) != 0 {
		t.Errorf("staging left behind: %v", left)
	}

	// A host in sync: nothing changed, nothing to report.
	fx.vars["rocectl_global_args"] = []string{"--snapshot", abs(t, filepath.Join(repoRoot, "testdata/hosts/cx6dx-ofed-lossless")), "--state-dir", fx.state}
	p = fx.run(t, "--check")
	p.expect(t, "Audit the host against the profile", "ok")
	p.expect(t, "Show the drift", "skipping")
}

func TestRunInstallsValidatedProfileIdempotently(t *testing.T) {
	t.Parallel() // its own fixture, ansible config and temp dirs (ansibleEnv)
	fx := newFixture(t, "cx6dx-ofed-lossless")
	// An overlay and the base it includes: the include must resolve in the
	// staging directory and both files must land.
	fx.vars["rocectl_profile_src"] = abs(t, filepath.Join(repoRoot, "profiles/rack-a12.toml"))
	fx.vars["rocectl_profile_includes"] = []string{abs(t, filepath.Join(repoRoot, "profiles/base.toml"))}
	fx.vars["rocectl_wait_netdevs"] = []string{"ens1f0np0", "rdma-0"}
	// The rack's overlay differs from the captured host (cable length,
	// DCQCN): with rocectl_apply false the role only stages, validates,
	// audits and installs (the agent or the next boot applies).
	fx.vars["rocectl_apply"] = false
	p := fx.run(t)
	if !p.ok {
		t.Fatalf("run failed:\n%s", p.out)
	}
	p.expect(t, "Apply the profile with rocectl", "skipping")
	for name, src := range map[string]string{"profile.toml": "profiles/rack-a12.toml", "base.toml": "profiles/base.toml"} {
		got, err := os.ReadFile(filepath.Join(fx.config, name))
		want, _ := os.ReadFile(filepath.Join(repoRoot, src))
		if err != nil || !bytes.Equal(got, want) {
			t.Errorf("%s: not installed from %s (%v)", name, src, err)
		}
		if st, err := os.Stat(filepath.Join(fx.config, name)); err == nil && st.Mode().Perm() != 0o644 {
			t.Errorf("%s: mode %v, want 0644 (rocectl refuses group/world-writable profiles)", name, st.Mode().Perm())
		}
	}
	for _, b := range []string{fx.bin, fx.bin + "-agent"} {
		if st, err := os.Stat(b); err != nil || st.Mode().Perm() != 0o755 {
			t.Errorf("binary %s: %v %v", b, st, err)
		}
	}
	// The daemon installed is the one built beside rocectl.
	got, err := os.ReadFile(fx.bin + "-agent")
	want, _ := os.ReadFile(rocectlBin + "-agent")
	if err != nil || len(want) == 0 || !bytes.Equal(got, want) {
		t.Errorf("%s-agent is not the rocectl-agent beside %s (%v)", fx.bin, rocectlBin, err)
	}
	unit, _ := os.ReadFile(filepath.Join(fx.units, "rocectl-agent.service"))
	if !strings.Contains(string(unit), "ExecStart="+fx.bin+"-agent ") || strings.Contains(string(unit), "ExecStart=/usr/local/sbin/rocectl") {
		t.Errorf("the installed agent unit does not run %s-agent:\n%s", fx.bin, unit)
	}
	def, _ := os.ReadFile(fx.deflt)
	for _, want := range []string{"ROCECTL_PROFILE=" + fx.config + "/profile.toml\n", "ROCECTL_MODE=audit\n", `ROCECTL_APPLY_ARGS="--no-guard --no-verify"`} {
		if !strings.Contains(string(def), want) {
			t.Errorf("/etc/default/rocectl lacks %q:\n%s", want, def)
		}
	}
	dropin, _ := os.ReadFile(filepath.Join(fx.units, "rocectl-apply.service.d/10-wait-netdevs.conf"))
	for _, want := range []string{"Wants=sys-subsystem-net-devices-ens1f0np0.device\n", `After=sys-subsystem-net-devices-rdma\x2d0.device` + "\n"} {
		if !strings.Contains(string(dropin), want) {
			t.Errorf("wait drop-in lacks %q:\n%s", want, dropin)
		}
	}

	p = fx.run(t)
	if !p.ok || p.changed != 0 {
		t.Errorf("second run: ok=%v changed=%d, want an idempotent run\n%s", p.ok, p.changed, p.out)
	}
}

// A rocectl the role did not install (a package, a hand install) from
// before the daemon had its own binary: the role stops before the agent's
// unit would fail to start, and goes on once rocectl-agent is there.
func TestInstalledRocectlWithoutItsDaemon(t *testing.T) {
	t.Parallel() // its own fixture, ansible config and temp dirs (ansibleEnv)
	fx := newFixture(t, "cx6dx-ofed-lossless")
	fx.vars["rocectl_binary_src"] = ""
	fx.vars["rocectl_apply"] = false
	copyFile := func(from, to string) {
		t.Helper()
		b, err := os.ReadFile(from)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(to, b, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	copyFile(rocectlBin, fx.bin)
	p := fx.run(t)
	if p.ok || !strings.Contains(p.out, fx.bin+"-agent is missing") {
		t.Fatalf("the role went on without %s-agent:\n%s", fx.bin, p.out)
	}
	p.expect(t, "Require an installed rocectl-agent when the role installs none and runs the agent", "fatal")
	copyFile(rocectlBin+"-agent", fx.bin+"-agent")
	if p = fx.run(t); !p.ok {
		t.Fatalf("with rocectl-agent installed:\n%s", p.out)
	}
	p.expect(t, "Require an installed rocectl-agent when the role installs none and runs the agent", "ok")
}

func TestBadProfileNeverLands(t *testing.T) {
	t.Parallel() // its own fixture, ansible config and temp dirs (ansibleEnv)
	fx := newFixture(t, "cx6dx-ofed-lossless")
	if err := os.MkdirAll(fx.config, 0o755); err != nil {
		t.Fatal(err)
	}
	installed := filepath.Join(fx.config, "profile.toml")
	good, _ := os.ReadFile(filepath.Join(repoRoot, "profiles/connectx-lossless.toml"))
	write(t, installed, string(good))
	bad := filepath.Join(fx.dir, "bad.toml")
	write(t, bad, strings.Replace(string(good), "pfc_priorities = [3]", "pfc_priorities = [3, 9]", 1))
	fx.vars["rocectl_profile_src"] = bad
	p := fx.run(t)
	if p.ok {
		t.Fatalf("a profile with pfc_priorities = [3, 9] was accepted:\n%s", p.out)
	}
	p.expect(t, "Validate the profile", "fatal")
	if !strings.Contains(p.out, "9 is out of range") {
		t.Errorf("the failure should carry rocectl validate's message:\n%s", p.out)
	}
	if got, _ := os.ReadFile(installed); !bytes.Equal(got, good) {
		t.Errorf("the installed profile changed after a failed validation")
	}
	if left, _ := os.ReadDir(fx.stage); len(left) != 0 {
		t.Errorf("staging left behind: %v", left)
	}
}

// stub installs, as the role's rocectl, a script that runs the real rocectl
// for validate and audit and plays apply/verify/commit/rollback from files:
// apply.json (stdout), apply.rc, apply.locked (how many calls answer "lock
// held" first), verify.rc. Every call is logged to calls.log.
func (fx *fixture) stub(t *testing.T, applyDoc map[string]any, applyRC, locked, verifyRC int) {
	t.Helper()
	fx.stubDir = filepath.Join(fx.dir, "stub")
	if err := os.MkdirAll(fx.stubDir, 0o755); err != nil {
		t.Fatal(err)
	}
	doc, _ := json.Marshal(applyDoc)
	write(t, filepath.Join(fx.stubDir, "apply.json"), string(doc)+"\n")
	write(t, filepath.Join(fx.stubDir, "apply.rc"), fmt.Sprint(applyRC))
	write(t, filepath.Join(fx.stubDir, "apply.locked"), fmt.Sprint(locked))
	write(t, filepath.Join(fx.stubDir, "verify.rc"), fmt.Sprint(verifyRC))
	script := fmt.Sprintf(`#!/bin/sh
# rocectl stand-in for the role's tests (see ansible_test.go)
d=%q
echo "$*" >> "$d/calls.log"
case "$1" in
validate|audit|nccl-env) exec %q "$@" ;;
apply)
	n=$(cat "$d/apply.locked")
	if [ "$n" -gt 0 ]; then
		echo $((n - 1)) > "$d/apply.locked"
		echo "rocectl: another rocectl is changing this host: pid 4242 (agent start) since 2026-01-01T00:00:00Z" >&2
		exit 1
	fi
	cat "$d/apply.json"; exit $(cat "$d/apply.rc") ;;
verify) exit $(cat "$d/verify.rc") ;;
commit|rollback) exit 0 ;;
*) echo "stub: unexpected $1" >&2; exit 99 ;;
esac
`, fx.stubDir, rocectlBin)
	stub := filepath.Join(fx.stubDir, "rocectl")
	if err := os.WriteFile(stub, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	// The role installs the daemon from beside it; these tests never run it.
	if err := os.WriteFile(stub+"-agent", []byte("#!/bin/sh\nexit 99\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	fx.vars["rocectl_binary_src"] = stub
}

func (fx *fixture) calls(t *testing.T) []string {
	t.Helper()
	data, _ := os.ReadFile(filepath.Join(fx.stubDir, "calls.log"))
	var out []string
	for _, l := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		if f := strings.Fields(l); len(f) > 0 && f[0] != "validate" && f[0] != "audit" && f[0] != "nccl-env" {
			out = append(out, strings.Join(f[:min(2, len(f))], " "))
		}
	}
	return out
}

// applyDoc is what `rocectl apply -o json` prints: the real dry-run
// document of this profile on the factory host, plus the fields of an
// apply that happened (agent.Report: applied, journal_id, confirm_deadline).
func applyDoc(t *testing.T, journal string, confirm bool, rolledBack bool) map[string]any {
	t.Helper()
	cmd := exec.Command(rocectlBin, "apply", "-p", filepath.Join(repoRoot, "profiles/connectx-lossless.toml"),
		"--snapshot", filepath.Join(repoRoot, "testdata/hosts/cx6dx-ofed-factory"), "--dry-run", "-o", "json")
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("apply --dry-run: %v", err)
	}
	var doc map[string]any
	if err := json.Unmarshal(out, &doc); err != nil {
		t.Fatal(err)
	}
	if doc["changed"] != true {
		t.Fatalf("the dry run should plan changes: %s", out)
	}
	doc["applied"] = true
	doc["journal_id"] = journal
	if confirm {
		doc["confirm_deadline"] = time.Now().Add(5 * time.Minute).UTC().Format(time.RFC3339)
	}
	if rolledBack {
		doc["rolled_back"] = true
		doc["errors"] = []string{"pause storm on ens1f0np0 priority 3 (rx): paused 100% of 200ms"}
	}
	return doc
}

// Commit-confirmed, after two answers of "lock held" (the agent): retried,
// applied, health-checked with rocectl verify, committed, then installed.
func TestApplyConfirmCommit(t *testing.T) {
	t.Parallel() // its own fixture, ansible config and temp dirs (ansibleEnv)
	fx := newFixture(t, "cx6dx-ofed-factory")
	fx.stub(t, applyDoc(t, "j-commit", true, false), 0, 2, 0)
	fx.vars["rocectl_confirm"] = "300s"
	fx.vars["rocectl_lock_delay"] = 0
	fx.vars["rocectl_health_check_delay"] = 0
	p := fx.run(t)
	if !p.ok {
		t.Fatalf("run failed:\n%s", p.out)
	}
	p.expect(t, "Apply the profile with rocectl", "changed")
	p.expect(t, "Commit apply j-commit", "changed")
	want := []string{"apply -p", "apply -p", "apply -p", "verify -p", "commit j-commit"}
	if got := fx.calls(t); !slices.Equal(got, want) {
		t.Errorf("rocectl calls %q, want %q", got, want)
	}
	if !exists(filepath.Join(fx.config, "profile.toml")) {
		t.Error("the committed profile was not installed")
	}
	log, _ := os.ReadFile(filepath.Join(fx.stubDir, "calls.log"))
	if !strings.Contains(string(log), "--confirm 300s") {
		t.Errorf("apply without --confirm 300s:\n%s", log)
	}
}

// A failed health check rolls the change back at once, fails the host and
// leaves the old profile installed.
func TestApplyConfirmHealthCheckFailsRollsBack(t *testing.T) {
	t.Parallel() // its own fixture, ansible config and temp dirs (ansibleEnv)
	fx := newFixture(t, "cx6dx-ofed-factory")
	fx.stub(t, applyDoc(t, "j-bad", true, false), 0, 0, 1)
	fx.vars["rocectl_confirm"] = "300s"
	fx.vars["rocectl_health_check_retries"] = 1
	fx.vars["rocectl_health_check_delay"] = 0
	p := fx.run(t)
	if p.ok {
		t.Fatalf("a failed health check passed:\n%s", p.out)
	}
	want := []string{"apply -p", "verify -p", "verify -p", "rollback j-bad"}
	if got := fx.calls(t); !slices.Equal(got, want) {
		t.Errorf("rocectl calls %q, want %q", got, want)
	}
	if !strings.Contains(p.out, "It has been rolled back; the installed profile is unchanged.") {
		t.Errorf("the failure should say the change was rolled back:\n%s", p.out)
	}
	if exists(filepath.Join(fx.config, "profile.toml")) {
		t.Error("a profile whose change was rolled back was installed: the agent or the next boot would apply it again")
	}
}

// Exit 3 with rolled_back (the guard saw a storm): the host fails, nothing
// is committed or installed.
func TestApplyRolledBackFails(t *testing.T) {
	t.Parallel() // its own fixture, ansible config and temp dirs (ansibleEnv)
	fx := newFixture(t, "cx6dx-ofed-factory")
	fx.stub(t, applyDoc(t, "j-storm", false, true), 3, 0, 0)
	p := fx.run(t)
	if p.ok {
		t.Fatalf("exit 3 passed:\n%s", p.out)
	}
	p.expect(t, "Apply the profile with rocectl", "fatal")
	if got := fx.calls(t); !slices.Equal(got, []string{"apply -p"}) {
		t.Errorf("rocectl calls %q, want one apply", got)
	}
	if exists(filepath.Join(fx.config, "profile.toml")) {
		t.Error("the profile of a rolled-back change was installed")
	}
}

// The rack sweep against four local "hosts", each reading its own copy of
// a snapshot host (verify there answers "verbs support not built in": the
// traffic itself runs only in the Soft-RoCE lab). h3's rocectl works for
// its first test and then dies without a document, mid-sweep: the sweep
// completes, every pair is recorded, and the report names h3.
func TestSweep(t *testing.T) {
	fx := newFixture(t, "cx6dx-ofed-lossless")
	results := filepath.Join(fx.dir, "results")
	// h3's rocectl: the real one once, then "the NIC is gone".
	broken := filepath.Join(fx.dir, "rocectl-h3")
	// Its command lines go to h3.args, one a line.
	args := filepath.Join(fx.dir, "h3.args")
	write(t, broken, fmt.Sprintf("#!/bin/sh\necho \"$*\" >> %[3]q\nif [ -e %[1]q ]; then echo 'rocectl: mlx5_0: no such device' >&2; exit 1; fi\ntouch %[1]q\nexec %[2]q \"$@\"\n",
		filepath.Join(fx.dir, "h3.used"), rocectlBin, args))
	if err := os.Chmod(broken, 0o755); err != nil {
		t.Fatal(err)
	}
	inv := "all:\n  children:\n    roce:\n      hosts:\n"
	for i := 1; i <= 4; i++ {
		h := fmt.Sprintf("h%d", i)
		bin := rocectlBin
		if h == "h3" {
			bin = broken
		}
		inv += fmt.Sprintf("        %s:\n          ansible_connection: local\n          ansible_python_interpreter: \"{{ ansible_playbook_python }}\"\n          rocectl_binary_path: %q\n          rocectl_sweep_address: 127.0.0.1\n          rocectl_sweep_port: %d\n          rocectl_global_args: [\"--snapshot\", %q, \"--state-dir\", %q]\n",
			h, bin, 18600+i, abs(t, filepath.Join(repoRoot, "testdata/hosts/cx6dx-ofed-lossless")), filepath.Join(fx.dir, "state-"+h))
	}
	write(t, fx.inventory, inv)
	vars := map[string]any{
		"rocectl_results_dir":         results,
		"rocectl_report_bin":          rocectlBin,
		"rocectl_binary_src":          rocectlBin,
		"rocectl_sweep_profile":       abs(t, filepath.Join(repoRoot, "profiles/connectx-lossless.toml")),
		"rocectl_sweep_timeout":       20,
		"rocectl_sweep_duration":      "1s",
		"rocectl_sweep_bytes":         "1MiB",
		"rocectl_sweep_connect_delay": 0,
	}
	v, _ := json.Marshal(vars)
	write(t, fx.vfile, string(v))
	cmd := exec.Command(needAnsible(t), "-i", fx.inventory, "sweep.yml", "-e", "@"+fx.vfile, "-f", "4")
	cmd.Env = ansibleEnv(t)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("sweep failed: %v\n%s", err, out)
	}
	rounds, _ := filepath.Glob(filepath.Join(results, "sweep.r*.json"))
	if n := len(sweepRecords(t, rounds)); len(rounds) != 3 || n != 12 {
		t.Errorf("%d sweep records in %d files, want 12 (6 pairs, both ends) in 3 (one per round):\n%s", n, len(rounds), out)
	}
	for r := 1; r <= 3; r++ {
		if !regexp.MustCompile(fmt.Sprintf(`round %d: 2 pair\(s\) in parallel, [0-9.]+ s wall, slowest test [0-9.]+ s, playbook overhead [0-9.-]+ s`, r)).Match(out) {
			t.Errorf("no timing line for round %d:\n%s", r, out)
		}
	}
	rep, err := os.ReadFile(filepath.Join(results, "report.txt"))
	if err != nil {
		t.Fatalf("no report.txt: %v\n%s", err, out)
	}
	for _, want := range []string{"Rack sweep: 4 hosts, 6 pairs in 3 rounds", "Hosts common to the bad pairs: h3 (2 pairs)", "h3: exit 1, no verify document: rocectl: mlx5_0: no such device"} {
		if !strings.Contains(string(rep), want) {
			t.Errorf("the report lacks %q:\n%s", want, rep)
		}
	}
	if html, _ := os.ReadFile(filepath.Join(results, "report.html")); !strings.Contains(string(html), `<table id="sweep-bandwidth">`) {
		t.Errorf("report.html has no heat map")
	}
	// The sweep's variables reach every test's command line, both ends':
	// h3 is in three pairs, the listener of h3-h4 and the connector of
	// h2-h3 and h1-h3.
	lines, _ := os.ReadFile(args)
	calls := strings.Split(strings.TrimSpace(string(lines)), "\n")
	if len(calls) != 3 {
		t.Fatalf("h3 ran rocectl %d times, want 3:\n%s", len(calls), lines)
	}
	for _, c := range calls {
		if !strings.Contains(c, " --duration 1s --size 1MiB ") {
			t.Errorf("h3's command line lacks --duration 1s --size 1MiB: %s", c)
		}
	}
	// Each host listens on its own port (18600+i): a connector dials the
	// listener's, not its own.
	for _, want := range []string{"--listen :18603", "--peer 127.0.0.1:18602", "--peer 127.0.0.1:18601"} {
		n := 0
		for _, c := range calls {
			if strings.Contains(c, " "+want+" ") {
				n++
			}
		}
		if n != 1 {
			t.Errorf("%d of h3's command lines have %q, want 1:\n%s", n, want, lines)
		}
	}
}

// sweepRecords reads the records of a sweep's round files (sweep_round.yml
// writes one file per round, every end's record in its
// rocectl_sweep_records list).
func sweepRecords(t *testing.T, files []string) []json.RawMessage {
	t.Helper()
	var recs []json.RawMessage
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var round struct {
			Records []json.RawMessage `json:"rocectl_sweep_records"`
		}
		if err := json.Unmarshal(b, &round); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		recs = append(recs, round.Records...)
	}
	return recs
}

// The role's argument specs (meta/argument_specs.yml: what ansible-doc
// shows and what Ansible checks before the role runs) list every variable
// of defaults/main.yml with the same default, and no variable it lacks.
func TestArgumentSpecsCoverDefaults(t *testing.T) {
	defaultsFile := roleDir + "/defaults/main.yml"
	specsFile := roleDir + "/meta/argument_specs.yml"
	docs := loadYAML(t, []string{defaultsFile, specsFile})
	defaults, ok := docs[defaultsFile].(map[string]any)
	if !ok || len(defaults) == 0 {
		t.Fatalf("%s: want a mapping of variables", defaultsFile)
	}
	var options map[string]any
	if specs, ok := docs[specsFile].(map[string]any); ok {
		as, _ := specs["argument_specs"].(map[string]any)
		main, _ := as["main"].(map[string]any)
		options, _ = main["options"].(map[string]any)
	}
	if len(options) == 0 {
		t.Fatalf("%s: no argument_specs.main.options", specsFile)
	}
	for name, def := range defaults {
		opt, ok := options[name].(map[string]any)
		if !ok {
			t.Errorf("%s: %s has no entry in %s", defaultsFile, name, specsFile)
			continue
		}
		if opt["type"] == nil || opt["description"] == nil {
			t.Errorf("%s: %s needs a type and a description", specsFile, name)
		}
		if !reflect.DeepEqual(opt["default"], def) {
			t.Errorf("%s: %s default %v, but %s has %v", specsFile, name, opt["default"], defaultsFile, def)
		}
	}
	for name := range options {
		if _, ok := defaults[name]; !ok {
			t.Errorf("%s: %s is not a variable of %s", specsFile, name, defaultsFile)
		}
	}
}

// `ansible-doc -t role` documents the role: every variable, from the
// argument specs (without them it prints nothing).
func TestAnsibleDocShowsRole(t *testing.T) {
	ad, err := exec.LookPath("ansible-doc")
	if err != nil {
		t.Skip("ansible-doc not installed (apt-get install ansible-core)")
	}
	cmd := exec.Command(ad, "-t", "role", "-r", "roles", "rocectl")
	cmd.Env = append(os.Environ(), "ANSIBLE_NOCOLOR=1", "ANSIBLE_LOCAL_TEMP="+t.TempDir(), "HOME="+t.TempDir())
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("ansible-doc -t role: %v\n%s", err, out)
	}
	defaults := loadYAML(t, []string{roleDir + "/defaults/main.yml"})[roleDir+"/defaults/main.yml"].(map[string]any)
	for name := range defaults {
		if !strings.Contains(string(out), "- "+name+"\n") {
			t.Errorf("ansible-doc -t role rocectl does not document %s:\n%s", name, out)
		}
	}
}

// ansible-lint passes on the role and the playbooks, its configuration
// (.ansible-lint) as shipped: no finding an error (Makefile's deps install
// Debian's ansible-lint).
func TestAnsibleLint(t *testing.T) {
	al, err := exec.LookPath("ansible-lint")
	if err != nil {
		t.Skip("ansible-lint not installed (apt-get install ansible-lint, or make deps)")
	}
	cmd := exec.Command(al, "-p", "--nocolor")
	cmd.Env = append(os.Environ(), "ANSIBLE_NOCOLOR=1", "NO_COLOR=1", "ANSIBLE_LOCAL_TEMP="+t.TempDir(), "HOME="+t.TempDir())
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Errorf("ansible-lint: %v\n%s", err, out)
	}
}

// Probing: the peers, listener and interval become the agent's flags in
// /etc/default/rocectl, and the peers' addresses are allowed in a drop-in
// of the agent unit (it allows localhost only); without probing the
// drop-in goes. A peer that is not HOST:PORT fails the play before
// anything is written.
func TestAgentProbingFlagsAndDropIn(t *testing.T) {
	t.Parallel() // its own fixture, ansible config and temp dirs (ansibleEnv)
	fx := newFixture(t, "cx6dx-ofed-lossless")
	fx.vars["rocectl_apply"] = false
	fx.vars["rocectl_agent_probe_peers"] = []string{"10.0.1.12:18516", "[fd00::13]:18516"}
	fx.vars["rocectl_agent_probe_listen"] = ":18516"
	fx.vars["rocectl_agent_probe_interval"] = "1m"
	p := fx.run(t)
	if !p.ok {
		t.Fatalf("run failed:\n%s", p.out)
	}
	def, _ := os.ReadFile(fx.deflt)
	want := `ROCECTL_ARGS="--interval 5m --metrics-addr 127.0.0.1:9469 --probe-peer=10.0.1.12:18516 --probe-peer=[fd00::13]:18516 --probe-listen=:18516 --probe-interval=1m"`
	if !strings.Contains(string(def), want+"\n") {
		t.Errorf("/etc/default/rocectl lacks\n%s\n%s", want, def)
	}
	dropin := filepath.Join(fx.units, "rocectl-agent.service.d/20-probe-allow.conf")
	got, err := os.ReadFile(dropin)
	if err != nil || !strings.Contains(string(got), "[Service]\nIPAddressAllow=10.0.1.12 fd00::13\n") {
		t.Errorf("probe drop-in (%v):\n%s", err, got)
	}
	if p := fx.run(t); !p.ok || p.changed != 0 {
		t.Errorf("second run: ok=%v changed=%d, want an idempotent run\n%s", p.ok, p.changed, p.out)
	}

	delete(fx.vars, "rocectl_agent_probe_peers")
	delete(fx.vars, "rocectl_agent_probe_listen")
	if p := fx.run(t); !p.ok {
		t.Fatalf("run without probing failed:\n%s", p.out)
	}
	if _, err := os.Stat(dropin); !os.IsNotExist(err) {
		t.Errorf("the probe drop-in stayed without probing: %v", err)
	}
	def, _ = os.ReadFile(fx.deflt)
	if strings.Contains(string(def), "--probe") {
		t.Errorf("probe flags stayed without probing:\n%s", def)
	}

	fx.vars["rocectl_agent_probe_peers"] = []string{"node12"}
	p = fx.run(t)
	if p.ok || !strings.Contains(p.out, "HOST:PORT in rocectl_agent_probe_peers") {
		t.Errorf("a peer without a port passed:\n%s", p.out)
	}
}

// The role gathers each host's nccl-env document beside its audit, so
// that the fleet report's NCCL sections (the GID index each host resolves
// to, NCCL against the NIC classes) have their input.
func TestGatherNCCLEnvForTheFleetReport(t *testing.T) {
	t.Parallel() // its own fixture, ansible config and temp dirs (ansibleEnv)
	fx := newFixture(t, "cx6dx-ofed-lossless")
	fx.vars["rocectl_apply"] = false
	results := filepath.Join(fx.dir, "results")
	fx.vars["rocectl_results_dir"] = results
	p := fx.run(t)
	if !p.ok {
		t.Fatalf("run failed:\n%s", p.out)
	}
	b, err := os.ReadFile(filepath.Join(results, "localhost.nccl-env.json"))
	if err != nil {
		t.Fatalf("no nccl-env document gathered: %v\n%s", err, p.out)
	}
	var d struct {
		Host      string            `json:"host"`
		Variables map[string]string `json:"variables"`
	}
	if err := json.Unmarshal(b, &d); err != nil || d.Host == "" || d.Variables["NCCL_IB_GID_INDEX"] == "" {
		t.Fatalf("gathered nccl-env document: %v %+v\n%s", err, d, b)
	}
	// What site.yml's report play runs over the gathered documents.
	rep, err := exec.Command(rocectlBin, "report", results).CombinedOutput()
	if err != nil || !strings.Contains(string(rep), "NCCL GID index") {
		t.Errorf("the fleet report over the gathered documents (%v) has no NCCL GID index section:\n%s", err, rep)
	}
}
