package systemd

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestSystemdAnalyzeVerify runs systemd's own unit checker over the units:
// unknown keys, bad values, unknown dependencies, a missing executable. The
// units are copied with ExecStart= pointing at the rocectl built from this
// tree (systemd-analyze checks that the program exists). It skips when
// systemd-analyze is missing or cannot verify a trivial unit here (e.g. in
// a container where it lacks what it needs).
func TestSystemdAnalyzeVerify(t *testing.T) {
	bin := needBinary(t)
	analyze, err := exec.LookPath("systemd-analyze")
	if err != nil {
		t.Skip("systemd-analyze not installed")
	}
	dir := t.TempDir()
	probe := filepath.Join(dir, "rocectl-probe.service")
	if err := os.WriteFile(probe, []byte("[Unit]\nDescription=probe\n[Service]\nType=oneshot\nExecStart="+bin+" --version\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command(analyze, "verify", "--man=no", probe).CombinedOutput(); err != nil || len(strings.TrimSpace(string(out))) > 0 {
		t.Skipf("systemd-analyze verify cannot check even a trivial unit here (%v):\n%s", err, out)
	}
	if err := os.Remove(probe); err != nil {
		t.Fatal(err)
	}

	var files []string
	for _, p := range unitPaths(t) {
		data, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		dst := filepath.Join(dir, filepath.Base(p))
		if err := os.WriteFile(dst, []byte(strings.ReplaceAll(string(data), unitBinary, bin)), 0o644); err != nil {
			t.Fatal(err)
		}
		files = append(files, dst)
	}
	out, err := exec.Command(analyze, append([]string{"verify", "--man=no"}, files...)...).CombinedOutput()
	if err != nil {
		t.Errorf("systemd-analyze verify: %v\n%s", err, out)
	}
	// Warnings do not change the exit code; any line about our units fails.
	for _, line := range strings.Split(string(out), "\n") {
		if strings.Contains(line, dir) || strings.Contains(line, "rocectl") {
			t.Errorf("systemd-analyze verify: %s", line)
		}
	}
}
