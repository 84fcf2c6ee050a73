package packaging

import (
	"bufio"
	"bytes"
	"encoding/json"
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

// source is the local file the package installs at dst: from an entry of
// its own, or from a staged directory holding it (src ending in "/"); ""
// when the package installs nothing there.
func (c nfpmConfig) source(stageDir, dst string) string {
	local := func(src string) string {
		src = strings.Replace(src, "${ROCECTL_STAGE}", stageDir, 1)
		if !filepath.IsAbs(src) {
			src = filepath.Join(fixturehost.RepoRoot(), src)
		}
		return src
	}
	for _, e := range c.Contents {
		if e.Dst == dst && e.Src != "" {
			return local(e.Src)
		}
		dir, ok := strings.CutSuffix(e.Src, "/")
		if !ok || !strings.HasSuffix(e.Dst, "/") || !strings.HasPrefix(dst, e.Dst) {
			continue
		}
		p := filepath.Join(local(dir), strings.TrimPrefix(dst, e.Dst))
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
