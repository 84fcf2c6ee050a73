// Package arch holds the test that keeps DESIGN.md §2's package boundaries:
// policy and nic never import each other, nothing imports agent or cmd, and
// the pure packages import only what the table allows.
package arch

import (
	"bytes"
	"encoding/json"
	"os/exec"
	"strings"
	"testing"

	"github.com/rocectl/rocectl/internal/fixturehost"
)

const mod = "github.com/rocectl/rocectl"

type pkg struct {
	Name       string
	ImportPath string
	Imports    []string
	Deps       []string
	Standard   bool
}

// list runs `go list -deps -json` over the module and indexes the result.
func list(t *testing.T) map[string]pkg {
	t.Helper()
	cmd := exec.Command("go", "list", "-deps", "-json", "./...")
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
			case under(dep, "agent") && !under(path, "agent") && p.Name != "main":
				// Programs (cmd/rocectl, bench/cmd/applybench) may drive
				// the commands; no library may.
				t.Errorf("%s depends on %s: only programs import agent", path, dep)
			case under(dep, "cmd"):
				t.Errorf("%s depends on %s: nothing imports cmd", path, dep)
			}
		}
	}
	// policy is pure: the standard library and go-toml.
	for _, dep := range pkgs[mod+"/policy"].Deps {
		if d, ok := pkgs[dep]; ok && !d.Standard && !strings.HasPrefix(dep, "github.com/pelletier/go-toml/v2") {
			t.Errorf("policy depends on %s: it may import only the standard library and go-toml", dep)
		}
	}
	// apply and verify sit on policy and nic, never on each other.
	for _, dep := range pkgs[mod+"/apply"].Deps {
		if under(dep, "verify") {
			t.Errorf("apply depends on %s", dep)
		}
	}
	for _, dep := range pkgs[mod+"/verify"].Deps {
		if under(dep, "apply") {
			t.Errorf("verify depends on %s", dep)
		}
	}
}
