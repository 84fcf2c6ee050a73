// Package arch holds the test that keeps DESIGN.md §2's package boundaries:
// policy and nic never import each other, only programs import cli or
// agent (the daemon's command, cli/agentcmd, too), rocectl links no part of
// the daemon, nothing imports cmd, the pure packages (statedir among them)
// import only what the table allows, and the shipped binary links no test
// support or test hook.
package arch

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rocectl/rocectl/internal/fixturehost"
)

const mod = "github.com/rocectl/rocectl"

type pkg struct {
	Name       string
	ImportPath string
	Dir        string
	GoFiles    []string
	Imports    []string
	Deps       []string
	Standard   bool
}

// list runs `go list -deps -json` over the module (or the given packages)
// and indexes the result.
func list(t *testing.T, patterns ...string) map[string]pkg {
	t.Helper()
	if len(patterns) == 0 {
		patterns = []string{"./..."}
	}
	return goList(t, patterns...)
}

// goList runs `go list -deps -json ARGS...` and indexes the result.
func goList(t *testing.T, args ...string) map[string]pkg {
	t.Helper()
	cmd := exec.Command("go", append([]string{"list", "-deps", "-json"}, args...)...)
	cmd.Dir = fixturehost.RepoRoot()
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	pkgs := map[string]pkg{}
	dec := json.NewDecoder(bytes.NewReader(out))
	for dec.More() {
		var p pkg
		if err := dec.Decode(&p); err != nil {
			t.Fatal(err)
		}
		pkgs[p.ImportPath] = p
	}
	return pkgs
}

func own(path string) bool { return path == mod || strings.HasPrefix(path, mod+"/") }

func under(path, pkg string) bool {
	return path == mod+"/"+pkg || strings.HasPrefix(path, mod+"/"+pkg+"/")
}

func TestPackageBoundaries(t *testing.T) {
	pkgs := list(t)
	if len(pkgs) < 10 {
		t.Fatalf("go list found only %d packages", len(pkgs))
	}
	for path, p := range pkgs {
		if !own(path) {
			continue
		}
		for _, dep := range p.Deps {
			switch {
			case under(path, "policy") && under(dep, "nic"):
				t.Errorf("%s depends on %s: policy and nic never import each other", path, dep)
			case under(path, "nic") && under(dep, "policy"):
				t.Errorf("%s depends on %s: policy and nic never import each other", path, dep)
			case under(dep, "cli") && !under(path, "cli") && p.Name != "main":
				// Programs (cmd/rocectl, bench/cmd/applybench) may drive
				// the commands; no library may, the daemon included.
				t.Errorf("%s depends on %s: only programs import cli", path, dep)
			case under(dep, "agent") && !under(path, "agent") && !under(path, "cli/agentcmd") && p.Name != "main":
				// The daemon is started by its command (cli/agentcmd) or
				// a program; cli itself never links it.
				t.Errorf("%s depends on %s: only cli/agentcmd and programs import agent", path, dep)
			case under(dep, "cmd"):
				t.Errorf("%s depends on %s: nothing imports cmd", path, dep)
			}
		}
	}
	// policy is pure: the standard library, go-toml and port (the Port
	// type it shares with nic).
	for _, dep := range pkgs[mod+"/policy"].Deps {
		if d, ok := pkgs[dep]; ok && !d.Standard && !strings.HasPrefix(dep, "github.com/pelletier/go-toml/v2") && !under(dep, "port") {
			t.Errorf("policy depends on %s: it may import only the standard library, go-toml and port", dep)
		}
	}
	// port is the leaf both policy and nic import: the standard library
	// only, so that sharing it joins neither to anything.
	if _, ok := pkgs[mod+"/port"]; !ok {
		t.Errorf("go list does not see port")
	}
	for _, dep := range pkgs[mod+"/port"].Deps {
		if d, ok := pkgs[dep]; ok && !d.Standard {
			t.Errorf("port depends on %s: it may import only the standard library", dep)
		}
	}
	// lldp decodes and listens: the standard library and x/sys only.
	for _, dep := range pkgs[mod+"/lldp"].Deps {
		if d, ok := pkgs[dep]; ok && !d.Standard && !strings.HasPrefix(dep, "golang.org/x/sys/") {
			t.Errorf("lldp depends on %s: it may import only the standard library and x/sys", dep)
		}
	}
	// statedir, the state dir as a trust boundary, keeps journals as bytes:
	// the standard library and x/sys only, so that reaching the state dir
	// (peer's state file, the lock) links neither apply nor host.
	if _, ok := pkgs[mod+"/statedir"]; !ok {
		t.Error("go list does not see statedir")
	}
	for _, dep := range pkgs[mod+"/statedir"].Deps {
		if d, ok := pkgs[dep]; ok && !d.Standard && !strings.HasPrefix(dep, "golang.org/x/sys/") {
			t.Errorf("statedir depends on %s: it may import only the standard library and x/sys", dep)
		}
	}
	// Each package below imports only what DESIGN.md §2's table allows of
	// this module (the standard library and third-party modules are not
	// checked here): the layers never import upwards.
	allowed := map[string][]string{
		"host":     {"policy", "nic", "nccl", "port"},
		"nccl":     {"policy", "nic", "port"},
		"verify":   {"policy", "nic", "port"},
		"apply":    {"host", "verify", "policy", "nccl", "nic", "port", "statedir"},
		"report":   {"policy", "port"},
		"peer":     {"statedir", "host", "verify", "policy", "nccl", "nic", "port", "lldp"},
		"statedir": {},
		"policy":   {"port"},
		"nic":      {"port"},
		"port":     {},
	}
	for pkg, may := range allowed {
		p, ok := pkgs[mod+"/"+pkg]
		if !ok {
			t.Errorf("go list does not see %s", pkg)
			continue
		}
		for _, dep := range p.Deps {
			if !own(dep) || under(dep, pkg) || under(dep, "internal/parallel") || under(dep, "internal/thp") {
				continue
			}
			ok := false
			for _, m := range may {
				ok = ok || under(dep, m)
			}
			if !ok {
				t.Errorf("%s depends on %s: it may import only %v of this module", pkg, dep, may)
			}
		}
	}
	// internal/parallel, which every layer may use, is a leaf: the
	// standard library only.
	if _, ok := pkgs[mod+"/internal/parallel"]; !ok {
		t.Error("go list does not see internal/parallel")
	}
	for _, dep := range pkgs[mod+"/internal/parallel"].Deps {
		if d, ok := pkgs[dep]; ok && !d.Standard {
			t.Errorf("internal/parallel depends on %s: it may import only the standard library", dep)
		}
	}
	// internal/thp too: the standard library and x/sys.
	if _, ok := pkgs[mod+"/internal/thp"]; !ok {
		t.Error("go list does not see internal/thp")
	}
	for _, dep := range pkgs[mod+"/internal/thp"].Deps {
		if d, ok := pkgs[dep]; ok && !d.Standard && !strings.HasPrefix(dep, "golang.org/x/sys/") {
			t.Errorf("internal/thp depends on %s: it may import only the standard library and x/sys", dep)
		}
	}
	// apply runs verify's checks (read-back, guard) in its lifecycle;
	// verify never depends on apply.
	for _, dep := range pkgs[mod+"/verify"].Deps {
		if under(dep, "apply") {
			t.Errorf("verify depends on %s", dep)
		}
	}
}

// shipped are the programs the package and the Ansible role install.
var shipped = []string{"./cmd/rocectl", "./cmd/rocectl-agent"}

// The shipped binaries link no test hook: the end-to-end tests' step delay
// (ROCECTL_TEST_STEP_DELAY) lives in a file only -tags rocectl_testhooks
// builds (cli/testhooks.go), and no hidden test flag stands in for it.
func TestShippedBinaryHasNoTestHooks(t *testing.T) {
	pkgs := list(t, shipped...)
	files := 0
	for path, p := range pkgs {
		if !own(path) {
			continue
		}
		for _, f := range p.GoFiles {
			b, err := os.ReadFile(filepath.Join(p.Dir, f))
			if err != nil {
				t.Fatal(err)
			}
			files++
			for _, hook := range []string{"ROCECTL_TEST_", "test-step-delay"} {
				if bytes.Contains(b, []byte(hook)) {
					t.Errorf("%s/%s (in a shipped binary) holds the test hook %q", path, f, hook)
				}
			}
		}
	}
	if files < 20 {
		t.Fatalf("read only %d files of the shipped binary", files)
	}
}

// testSupport reports whether an own package exists for tests only: the
// simulated kernel (nic/nictest), fixture hosts, namespaces, built test
// binaries, and any package named like them.
func testSupport(path string) bool {
	for _, p := range []string{"nic/nictest", "internal/fixturehost", "internal/netnstest", "internal/testbin"} {
		if under(path, p) {
			return true
		}
	}
	return own(path) && strings.HasSuffix(path, "test")
}

// The shipped binaries (DESIGN.md §2): `go list -deps` of each, as the
// release builds it (-tags verbs) and without tags, holds no test-support
// package and not the standard library's testing package, which only test
// code has reason to link.
func TestShippedBinaryLinksNoTestSupport(t *testing.T) {
	for _, prog := range shipped {
		for _, tags := range []string{"", "verbs"} {
			deps := goList(t, "-tags", tags, prog)
			if _, ok := deps[mod+strings.TrimPrefix(prog, ".")]; !ok || len(deps) < 10 {
				t.Fatalf("-tags %q: go list found %d packages, not %s's dependencies", tags, len(deps), prog)
			}
			for path, p := range deps {
				if testSupport(path) || (p.Standard && path == "testing") {
					t.Errorf("-tags %q: %s links %s", tags, prog, path)
				}
			}
		}
	}
}

// rocectl does not link the daemon (cli/agentcmd says why): not agent or
// the daemon's command, not the Prometheus client, and not net/http,
// which it brings. Their package initialisation alone cost every rocectl
// command about 3 ms before main. rocectl-agent does link them, which
// shows the test lists the right names.
func TestRocectlDoesNotLinkTheDaemon(t *testing.T) {
	daemonOnly := func(path string) bool {
		return under(path, "agent") || under(path, "cli/agentcmd") ||
			strings.HasPrefix(path, "github.com/prometheus/") || path == "net/http"
	}
	for _, tags := range []string{"", "verbs"} {
		for prog, wantLinked := range map[string]bool{"./cmd/rocectl": false, "./cmd/rocectl-agent": true} {
			var linked []string
			for path := range goList(t, "-tags", tags, prog) {
				if daemonOnly(path) {
					linked = append(linked, path)
				}
			}
			if wantLinked != (len(linked) > 0) {
				t.Errorf("-tags %q: %s links %d of the daemon's packages %v, want them linked: %v", tags, prog, len(linked), linked, wantLinked)
			}
		}
	}
}

// Only test files, other test support and programs that are not shipped
// (the fixture generators under internal/cmd, benchmark drivers) import
// nic/nictest or any other test support: a library that did would be one
// import away from putting the simulator into the binary.
func TestOnlyTestsImportTestSupport(t *testing.T) {
	pkgs := list(t)
	if _, ok := pkgs[mod+"/nic/nictest"]; !ok {
		t.Fatal("go list does not see nic/nictest")
	}
	for path, p := range pkgs {
		program := p.Name == "main" && path != mod+"/cmd/rocectl" && path != mod+"/cmd/rocectl-agent"
		if !own(path) || testSupport(path) || program || under(path, "internal/cmd") {
			continue
		}
		// Imports lists what the package's non-test files import;
		// _test.go files are in TestImports and XTestImports.
		for _, imp := range p.Imports {
			if testSupport(imp) {
				t.Errorf("%s imports %s outside its _test.go files", path, imp)
			}
		}
	}
}
