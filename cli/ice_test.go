package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rocectl/rocectl/internal/testkit/fixturehost"
)

// The ice factory host end to end (#35): the ice lossless profile with
// [ecn] mode = "dcqcn" applies (the firmware LLDP agent stopped first,
// irdma's DCQCN switch on), audits in sync, and `rocectl rollback` puts
// the simulated kernel and irdma's configfs back as they were.
func TestIceApplyAuditRollback(t *testing.T) {
	root, sim := fixturehost.Copy(t, "ice-e810-factory")
	state := t.TempDir()
	prof, err := filepath.Abs(filepath.Join("testdata", "plans", "profiles", "ice-lossless.toml"))
	if err != nil {
		t.Fatal(err)
	}
	dcqcn := filepath.Join(root, "sys/kernel/config/irdma/irdma0/roce_dcqcn_enable")
	read := func() string {
		b, err := os.ReadFile(dcqcn)
		if err != nil {
			t.Fatal(err)
		}
		return strings.TrimSpace(string(b))
	}
	before := sim.Config()
	code, out, errs := run(t, sim, "--root", root, "--state-dir", state, "apply", "--soak", "0", "-p", prof)
	if code != ExitOK || !strings.Contains(out, "Applied") {
		t.Fatalf("apply exit %d\n%s%s", code, out, errs)
	}
	if flags, _ := sim.PrivFlags("enp59s0f0"); flags["fw-lldp-agent"] || read() != "1" {
		t.Fatalf("after apply: flags %v, roce_dcqcn_enable %s", flags, read())
	}
	if code, out, _ = run(t, sim, "--root", root, "--state-dir", state, "audit", "-p", prof); code != ExitOK {
		t.Fatalf("audit after apply: exit %d\n%s", code, out)
	}
	if code, out, errs = run(t, sim, "--root", root, "--state-dir", state, "rollback"); code != ExitOK {
		t.Fatalf("rollback exit %d\n%s%s", code, out, errs)
	}
	if sim.Config() != before || read() != "0" {
		t.Errorf("after rollback: kernel restored %v, roce_dcqcn_enable %s", sim.Config() == before, read())
	}
}
