package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// classes-lossless.toml says connectx-lossless.toml's recipe as traffic
// classes, deriving trust, PFC, the CNP marking and the TOS: on every
// shipped host its plan (text and JSON, exit code included) is the
// hand-written profile's, byte for byte but for the profile's name and
// where the QoS chain section says the intent came from.
// TestGoldenPlans pins both; this pins that they are the same.
func TestClassesPlanLikeHandWritten(t *testing.T) {
	hosts, err := os.ReadDir(repo("testdata/hosts"))
	if err != nil || len(hosts) < 6 {
		t.Fatalf("hosts: %v", err)
	}
	for _, h := range hosts {
		for _, ext := range []string{".txt", ".json"} {
			dir := filepath.Join("testdata", "plans", h.Name())
			hand, err1 := os.ReadFile(filepath.Join(dir, "connectx-lossless"+ext))
			classes, err2 := os.ReadFile(filepath.Join(dir, "classes-lossless"+ext))
			if err1 != nil || err2 != nil {
				t.Fatal(err1, err2)
			}
			a := strings.ReplaceAll(string(hand), "connectx-lossless", "P")
			b := strings.ReplaceAll(strings.ReplaceAll(string(classes), "cli/testdata/plans/profiles/classes-lossless", "profiles/connectx-lossless"), "classes-lossless", "P")
			b = strings.ReplaceAll(b, "profiles/connectx-lossless", "profiles/P")
			// The QoS chain names where the intent came from: the class
			// here, the TOS written by hand there.
			b = strings.ReplaceAll(b, "classes.data", "roce.default_tos")
			if a != b {
				t.Errorf("%s%s: the classes profile plans differently from the hand-written one:\n--- hand-written:\n%s--- classes:\n%s", h.Name(), ext, a, b)
			}
		}
	}
}

// nccl-env derives NCCL_IB_SL from the data class, NCCL_IB_TC from the
// derived TOS, and NCCL_IB_FIFO_TC from the control class (NCCL ≥ 2.22).
func TestNCCLEnvFromClasses(t *testing.T) {
	prof := filepath.Join(t.TempDir(), "classes.toml")
	text := "[nccl]\ngeneration = \"2.22\"\nIB_HCA = \"auto\"\n" +
		"[classes.data]\ndscp = 26\npriority = 3\nlossless = true\n[classes.cnp]\ndscp = 48\npriority = 6\n[classes.control]\ndscp = 46\npriority = 5\n"
	if err := os.WriteFile(prof, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	code, out, errs := run(t, nil, "nccl-env", "-p", prof, "--snapshot", repo("testdata/hosts/cx6dx-ofed-lossless"))
	if want := "NCCL_IB_HCA==mlx5_0:1,mlx5_1:1\nNCCL_IB_SL=3\nNCCL_IB_FIFO_TC=186\nNCCL_IB_TC=106\n"; code != ExitOK || out != want {
		t.Fatalf("exit %d\nstdout:\n%s\nwant:\n%s\nstderr:\n%s", code, out, want, errs)
	}
}
