package nic

import (
	"errors"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func gidFS(host string) FS { return NewFS(gidFxRoot(host), true) }

func mustReadGIDs(t *testing.T, host, dev string, port int) []GID {
	t.Helper()
	g, err := ReadGIDs(gidFS(host), dev, port)
	if err != nil {
		t.Fatalf("ReadGIDs(%s, %s, %d): %v", host, dev, port, err)
	}
	return g
}

func TestReadGIDsSpectrumScale(t *testing.T) {
	got := mustReadGIDs(t, "spectrumscale-cx6", "mlx5_0", 1)
	want := []GID{
		{Index: 0, GID: net.ParseIP("fe80::e42:a1ff:fe5d:4db8"), Type: "IB/RoCE v1", Netdev: "ens1f0"},
		{Index: 1, GID: net.ParseIP("fe80::e42:a1ff:fe5d:4db8"), Type: "RoCE v2", Netdev: "ens1f0"},
		{Index: 2, GID: net.ParseIP("fe80::1186:a6b1:3f0b:c441"), Type: "IB/RoCE v1", Netdev: "ens1f0"},
		{Index: 3, GID: net.ParseIP("fe80::1186:a6b1:3f0b:c441"), Type: "RoCE v2", Netdev: "ens1f0"},
		{Index: 4, GID: net.ParseIP("::ffff:172.19.0.60"), Type: "IB/RoCE v1", Netdev: "ens1f0"},
		{Index: 5, GID: net.ParseIP("::ffff:172.19.0.60"), Type: "RoCE v2", Netdev: "ens1f0"},
	}
	if len(got) != len(want) {
		t.Fatalf("got %d entries %v, want %d", len(got), got, len(want))
	}
	for i := range want {
		g, w := got[i], want[i]
		if g.Index != w.Index || !g.GID.Equal(w.GID) || len(g.GID) != 16 || g.Type != w.Type || g.Netdev != w.Netdev {
			t.Errorf("entry %d: got %+v, want %+v", i, g, w)
		}
	}
}

func TestReadGIDsFullTable(t *testing.T) {
	// 256 gids files, 252 of them all zero: only the 4 populated come back,
	// in index order, and without ndevs the netdev stays empty.
	got := mustReadGIDs(t, "scaleoutsean-cx6", "mlx5_0", 1)
	if len(got) != 4 {
		t.Fatalf("got %d entries, want 4: %v", len(got), got)
	}
	for i, g := range got {
		if g.Index != i || g.Netdev != "" {
			t.Errorf("entry %d: %+v", i, g)
		}
	}
	if !got[3].GID.Equal(net.ParseIP("::ffff:192.168.1.11")) || got[3].Type != GIDTypeRoCEv2 {
		t.Errorf("entry 3 = %+v, want ::ffff:192.168.1.11 RoCE v2", got[3])
	}
}

func TestReadGIDsInfiniBandPortKeepsEntryWithoutNetdev(t *testing.T) {
	got := mustReadGIDs(t, "centos12-multidev", "mlx5_5", 1)
	if len(got) != 1 || got[0].Index != 0 || got[0].Type != GIDTypeRoCEv1 || got[0].Netdev != "" ||
		!got[0].GID.Equal(net.ParseIP("fe80::8c0:eb03:b6:a0b4")) {
		t.Fatalf("got %+v", got)
	}
}

func TestReadGIDsSkipsUnreadableEntries(t *testing.T) {
	// A writable copy of the spectrumscale port in which index 5's type
	// cannot be read (a directory where the file should be: EISDIR, as
	// good as the kernel's EINVAL) and index 4's gid file is garbage.
	root := t.TempDir()
	if err := gidFxTree(gidFxHosts[0]).write(root); err != nil {
		t.Fatal(err)
	}
	port := filepath.Join(root, "sys/devices/pci0000:00/0000:00:02.0/0000:01:00.0/infiniband/mlx5_0/ports/1")
	types5 := filepath.Join(port, "gid_attrs/types/5")
	if err := os.Remove(types5); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(types5, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(port, "gids/4"), []byte("not a gid\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	got, err := ReadGIDs(NewFS(root, true), "mlx5_0", 1)
	if err != nil {
		t.Fatal(err)
	}
	var idx []int
	for _, g := range got {
		idx = append(idx, g.Index)
	}
	if len(idx) != 4 || idx[0] != 0 || idx[3] != 3 {
		t.Fatalf("indexes %v, want [0 1 2 3]", idx)
	}
	if _, ok := SelectGID(got, GIDQuery{Netdev: "ens1f0"}); ok {
		t.Error("SelectGID found an IPv4 RoCE v2 GID although index 5's type is unreadable")
	}
}

func TestReadGIDsMissingDevice(t *testing.T) {
	_, err := ReadGIDs(gidFS("spectrumscale-cx6"), "mlx5_9", 1)
	if !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("err = %v, want os.ErrNotExist", err)
	}
	_, err = ReadGIDs(gidFS("spectrumscale-cx6"), "mlx5_0", 2)
	if !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("port 2: err = %v, want os.ErrNotExist", err)
	}
	if _, err := ReadGIDs(gidFS("spectrumscale-cx6"), "../mlx5_0", 1); err == nil {
		t.Fatal("a device name with a slash was accepted")
	}
}

func TestSelectGID(t *testing.T) {
	cidr := func(s string) *net.IPNet {
		_, n, err := net.ParseCIDR(s)
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	cases := []struct {
		name      string
		host, dev string
		q         GIDQuery
		want      int // -1: no match
	}{
		// The CX-6 capture: IPv4 at 4 (v1) and 5 (v2).
		{"cx6 ipv4 v2", "spectrumscale-cx6", "mlx5_0", GIDQuery{Netdev: "ens1f0"}, 5},
		{"cx6 ipv4 v1", "spectrumscale-cx6", "mlx5_0", GIDQuery{Netdev: "ens1f0", RoCEVersion: 1}, 4},
		{"cx6 any netdev", "spectrumscale-cx6", "mlx5_0", GIDQuery{}, 5},
		{"cx6 other netdev", "spectrumscale-cx6", "mlx5_0", GIDQuery{Netdev: "ens1f1"}, -1},
		{"cx6 ipv6: only link-local", "spectrumscale-cx6", "mlx5_0", GIDQuery{Netdev: "ens1f0", Family: 6}, -1},
		{"cx6 subnet in", "spectrumscale-cx6", "mlx5_0", GIDQuery{Netdev: "ens1f0", Subnet: cidr("172.19.0.0/16")}, 5},
		{"cx6 subnet out", "spectrumscale-cx6", "mlx5_0", GIDQuery{Netdev: "ens1f0", Subnet: cidr("172.20.0.0/16")}, -1},
		{"cx6 ipv6 subnet for ipv4", "spectrumscale-cx6", "mlx5_0", GIDQuery{Subnet: cidr("2001:db8::/32")}, -1},

		// The multi-device capture.
		{"ens6", "centos12-multidev", "mlx5_2", GIDQuery{Netdev: "ens6"}, 3},
		{"ens6 /24", "centos12-multidev", "mlx5_2", GIDQuery{Netdev: "ens6", Subnet: cidr("172.17.242.0/24")}, 3},
		{"ens14f0", "centos12-multidev", "mlx5_3", GIDQuery{Netdev: "ens14f0"}, 3},
		{"ens14f0 wrong subnet", "centos12-multidev", "mlx5_3", GIDQuery{Netdev: "ens14f0", Subnet: cidr("172.17.0.0/16")}, -1},
		{"ens4f0 link-local only", "centos12-multidev", "mlx5_0", GIDQuery{Netdev: "ens4f0"}, -1},
		{"ens4f1 link-local only", "centos12-multidev", "mlx5_1", GIDQuery{Netdev: "ens4f1"}, -1},
		{"ens14f1 link-local only", "centos12-multidev", "mlx5_4", GIDQuery{Netdev: "ens14f1"}, -1},
		{"IB port, any netdev", "centos12-multidev", "mlx5_5", GIDQuery{}, -1},
		{"IB port, v1", "centos12-multidev", "mlx5_5", GIDQuery{RoCEVersion: 1, Family: 6}, -1},
		{"ens6f1 link-local only", "centos12-multidev", "mlx5_6", GIDQuery{Netdev: "ens6f1"}, -1},
		{"ens6f2 link-local only", "centos12-multidev", "mlx5_7", GIDQuery{Netdev: "ens6f2"}, -1},

		// No ndevs in the capture: only a netdev-agnostic query matches.
		{"ibv_devinfo any netdev", "scaleoutsean-cx6", "mlx5_0", GIDQuery{}, 3},
		{"ibv_devinfo v1", "scaleoutsean-cx6", "mlx5_0", GIDQuery{RoCEVersion: 1}, 2},
		{"ibv_devinfo named netdev", "scaleoutsean-cx6", "mlx5_0", GIDQuery{Netdev: "ens1f0"}, -1},

		// Derived: address only on the VLAN child.
		{"vlan parent", "derived-vlan-ipv6", "mlx5_0", GIDQuery{Netdev: "ens1f0"}, -1},
		{"vlan child", "derived-vlan-ipv6", "mlx5_0", GIDQuery{Netdev: "ens1f0.100"}, 7},
		{"vlan any netdev", "derived-vlan-ipv6", "mlx5_0", GIDQuery{}, 7},
		{"vlan child v1", "derived-vlan-ipv6", "mlx5_0", GIDQuery{Netdev: "ens1f0.100", RoCEVersion: 1}, 6},
		// Derived: IPv6-only port.
		{"ipv6-only, ipv4 asked", "derived-vlan-ipv6", "mlx5_1", GIDQuery{Netdev: "ens4f1"}, -1},
		{"ipv6-only, ipv6 asked", "derived-vlan-ipv6", "mlx5_1", GIDQuery{Netdev: "ens4f1", Family: 6}, 3},
		{"ipv6-only, v1", "derived-vlan-ipv6", "mlx5_1", GIDQuery{Netdev: "ens4f1", Family: 6, RoCEVersion: 1}, 2},
		{"ipv6-only, subnet in", "derived-vlan-ipv6", "mlx5_1", GIDQuery{Family: 6, Subnet: cidr("2001:db8::/32")}, 3},
		{"ipv6-only, subnet out", "derived-vlan-ipv6", "mlx5_1", GIDQuery{Family: 6, Subnet: cidr("2001:db9::/32")}, -1},
		{"ipv6-only, ipv4 subnet", "derived-vlan-ipv6", "mlx5_1", GIDQuery{Family: 6, Subnet: cidr("10.0.0.0/8")}, -1},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			gids := mustReadGIDs(t, c.host, c.dev, 1)
			g, ok := SelectGID(gids, c.q)
			switch {
			case c.want < 0 && ok:
				t.Errorf("got index %d (%v), want no match", g.Index, g.GID)
			case c.want >= 0 && !ok:
				t.Errorf("no match, want index %d", c.want)
			case ok && g.Index != c.want:
				t.Errorf("got index %d, want %d", g.Index, c.want)
			}
		})
	}
}

func TestSelectGIDIPv4MappedMulticastAndOrder(t *testing.T) {
	// NCCL counts ff0e::ffff:a.b.c.d as AF_INET; entries need not come sorted.
	gids := []GID{
		{Index: 9, GID: net.ParseIP("::ffff:10.0.0.2"), Type: GIDTypeRoCEv2, Netdev: "e"},
		{Index: 7, GID: net.ParseIP("ff0e::ffff:10.0.0.1"), Type: GIDTypeRoCEv2, Netdev: "e"},
		{Index: 3, GID: net.ParseIP("fe80::1"), Type: GIDTypeRoCEv2, Netdev: "e"},
		{Index: 1, GID: net.IPv6unspecified, Type: GIDTypeRoCEv2, Netdev: "e"},
		{Index: 2, GID: net.ParseIP("fe80::"), Type: GIDTypeRoCEv2, Netdev: "e"},
	}
	g, ok := SelectGID(gids, GIDQuery{Netdev: "e"})
	if !ok || g.Index != 7 {
		t.Fatalf("got %+v %v, want index 7", g, ok)
	}
	_, n, _ := net.ParseCIDR("10.0.0.2/32")
	g, ok = SelectGID(gids, GIDQuery{Subnet: n})
	if !ok || g.Index != 9 {
		t.Fatalf("with subnet: got %+v %v, want index 9", g, ok)
	}
	if _, ok := SelectGID(gids, GIDQuery{Family: 6}); ok {
		t.Fatal("IPv6 query matched link-local or unspecified GIDs")
	}
}

// ncclGidIndex re-states NCCL's dynamic GID selection
// (src/transport/net_ib/connect.cc ncclIbGetGidIndex/ncclUpdateGidIndex at
// NVIDIA/nccl@5067397) over a whole table, as the oracle for SelectGID:
// start at index 0, walk the table and replace the current pick by a
// candidate of the wanted family that matches the subnet when the current
// one is of the other family, or when the candidate is valid and has the
// wanted RoCE version while the current one has another version or is
// invalid. Unreadable types give version -1 (NCCL leaves it untouched).
func ncclGidIndex(table map[int]GID, tblLen, family, version int, subnet *net.IPNet) int {
	get := func(i int) (net.IP, int) {
		g, ok := table[i]
		if !ok {
			return net.IPv6unspecified, -1
		}
		return g.GID.To16(), roceVersion(g.Type)
	}
	fam := func(ip net.IP) int {
		if _, v4 := gidIPv4(ip); v4 {
			return 4
		}
		return 6
	}
	inSubnet := func(ip net.IP) bool {
		if subnet == nil {
			return true
		}
		if family == 4 {
			return subnet.Contains(net.IPv4(ip[12], ip[13], ip[14], ip[15]))
		}
		return subnet.Contains(ip)
	}
	cur := 0
	for cand := 1; cand < tblLen; cand++ {
		gid, curVer := get(cur)
		cg, candVer := get(cand)
		if fam(cg) != fam(gid) && fam(cg) == family && inSubnet(cg) {
			cur = cand
			continue
		}
		if fam(cg) != family || !gidValid(cg) || !inSubnet(cg) {
			continue
		}
		if (curVer != candVer || !gidValid(gid)) && candVer == version {
			cur = cand
		}
	}
	return cur
}

// TestSelectGIDAgreesWithNCCL runs both on every fixture port: wherever
// SelectGID finds a GID (netdev-agnostic, as NCCL is), NCCL's loop lands on
// the same index; where SelectGID finds none, NCCL's pick would not carry the
// wanted family and version (it falls back instead of failing).
func TestSelectGIDAgreesWithNCCL(t *testing.T) {
	queries := []GIDQuery{{}, {RoCEVersion: 1}, {Family: 6}, {Family: 6, RoCEVersion: 1}}
	for _, h := range gidFxHosts {
		for _, d := range h.devs {
			for _, p := range d.ports {
				gids := mustReadGIDs(t, h.dir, d.name, p.port)
				table := map[int]GID{}
				for _, g := range gids {
					table[g.Index] = g
				}
				for _, q := range queries {
					fam, ver := q.Family, q.RoCEVersion
					if fam == 0 {
						fam = 4
					}
					if ver == 0 {
						ver = 2
					}
					nccl := ncclGidIndex(table, p.tblLen, fam, ver, nil)
					g, ok := SelectGID(gids, q)
					if ok && g.Index != nccl {
						t.Errorf("%s/%s %+v: SelectGID %d, NCCL %d", h.dir, d.name, q, g.Index, nccl)
					}
					if !ok {
						ng, found := table[nccl]
						if found && gidValid(ng.GID) && roceVersion(ng.Type) == ver {
							if _, v4 := gidIPv4(ng.GID); v4 == (fam == 4) {
								t.Errorf("%s/%s %+v: SelectGID found nothing, NCCL picks a qualifying %d", h.dir, d.name, q, nccl)
							}
						}
					}
				}
			}
		}
	}
}

// gappedGIDTable writes mlx5_0 port 1 with a table a capture left holes
// in (gids/1 and gids/4 unreadable, so absent), an entry whose gid file
// is a directory (6), names that are no index, and returns the root.
// With the default query the answer lies past the holes, at 7.
func gappedGIDTable(t *testing.T) string {
	t.Helper()
	root := t.TempDir()
	dev := "sys/devices/pci0000:00/0000:00:02.0/infiniband/mlx5_0"
	port := filepath.Join(root, dev, "ports/1")
	files := map[string]string{
		"gids/0":            "fe80:0000:0000:0000:0e42:a1ff:fe5d:4db8",
		"gid_attrs/types/0": "RoCE v2",
		"gids/2":            "0000:0000:0000:0000:0000:ffff:0a00:0002",
		"gid_attrs/types/2": "IB/RoCE v1",
		"gids/3":            "0000:0000:0000:0000:0000:0000:0000:0000",
		"gid_attrs/types/3": "RoCE v2",
		"gids/5":            "fd00:0000:0000:0000:0000:0000:0000:0005",
		"gid_attrs/types/5": "RoCE v2",
		"gid_attrs/types/6": "RoCE v2",
		"gids/7":            "0000:0000:0000:0000:0000:ffff:0a00:0007",
		"gid_attrs/types/7": "RoCE v2",
		"gids/x":            "0000:0000:0000:0000:0000:ffff:0a00:0009",
	}
	for name, v := range files {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(port, name)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(port, name), []byte(v+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Mkdir(filepath.Join(port, "gids/6"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(root, "sys/class/infiniband"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("../../"+strings.TrimPrefix(dev, "sys/"), filepath.Join(root, "sys/class/infiniband/mlx5_0")); err != nil {
		t.Fatal(err)
	}
	return root
}

// SelectGIDOn reads entries in index order before it lists the table: a
// hole sends it to the listing for the entries after the hole, so an
// answer past one is found, and not one before it is missed.
func TestSelectGIDOnPastHoles(t *testing.T) {
	for _, fs := range bothResolvers(t, gappedGIDTable(t)) {
		for _, c := range []struct {
			q    GIDQuery
			want int // -1: none
		}{{GIDQuery{}, 7}, {GIDQuery{RoCEVersion: 1}, 2}, {GIDQuery{Family: 6}, 5}, {GIDQuery{Family: 6, RoCEVersion: 1}, -1}} {
			g, ok, err := SelectGIDOn(fs, "mlx5_0", 1, c.q)
			if err != nil || ok != (c.want >= 0) || ok && g.Index != c.want {
				t.Errorf("%s: %+v: SelectGIDOn = %+v %v %v, want index %d", resolver(fs), c.q, g, ok, err, c.want)
			}
		}
	}
}

// SelectGIDOn reads a table only up to the entry it selects, and selects
// what SelectGID does over the whole table: on every GID fixture (real
// captures: VLAN GIDs, a 256-entry table, an InfiniBand port, unreadable
// slots) and every shipped snapshot host, for queries by family, netdev,
// subnet and RoCE version.
func TestSelectGIDOnAgreesWithSelectGID(t *testing.T) {
	var roots []string
	for _, h := range gidFxHosts {
		roots = append(roots, gidFxRoot(h.dir))
	}
	hosts, _ := filepath.Glob(filepath.Join("..", "testdata", "hosts", "*"))
	roots = append(roots, hosts...)
	roots = append(roots, gappedGIDTable(t))
	_, v4net, _ := net.ParseCIDR("172.19.0.0/16")
	_, v6net, _ := net.ParseCIDR("fd00::/8")
	checked := 0
	for _, root := range roots {
		fs := NewFS(root, true)
		for _, dev := range RDMADevices(fs) {
			for _, pn := range RDMAPorts(fs, dev) {
				all, err := ReadGIDs(fs, dev, pn)
				if err != nil {
					continue
				}
				queries := []GIDQuery{{}, {Family: 6}, {RoCEVersion: 1}, {Subnet: v4net}, {Family: 6, Subnet: v6net}}
				for _, g := range all {
					if g.Netdev != "" {
						queries = append(queries, GIDQuery{Netdev: g.Netdev}, GIDQuery{Netdev: g.Netdev, RoCEVersion: 1})
					}
				}
				for _, q := range queries {
					want, wantOK := SelectGID(all, q)
					got, ok, err := SelectGIDOn(fs, dev, pn, q)
					if err != nil || ok != wantOK || got.Index != want.Index || !got.GID.Equal(want.GID) || got.Type != want.Type {
						t.Errorf("%s %s/%d %+v: SelectGIDOn = %+v %v %v, SelectGID = %+v %v", root, dev, pn, q, got, ok, err, want, wantOK)
					}
					checked++
				}
			}
		}
	}
	if checked < 50 {
		t.Fatalf("only %d queries checked", checked)
	}
	if _, _, err := SelectGIDOn(NewFS(t.TempDir(), true), "mlx5_0", 1, GIDQuery{}); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("missing device: %v, want ErrNotExist", err)
	}
}
