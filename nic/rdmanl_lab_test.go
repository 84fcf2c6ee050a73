//go:build lab

package nic

// Lab test: RDMA netlink discovery against the real kernel (6.1, rdma_rxe)
// and against iproute2's `rdma link`, which asks the same kernel code
// (nldev.c) through its own client: rxe0 on the lab's veth, and an rxe on
// a bond of two netdevsim ports.
//
//	make lab-short LAB_GO_PKGS=./nic/ LAB_GO_FLAGS='-test.run TestLabRDMANetlink'

import (
	"encoding/hex"
	"encoding/json"
	"log/slog"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"

	"github.com/vishvananda/netlink/nl"

	"github.com/rocectl/rocectl/internal/testkit/netnstest"
	"github.com/rocectl/rocectl/port"
	"github.com/rocectl/rocectl/test/lab/labenv"
)

func sh(t *testing.T, args ...string) string {
	t.Helper()
	out, err := exec.Command(args[0], args[1:]...).CombinedOutput()
	if err != nil {
		t.Fatalf("%s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

// rdmaLinkJSON is `rdma -j link show` as iproute2's rdma/link.c prints it.
type rdmaLinkJSON struct {
	Ifname      string `json:"ifname"` // "rxe0/1"
	Port        int    `json:"port"`
	State       string `json:"state"`
	PhysState   string `json:"physical_state"`
	Netdev      string `json:"netdev"`
	NetdevIndex int    `json:"netdev_index"`
}

func rdmaLinkShow(t *testing.T) []RDMALink {
	t.Helper()
	var js []rdmaLinkJSON
	out := sh(t, "rdma", "-j", "link", "show")
	if err := json.Unmarshal([]byte(out), &js); err != nil {
		t.Fatalf("rdma -j link show: %v\n%s", err, out)
	}
	var links []RDMALink
	for _, j := range js {
		dev, _, _ := strings.Cut(j.Ifname, "/")
		links = append(links, RDMALink{Device: dev, Port: j.Port, State: j.State, PhysState: j.PhysState,
			Netdev: j.Netdev, NetdevIndex: j.NetdevIndex})
	}
	sortRDMALinks(links)
	return links
}

// labBond makes netdevsim device 9 with two ports under bond9 and rxe9 on
// the bond, removed when the test ends.
func labBond(t *testing.T) {
	t.Helper()
	dev := labenv.NewNetdevsim(t, 9, 2)
	sh(t, "modprobe", "bonding", "max_bonds=0")
	sh(t, "ip", "link", "add", "bond9", "type", "bond", "mode", "active-backup", "miimon", "100")
	t.Cleanup(func() { exec.Command("ip", "link", "del", "bond9").Run() })
	for _, p := range dev.Ports {
		sh(t, "ip", "link", "set", p.Ifname, "down")
		sh(t, "ip", "link", "set", p.Ifname, "master", "bond9")
	}
	sh(t, "ip", "link", "set", "bond9", "up")
	sh(t, "rdma", "link", "add", "rxe9", "type", "rxe", "netdev", "bond9")
	t.Cleanup(func() { exec.Command("rdma", "link", "del", "rxe9").Run() })
}

func TestLabRDMANetlinkMatchesRdmaLink(t *testing.T) {
	env := labenv.Get(t)
	labBond(t)
	l, err := NewLive(nil)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	fs := NewFS("/", true)
	got, err := l.RDMALinks(fs)
	if err != nil {
		t.Fatal(err)
	}
	want := rdmaLinkShow(t)
	// rdma link does not print the device index; take it from ours.
	for i := range want {
		if i < len(got) && got[i].Device == want[i].Device {
			want[i].DevIndex = got[i].DevIndex
		}
	}
	if !slices.Equal(got, want) {
		t.Fatalf("RDMA netlink:\n%+v\nrdma link show:\n%+v", got, want)
	}
	for _, w := range []struct{ dev, netdev string }{{env.RXE[0], env.If[0]}, {"rxe9", "bond9"}} {
		i := slices.IndexFunc(got, func(l RDMALink) bool { return l.Device == w.dev })
		if i < 0 || got[i].Netdev != w.netdev || got[i].Port != 1 || got[i].NetdevIndex == 0 {
			t.Errorf("%s: %+v, want port 1 on %s", w.dev, got, w.netdev)
		}
	}

	// Discovery takes ports, netdevs and states from there.
	inv := Discover(fs, l, slog.New(slog.DiscardHandler))
	if inv.RDMASource != RDMASourceNetlink || inv.SysfsReason != "" {
		t.Fatalf("discovery read %s (%s), want netlink", inv.RDMASource, inv.SysfsReason)
	}
	for _, w := range []struct{ dev, netdev, role string }{{env.RXE[0], env.If[0], port.RoleVirtual}, {"rxe9", "bond9", port.RoleBond}} {
		i := slices.IndexFunc(inv.Ports, func(p port.Port) bool { return p.RDMADevice == w.dev })
		if i < 0 {
			t.Fatalf("%s not discovered: %+v", w.dev, inv)
		}
		p := inv.Ports[i]
		if p.Netdev != w.netdev || p.Role != w.role || p.State != "ACTIVE" {
			t.Errorf("%s: netdev %s role %s state %s, want %s, %s, ACTIVE", w.dev, p.Netdev, p.Role, p.State, w.netdev, w.role)
		}
		if w.role == port.RoleBond && (p.Bond == nil || len(p.Bond.Slaves) != 2) {
			t.Errorf("%s: bond %+v, want two slaves", w.dev, p.Bond)
		}
	}

	// The raw messages, for the golden replies of the unit tests.
	for _, m := range mustDump(t, l, rdmaDevsRequest) {
		t.Logf("CMD_GET reply payload: %s", hex.EncodeToString(m))
	}
	d := got[slices.IndexFunc(got, func(l RDMALink) bool { return l.Device == env.RXE[0] })]
	for _, m := range mustDump(t, l, func() *nl.NetlinkRequest { return rdmaPortsRequest(d.DevIndex) }) {
		t.Logf("PORT_GET reply payload (%s): %s", d.Device, hex.EncodeToString(m))
	}
}

func mustDump(t *testing.T, l *Live, req func() *nl.NetlinkRequest) [][]byte {
	t.Helper()
	msgs, err := l.rdmaDump(req)
	if err != nil {
		t.Fatal(err)
	}
	return msgs
}

// The kernel names a port's netdev only to a socket in the netdev's
// namespace. From a fresh namespace RDMA netlink lists rxe0 (devices are
// shared between namespaces) without a netdev, and discovery there leaves
// the port out, where sysfs's "parent" (the mount's namespace) names lab0
// and a sysfs-only discovery claims it.
func TestLabRDMANetlinkNamesNetdevsOfItsNamespaceOnly(t *testing.T) {
	env := labenv.Get(t)
	ns := netnstest.New(t)
	var l *Live
	if err := ns.Do(func() (err error) { l, err = NewLive(nil); return err }); err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	fs := NewFS("/", true)
	links, err := l.RDMALinks(fs)
	if err != nil {
		t.Fatal(err)
	}
	i := slices.IndexFunc(links, func(l RDMALink) bool { return l.Device == env.RXE[0] })
	if i < 0 || links[i].Netdev != "" || links[i].NetdevIndex != 0 {
		t.Fatalf("%s from another namespace: %+v, want it listed without a netdev", env.RXE[0], links)
	}
	parent, err := os.ReadFile("/sys/class/infiniband/" + env.RXE[0] + "/parent")
	if err != nil || strings.TrimSpace(string(parent)) != env.If[0] {
		t.Fatalf("sysfs parent %q (%v), want %s: the test needs sysfs to disagree", parent, err, env.If[0])
	}
	log := slog.New(slog.DiscardHandler)
	inv := Discover(fs, l, log)
	if inv.RDMASource != RDMASourceNetlink {
		t.Fatalf("discovery read %s (%s)", inv.RDMASource, inv.SysfsReason)
	}
	if slices.ContainsFunc(inv.Ports, func(p port.Port) bool { return p.RDMADevice == env.RXE[0] }) {
		t.Errorf("%s discovered from a namespace without its netdev: %+v", env.RXE[0], inv.Ports)
	}
	k := slices.IndexFunc(inv.Skipped, func(s SkippedDevice) bool { return s.Device == env.RXE[0] })
	if k < 0 || !strings.Contains(inv.Skipped[k].Reason, "not in this network namespace") {
		t.Errorf("skipped %+v, want %s skipped as not in this namespace", inv.Skipped, env.RXE[0])
	}
	// sysfs alone (a kernel without RDMA netlink) would have taken it.
	sysfsOnly := Discover(fs, kernelOnly{l}, log)
	if !slices.ContainsFunc(sysfsOnly.Ports, func(p port.Port) bool { return p.RDMADevice == env.RXE[0] && p.Netdev == env.If[0] }) {
		t.Errorf("sysfs-only discovery: %+v; the comparison expects it to claim %s", sysfsOnly.Ports, env.If[0])
	}
}

// kernelOnly hides every interface but Kernel's.
type kernelOnly struct{ Kernel }
