package arch

import (
	"bytes"
	"encoding/json"
	"flag"
	"go/parser"
	"go/token"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rocectl/rocectl/internal/testkit/fixturehost"
)

const mod = Module

type pkg struct {
	Name         string
	ImportPath   string
	Dir          string
	GoFiles      []string
	Imports      []string
	TestImports  []string
	XTestImports []string
	Deps         []string
	Standard     bool
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

// TestTableIsLayered checks the table itself: every row it names exists,
// no row may import one of its own layer or above (so no arrow points up
// and there is no cycle), and no row's May breaks what its kind allows.
func TestTableIsLayered(t *testing.T) {
	rows := map[string]Row{}
	for i, r := range Table {
		if _, dup := rows[r.Pkg]; dup {
			t.Errorf("row %s appears twice", r.Pkg)
		}
		rows[r.Pkg] = r
		if i > 0 && r.Layer < Table[i-1].Layer {
			t.Errorf("row %s (layer %d) follows layer %d: keep the table lowest layer first", r.Pkg, r.Layer, Table[i-1].Layer)
		}
		if r.Job == "" {
			t.Errorf("row %s has no job", r.Pkg)
		}
	}
	for _, r := range Table {
		for _, m := range r.May {
			to, ok := rows[m]
			switch {
			case !ok:
				t.Errorf("row %s may import %s, which is no row of the table", r.Pkg, m)
			case to.Layer >= r.Layer:
				t.Errorf("row %s (layer %d) may import %s (layer %d): an arrow that does not point down", r.Pkg, r.Layer, m, to.Layer)
			case !KindMayImport(r, to):
				t.Errorf("row %s (%s) may import %s, a %s, which its kind may not import", r.Pkg, r.Kind, m, to.Kind)
			case to.Kind == Lib:
				t.Errorf("row %s lists %s: every row may import a lib; leave it out", r.Pkg, m)
			}
		}
	}
}

// reach is the rows r may reach through May, itself excluded.
func reach(r Row) map[string]bool {
	rows := map[string]Row{}
	for _, x := range Table {
		rows[x.Pkg] = x
	}
	seen := map[string]bool{}
	var walk func(Row)
	walk = func(x Row) {
		for _, m := range x.May {
			if !seen[m] {
				seen[m] = true
				walk(rows[m])
			}
		}
	}
	walk(r)
	return seen
}

// TestTableKeepsDesignRules pins DESIGN.md §2's fixed rules on the table,
// so that no edit of a May list drops one: policy and nic never reach
// each other, nothing imports cmd, only cli/agentcmd and programs reach
// agent, only programs, cli/agentcmd and tools reach cli.
func TestTableKeepsDesignRules(t *testing.T) {
	for _, r := range Table {
		to := reach(r)
		switch {
		case r.Pkg == "policy" && to["nic"], r.Pkg == "nic" && to["policy"]:
			t.Errorf("%s reaches the other of policy and nic: they never import each other", r.Pkg)
		}
		if to["cmd"] {
			t.Errorf("%s may import cmd: nothing imports cmd", r.Pkg)
		}
		if r.Kind != Program && r.Kind != Tool && r.Pkg != "cli/agentcmd" && r.Pkg != "agent" && to["agent"] {
			t.Errorf("%s reaches agent: only cli/agentcmd and programs import the daemon", r.Pkg)
		}
		if r.Kind != Program && r.Kind != Tool && r.Pkg != "cli/agentcmd" && r.Pkg != "cli" && to["cli"] {
			t.Errorf("%s reaches cli: only programs import the commands", r.Pkg)
		}
	}
}

// TestTableCoversEveryPackage: every package of the module belongs to a
// row, every row to at least one package, and a package named like a fake
// (…test) is a test kit or a test.
func TestTableCoversEveryPackage(t *testing.T) {
	pkgs := list(t)
	used := map[string]bool{}
	for path := range pkgs {
		if !own(path) {
			continue
		}
		r, ok := RowOf(path)
		if !ok {
			t.Errorf("%s is in no row of internal/arch's Table: add one (or put the package under a row's path)", path)
			continue
		}
		used[r.Pkg] = true
		if strings.HasSuffix(path, "test") && r.Kind != TestKit && r.Kind != Test {
			t.Errorf("%s is named like test support but its row %s is a %s", path, r.Pkg, r.Kind)
		}
	}
	for _, r := range Table {
		if !used[r.Pkg] {
			t.Errorf("go list sees no package of row %s", r.Pkg)
		}
	}
}

// TestImportsFollowTable checks every package's imports against the table:
// its non-test files import only what its row allows (May, its own row,
// libs, within what its kind may import), and its _test.go files import no
// program and no tool.
func TestImportsFollowTable(t *testing.T) {
	pkgs := list(t)
	checked := 0
	for path, p := range pkgs {
		if !own(path) {
			continue
		}
		from, ok := RowOf(path)
		if !ok {
			continue // TestTableCoversEveryPackage says so
		}
		checked++
		for _, imp := range p.Imports {
			to, ok := RowOf(imp)
			if !ok {
				continue
			}
			if !Allows(from, to) || !KindMayImport(from, to) {
				t.Errorf("%s imports %s: row %s (layer %d) may import only %v of this module (and libs); %s is row %s (%s, layer %d)",
					path, imp, from.Pkg, from.Layer, from.May, imp, to.Pkg, to.Kind, to.Layer)
			}
		}
		for _, imp := range append(append([]string{}, p.TestImports...), p.XTestImports...) {
			if to, ok := RowOf(imp); ok && (to.Kind == Program || to.Kind == Tool) && to.Pkg != from.Pkg {
				t.Errorf("%s's tests import %s, a %s: nothing imports programs or tools", path, imp, to.Kind)
			}
		}
	}
	if checked < 20 {
		t.Fatalf("checked only %d packages", checked)
	}
}

// TestOutsideDependencies: a row with Ext depends (directly or not) on no
// package outside the module and the standard library but those.
func TestOutsideDependencies(t *testing.T) {
	pkgs := list(t)
	for path, p := range pkgs {
		r, ok := RowOf(path)
		if !ok || r.Ext == nil {
			continue
		}
		for _, dep := range p.Deps {
			d, ok := pkgs[dep]
			if !ok || d.Standard || own(dep) {
				continue
			}
			allowed := false
			for _, e := range r.Ext {
				allowed = allowed || strings.HasPrefix(dep, e)
			}
			if !allowed {
				t.Errorf("%s depends on %s: row %s may depend on the standard library and %v only", path, dep, r.Pkg, r.Ext)
			}
		}
	}
}

// TestEveryPackageHasDocGo: DESIGN.md §2 says every package has a doc.go
// saying what it is for (and, by its row, what it may import); the
// package comment lives there and nowhere else.
func TestEveryPackageHasDocGo(t *testing.T) {
	for path, p := range list(t) {
		if !own(path) {
			continue
		}
		files, err := filepath.Glob(filepath.Join(p.Dir, "*.go"))
		if err != nil {
			t.Fatal(err)
		}
		hasDoc := false
		for _, f := range files {
			af, err := parser.ParseFile(token.NewFileSet(), f, nil, parser.PackageClauseOnly|parser.ParseComments)
			if err != nil {
				t.Fatal(err)
			}
			switch {
			case filepath.Base(f) == "doc.go":
				hasDoc = af.Doc != nil
			case af.Doc != nil && af.Name.Name == p.Name: // not an external test package's
				t.Errorf("%s holds a package comment: it belongs in the package's doc.go", f)
			}
		}
		if !hasDoc {
			t.Errorf("%s has no doc.go with its package comment", path)
		}
	}
}

var update = flag.Bool("update", false, "rewrite docs/architecture.md from the table")

// TestArchitectureDoc: docs/architecture.md is what the table generates.
func TestArchitectureDoc(t *testing.T) {
	file := filepath.Join(fixturehost.RepoRoot(), "docs", "architecture.md")
	want := Markdown()
	if *update {
		if err := os.WriteFile(file, []byte(want), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	have, err := os.ReadFile(file)
	if err != nil {
		t.Fatalf("%v: generate it with `go test ./internal/arch -update`", err)
	}
	if string(have) != want {
		t.Errorf("docs/architecture.md differs from what internal/arch's Table generates: edit the table, not the file, and run `go test ./internal/arch -update`")
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

// testSupport reports whether an own package exists for tests only: its
// row in the table is a test kit or a test, or it is named like one.
func testSupport(path string) bool {
	if r, ok := RowOf(path); ok && (r.Kind == TestKit || r.Kind == Test) {
		return true
	}
	return own(path) && strings.HasSuffix(path, "test")
}

// The shipped binaries (DESIGN.md §2): `go list -deps` of each, as the
// release builds it (-tags verbs) and without tags, holds no test-support
// package and not the standard library's testing package, which only test
// code has reason to link.
func TestShippedBinaryLinksNoTestSupport(t *testing.T) {
	for _, prog := range shipped {
		if r, ok := RowOf(mod + strings.TrimPrefix(prog, ".")); !ok || !r.Shipped {
			t.Errorf("%s is not in a shipped row of the table", prog)
		}
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
