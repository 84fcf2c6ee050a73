//go:build lab

package cli

// RoCE LAG in the lab VM: two netdevsim ports enslaved to a bond, rxe on
// the bond. The kernel's bonding driver, dcbnl and rtnetlink are real:
// discovery, MTU propagation from the bond to its slaves, per-slave DCB
// requests and a mismatch between slaves are checked against them.

import (
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/rocectl/rocectl/nic"
	"github.com/rocectl/rocectl/port"
	"github.com/rocectl/rocectl/test/lab/labenv"
)

// newLabBond makes netdevsim device 8 with two ports enslaved to bond8
// (active-backup: no LACP partner in the VM), an address on the bond and
// rxe8 over it.
func newLabBond(t *testing.T) (bond string, slaves []string) {
	labenv.Get(t)
	dev := labenv.NewNetdevsim(t, 8, 2)
	bond = "bond8"
	// The lab image carries the bonding module (test/lab/setup.sh); load
	// it here rather than rely on the kernel's request_module finding a
	// modprobe in the initramfs.
	sh(t, "modprobe", "bonding", "max_bonds=0")
	sh(t, "ip", "link", "add", bond, "type", "bond", "mode", "active-backup", "miimon", "100")
	t.Cleanup(func() { exec.Command("ip", "link", "del", bond).Run() })
	for _, p := range dev.Ports {
		sh(t, "ip", "link", "set", p.Ifname, "down")
		sh(t, "ip", "link", "set", p.Ifname, "master", bond)
		slaves = append(slaves, p.Ifname)
	}
	sh(t, "ip", "link", "set", bond, "up")
	sh(t, "ip", "addr", "add", "10.77.8.1/24", "dev", bond)
	sh(t, "rdma", "link", "add", "rxe8", "type", "rxe", "netdev", bond)
	t.Cleanup(func() { exec.Command("rdma", "link", "del", "rxe8").Run() })
	deadline := time.Now().Add(5 * time.Second)
	for {
		gids, _ := nic.ReadGIDs(nic.NewFS("/", true), "rxe8", 1)
		if _, ok := nic.SelectGID(gids, nic.GIDQuery{Netdev: bond}); ok {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no RoCE v2 IPv4 GID on rxe8: %+v", gids)
		}
		time.Sleep(100 * time.Millisecond)
	}
	return bond, slaves
}

func TestLabRoCEOnBondDiscoveryMTUAndPerSlaveDCB(t *testing.T) {
	bond, slaves := newLabBond(t)
	k, err := nic.NewLive(slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	inv := nic.Discover(nic.NewFS("/", true), k, slog.New(slog.DiscardHandler))
	i := slices.IndexFunc(inv.Ports, func(p port.Port) bool { return p.RDMADevice == "rxe8" })
	if i < 0 {
		t.Fatalf("rxe8 not discovered: %+v", inv)
	}
	p := inv.Ports[i]
	if p.Netdev != bond || p.Role != port.RoleBond || p.Bond == nil || p.Bond.Mode != "active-backup" || len(p.Bond.Slaves) != 2 ||
		p.Bond.Slaves[0].Netdev != slaves[0] || p.Bond.Slaves[1].Netdev != slaves[1] {
		t.Fatalf("rxe8: %+v bond %+v", p, p.Bond)
	}
	if want := fmt.Sprintf("rxe8 (%s: %s + %s, active-backup)", bond, slaves[0], slaves[1]); p.Describe() != want {
		t.Errorf("Describe() = %q, want %q", p.Describe(), want)
	}

	state := t.TempDir()
	prof := filepath.Join(t.TempDir(), "lag.toml")
	body := "name = \"lab-lag\"\n[match]\nrdma_devices = [\"rxe8\"]\nroles = [\"bond\"]\n[link]\nmtu = 4000\n[qos]\npfc_priorities = [3]\n"
	if err := os.WriteFile(prof, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	rocectl := func(args ...string) (int, string, string) {
		return run(t, nil, append([]string{"--state-dir", state}, args...)...)
	}
	if code, out, errOut := rocectl("audit", "-p", prof); code != 2 || !strings.Contains(out, "rxe8 ("+bond+": ") {
		t.Fatalf("audit before apply: exit %d\n%s\n%s", code, out, errOut)
	}
	if code, out, errOut := rocectl("apply", "-p", prof, "--no-verify"); code != 0 {
		t.Fatalf("apply: exit %d\n%s\n%s", code, out, errOut)
	}
	// MTU was set on the bond; the bonding driver propagated it.
	for _, nd := range append([]string{bond}, slaves...) {
		if got := strings.TrimSpace(readFile(t, "/sys/class/net/"+nd+"/mtu")); got != "4000" {
			t.Errorf("%s mtu %s, want 4000", nd, got)
		}
	}
	// PFC was requested on each slave (the bond has no dcbnl).
	for _, nd := range slaves {
		if got := pfcEnabled(t, nd); !slices.Equal(got, []int{3}) {
			t.Errorf("%s PFC %v, want [3]", nd, got)
		}
	}
	if code, out, errOut := rocectl("audit", "-p", prof); code != 0 {
		t.Fatalf("audit after apply: exit %d\n%s\n%s", code, out, errOut)
	}
	// A LAG whose slaves differ is drift, reported as such.
	sh(t, "dcb", "pfc", "set", "dev", slaves[1], "prio-pfc", "3:off")
	code, out, _ := rocectl("audit", "-p", prof)
	if code != 2 || !strings.Contains(out, "slaves differ") {
		t.Fatalf("audit with differing slaves: exit %d\n%s", code, out)
	}
	if code, out, errOut := rocectl("rollback"); code != 0 {
		t.Fatalf("rollback: exit %d\n%s\n%s", code, out, errOut)
	}
}

// netdevsim's SR-IOV makes VF configs (ip link ... vf N) but no VF
// netdevs or PCI functions, so the PF/VF relation of discovery cannot be
// exercised here (the cx4lx-sriov fixture host covers it): enabling VFs
// must leave the port's discovery as it was.
func TestLabSRIOVOnNetdevsimKeepsThePort(t *testing.T) {
	l := newLabNIC(t)
	k, err := nic.NewLive(slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	fs := nic.NewFS("/", true)
	find := func() port.Port {
		inv := nic.Discover(fs, k, slog.New(slog.DiscardHandler))
		i := slices.IndexFunc(inv.Ports, func(p port.Port) bool { return p.RDMADevice == l.rxe })
		if i < 0 {
			t.Fatalf("%s not discovered: %+v", l.rxe, inv)
		}
		return inv.Ports[i]
	}
	before := find()
	numvfs := "/sys/bus/netdevsim/devices/netdevsim7/sriov_numvfs"
	if err := os.WriteFile(numvfs, []byte("2"), 0o644); err != nil {
		t.Skipf("netdevsim without SR-IOV: %v", err)
	}
	t.Cleanup(func() { os.WriteFile(numvfs, []byte("0"), 0o644) })
	after := find()
	if after.Netdev != before.Netdev || after.Role != before.Role || after.Role == port.RoleVF {
		t.Errorf("with VFs enabled: %+v, before %+v", after, before)
	}
	if out := sh(t, "ip", "link", "show", l.port.Ifname); !strings.Contains(out, "vf 1") {
		t.Errorf("ip link shows no VFs:\n%s", out)
	}
}

func readFile(t *testing.T, p string) string {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
