package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rocectl/rocectl/doc"
)

// A plan's warnings (mlx5 left in willing firmware DCBX while the profile
// sets PFC) show in the port's section of the text plan, also on a port
// otherwise in sync, and in the JSON document's warnings[].
func TestAuditShowsPlanWarnings(t *testing.T) {
	prof := filepath.Join(t.TempDir(), "p.toml")
	if err := os.WriteFile(prof, []byte("[match]\ndrivers = [\"mlx5_core\"]\n[qos]\npfc_priorities = []\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	snap := repo("testdata/hosts/cx6dx-ofed-factory") // PFC off, DCBX not host
	code, out, errs := run(t, nil, "audit", "-p", prof, "--snapshot", snap)
	if code != ExitOK {
		t.Fatalf("exit %d, want 0 (warnings do not make drift)\n%s%s", code, out, errs)
	}
	want := "  ens1f0np0 (mlx5_0 port 1, mlx5_core)\n    ! warning: ens1f0np0.qos.dcbx: DCBX is left to the mlx5 firmware, which is willing"
	if !strings.Contains(out, want) {
		t.Errorf("text plan lacks %q:\n%s", want, out)
	}
	code, out, errs = run(t, nil, "audit", "-o", "json", "-p", prof, "--snapshot", snap)
	var rep doc.Plan
	if err := json.Unmarshal([]byte(out), &rep); err != nil || code != ExitOK {
		t.Fatalf("exit %d, %v\n%s%s", code, err, out, errs)
	}
	n := 0
	for _, w := range rep.Warnings {
		if strings.HasPrefix(w, "ens1f") && strings.Contains(w, ".qos.dcbx: ") && strings.Contains(w, "willing") {
			n++
		}
	}
	if n != 2 {
		t.Errorf("JSON warnings %q, want one per port", rep.Warnings)
	}
}
