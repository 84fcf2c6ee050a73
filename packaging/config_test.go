package packaging

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/rocectl/rocectl/internal/testkit/fixturehost"
)

// The fast tests of the package's definition: they read nfpm.yaml and the
// files it names, without building the package (TestDebianPackage does).

// nfpmConfig is the part of nfpm.yaml these tests read.
type nfpmConfig struct {
	Depends  []string `json:"depends"`
	Contents []struct {
		Src  string `json:"src"`
		Dst  string `json:"dst"`
		Type string `json:"type"`
	} `json:"contents"`
}

// loadConfig parses nfpm.yaml with PyYAML (python3), as the deploy tests
// parse the Ansible role.
func loadConfig(t *testing.T) nfpmConfig {
	t.Helper()
	py, err := exec.LookPath("python3")
	if err != nil {
		t.Skip("python3 not installed")
	}
	if exec.Command(py, "-c", "import yaml").Run() != nil {
		t.Skip("PyYAML not installed for python3")
	}
	cmd := exec.Command(py, "-c", `import json, sys, yaml
json.dump(yaml.load(open(sys.argv[1]), Loader=yaml.BaseLoader), sys.stdout)`, "nfpm.yaml")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("nfpm.yaml: %v\n%s", err, stderr.String())
	}
	var c nfpmConfig
	if err := json.Unmarshal(out, &c); err != nil {
		t.Fatal(err)
	}
	if len(c.Contents) == 0 {
		t.Fatal("nfpm.yaml: no contents")
	}
	return c
}

// stage runs what `make deb` runs to generate the man pages and
// completions (internal/tools/gendocs) into a temporary stage directory.
func stage(t *testing.T) string {
	t.Helper()
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go toolchain on PATH")
	}
	dir := t.TempDir()
	cmd := exec.Command(goTool, "run", "./internal/tools/gendocs", "-out", dir, "-version", "0.0.0-test")
	cmd.Dir = fixturehost.RepoRoot()
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("gendocs: %v\n%s", err, out)
	}
	return dir
}

// local is where src of nfpm.yaml is here: under stageDir for
// ${ROCECTL_STAGE}, else under the repository.
func local(stageDir, src string) string {
	src = strings.Replace(src, "${ROCECTL_STAGE}", stageDir, 1)
	if !filepath.IsAbs(src) {
		src = filepath.Join(fixturehost.RepoRoot(), src)
	}
	return src
}

// source is the local file the package installs at dst: from an entry of
// its own, or from a staged directory holding it (src ending in "/"); ""
// when the package installs nothing there.
func (c nfpmConfig) source(stageDir, dst string) string {
	for _, e := range c.Contents {
		if e.Dst == dst && e.Src != "" {
			return local(stageDir, e.Src)
		}
		dir, ok := strings.CutSuffix(e.Src, "/")
		if !ok || !strings.HasSuffix(e.Dst, "/") || !strings.HasPrefix(dst, e.Dst) {
			continue
		}
		p := filepath.Join(local(stageDir, dir), strings.TrimPrefix(dst, e.Dst))
		if st, err := os.Stat(p); err == nil && st.Mode().IsRegular() {
			return p
		}
	}
	return ""
}

// shipped reports whether the package installs a file at dst whose source
// exists once staged.
func (c nfpmConfig) shipped(stageDir, dst string) bool {
	src := c.source(stageDir, dst)
	if src == "" {
		return false
	}
	st, err := os.Stat(src)
	return err == nil && st.Mode().IsRegular()
}

var manRef = regexp.MustCompile(`^man:([a-z0-9._-]+)\(([1-8])\)$`)

// Every unit's Documentation= names man pages, and each of them is one the
// package ships: `systemctl help UNIT` and `systemctl status` lead to it.
func TestUnitDocumentationIsShipped(t *testing.T) {
	c := loadConfig(t)
	dir := stage(t)
	services, _ := filepath.Glob(filepath.Join(fixturehost.RepoRoot(), "systemd", "rocectl-*.service"))
	timers, _ := filepath.Glob(filepath.Join(fixturehost.RepoRoot(), "systemd", "rocectl-*.timer"))
	units := append(services, timers...)
	if len(units) != 4 {
		t.Fatalf("units: %v, want the 4 shipped ones", units)
	}
	for _, u := range units {
		f, err := os.Open(u)
		if err != nil {
			t.Fatal(err)
		}
		var docs []string
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			if v, ok := strings.CutPrefix(strings.TrimSpace(sc.Text()), "Documentation="); ok {
				docs = append(docs, strings.Fields(v)...)
			}
		}
		f.Close()
		if err := sc.Err(); err != nil {
			t.Fatal(err)
		}
		name := filepath.Base(u)
		if len(docs) == 0 {
			t.Errorf("%s: no Documentation=", name)
		}
		for _, d := range docs {
			m := manRef.FindStringSubmatch(d)
			if m == nil {
				t.Errorf("%s: Documentation=%s: want man:PAGE(SECTION), the pages the package ships", name, d)
				continue
			}
			page := "/usr/share/man/man" + m[2] + "/" + m[1] + "." + m[2] + ".gz"
			if !c.shipped(dir, page) {
				t.Errorf("%s: Documentation=%s, but the package does not ship %s", name, d, page)
			}
		}
	}
}

// Every program the package installs in /usr/sbin comes with bash, zsh
// and fish completions, each registered for that program: rocectl-agent
// is run by hand too (its --mode, -p *.toml).
func TestCompletionsForEveryProgram(t *testing.T) {
	c := loadConfig(t)
	dir := stage(t)
	var progs []string
	for _, e := range c.Contents {
		if p, ok := strings.CutPrefix(e.Dst, "/usr/sbin/"); ok {
			progs = append(progs, p)
		}
	}
	if len(progs) < 2 {
		t.Fatalf("programs in /usr/sbin: %v, want rocectl and rocectl-agent", progs)
	}
	for _, p := range progs {
		for dst, registers := range map[string]string{
			"/usr/share/bash-completion/completions/" + p:         "-F __start_" + p + " " + p + "\n",
			"/usr/share/zsh/vendor-completions/_" + p:             "#compdef " + p + "\n",
			"/usr/share/fish/vendor_completions.d/" + p + ".fish": "complete -c " + p + " ",
		} {
			src := c.source(dir, dst)
			if src == "" {
				t.Errorf("%s: the package ships no %s", p, dst)
				continue
			}
			data, err := os.ReadFile(src)
			if err != nil {
				t.Errorf("%s: %s: %v", p, dst, err)
				continue
			}
			if !strings.Contains(string(data), registers) {
				t.Errorf("%s (from %s) does not register %s (no %q)", dst, src, p, registers)
			}
		}
	}
}

// versionRefs lists, per shared library (soname), the symbol versions a
// binary needs from it (GLIBC_2.34 from libc.so.6), from the "Version
// References" objdump -p prints.
func versionRefs(t *testing.T, bin string) map[string][]string {
	t.Helper()
	out, err := exec.Command("objdump", "-p", bin).Output()
	if err != nil {
		t.Fatalf("objdump -p %s: %v", bin, err)
	}
	refs := map[string][]string{}
	lib, in := "", false
	for l := range strings.Lines(string(out)) {
		f := strings.Fields(l)
		switch {
		case strings.HasPrefix(l, "Version References:"):
			in = true
		case !in:
		case len(f) == 0 || !strings.HasPrefix(l, " "):
			in = false
		case len(f) == 3 && f[0] == "required" && f[1] == "from":
			lib = strings.TrimSuffix(f[2], ":")
		case len(f) == 4 && lib != "":
			refs[lib] = append(refs[lib], f[3])
		}
	}
	return refs
}

// libSymbols is one library's section of a dpkg symbols file: its package
// and, per symbol version node, the first package version that has it.
type libSymbols struct {
	pkg   string
	nodes map[string]string
}

// symbolsFiles reads the installed packages' dpkg symbols files, by
// soname ("libibverbs.so.1 libibverbs1 #MINVER#", then
// " IBVERBS_1.11@IBVERBS_1.11 32").
func symbolsFiles(t *testing.T) map[string]libSymbols {
	t.Helper()
	files, _ := filepath.Glob("/var/lib/dpkg/info/*.symbols")
	libs := map[string]libSymbols{}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var cur libSymbols
		for l := range strings.Lines(string(data)) {
			fields := strings.Fields(l)
			switch {
			case len(fields) < 2:
			case l[0] != ' ' && l[0] != '|' && l[0] != '*' && l[0] != '#':
				cur = libSymbols{pkg: fields[1], nodes: map[string]string{}}
				libs[fields[0]] = cur
			case l[0] == ' ' && cur.nodes != nil:
				name, node, ok := strings.Cut(fields[0], "@")
				if ok && name == node {
					cur.nodes[node] = fields[1]
				}
			}
		}
	}
	return libs
}

func versionGE(t *testing.T, a, b string) bool {
	t.Helper()
	err := exec.Command("dpkg", "--compare-versions", a, "ge", b).Run()
	var ee *exec.ExitError
	if err != nil && !errors.As(err, &ee) {
		t.Fatalf("dpkg --compare-versions: %v", err)
	}
	return err == nil
}

var versionedDep = regexp.MustCompile(`^([a-z0-9][a-z0-9.+-]*) \(>= ([^)\s]+)\)$`)

// The package's Depends name, for every shared library the binaries link,
// a version that has every symbol version they need: the verbs binaries
// need GLIBC_2.34 (libc6 2.34, Debian 12 / Ubuntu 22.04) and IBVERBS_1.11
// (rdma-core 32), which an unversioned Depends lets dpkg install without.
// The binaries are built as `make deb` builds them, and the versions come
// from the dpkg symbols files of the libraries installed here.
func TestDependsCoverLinkedSymbolVersions(t *testing.T) {
	need(t, "go", "gcc", "objdump", "dpkg")
	if _, err := os.Stat("/usr/include/infiniband/verbs.h"); err != nil {
		t.Skip("libibverbs-dev not installed: the package's binaries are built with -tags verbs")
	}
	libs := symbolsFiles(t)
	if _, ok := libs["libibverbs.so.1"]; !ok {
		t.Skip("no dpkg symbols file of libibverbs1 here")
	}
	c := loadConfig(t)
	deps := map[string]string{}
	for _, d := range c.Depends {
		if m := versionedDep.FindStringSubmatch(d); m != nil {
			deps[m[1]] = m[2]
		} else {
			deps[d] = ""
		}
	}
	dir := t.TempDir()
	cmd := exec.Command("go", "build", "-trimpath", "-buildmode=pie", "-tags", "verbs", "-o", dir+"/", "./cmd/rocectl", "./cmd/rocectl-agent")
	cmd.Dir = fixturehost.RepoRoot()
	cmd.Env = append(os.Environ(), "CGO_ENABLED=1")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build -tags verbs: %v\n%s", err, out)
	}
	needs := map[string]string{} // package -> the least version it must have
	why := map[string]string{}
	for _, bin := range []string{"rocectl", "rocectl-agent"} {
		for soname, nodes := range versionRefs(t, filepath.Join(dir, bin)) {
			ls, ok := libs[soname]
			if !ok {
				t.Errorf("%s links %s, which no installed symbols file describes", bin, soname)
				continue
			}
			for _, node := range nodes {
				v, ok := ls.nodes[node]
				if !ok {
					t.Errorf("%s needs %s from %s, which its symbols file lacks", bin, node, soname)
					continue
				}
				if have, seen := needs[ls.pkg]; !seen || !versionGE(t, have, v) {
					needs[ls.pkg], why[ls.pkg] = v, node
				}
			}
		}
	}
	for _, lib := range []string{"libc6", "libibverbs1"} {
		if _, ok := needs[lib]; !ok {
			t.Errorf("the binaries need no versioned symbol of %s: the objdump parse is broken (%v)", lib, needs)
		}
	}
	for pkg, v := range needs {
		have, ok := deps[pkg]
		switch {
		case !ok:
			t.Errorf("Depends %v lacks %s (>= %s)", c.Depends, pkg, v)
		case have == "" || !versionGE(t, have, v):
			t.Errorf("Depends %v: want %s (>= %s): the binaries need %s", c.Depends, pkg, v, why[pkg])
		}
	}
}

// mdLink is an inline Markdown link's target: [text](target).
var mdLink = regexp.MustCompile(`\]\(([^)\s]+)\)`)

// Every Markdown document the package ships links only to files it ships
// (relative links resolved where the document is installed) or to web
// pages: the README of /usr/share/doc/rocectl once pointed at docs/*.md
// that were never installed.
func TestShippedDocsLinkOnlyShippedFiles(t *testing.T) {
	c := loadConfig(t)
	dir := stage(t)
	const docDir = "/usr/share/doc/rocectl/"
	n := 0
	for _, e := range c.Contents {
		if !strings.HasPrefix(e.Dst, docDir) || !strings.HasSuffix(e.Dst, ".md") {
			continue
		}
		n++
		data, err := os.ReadFile(c.source(dir, e.Dst))
		if err != nil {
			t.Errorf("%s: %v", e.Dst, err)
			continue
		}
		for _, m := range mdLink.FindAllStringSubmatch(string(data), -1) {
			target, _, _ := strings.Cut(m[1], "#")
			if target == "" || strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
				continue
			}
			dst := filepath.Join(filepath.Dir(e.Dst), target)
			if !c.shipped(dir, dst) && !c.shipsUnder(dir, dst+"/") {
				t.Errorf("%s (from %s) links %s, which the package does not ship at %s", e.Dst, e.Src, m[1], dst)
			}
		}
	}
	if n < 2 {
		t.Errorf("only %d Markdown documents shipped: want at least README.md and the units' README", n)
	}
}

// shipsUnder reports whether the package installs some file under the
// directory dir (ending in "/").
func (c nfpmConfig) shipsUnder(stageDir, dir string) bool {
	for _, e := range c.Contents {
		switch {
		case !strings.HasPrefix(e.Dst, dir):
		case strings.HasSuffix(e.Src, "/"):
			if ents, err := os.ReadDir(local(stageDir, e.Src)); err == nil && len(ents) > 0 {
				return true
			}
		case c.shipped(stageDir, e.Dst):
			return true
		}
	}
	return false
}
