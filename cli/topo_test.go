package cli

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/rocectl/rocectl/internal/testkit/fixturehost"
	"github.com/rocectl/rocectl/nic/snapshot"
	"github.com/rocectl/rocectl/port"

	"github.com/rocectl/rocectl/policy"
)

// The plan's section headers show the topology: a RoCE LAG with its bond,
// slaves and mode; a slave with its bond; a VF with its PF.
func TestPortHeaderShowsTopology(t *testing.T) {
	bond := &port.Port{Netdev: "bond0", RDMADevice: "mlx5_bond_0", PortNum: 1, Driver: "mlx5_core", Role: port.RoleBond,
		Bond: &port.Bond{Name: "bond0", Mode: "802.3ad", Slaves: []port.Slave{{Netdev: "ens1f0np0"}, {Netdev: "ens1f1np1"}}}}
	for _, c := range []struct {
		p    *port.Port
		want string
	}{
		{bond, "mlx5_bond_0 (bond0: ens1f0np0 + ens1f1np1, 802.3ad) port 1, mlx5_core"},
		{&port.Port{Netdev: "ens1f1np1", RDMADevice: "mlx5_bond_0", PortNum: 1, Driver: "mlx5_core", Master: "bond0"},
			"ens1f1np1 (slave of bond0, mlx5_bond_0 port 1, mlx5_core)"},
		{&port.Port{Netdev: "enp7s2f2", RDMADevice: "mlx5_4", PortNum: 1, Driver: "mlx5_core", Role: port.RoleVF, PF: "enp7s0f0np0"},
			"enp7s2f2 (mlx5_4 port 1, VF of enp7s0f0np0, mlx5_core)"},
		{&port.Port{Netdev: "ens1f0np0", RDMADevice: "mlx5_0", PortNum: 1, Driver: "mlx5_core", Role: port.RolePF},
			"ens1f0np0 (mlx5_0 port 1, mlx5_core)"},
	} {
		if got := portHeader(c.p); got != c.want {
			t.Errorf("portHeader = %q, want %q", got, c.want)
		}
	}
}

// The plan of a RoCE LAG host shows each setting the slaves share on one
// line in the bond's section, naming both slaves; disruptions and
// warnings about the slaves likewise.
func TestAuditLAGShowsOneLinePerSettingForBothSlaves(t *testing.T) {
	prof := filepath.Join(t.TempDir(), "lag.toml")
	if err := os.WriteFile(prof, []byte("name = \"lag\"\n[match]\ndrivers = [\"mlx5_core\"]\n[link]\nmtu = 9000\n"+
		"[qos]\ntrust = \"dscp\"\npfc_priorities = [3]\nglobal_pause = false\n[roce]\ndefault_tos = 106\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	code, out, errs := run(t, nil, "audit", "-p", prof, "--snapshot", repo("testdata/hosts/cx5-roce-lag"))
	if code != ExitDrift {
		t.Fatalf("exit %d, want 2\n%s%s", code, out, errs)
	}
	golden(t, "audit-cx5-roce-lag.txt", out)
	for _, want := range []string{
		"~ mlx5_bond_0 (bond0: ens1f0np0 + ens1f1np1, 802.3ad) port 1, mlx5_core\n",
		"    ~ {ens1f0np0,ens1f1np1}.qos.pfc = [] -> [3]\n",
		"    ~ bond0.link.mtu = 1500 -> 9000\n",
		"    ! disrupts: ens1f0np0 + ens1f1np1: link toggle:",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q", want)
		}
	}
	if strings.Contains(out, "slave of bond0") || strings.Contains(out, "~ ens1f0np0.") {
		t.Errorf("a slave shown on its own:\n%s", out)
	}
}

// Slaves that held different values before show each one's; a change
// on one slave only is its own line.
func TestSlaveChangeLines(t *testing.T) {
	s0 := &port.Port{Netdev: "ens1f0np0", Master: "bond0"}
	s1 := &port.Port{Netdev: "ens1f1np1", Master: "bond0"}
	ch := func(p *port.Port, name, before, after string, absent bool) *policy.Change {
		return &policy.Change{Setting: policy.Setting{Key: p.Netdev + "." + name, Scope: p.Netdev, Name: name, Value: after, Port: p}, Before: before, Absent: absent}
	}
	var b strings.Builder
	for _, l := range mergeSlaveChanges([]*policy.Change{
		ch(s0, "qos.pfc", "[4]", "[3]", false), ch(s1, "qos.pfc", "[]", "[3]", false),
		ch(s1, "qos.trust", "pcp", "dscp", false),
		ch(s0, "roce.x", "", "1", true), ch(s1, "roce.x", "", "1", true),
		ch(s0, "qos.y", "", "2", true), ch(s1, "qos.y", "1", "2", false),
	}) {
		renderChangeLine(&b, l)
	}
	want := "    ~ {ens1f0np0,ens1f1np1}.qos.pfc = ens1f0np0: [4], ens1f1np1: [] -> [3]\n" +
		"    ~ ens1f1np1.qos.trust = pcp -> dscp\n" +
		"    + {ens1f0np0,ens1f1np1}.roce.x = 1\n" +
		"    ~ {ens1f0np0,ens1f1np1}.qos.y = ens1f0np0: (none), ens1f1np1: 1 -> 2\n"
	if b.String() != want {
		t.Errorf("got\n%s\nwant\n%s", b.String(), want)
	}
}

// The LAG host end to end through the CLI: apply, audit in sync, rollback
// leaves both slaves and the bond byte for byte as they were; then a
// refused write on the second slave: apply fails, says the first slave
// was put back, and the host is as before.
func TestLAGApplyAuditRollbackThroughCLI(t *testing.T) {
	root, sim := fixturehost.Copy(t, "cx5-roce-lag")
	state := t.TempDir()
	prof := filepath.Join(t.TempDir(), "lag.toml")
	if err := os.WriteFile(prof, []byte("name = \"lag\"\n[match]\ndrivers = [\"mlx5_core\"]\n[link]\nmtu = 9000\n"+
		"[qos]\ntrust = \"dscp\"\npfc_priorities = [3]\nglobal_pause = false\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	rocectl := func(args ...string) (int, string, string) {
		return run(t, sim, append([]string{"--root", root, "--state-dir", state}, args...)...)
	}
	beforeK, beforeF := sim.Config(), fixturehost.Files(t, root)
	if code, out, errs := rocectl("apply", "--soak", "0", "--no-verify", "-p", prof); code != ExitOK || !strings.Contains(out, "{ens1f0np0,ens1f1np1}.qos.pfc = [] -> [3]") {
		t.Fatalf("apply: exit %d\n%s%s", code, out, errs)
	}
	if code, out, _ := rocectl("audit", "-p", prof); code != ExitOK {
		t.Fatalf("audit after apply: exit %d\n%s", code, out)
	}
	if code, out, errs := rocectl("rollback"); code != ExitOK {
		t.Fatalf("rollback: exit %d\n%s%s", code, out, errs)
	}
	if sim.Config() != beforeK {
		t.Error("slaves and bond not as before after rollback")
	}
	if d := fixturehost.DiffTrees(beforeF, fixturehost.Files(t, root)); len(d) > 0 {
		t.Errorf("files differ after rollback: %v", d)
	}

	refused := false
	sim.Inject(func(op, ifname string) error {
		if op == snapshot.OpSetPFC && ifname == "ens1f1np1" && !refused {
			refused = true
			return syscall.EIO
		}
		return nil
	})
	code, out, errs := rocectl("apply", "--soak", "0", "--no-verify", "-p", prof)
	if code != ExitError || !strings.Contains(errs, "LAG bond0: ens1f0np0 put back, ens1f1np1 unchanged: every slave holds what it held before this step") ||
		!strings.Contains(errs, "host restored") {
		t.Fatalf("apply with the second slave refusing PFC: exit %d\n%s%s", code, out, errs)
	}
	if sim.Config() != beforeK {
		t.Error("host not as before after the failed apply")
	}
}
