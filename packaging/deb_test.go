package packaging

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/rocectl/rocectl/internal/testkit/fixturehost"
)

func need(t *testing.T, cmds ...string) {
	t.Helper()
	for _, c := range cmds {
		if _, err := exec.LookPath(c); err != nil {
			t.Skipf("%s not installed", c)
		}
	}
}

func sh(t *testing.T, name string, args ...string) string {
	t.Helper()
	out, err := exec.Command(name, args...).CombinedOutput()
	if err != nil {
		t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
	}
	return string(out)
}

// buildDeb runs `make deb` into a temporary directory.
func buildDeb(t *testing.T) string {
	t.Helper()
	need(t, "make", "dpkg-deb", "gcc")
	if _, err := os.Stat("/usr/include/infiniband/verbs.h"); err != nil {
		t.Skip("libibverbs-dev not installed: the package's binary is built with -tags verbs")
	}
	dir := t.TempDir()
	sh(t, "make", "-C", fixturehost.RepoRoot(), "--no-print-directory", "deb", "DEB_DIR="+dir)
	debs, _ := filepath.Glob(filepath.Join(dir, "rocectl_*.deb"))
	if len(debs) != 1 {
		t.Fatalf("make deb made %v in %s", debs, dir)
	}
	return debs[0]
}

// The files an operator needs, as dpkg-deb lists them.
var wantFiles = []string{
	"./usr/sbin/rocectl",
	"./usr/sbin/rocectl-agent",
	"./lib/systemd/system/rocectl-agent.service",
	"./lib/systemd/system/rocectl-apply.service",
	"./lib/systemd/system/rocectl-audit.service",
	"./lib/systemd/system/rocectl-audit.timer",
	"./etc/default/rocectl",
	"./etc/rocectl/",
	"./usr/share/man/man8/rocectl.8.gz",
	"./usr/share/man/man8/rocectl-apply.8.gz",
	"./usr/share/man/man8/rocectl-agent.8.gz",
	"./usr/share/bash-completion/completions/rocectl",
	"./usr/share/zsh/vendor-completions/_rocectl",
	"./usr/share/fish/vendor_completions.d/rocectl.fish",
	"./usr/share/bash-completion/completions/rocectl-agent",
	"./usr/share/zsh/vendor-completions/_rocectl-agent",
	"./usr/share/fish/vendor_completions.d/rocectl-agent.fish",
	"./usr/share/doc/rocectl/copyright",
	"./usr/share/doc/rocectl/changelog.gz",
	"./usr/share/doc/rocectl/README.md",
	"./usr/share/doc/rocectl/systemd/README.md",
	"./usr/share/doc/rocectl/docs/metrics.md",
	"./usr/share/doc/rocectl/examples/connectx-lossless.toml",
}

func TestDebianPackage(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the package (-short)")
	}
	deb := buildDeb(t)

	t.Run("control", func(t *testing.T) {
		if dep := sh(t, "dpkg-deb", "-f", deb, "Depends"); !strings.Contains(dep, "libibverbs1") {
			t.Errorf("Depends: %q, want libibverbs1 (the binary is built with verbs)", dep)
		}
		if cf := sh(t, "dpkg-deb", "-I", deb, "conffiles"); strings.TrimSpace(cf) != "/etc/default/rocectl" {
			t.Errorf("conffiles: %q, want /etc/default/rocectl", cf)
		}
	})

	t.Run("files", func(t *testing.T) {
		var have []string
		for l := range strings.Lines(sh(t, "dpkg-deb", "-c", deb)) {
			if f := strings.Fields(l); len(f) >= 6 {
				have = append(have, f[5])
			}
		}
		for _, f := range wantFiles {
			if !slices.Contains(have, f) {
				t.Errorf("the package lacks %s", f)
			}
		}
		for _, f := range have {
			if strings.HasPrefix(f, "./usr/local/") {
				t.Errorf("%s: Debian packages must not install into /usr/local", f)
			}
		}
	})

	t.Run("lintian", func(t *testing.T) {
		need(t, "lintian")
		out, _ := exec.Command("lintian", "--tag-display-limit", "0", deb).CombinedOutput()
		for l := range strings.Lines(string(out)) {
			if strings.HasPrefix(l, "E: ") {
				t.Errorf("lintian: %s", strings.TrimSpace(l))
			}
		}
	})

	t.Run("install-remove-purge", func(t *testing.T) {
		if os.Geteuid() != 0 {
			t.Skip("dpkg --root needs root to give the files their owner")
		}
		need(t, "dpkg")
		root := t.TempDir()
		for _, d := range []string{"var/lib/dpkg/info", "var/lib/dpkg/updates", "var/log"} {
			if err := os.MkdirAll(filepath.Join(root, d), 0o755); err != nil {
				t.Fatal(err)
			}
		}
		if err := os.WriteFile(filepath.Join(root, "var/lib/dpkg/status"), nil, 0o644); err != nil {
			t.Fatal(err)
		}
		// The throwaway root has no libibverbs1 (--force-depends) and no
		// /bin/sh to chroot into: the scripts run here, with $DPKG_ROOT set,
		// which they honour (no systemctl, paths under $DPKG_ROOT).
		dpkg := func(args ...string) string {
			return sh(t, "dpkg", append([]string{"--root=" + root, "--force-not-root", "--force-depends", "--force-script-chrootless"}, args...)...)
		}
		exists := func(p string) bool { _, err := os.Lstat(filepath.Join(root, p)); return err == nil }

		dpkg("-i", deb)
		for _, f := range wantFiles {
			if !exists(f) {
				t.Errorf("installed: %s missing", f)
			}
		}
		unit, err := os.ReadFile(filepath.Join(root, "lib/systemd/system/rocectl-agent.service"))
		if err != nil || !strings.Contains(string(unit), "ExecStart=/usr/sbin/rocectl-agent ") {
			t.Errorf("installed agent unit does not run /usr/sbin/rocectl-agent (%v)", err)
		}
		// The installed binary runs (libibverbs1 comes with libibverbs-dev
		// here) and has verbs support: the role's `rocectl verify` works.
		out := sh(t, filepath.Join(root, "usr/sbin/rocectl"), "version", "-o", "json")
		var v struct {
			Version string `json:"version"`
			Verbs   bool   `json:"verbs"`
		}
		if err := json.Unmarshal([]byte(out), &v); err != nil || !v.Verbs || !strings.Contains(filepath.Base(deb), "_"+v.Version+"_") {
			t.Errorf("installed rocectl version -o json: %+v (%v), want verbs and the package's version (%s)\n%s", v, err, filepath.Base(deb), out)
		}

		// The daemon is installed beside it, and `rocectl agent` runs it.
		if out := sh(t, filepath.Join(root, "usr/sbin/rocectl"), "agent", "--version"); !strings.HasPrefix(out, "rocectl-agent ") || !strings.Contains(out, v.Version) {
			t.Errorf("installed rocectl agent --version: %q, want rocectl-agent's version %s", out, v.Version)
		}

		dpkg("-r", "rocectl")
		if exists("usr/sbin/rocectl") || exists("usr/sbin/rocectl-agent") || exists("lib/systemd/system/rocectl-agent.service") {
			t.Error("removed: binary or unit still there")
		}
		if !exists("etc/default/rocectl") {
			t.Error("removed (not purged): the conffile /etc/default/rocectl must stay")
		}
		if st := dpkg("-s", "rocectl"); !strings.Contains(st, "Status: deinstall ok config-files") {
			t.Errorf("after -r: %s", st)
		}

		// A state directory as the units' StateDirectory= makes it.
		if err := os.MkdirAll(filepath.Join(root, "var/lib/rocectl"), 0o700); err != nil {
			t.Fatal(err)
		}
		dpkg("--purge", "rocectl")
		for _, p := range []string{"etc/default/rocectl", "var/lib/rocectl"} {
			if exists(p) {
				t.Errorf("purged: %s still there", p)
			}
		}
		if out, err := exec.Command("dpkg", "--root="+root, "-s", "rocectl").CombinedOutput(); err == nil {
			t.Errorf("purged: dpkg still knows rocectl:\n%s", out)
		}
	})
}
