//go:build lab

package cli

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/rocectl/rocectl/nic/snapshot"
	"github.com/rocectl/rocectl/policy"
)

// labNotInDumps are the settings (names after the scope) that the dumps
// this test takes cannot carry, so the import must read them as unknown
// (or, where the capture could not read them either, agree): ETS, buffers
// and DCBX (no `dcb ets/buffer/dcbx show` here), trust (dcbnl's APP-trust
// table has no dump; `dcb app show` gives the DSCP entries only), rings,
// private flags and the storm tunable (ethtool -g/--show-priv-flags/
// --get-tunable), the sysfs/configfs/debugfs settings (ecn, roce) and
// devlink.
var labNotInDumps = []string{"qos.ets.", "buffers.", "qos.dcbx", "qos.trust", "qos.dscp2prio",
	"link.rx_ring", "link.tx_ring", "link.private_flags.", "qos.pfc_storm_prevention", "ecn.", "roce.", "devlink."}

// labInDumps must be audited alike from both (the profile sets all
// three): ip link (mtu), ethtool -a (global pause) and dcb pfc show (pfc).
var labInDumps = []string{"link.mtu", "qos.global_pause", "qos.pfc"}

// TestLabImportRoundTrip is the round trip of `rocectl import` on real
// tools: the netdevsim port (with rxe7 on it) is put in a partly
// configured state, the real ip, ethtool and dcb print it, `capture`
// snapshots the same host, and both snapshots are audited with one
// profile that matches the port. Per setting, the import's outcome must
// equal the capture's, or be unknown for what the dumps cannot carry.
func TestLabImportRoundTrip(t *testing.T) {
	l := newLabNIC(t)
	nd := l.port.Ifname
	// Some settings in sync, some not: MTU as the profile wants, PFC on 3
	// only (the profile wants [3]), one DSCP entry of the 64 it wants.
	sh(t, "ip", "link", "set", nd, "mtu", "4200")
	sh(t, "dcb", "pfc", "set", "dev", nd, "prio-pfc", "3:on")
	sh(t, "dcb", "app", "add", "dev", nd, "dscp-prio", "26:3")

	cmds := [][]string{
		{"ip", "-d", "-s", "link", "show", nd},
		{"ethtool", "-i", nd},
		{"ethtool", "-S", nd},
		{"ethtool", "-a", nd},
		{"dcb", "pfc", "show", "dev", nd},
		{"dcb", "app", "show", "dev", nd},
	}
	var dumps strings.Builder
	for _, c := range cmds {
		// As a terminal shows it: the prompt line, then stdout and
		// stderr; a refusal is an answer the import must read too.
		out, err := exec.Command(c[0], c[1:]...).CombinedOutput()
		fmt.Fprintf(&dumps, "# %s\n%s", strings.Join(c, " "), out)
		if err != nil {
			t.Logf("%s: %v (kept as the terminal shows it)", strings.Join(c, " "), err)
		}
	}
	// rdma link show is logged, not imported: nic/dump reads it, but a
	// snapshot has no place for RDMA devices of dumps (the import would
	// only warn), so the RDMA side of the import stays unknown.
	if out, err := exec.Command("rdma", "link", "show").CombinedOutput(); err == nil {
		t.Logf("rdma link show (not imported: an import holds no RDMA devices):\n%s", out)
	}
	tmp := t.TempDir()
	dumpFile := filepath.Join(tmp, "dumps.txt")
	if err := os.WriteFile(dumpFile, []byte(dumps.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("dumps:\n%s", dumps.String())

	capDir, impDir := filepath.Join(tmp, "capture"), filepath.Join(tmp, "import")
	if code, out, errs := l.rocectl(t, "capture", "-o", capDir); code != ExitOK {
		t.Fatalf("capture: exit %d\n%s%s", code, out, errs)
	}
	code, out, errs := l.rocectl(t, "import", "-o", impDir, dumpFile)
	if code != ExitOK {
		t.Fatalf("import: exit %d\n%s%s", code, out, errs)
	}
	if strings.Contains(out, "warning:") {
		t.Errorf("import warned about real tool output:\n%s", out)
	}
	compareImport(t, l, capDir, impDir, labInDumps, labNotInDumps)
}

// compareImport audits the capture and the import of one lab port with
// the lab profile (PFC on [3]) and compares them per setting: the import
// must agree with the capture on the settings in inDumps (names after the
// port's scope, all of which the profile must cover), read as unknown
// or agree on those starting with a prefix in notInDumps, and agree on
// the rest.
func compareImport(t *testing.T, l *labNIC, capDir, impDir string, inDumps, notInDumps []string) {
	t.Helper()
	nd := l.port.Ifname
	capSnap, err := snapshot.Open(capDir)
	if err != nil {
		t.Fatal(err)
	}
	impSnap, err := snapshot.Open(impDir)
	if err != nil {
		t.Fatal(err)
	}
	p, err := policy.Load(l.profile(t, "[3]", "1s"), policy.LoadOptions{AllowInsecure: true})
	if err != nil {
		t.Fatal(err)
	}
	want, rdma := outcomes(capSnap, p)
	got, _ := outcomes(impSnap, p)
	t.Logf("capture: %v\nimport: %v", want, got)
	for key, w := range want {
		// The import knows netdevs only: RDMA-scoped settings are keyed
		// under the netdev there (as in TestImportRoundTrip).
		scope, rest, _ := strings.Cut(key, ".")
		ikey := key
		n, isRDMA := rdma[scope]
		if isRDMA {
			ikey = n + "." + rest
		}
		g, ok := got[ikey]
		delete(got, ikey)
		carried := scope == nd && slices.Contains(inDumps, rest)
		switch {
		case !ok && gidSelection[ikey]:
			// Present only under NCCL's dynamic GID selection, which
			// depends on GIDs the dumps do not carry.
		case !ok:
			t.Errorf("%s: not in the import's audit (capture: %s)", ikey, w)
		case g == w:
		case carried:
			t.Errorf("%s = %s in the import, %s in the capture (the dumps carry it)", ikey, g, w)
		case g != "unknown":
			t.Errorf("%s = %s in the import, %s in the capture", ikey, g, w)
		case scope == "host":
			// NCCL: derived from the RDMA devices and GIDs, which
			// these dumps do not carry.
		case (scope == nd || isRDMA) && slices.ContainsFunc(notInDumps, func(p string) bool { return strings.HasPrefix(rest, p) }):
		default:
			t.Errorf("%s is unknown in the import but %s in the capture, and the dumps carry it", ikey, w)
		}
	}
	for key, g := range got {
		t.Errorf("%s = %s only in the import's audit", key, g)
	}
	// The settings the dumps carry were all audited, so the test can fail.
	for _, k := range inDumps {
		if _, ok := want[nd+"."+k]; !ok {
			t.Errorf("%s.%s: not in the capture's audit; the profile no longer covers it", nd, k)
		}
	}
}
