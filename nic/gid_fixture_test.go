package nic

import (
	"bufio"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// The GID fixture hosts under testdata/gid/, described here and written by
// TestGIDFixturesUpToDate (see testdata/gid/README.md for the provenance of
// every value). Entries copy the captures in ../shared/fixtures byte for
// byte; TestGIDFixturesMatchCaptures re-reads the captures (the repository's
// testdata/captures, or shared/fixtures) and checks that.

type gidFxEntry struct {
	idx  int
	gid  string // as gids/<i> holds it: full "%pI6" form
	typ  string // gid_attrs/types/<i>; "" = absent (read fails)
	ndev string // gid_attrs/ndevs/<i>; "" = absent (read fails)
}

type gidFxPort struct {
	port      int
	linkLayer string
	tblLen    int // number of gids/<i> files; unused ones are all zero
	entries   []gidFxEntry
}

type gidFxDev struct {
	name    string
	pciPath string // under /sys/devices; a placeholder, the captures have none
	ports   []gidFxPort
	capture string // file in shared/fixtures the entries come from ("" = derived)
}

type gidFxHost struct {
	dir  string
	devs []gidFxDev
}

const (
	fxV1 = GIDTypeRoCEv1
	fxV2 = GIDTypeRoCEv2
)

var gidFxHosts = []gidFxHost{
	{
		dir: "spectrumscale-cx6",
		devs: []gidFxDev{{
			name: "mlx5_0", pciPath: "pci0000:00/0000:00:02.0/0000:01:00.0",
			capture: "mlx5-cx6-show_gids-ibm-spectrumscale.txt",
			ports: []gidFxPort{{port: 1, linkLayer: "Ethernet", tblLen: 16, entries: []gidFxEntry{
				{0, "fe80:0000:0000:0000:0e42:a1ff:fe5d:4db8", fxV1, "ens1f0"},
				{1, "fe80:0000:0000:0000:0e42:a1ff:fe5d:4db8", fxV2, "ens1f0"},
				{2, "fe80:0000:0000:0000:1186:a6b1:3f0b:c441", fxV1, "ens1f0"},
				{3, "fe80:0000:0000:0000:1186:a6b1:3f0b:c441", fxV2, "ens1f0"},
				{4, "0000:0000:0000:0000:0000:ffff:ac13:003c", fxV1, "ens1f0"},
				{5, "0000:0000:0000:0000:0000:ffff:ac13:003c", fxV2, "ens1f0"},
			}}},
		}},
	},
	{
		dir: "centos12-multidev",
		devs: []gidFxDev{
			{name: "mlx5_0", pciPath: "pci0000:00/0000:00:02.0/0000:01:00.0", capture: "mlx5-show_gids-centos12-multidev.txt",
				ports: []gidFxPort{{1, "Ethernet", 16, []gidFxEntry{
					{0, "fe80:0000:0000:0000:0ac0:ebff:fe40:8df2", fxV1, "ens4f0"},
					{1, "fe80:0000:0000:0000:0ac0:ebff:fe40:8df2", fxV2, "ens4f0"},
				}}}},
			{name: "mlx5_1", pciPath: "pci0000:00/0000:00:02.0/0000:01:00.1", capture: "mlx5-show_gids-centos12-multidev.txt",
				ports: []gidFxPort{{1, "Ethernet", 16, []gidFxEntry{
					{0, "fe80:0000:0000:0000:0ac0:ebff:fe40:8df3", fxV1, "ens4f1"},
					{1, "fe80:0000:0000:0000:0ac0:ebff:fe40:8df3", fxV2, "ens4f1"},
				}}}},
			{name: "mlx5_2", pciPath: "pci0000:00/0000:00:03.0/0000:02:00.0", capture: "mlx5-show_gids-centos12-multidev.txt",
				ports: []gidFxPort{{1, "Ethernet", 16, []gidFxEntry{
					{0, "fe80:0000:0000:0000:0ac0:ebff:feda:e2ca", fxV1, "ens6"},
					{1, "fe80:0000:0000:0000:0ac0:ebff:feda:e2ca", fxV2, "ens6"},
					{2, "0000:0000:0000:0000:0000:ffff:ac11:f238", fxV1, "ens6"},
					{3, "0000:0000:0000:0000:0000:ffff:ac11:f238", fxV2, "ens6"},
				}}}},
			{name: "mlx5_3", pciPath: "pci0000:00/0000:00:04.0/0000:03:00.0", capture: "mlx5-show_gids-centos12-multidev.txt",
				ports: []gidFxPort{{1, "Ethernet", 16, []gidFxEntry{
					{0, "fe80:0000:0000:0000:0ac0:ebff:fe3b:353c", fxV1, "ens14f0"},
					{1, "fe80:0000:0000:0000:0ac0:ebff:fe3b:353c", fxV2, "ens14f0"},
					{2, "0000:0000:0000:0000:0000:ffff:c0a8:f238", fxV1, "ens14f0"},
					{3, "0000:0000:0000:0000:0000:ffff:c0a8:f238", fxV2, "ens14f0"},
				}}}},
			{name: "mlx5_4", pciPath: "pci0000:00/0000:00:04.0/0000:03:00.1", capture: "mlx5-show_gids-centos12-multidev.txt",
				ports: []gidFxPort{{1, "Ethernet", 16, []gidFxEntry{
					{0, "fe80:0000:0000:0000:0ac0:ebff:fe3b:353d", fxV1, "ens14f1"},
					{1, "fe80:0000:0000:0000:0ac0:ebff:fe3b:353d", fxV2, "ens14f1"},
				}}}},
			// The InfiniBand port: one GID (subnet prefix + port GUID), type
			// "IB/RoCE v1", no netdev (show_gids prints an empty DEV column
			// because reading ndevs/0 fails).
			{name: "mlx5_5", pciPath: "pci0000:00/0000:00:05.0/0000:04:00.0", capture: "mlx5-show_gids-centos12-multidev.txt",
				ports: []gidFxPort{{1, "InfiniBand", 16, []gidFxEntry{
					{0, "fe80:0000:0000:0000:08c0:eb03:00b6:a0b4", fxV1, ""},
				}}}},
			{name: "mlx5_6", pciPath: "pci0000:00/0000:00:06.0/0000:05:00.1", capture: "mlx5-show_gids-centos12-multidev.txt",
				ports: []gidFxPort{{1, "Ethernet", 16, []gidFxEntry{
					{0, "fe80:0000:0000:0000:d8ea:31ff:fe2d:ce8c", fxV1, "ens6f1"},
					{1, "fe80:0000:0000:0000:d8ea:31ff:fe2d:ce8c", fxV2, "ens6f1"},
				}}}},
			{name: "mlx5_7", pciPath: "pci0000:00/0000:00:06.0/0000:05:00.2", capture: "mlx5-show_gids-centos12-multidev.txt",
				ports: []gidFxPort{{1, "Ethernet", 16, []gidFxEntry{
					{0, "fe80:0000:0000:0000:f436:ffff:fe68:68fc", fxV1, "ens6f2"},
					{1, "fe80:0000:0000:0000:f436:ffff:fe68:68fc", fxV2, "ens6f2"},
				}}}},
		},
	},
	{
		// ibv_devinfo -v prints GIDs 1 and 3 in compressed form
		// ("fe80::ba59:9fff:fe37:8268", "::ffff:192.168.1.11"); sysfs always
		// holds the full form, written here. The capture names no netdev, so
		// ndevs/<i> is absent: this port exercises NCCL's own behaviour,
		// which never reads ndevs. gid_tbl_len 256 is from the capture.
		dir: "scaleoutsean-cx6",
		devs: []gidFxDev{{
			name: "mlx5_0", pciPath: "pci0000:00/0000:00:02.0/0000:01:00.0",
			capture: "mlx5-cx6-ibv_devinfo-v-roce-scaleoutsean.txt",
			ports: []gidFxPort{{port: 1, linkLayer: "Ethernet", tblLen: 256, entries: []gidFxEntry{
				{0, "fe80:0000:0000:0000:ba59:9fff:fe37:8268", fxV1, ""},
				{1, "fe80:0000:0000:0000:ba59:9fff:fe37:8268", fxV2, ""},
				{2, "0000:0000:0000:0000:0000:ffff:c0a8:010b", fxV1, ""},
				{3, "0000:0000:0000:0000:0000:ffff:c0a8:010b", fxV2, ""},
			}}},
		}},
	},
	{
		dir: "derived-vlan-ipv6",
		devs: []gidFxDev{
			// The spectrumscale CX-6 with its IPv4 address on VLAN 100 instead
			// of the untagged netdev: the VLAN netdev inherits the parent's
			// MAC, so its link-local GIDs repeat the parent's EUI-64; the
			// IPv4-mapped GIDs carry the captured 172.19.0.60. VLAN id 100 is
			// ours.
			{name: "mlx5_0", pciPath: "pci0000:00/0000:00:02.0/0000:01:00.0",
				ports: []gidFxPort{{1, "Ethernet", 16, []gidFxEntry{
					{0, "fe80:0000:0000:0000:0e42:a1ff:fe5d:4db8", fxV1, "ens1f0"},
					{1, "fe80:0000:0000:0000:0e42:a1ff:fe5d:4db8", fxV2, "ens1f0"},
					{2, "fe80:0000:0000:0000:1186:a6b1:3f0b:c441", fxV1, "ens1f0"},
					{3, "fe80:0000:0000:0000:1186:a6b1:3f0b:c441", fxV2, "ens1f0"},
					{4, "fe80:0000:0000:0000:0e42:a1ff:fe5d:4db8", fxV1, "ens1f0.100"},
					{5, "fe80:0000:0000:0000:0e42:a1ff:fe5d:4db8", fxV2, "ens1f0.100"},
					{6, "0000:0000:0000:0000:0000:ffff:ac13:003c", fxV1, "ens1f0.100"},
					{7, "0000:0000:0000:0000:0000:ffff:ac13:003c", fxV2, "ens1f0.100"},
				}}}},
			// The centos12 mlx5_1/ens4f1 (link-local only in the capture) with
			// a global IPv6 address and no IPv4: SLAAC-style, the captured
			// EUI-64 under the documentation prefix 2001:db8::/64 (RFC 3849).
			{name: "mlx5_1", pciPath: "pci0000:00/0000:00:03.0/0000:02:00.0",
				ports: []gidFxPort{{1, "Ethernet", 16, []gidFxEntry{
					{0, "fe80:0000:0000:0000:0ac0:ebff:fe40:8df3", fxV1, "ens4f1"},
					{1, "fe80:0000:0000:0000:0ac0:ebff:fe40:8df3", fxV2, "ens4f1"},
					{2, "2001:0db8:0000:0000:0ac0:ebff:fe40:8df3", fxV1, "ens4f1"},
					{3, "2001:0db8:0000:0000:0ac0:ebff:fe40:8df3", fxV2, "ens4f1"},
				}}}},
		},
	},
	{
		dir: "derived-thor2-ipv6only",
		devs: []gidFxDev{
			// A two-port Broadcom NIC on an IPv6-only fabric, as Thor2
			// deployments run: each port's link-local GID pair in the form
			// of the bnxt-re-factory host's bnxt_re0 (testdata/hosts:
			// fe80::20a:f7ff:fe00:1, from its placeholder MAC 00:0a:f7:00:00:01;
			// the second port MAC + 1, netdevs and PCI functions numbered
			// after that host's), plus a global address SLAAC-style under
			// the documentation prefixes 2001:db8:1::/64 and 2001:db8:2::/64
			// (RFC 3849), and no IPv4: no IPv4-mapped GID at all.
			{name: "bnxt_re0", pciPath: "pci0000:c9/0000:c9:00.0/0000:ca:00.0",
				ports: []gidFxPort{{1, "Ethernet", 16, []gidFxEntry{
					{0, "fe80:0000:0000:0000:020a:f7ff:fe00:0001", fxV1, "enp202s0f0np0"},
					{1, "fe80:0000:0000:0000:020a:f7ff:fe00:0001", fxV2, "enp202s0f0np0"},
					{2, "2001:0db8:0001:0000:020a:f7ff:fe00:0001", fxV1, "enp202s0f0np0"},
					{3, "2001:0db8:0001:0000:020a:f7ff:fe00:0001", fxV2, "enp202s0f0np0"},
				}}}},
			{name: "bnxt_re1", pciPath: "pci0000:c9/0000:c9:00.0/0000:ca:00.1",
				ports: []gidFxPort{{1, "Ethernet", 16, []gidFxEntry{
					{0, "fe80:0000:0000:0000:020a:f7ff:fe00:0002", fxV1, "enp202s0f1np1"},
					{1, "fe80:0000:0000:0000:020a:f7ff:fe00:0002", fxV2, "enp202s0f1np1"},
					{2, "2001:0db8:0002:0000:020a:f7ff:fe00:0002", fxV1, "enp202s0f1np1"},
					{3, "2001:0db8:0002:0000:020a:f7ff:fe00:0002", fxV2, "enp202s0f1np1"},
				}}}},
		},
	},
	{
		dir: "derived-mixed",
		devs: []gidFxDev{
			// Mixed devices on one host. mlx5_0: the cx7-upstream-factory
			// port's table (link-local 0/1, 192.168.1.11 at 2/3) with a
			// dual-stack address added before the IPv4 one: a global IPv6
			// GID pair (2001:db8:a::/64) at 2/3 pushes the IPv4 pair to 4/5,
			// so the first routable GID is not the one AF_INET selects.
			{name: "mlx5_0", pciPath: "pci0000:07/0000:07:00.0/0000:08:00.0",
				ports: []gidFxPort{{1, "Ethernet", 16, []gidFxEntry{
					{0, "fe80:0000:0000:0000:ba59:9fff:fe37:8268", fxV1, "enp8s0f0np0"},
					{1, "fe80:0000:0000:0000:ba59:9fff:fe37:8268", fxV2, "enp8s0f0np0"},
					{2, "2001:0db8:000a:0000:ba59:9fff:fe37:8268", fxV1, "enp8s0f0np0"},
					{3, "2001:0db8:000a:0000:ba59:9fff:fe37:8268", fxV2, "enp8s0f0np0"},
					{4, "0000:0000:0000:0000:0000:ffff:c0a8:010b", fxV1, "enp8s0f0np0"},
					{5, "0000:0000:0000:0000:0000:ffff:c0a8:010b", fxV2, "enp8s0f0np0"},
				}}}},
			// mlx5_1: two IPv4 subnets, the untagged netdev's 10.0.0.11 at
			// 2/3 and a VLAN child's (enp8s0f1np1.200, VLAN id ours)
			// 192.168.2.11 at 6/7: AF_INET alone takes 3, IB_ADDR_RANGE
			// 192.168.2.0/24 takes 7.
			{name: "mlx5_1", pciPath: "pci0000:07/0000:07:00.0/0000:08:00.1",
				ports: []gidFxPort{{1, "Ethernet", 16, []gidFxEntry{
					{0, "fe80:0000:0000:0000:ba59:9fff:fe37:8269", fxV1, "enp8s0f1np1"},
					{1, "fe80:0000:0000:0000:ba59:9fff:fe37:8269", fxV2, "enp8s0f1np1"},
					{2, "0000:0000:0000:0000:0000:ffff:0a00:000b", fxV1, "enp8s0f1np1"},
					{3, "0000:0000:0000:0000:0000:ffff:0a00:000b", fxV2, "enp8s0f1np1"},
					{4, "fe80:0000:0000:0000:ba59:9fff:fe37:8269", fxV1, "enp8s0f1np1.200"},
					{5, "fe80:0000:0000:0000:ba59:9fff:fe37:8269", fxV2, "enp8s0f1np1.200"},
					{6, "0000:0000:0000:0000:0000:ffff:c0a8:020b", fxV1, "enp8s0f1np1.200"},
					{7, "0000:0000:0000:0000:0000:ffff:c0a8:020b", fxV2, "enp8s0f1np1.200"},
				}}}},
			// bnxt_re0: the bnxt-re-factory port as captured, link-local
			// only (no address yet).
			{name: "bnxt_re0", pciPath: "pci0000:c9/0000:c9:00.0/0000:ca:00.1",
				ports: []gidFxPort{{1, "Ethernet", 16, []gidFxEntry{
					{0, "fe80:0000:0000:0000:020a:f7ff:fe00:0001", fxV1, "enp202s0f1np1"},
					{1, "fe80:0000:0000:0000:020a:f7ff:fe00:0001", fxV2, "enp202s0f1np1"},
				}}}},
		},
	},
}

const gidFxZero = "0000:0000:0000:0000:0000:0000:0000:0000\n"

// gidFxTree renders one host in the kernel's sysfs layout (see
// drivers/infiniband/core/sysfs.c): the class symlink, and per port the
// gids/<i> files for the whole table, types/<i> and ndevs/<i> only where the
// kernel would answer a read (everywhere else it fails with EINVAL, which a
// plain file cannot do, so the file is left out).
func gidFxTree(h gidFxHost) *fxTree {
	t := newFxTree()
	for _, d := range h.devs {
		devDir := "sys/devices/" + d.pciPath + "/infiniband/" + d.name
		t.link("sys/class/infiniband/"+d.name, "../../devices/"+d.pciPath+"/infiniband/"+d.name)
		for _, p := range d.ports {
			pd := fmt.Sprintf("%s/ports/%d", devDir, p.port)
			t.file(pd+"/link_layer", p.linkLayer+"\n")
			for i := 0; i < p.tblLen; i++ {
				t.file(fmt.Sprintf("%s/gids/%d", pd, i), gidFxZero)
			}
			for _, e := range p.entries {
				t.file(fmt.Sprintf("%s/gids/%d", pd, e.idx), e.gid+"\n")
				if e.typ != "" {
					t.file(fmt.Sprintf("%s/gid_attrs/types/%d", pd, e.idx), e.typ+"\n")
				}
				if e.ndev != "" {
					t.file(fmt.Sprintf("%s/gid_attrs/ndevs/%d", pd, e.idx), e.ndev+"\n")
				}
			}
		}
	}
	return t
}

func gidFxRoot(host string) string { return filepath.Join("testdata", "gid", host) }

func TestGIDFixturesUpToDate(t *testing.T) {
	for _, h := range gidFxHosts {
		fxSync(t, gidFxRoot(h.dir), gidFxTree(h))
	}
}

// gidCaptures finds the captures from the nic directory: the repository's
// copy (testdata/captures), or shared/fixtures inside or next to the
// repository.
func gidCaptures(t *testing.T) string {
	for _, d := range []string{"../testdata/captures", "../shared/fixtures", "../../shared/fixtures"} {
		if st, err := os.Stat(d); err == nil && st.IsDir() {
			return d
		}
	}
	t.Skip("no copy of the captures found (testdata/captures, shared/fixtures); cannot cross-check")
	return ""
}

type gidCaptured struct {
	dev  string
	port int
	idx  int
	gid  net.IP
	typ  string // "IB/RoCE v1" or "RoCE v2"
	ndev string
}

// parseShowGids reads mlnx-tools show_gids output: DEV PORT INDEX GID
// [IPv4] VER [DEV], whitespace separated (the IPv4 and DEV columns may be
// empty).
func parseShowGids(t *testing.T, file string) []gidCaptured {
	t.Helper()
	f, err := os.Open(file)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []gidCaptured
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fl := strings.Fields(sc.Text())
		if len(fl) < 5 || fl[0] == "DEV" || fl[0] == "---" {
			continue
		}
		port, err1 := strconv.Atoi(fl[1])
		idx, err2 := strconv.Atoi(fl[2])
		ip := net.ParseIP(fl[3])
		if err1 != nil || err2 != nil || ip == nil {
			t.Fatalf("%s: unexpected line %q", file, sc.Text())
		}
		rest := fl[4:]
		if strings.Contains(rest[0], ".") {
			rest = rest[1:]
		}
		c := gidCaptured{dev: fl[0], port: port, idx: idx, gid: ip}
		switch rest[0] {
		case "v1":
			c.typ = GIDTypeRoCEv1
		case "v2":
			c.typ = GIDTypeRoCEv2
		default:
			t.Fatalf("%s: unknown VER in %q", file, sc.Text())
		}
		if len(rest) > 1 {
			c.ndev = rest[1]
		}
		out = append(out, c)
	}
	return out
}

// parseIbvDevinfoGIDs reads the "GID[  i]:  gid, RoCE vN" lines of
// ibv_devinfo -v for a one-port device.
func parseIbvDevinfoGIDs(t *testing.T, file, dev string) []gidCaptured {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	re := regexp.MustCompile(`GID\[\s*(\d+)\]:\s+(\S+), RoCE v(\d)`)
	var out []gidCaptured
	for _, m := range re.FindAllStringSubmatch(string(b), -1) {
		idx, _ := strconv.Atoi(m[1])
		typ := GIDTypeRoCEv2
		if m[3] == "1" {
			typ = GIDTypeRoCEv1 // sysfs spells RoCE v1 "IB/RoCE v1"
		}
		out = append(out, gidCaptured{dev: dev, port: 1, idx: idx, gid: net.ParseIP(m[2]), typ: typ})
	}
	return out
}

// TestGIDFixturesMatchCaptures checks that every device whose description
// names a capture holds exactly that capture's GIDs.
func TestGIDFixturesMatchCaptures(t *testing.T) {
	dir := gidCaptures(t)
	for _, h := range gidFxHosts {
		for _, d := range h.devs {
			if d.capture == "" {
				continue
			}
			var caps []gidCaptured
			if strings.Contains(d.capture, "ibv_devinfo") {
				caps = parseIbvDevinfoGIDs(t, filepath.Join(dir, d.capture), d.name)
			} else {
				caps = parseShowGids(t, filepath.Join(dir, d.capture))
			}
			var want []gidCaptured
			for _, c := range caps {
				if c.dev == d.name {
					want = append(want, c)
				}
			}
			var got []gidFxEntry
			for _, p := range d.ports {
				got = append(got, p.entries...)
			}
			if len(want) == 0 || len(want) != len(got) {
				t.Errorf("%s/%s: capture has %d GIDs, fixture %d", h.dir, d.name, len(want), len(got))
				continue
			}
			for i, w := range want {
				g := got[i]
				if g.idx != w.idx || !net.ParseIP(g.gid).Equal(w.gid) || g.typ != w.typ || g.ndev != w.ndev {
					t.Errorf("%s/%s index %d: fixture {%d %s %q %q}, capture {%d %s %q %q}",
						h.dir, d.name, w.idx, g.idx, g.gid, g.typ, g.ndev, w.idx, w.gid, w.typ, w.ndev)
				}
			}
		}
	}
}
