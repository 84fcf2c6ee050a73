//go:build lab

package cli

// RoCE LAG in the lab VM: two netdevsim ports enslaved to a bond, rxe on
// the bond. The kernel's bonding driver, dcbnl and rtnetlink are real:
// discovery, MTU propagation from the bond to its slaves, per-slave DCB
// requests and a mismatch between slaves are checked against them.

import (
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/rocectl/rocectl/doc"
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

// What 6.1's netdevsim gives SR-IOV (checked in the lab VM, Debian
// 6.1.0-48): sriov_numvfs on the bus device (no sriov_totalvfs), and in
// legacy mode only the PF's VF configs (ip link's "vf N" lines,
// IFLA_VFINFO_LIST). No VF netdevs, and netdevsim is no PCI device, so no
// device/physfn or virtfn* links: the VF-netdev side of the PF/VF
// relation is the cx4lx-sriov fixture host's to test. In legacy mode
// enabling VFs must leave the port's discovery as it was.
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

// In switchdev mode 6.1's netdevsim does make the eswitch side of SR-IOV:
// one representor netdev per VF on the PF's device, with devlink port
// flavour pcivf (pfnum 0, vfnum N) and phys_port_name pf0vfN, next to the
// physical port (flavour physical, p1); they go when the VFs do. An rxe
// on a representor is discovered as a VF of that physical port (the
// port's QoS is the uplink's), and its plan says so: PF-owned settings
// "set on <uplink>", the rest left alone unless [match] roles has "vf".
func TestLabSRIOVRepresentorIsAVFOfItsUplink(t *testing.T) {
	labenv.Get(t)
	dev := labenv.NewNetdevsim(t, 6, 1)
	uplink := dev.Ports[0].Ifname
	bus := "/sys/bus/netdevsim/devices/netdevsim6"
	if err := os.WriteFile(bus+"/sriov_numvfs", []byte("2"), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.WriteFile(bus+"/sriov_numvfs", []byte("0"), 0o644) })
	sh(t, "devlink", "dev", "eswitch", "set", "netdevsim/netdevsim6", "mode", "switchdev")

	// devlink's view of the device's ports, against which rocectl's
	// phys_port_name reading is checked.
	var ports struct {
		Port map[string]struct {
			Netdev  string `json:"netdev"`
			Flavour string `json:"flavour"`
			PFNum   *int   `json:"pfnum"`
			VFNum   *int   `json:"vfnum"`
		} `json:"port"`
	}
	if err := json.Unmarshal([]byte(sh(t, "devlink", "-j", "port", "show")), &ports); err != nil {
		t.Fatal(err)
	}
	rep := map[int]string{}
	for name, p := range ports.Port {
		if !strings.HasPrefix(name, "netdevsim/netdevsim6/") {
			continue
		}
		switch {
		case p.Flavour == "physical" && p.Netdev != uplink:
			t.Errorf("physical port %s has netdev %s, want %s", name, p.Netdev, uplink)
		case p.Flavour == "pcivf" && p.PFNum != nil && *p.PFNum == 0 && p.VFNum != nil:
			rep[*p.VFNum] = p.Netdev
		}
	}
	if len(rep) != 2 || rep[0] == "" || rep[1] == "" {
		t.Fatalf("devlink pcivf ports %+v, want representors of VFs 0 and 1", ports.Port)
	}
	sh(t, "ip", "link", "set", rep[0], "up")
	sh(t, "rdma", "link", "add", "rxe66", "type", "rxe", "netdev", rep[0])
	t.Cleanup(func() { exec.Command("rdma", "link", "del", "rxe66").Run() })

	k, err := nic.NewLive(slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	inv := nic.Discover(nic.NewFS("/", true), k, slog.New(slog.DiscardHandler))
	i := slices.IndexFunc(inv.Ports, func(p port.Port) bool { return p.RDMADevice == "rxe66" })
	if i < 0 {
		t.Fatalf("rxe66 not discovered: %+v", inv)
	}
	if p := inv.Ports[i]; p.Netdev != rep[0] || p.Role != port.RoleVF || p.PF != uplink {
		t.Fatalf("rxe66: netdev %s role %s PF %q, want a VF of %s on %s", p.Netdev, p.Role, p.PF, uplink, rep[0])
	}

	prof := filepath.Join(t.TempDir(), "rep.toml")
	if err := os.WriteFile(prof, []byte("name = \"rep\"\n[match]\nrdma_devices = [\"rxe66\"]\n[link]\nmtu = 4200\n[qos]\npfc_priorities = [3]\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	code, out, errOut := run(t, nil, "--state-dir", t.TempDir(), "audit", "-o", "json", "-p", prof)
	var r doc.Plan
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatalf("audit exit %d: %v\n%s\n%s", code, err, out, errOut)
	}
	reasons := map[string]string{}
	for _, u := range r.Unsupported {
		reasons[u.Key] = u.Reason
	}
	if got := reasons[rep[0]+".qos.pfc"]; !strings.HasPrefix(got, "set on "+uplink) {
		t.Errorf("%s.qos.pfc: %q, want set on %s", rep[0], got, uplink)
	}
	if got := reasons[rep[0]+".link.mtu"]; !strings.Contains(got, `roles includes "vf"`) {
		t.Errorf("%s.link.mtu: %q", rep[0], got)
	}
	if len(r.Changes) != 0 {
		t.Errorf("changes planned on a representor: %+v", r.Changes)
	}

	// The representors go with the VFs.
	sh(t, "rdma", "link", "del", "rxe66")
	if err := os.WriteFile(bus+"/sriov_numvfs", []byte("0"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat("/sys/class/net/" + rep[0]); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("representor %s still there with no VFs: %v", rep[0], err)
	}
}
