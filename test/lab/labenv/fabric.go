package labenv

import (
	"fmt"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// Endpoint is one RoCE "host" of a Fabric: a netdevsim NIC (one port,
// with the lab's DCB ops and mlx5-like counters) with an address and an
// rxe device on that port.
type Endpoint struct {
	Device Device
	Port   Port   // Device.Ports[0]
	RXE    string // "rxe<device id>", port 1
	IP     netip.Addr
	MAC    string
	// GIDIndex is the index of IP's RoCE v2 GID (::ffff:IP) on RXE port 1.
	GIDIndex int
}

// NewFabric makes n endpoints, netdevsim devices firstID .. firstID+n-1,
// addresses 10.88.<firstID>.1 .. n/24, joined by a switch of tc rules, so
// that rxe traffic between any two of them is real RoCE v2 traffic through
// their netdevs. Everything is removed in t.Cleanup.
//
// Why tc: 6.1's netdevsim has no receive path (nsim_start_xmit counts and
// frees every packet), so the switch is a clsact egress flower rule per
// peer on each port that redirects frames for the peer's MAC to the
// ingress of the peer's port (act_mirred), where rxe's UDP 4791 socket
// receives them as arriving on that netdev. Neighbours are static, so no
// ARP has to cross the switch. PullCable cuts one endpoint off.
//
// Why not network namespaces (one "host" each): 6.1's rxe opens its UDP
// 4791 socket in init_net only (rxe_net_ipv4_init) and routes its packets
// in init_net's tables (rxe_find_route4), so an rxe device on a netdev
// moved to another namespace never receives. All endpoints live in the
// initial namespace; policy routing (a table per port, chosen by the oif
// that rxe_find_route4 routes with) sends each endpoint's RoCE packets out
// of its own port instead of through lo, as guest-init does for lab0/lab1.
// TCP between the endpoints' addresses (a two-host test's control
// connection) still goes through lo.
func NewFabric(t testing.TB, firstID, n int) []Endpoint {
	t.Helper()
	if firstID < 1 || firstID+n-1 > 255 {
		t.Fatalf("labenv: fabric ids %d..%d outside 1..255", firstID, firstID+n-1)
	}
	if out, err := exec.Command("modprobe", "-a", "sch_ingress", "cls_flower", "act_mirred", "act_gact").CombinedOutput(); err != nil {
		t.Fatalf("labenv: the tc modules of the fabric: %v\n%s", err, out)
	}
	eps := make([]Endpoint, n)
	for i := range eps {
		id := firstID + i
		d := NewNetdevsim(t, id, 1)
		p := d.Ports[0]
		mac, err := os.ReadFile(filepath.Join("/sys/class/net", p.Ifname, "address"))
		if err != nil {
			t.Fatal(err)
		}
		e := Endpoint{Device: d, Port: p, RXE: "rxe" + strconv.Itoa(id), MAC: strings.TrimSpace(string(mac)),
			IP: netip.AddrFrom4([4]byte{10, 88, byte(firstID), byte(i + 1)})}
		for _, s := range []struct{ key, val string }{{"accept_local", "1"}, {"rp_filter", "0"}} {
			if err := os.WriteFile(filepath.Join("/proc/sys/net/ipv4/conf", p.Ifname, s.key), []byte(s.val), 0); err != nil {
				t.Fatal(err)
			}
		}
		// The rule pref stays below the local table's (1000, guest-init).
		pref, table := strconv.Itoa(100+id), strconv.Itoa(10000+id)
		run(t, "ip", "link", "set", p.Ifname, "up")
		run(t, "ip", "addr", "add", e.IP.String()+"/24", "dev", p.Ifname)
		run(t, "ip", "route", "add", fmt.Sprintf("10.88.%d.0/24", firstID), "dev", p.Ifname, "src", e.IP.String(), "table", table)
		run(t, "ip", "rule", "add", "pref", pref, "oif", p.Ifname, "lookup", table)
		t.Cleanup(func() {
			exec.Command("ip", "rule", "del", "pref", pref).Run()
			exec.Command("ip", "route", "flush", "table", table).Run()
		})
		run(t, "tc", "qdisc", "add", "dev", p.Ifname, "clsact")
		run(t, "rdma", "link", "add", e.RXE, "type", "rxe", "netdev", p.Ifname)
		// The test may have removed it already (an endpoint that fails).
		t.Cleanup(func() { exec.Command("rdma", "link", "del", e.RXE).Run() })
		eps[i] = e
	}
	for _, a := range eps {
		for _, b := range eps {
			if a.RXE == b.RXE {
				continue
			}
			run(t, "ip", "neigh", "replace", b.IP.String(), "lladdr", b.MAC, "dev", a.Port.Ifname, "nud", "permanent")
			run(t, "tc", "filter", "add", "dev", a.Port.Ifname, "egress", "protocol", "ip", "flower", "dst_mac", b.MAC,
				"action", "mirred", "ingress", "redirect", "dev", b.Port.Ifname)
		}
	}
	// The GIDs appear asynchronously (the RoCE GID cache follows inetaddr
	// events on a workqueue).
	deadline := time.Now().Add(5 * time.Second)
	for i := range eps {
		for {
			idx, ok := roceV2GID(eps[i].RXE, eps[i].IP)
			if ok {
				eps[i].GIDIndex = idx
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("labenv: no RoCE v2 GID ::ffff:%s on %s", eps[i].IP, eps[i].RXE)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	return eps
}

// roceV2GID finds ip's RoCE v2 GID on port 1 of rdma device dev.
func roceV2GID(dev string, ip netip.Addr) (int, bool) {
	port := filepath.Join("/sys/class/infiniband", dev, "ports/1")
	ents, err := os.ReadDir(filepath.Join(port, "gids"))
	if err != nil {
		return 0, false
	}
	a := ip.As4()
	want := fmt.Sprintf("0000:0000:0000:0000:0000:ffff:%02x%02x:%02x%02x", a[0], a[1], a[2], a[3])
	for _, ent := range ents {
		g, err := os.ReadFile(filepath.Join(port, "gids", ent.Name()))
		if err != nil || strings.TrimSpace(string(g)) != want {
			continue
		}
		typ, err := os.ReadFile(filepath.Join(port, "gid_attrs/types", ent.Name()))
		if err != nil || strings.TrimSpace(string(typ)) != "RoCE v2" {
			continue
		}
		if idx, err := strconv.Atoi(ent.Name()); err == nil {
			return idx, true
		}
	}
	return 0, false
}

func run(t testing.TB, name string, args ...string) {
	t.Helper()
	if out, err := exec.Command(name, args...).CombinedOutput(); err != nil {
		t.Fatalf("labenv: %s %s: %v\n%s", name, strings.Join(args, " "), err, out)
	}
}

// PullCable is the shell command that cuts e off the switch as a pulled
// cable would: drop rules ahead of the switch's (pref 1) on its port's
// ingress and egress. Its netdev, rxe port and GIDs stay up, so its tests
// start and their RDMA traffic fails. A command, not a function: a test
// may have to run it from a wrapper between two commands it does not run
// itself (a playbook's).
func (e Endpoint) PullCable() string {
	return fmt.Sprintf("tc filter add dev %[1]s ingress pref 1 protocol all flower action drop && "+
		"tc filter add dev %[1]s egress pref 1 protocol all flower action drop", e.Port.Ifname)
}
