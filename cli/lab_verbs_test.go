//go:build lab && verbs

package cli

// With -tags "lab verbs" (cgo, libibverbs) the lab runner builds this
// package against the real verbs layer: rocectl's own loopback traffic on
// Soft-RoCE, through the CLI.

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rocectl/rocectl/test/lab/labenv"
)

func TestLabVerifyLoopbackThroughCLI(t *testing.T) {
	e := labenv.Get(t)
	prof := filepath.Join(t.TempDir(), "v.toml")
	os.WriteFile(prof, []byte(fmt.Sprintf(`[match]
netdevs = [%q]
[link]
mtu = 1500
[roce]
default_tos = 106
[verify]
loopback = true
duration = "500ms"
message_size = "16KiB"
[guard]
enabled = false
`, e.If[0])), 0o600)
	state := t.TempDir()
	// verify checks the settings too, so first make the host hold them.
	if code, out, errs := run(t, nil, "--state-dir", state, "apply", "--no-verify", "-p", prof); code != ExitOK {
		t.Fatalf("apply: exit %d\n%s%s", code, out, errs)
	}
	code, out, errs := run(t, nil, "--state-dir", state, "verify", "-p", prof)
	if code != ExitOK {
		t.Fatalf("verify: exit %d\n%s%s", code, out, errs)
	}
	want := fmt.Sprintf("traffic: %s port 1 gid[%d] ::ffff:%s tos 106", e.RXE[0], e.GIDIndex[0], e.IP[0])
	if !strings.Contains(out, want) || !strings.Contains(out, "verbs traffic passed") {
		t.Errorf("verify output lacks %q:\n%s", want, out)
	}
}

// apply runs the profile's verbs verification after the change; without an
// IPv4 address there is no RoCE v2 GID to test with, so the change is
// rolled back (exit 3) and the kernel is as it was.
func TestLabApplyLoopbackVerifyFailureRollsBack(t *testing.T) {
	l := newLabNIC(t)
	prof := filepath.Join(t.TempDir(), "v.toml")
	os.WriteFile(prof, []byte(fmt.Sprintf(`[match]
netdevs = [%q]
[qos]
pfc_priorities = [3]
[roce]
default_tos = 106
[verify]
loopback = true
duration = "300ms"
[guard]
enabled = false
`, l.port.Ifname)), 0o600)
	// With the address: traffic passes, the change stays.
	if code, out, errs := l.rocectl(t, "apply", "-p", prof); code != ExitOK {
		t.Fatalf("apply with loopback verify: exit %d\n%s%s", code, out, errs)
	}
	if code, out, errs := l.rocectl(t, "rollback"); code != ExitOK {
		t.Fatalf("rollback: exit %d\n%s%s", code, out, errs)
	}
	// Without it: verification fails, rollback.
	sh(t, "ip", "addr", "flush", "dev", l.port.Ifname)
	code, out, errs := l.rocectl(t, "apply", "-p", prof)
	if code != ExitRolledBack || !strings.Contains(errs, "no RoCE v2 IPv4 GID") {
		t.Fatalf("apply without an address: exit %d\n%s%s", code, out, errs)
	}
	if got := pfcEnabled(t, l.port.Ifname); len(got) != 0 {
		t.Errorf("PFC %v after the rollback, want none", got)
	}
}
