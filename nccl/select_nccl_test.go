package nccl

import (
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/rocectl/rocectl/nic"
	"github.com/rocectl/rocectl/policy"
	"github.com/rocectl/rocectl/port"
)

// NCCL's own GID selection, re-implemented from its source so that
// rocectl's advice (Select, through nic.SelectGID) is checked against what
// NCCL does rather than against rocectl's reading of it. Source:
// NVIDIA/nccl src/transport/net_ib/connect.cc (master after v2.30.7-1;
// the selection is unchanged since v2.21.5-1, where it was in
// src/transport/net_ib.cc):
//
//	ncclIbGetGidIndex      index 0, then ncclUpdateGidIndex for 1..gid_tbl_len-1;
//	                       a NCCL_IB_GID_INDEX >= 0 returns before any of it
//	ncclUpdateGidIndex     the step below, line for line
//	getGidAddrFamily       AF_INET for ::ffff:a.b.c.d and ff0e::ffff:a.b.c.d
//	matchGidAddrPrefix     the subnet test, on 32-bit words, AF_INET on word 3
//	configuredGid          not :: and not fe80:: with an all-zero rest
//	linkLocalGid           fe80:0000:0000:0000/64
//	ncclIbRoceGetVersionNum gid_attrs/types/<i> by prefix; a read failing
//	                       with EINVAL leaves the version as it was
//	envIbAddrFamily, envIbAddrRange  the variables' parsing
//
// It reads the sysfs trees directly (os, not nic's reader), as libibverbs'
// ibv_query_gid reads gids/<i> and NCCL reads types/<i>.

type ncclEnv struct {
	gidIndex int // NCCL_IB_GID_INDEX; -1 = unset
	family   string
	rng      string
	version  int // NCCL_IB_ROCE_VERSION_NUM; 0 = unset (2)
}

type ncclPortTable struct {
	gids  [][16]byte // index i = gids/<i>; gid_tbl_len = len
	types []string   // types/<i>; "" = the read fails (EINVAL)
}

func readNCCLTable(t *testing.T, portDir string) ncclPortTable {
	t.Helper()
	names, err := os.ReadDir(filepath.Join(portDir, "gids"))
	if err != nil {
		t.Fatal(err)
	}
	var tbl ncclPortTable
	n := 0
	for _, e := range names {
		if i, err := strconv.Atoi(e.Name()); err == nil && i+1 > n {
			n = i + 1
		}
	}
	tbl.gids = make([][16]byte, n)
	tbl.types = make([]string, n)
	for i := 0; i < n; i++ {
		raw, err := os.ReadFile(filepath.Join(portDir, "gids", strconv.Itoa(i)))
		if err != nil {
			t.Fatalf("ibv_query_gid(%d) would fail: %v", i, err)
		}
		ip := net.ParseIP(strings.TrimSpace(string(raw)))
		if ip == nil {
			t.Fatalf("%s/gids/%d: %q", portDir, i, raw)
		}
		copy(tbl.gids[i][:], ip.To16())
		typ, err := os.ReadFile(filepath.Join(portDir, "gid_attrs", "types", strconv.Itoa(i)))
		if err == nil {
			tbl.types[i] = strings.TrimSpace(string(typ))
		} else if !errors.Is(err, os.ErrNotExist) {
			t.Fatal(err)
		}
	}
	return tbl
}

const (
	afInet  = 2
	afInet6 = 10
)

func word(g [16]byte, i int) uint32 { return binary.BigEndian.Uint32(g[4*i:]) }

func getGidAddrFamily(g [16]byte) int {
	mapped := (word(g, 0)|word(g, 1))|(word(g, 2)^0x0000ffff) == 0
	mappedMcast := word(g, 0) == 0xff0e0000 && (word(g, 1)|(word(g, 2)^0x0000ffff)) == 0
	if mapped || mappedMcast {
		return afInet
	}
	return afInet6
}

func netmask(bits int) uint32 { return 0xffffffff ^ (uint32(1)<<(32-bits) - 1) }

func matchGidAddrPrefix(af int, prefix []byte, prefixlen int, g [16]byte) bool {
	i := 0
	for prefixlen > 0 && i < 4 {
		if af == afInet {
			mask := netmask(prefixlen)
			if (binary.BigEndian.Uint32(prefix)&mask)^(word(g, 3)&mask) != 0 {
				break
			}
			prefixlen = 0
			break
		}
		if prefixlen >= 32 {
			if binary.BigEndian.Uint32(prefix[4*i:]) != word(g, i) {
				break
			}
			prefixlen -= 32
			i++
		} else {
			mask := netmask(prefixlen)
			if (binary.BigEndian.Uint32(prefix[4*i:])&mask)^(word(g, i)&mask) != 0 {
				break
			}
			prefixlen = 0
		}
	}
	return prefixlen == 0
}

func configuredGid(g [16]byte) bool {
	trailer := word(g, 1) | word(g, 2) | word(g, 3)
	return !(word(g, 0)|trailer == 0 || word(g, 0) == 0xfe800000 && trailer == 0)
}

func linkLocalGid(g [16]byte) bool { return word(g, 0) == 0xfe800000 && word(g, 1) == 0 }

func validGid(g [16]byte) bool { return configuredGid(g) && !linkLocalGid(g) }

// roceGetVersionNum leaves *version alone when the read fails (EINVAL:
// the fixtures leave such files out) or names no known version.
func roceGetVersionNum(tbl ncclPortTable, i int, version *int) {
	s := tbl.types[i]
	switch {
	case s == "":
	case strings.HasPrefix(s, "IB/RoCE v1"), strings.HasPrefix(s, "RoCE v1"):
		*version = 1
	case strings.HasPrefix(s, "RoCE v2"):
		*version = 2
	}
}

func envIbAddrFamily(env ncclEnv) int {
	if env.family == "AF_INET6" {
		return afInet6
	}
	return afInet // unset, "AF_INET", or anything else
}

// envIbAddrRange returns the prefix bytes (4 for AF_INET, 16 for AF_INET6)
// and the mask, or nil and 0 where NCCL ignores the range.
func envIbAddrRange(af int, env ncclEnv) ([]byte, int) {
	if env.rng == "" {
		return nil, 0
	}
	addr, maskStr, ok := strings.Cut(env.rng, "/")
	if !ok {
		return nil, 0
	}
	ip := net.ParseIP(addr)
	var prefix []byte
	switch {
	case ip == nil:
		return nil, 0
	case af == afInet && strings.Contains(addr, ":"): // inet_pton(AF_INET) takes dotted quads only
		return nil, 0
	case af == afInet:
		prefix = ip.To4()
	case !strings.Contains(addr, ":"): // inet_pton(AF_INET6) wants a colon form
		return nil, 0
	default:
		prefix = ip.To16()
	}
	mask, _ := strconv.Atoi(maskStr) // strtol: garbage reads as 0
	if af == afInet && mask > 32 || af == afInet6 && mask > 128 {
		return nil, 0
	}
	return prefix, mask
}

func ncclUpdateGidIndex(tbl ncclPortTable, af int, prefix []byte, prefixlen, roceVer, cand int, gidIndex *int) {
	gid, gidCand := tbl.gids[*gidIndex], tbl.gids[cand]
	usrFam := af
	gidFam := getGidAddrFamily(gid)
	gidCandFam := getGidAddrFamily(gidCand)
	candMatchSubnet := matchGidAddrPrefix(usrFam, prefix, prefixlen, gidCand)
	if gidCandFam != gidFam && gidCandFam == usrFam && candMatchSubnet {
		*gidIndex = cand
		return
	}
	if gidCandFam != usrFam || !validGid(gidCand) || !candMatchSubnet {
		return
	}
	// C leaves gidRoceVerNum uninitialised when the read fails; -1 here.
	gidVer, candVer := -1, -1
	roceGetVersionNum(tbl, *gidIndex, &gidVer)
	roceGetVersionNum(tbl, cand, &candVer)
	if (gidVer != candVer || !validGid(gid)) && candVer == roceVer {
		*gidIndex = cand
	}
}

func ncclIbGetGidIndex(tbl ncclPortTable, env ncclEnv) int {
	if env.gidIndex >= 0 {
		return env.gidIndex
	}
	af := envIbAddrFamily(env)
	ver := env.version
	if ver == 0 {
		ver = 2
	}
	prefix, prefixlen := envIbAddrRange(af, env)
	idx := 0
	for next := 1; next < len(tbl.gids); next++ {
		ncclUpdateGidIndex(tbl, af, prefix, prefixlen, ver, next, &idx)
	}
	return idx
}

// fixturePort is one Ethernet RDMA port of a fixture host.
type fixturePort struct {
	host, dev string
	num       int
	dir       string
	dump      *dumpTable // a table from a show_gids dump, not a sysfs tree
}

// dumpTable is one port's table as a show_gids dump shows it: NCCL's
// view (every index up to the highest listed; those not listed are unused,
// all zero, without a type) and rocectl's (the populated entries, as
// nic.ReadGIDs returns them from sysfs and `rocectl import` from the dump).
type dumpTable struct {
	ncclPortTable
	gids []port.GID
}

// fixturePorts lists every Ethernet RDMA port of every fixture host root:
// the generated hosts (testdata/hosts) and the GID tables built from
// show_gids and ibv_devinfo captures (nic/testdata/gid, with the derived
// IPv6-only, VLAN and mixed-device hosts). InfiniBand ports are left
// out: NCCL selects by FLID there, not by family.
func fixturePorts(t *testing.T) []fixturePort {
	t.Helper()
	var roots []string
	for _, pat := range []string{"../testdata/hosts/*", "../nic/testdata/gid/*"} {
		m, err := filepath.Glob(pat)
		if err != nil {
			t.Fatal(err)
		}
		roots = append(roots, m...)
	}
	var out []fixturePort
	for _, root := range roots {
		devs, err := os.ReadDir(filepath.Join(root, "sys/class/infiniband"))
		if err != nil {
			continue // not a host root (README.md, go.mod)
		}
		for _, d := range devs {
			ports, err := os.ReadDir(filepath.Join(root, "sys/class/infiniband", d.Name(), "ports"))
			if err != nil {
				t.Fatal(err)
			}
			for _, p := range ports {
				dir := filepath.Join(root, "sys/class/infiniband", d.Name(), "ports", p.Name())
				ll, _ := os.ReadFile(filepath.Join(dir, "link_layer"))
				if strings.TrimSpace(string(ll)) == "InfiniBand" {
					continue
				}
				if _, err := os.Stat(filepath.Join(dir, "gids")); err != nil {
					continue // a port without a GID table in this fixture
				}
				n, _ := strconv.Atoi(p.Name())
				out = append(out, fixturePort{host: filepath.Base(root), dev: d.Name(), num: n, dir: dir})
			}
		}
	}
	out = append(out, dumpPorts(t)...)
	if len(out) < 25 {
		t.Fatalf("only %d fixture ports found", len(out))
	}
	return out
}

// dumpPorts are the Ethernet ports of every show_gids dump in the
// repository: the captures (testdata/captures, nic/dump/testdata/corpus)
// and the dumps built to real hosts' descriptions
// (nic/dump/testdata/constructed: an IPv6-only Thor2 host; a bnxt host
// with a VLAN's GIDs, an IPv6 ULA and another driver's rows). Columns:
// DEV PORT INDEX GID [IPv4] VER [DEV], separated by any white space (the
// constructed bnxt dump uses no-break spaces, as pasted).
func dumpPorts(t *testing.T) []fixturePort {
	t.Helper()
	var files []string
	for _, pat := range []string{"../testdata/captures/*show_gids*", "../nic/dump/testdata/corpus/*show_gids*", "../nic/dump/testdata/constructed/*show_gids*"} {
		m, _ := filepath.Glob(pat)
		files = append(files, m...)
	}
	if len(files) < 4 {
		t.Fatalf("show_gids dumps: %v", files)
	}
	var out []fixturePort
	for _, f := range files {
		raw, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		type key struct {
			dev  string
			port int
		}
		tables := map[key]*dumpTable{}
		var order []key
		for _, line := range strings.Split(string(raw), "\n") {
			fl := strings.Fields(line)
			if len(fl) < 5 {
				continue
			}
			pn, err1 := strconv.Atoi(fl[1])
			idx, err2 := strconv.Atoi(fl[2])
			ip := net.ParseIP(fl[3])
			if err1 != nil || err2 != nil || ip == nil {
				continue // the header, the prompt
			}
			rest := fl[4:]
			if strings.Contains(rest[0], ".") {
				rest = rest[1:] // the IPv4 column
			}
			typ := map[string]string{"v1": nic.GIDTypeRoCEv1, "v2": nic.GIDTypeRoCEv2}[rest[0]]
			if typ == "" {
				t.Fatalf("%s: %q", f, line)
			}
			ndev := ""
			if len(rest) > 1 {
				ndev = rest[1]
			}
			k := key{fl[0], pn}
			tb := tables[k]
			if tb == nil {
				tb = &dumpTable{}
				tables[k] = tb
				order = append(order, k)
			}
			for len(tb.ncclPortTable.gids) <= idx {
				tb.ncclPortTable.gids = append(tb.ncclPortTable.gids, [16]byte{})
				tb.types = append(tb.types, "")
			}
			copy(tb.ncclPortTable.gids[idx][:], ip.To16())
			tb.types[idx] = typ
			tb.gids = append(tb.gids, port.GID{Index: idx, GID: ip.To16(), Type: typ, Netdev: ndev})
		}
		for _, k := range order {
			tb := tables[k]
			if tb.gids[0].Netdev == "" && len(tb.gids) == 1 {
				continue // an InfiniBand port (no netdev, one GUID-based GID)
			}
			out = append(out, fixturePort{host: "dump:" + filepath.Base(f), dev: k.dev, num: k.port, dump: tb})
		}
	}
	return out
}

// rocectlPort is the port as rocectl sees it: its table read by nic.
func rocectlPort(t *testing.T, fp fixturePort) port.Port {
	t.Helper()
	if fp.dump != nil {
		return port.Port{RDMADevice: fp.dev, PortNum: fp.num, Netdev: "netdev-of-" + fp.dev, GIDs: fp.dump.gids, RoCEv2GID: -1}
	}
	root := fp.dir[:strings.Index(fp.dir, "/sys/class/")]
	gids, err := nic.ReadGIDs(nic.NewFS(root, true), fp.dev, fp.num)
	if err != nil {
		t.Fatal(err)
	}
	if gids == nil {
		gids = []port.GID{}
	}
	return port.Port{RDMADevice: fp.dev, PortNum: fp.num, Netdev: "netdev-of-" + fp.dev, GIDs: gids, RoCEv2GID: -1}
}

// qualifies is what rocectl promises of a pick: a configured, not
// link-local GID of the family, in the range, of the RoCE version, by
// NCCL's own tests.
func qualifies(tbl ncclPortTable, idx int, env ncclEnv) bool {
	g := tbl.gids[idx]
	af := envIbAddrFamily(env)
	prefix, plen := envIbAddrRange(af, env)
	ver := -1
	roceGetVersionNum(tbl, idx, &ver)
	want := env.version
	if want == 0 {
		want = 2
	}
	return validGid(g) && getGidAddrFamily(g) == af && matchGidAddrPrefix(af, prefix, plen, g) && ver == want
}

// profileVars are the [nccl] variables a case sets, as a profile would.
func profileVars(env ncclEnv) *policy.NCCL {
	c := &policy.NCCL{}
	if env.family != "" {
		c.Vars = append(c.Vars, policy.NCCLVar{Name: "IB_ADDR_FAMILY", Value: env.family})
	}
	if env.rng != "" {
		c.Vars = append(c.Vars, policy.NCCLVar{Name: "IB_ADDR_RANGE", Value: env.rng})
	}
	if env.version != 0 {
		c.Vars = append(c.Vars, policy.NCCLVar{Name: "IB_ROCE_VERSION_NUM", Value: strconv.Itoa(env.version)})
	}
	return c
}

// casesFor are the profile settings tried on a table: none (rocectl
// derives everything), each family, each RoCE version, and the /24 (IPv4)
// or /64 (IPv6) of every routable address in it, plus one range that
// holds none of them.
func casesFor(tbl ncclPortTable) []ncclEnv {
	cases := []ncclEnv{{}, {family: "AF_INET"}, {family: "AF_INET6"}, {version: 1}, {family: "AF_INET6", version: 1}}
	seen := map[string]bool{}
	for _, g := range tbl.gids {
		if !validGid(g) {
			continue
		}
		ip := net.IP(g[:])
		var r string
		if getGidAddrFamily(g) == afInet {
			r = (&net.IPNet{IP: ip.To4().Mask(net.CIDRMask(24, 32)), Mask: net.CIDRMask(24, 32)}).String()
		} else {
			r = (&net.IPNet{IP: ip.Mask(net.CIDRMask(64, 128)), Mask: net.CIDRMask(64, 128)}).String()
		}
		if !seen[r] {
			seen[r] = true
			cases = append(cases, ncclEnv{rng: r})
		}
	}
	return append(cases, ncclEnv{rng: "198.51.100.0/24"}, ncclEnv{rng: "2001:db8:ffff::/48"})
}

// Every fixture table, every case: where rocectl's advice is "this
// works", NCCL run with exactly the variables rocectl writes selects the
// GID rocectl names, and it qualifies; where rocectl says the port
// fails, NCCL's own selection ends on a GID that does not qualify (it
// falls back), so the error is no false alarm.
func TestSelectMatchesNCCL(t *testing.T) {
	agreed, refused := 0, 0
	for _, fp := range fixturePorts(t) {
		var tbl ncclPortTable
		if fp.dump != nil {
			tbl = fp.dump.ncclPortTable
		} else {
			tbl = readNCCLTable(t, fp.dir)
		}
		pt := rocectlPort(t, fp)
		for _, c := range casesFor(tbl) {
			name := fmt.Sprintf("%s/%s:%d %+v", fp.host, fp.dev, fp.num, c)
			s := Select(profileVars(c), []port.Port{pt})
			// What rocectl writes: the profile's own, plus the family
			// and version it derives.
			env := ncclEnv{gidIndex: -1, family: s.Family, rng: c.rng, version: s.Version}
			got := ncclIbGetGidIndex(tbl, env)
			pick := s.Picks[0]
			switch {
			case pick.OK && pick.GID.Index != got:
				t.Errorf("%s: rocectl says NCCL selects %d (%s), NCCL's loop selects %d", name, pick.GID.Index, gidText(pick.GID), got)
			case pick.OK && !qualifies(tbl, got, env):
				t.Errorf("%s: rocectl accepts index %d, which NCCL's own tests reject", name, got)
			case pick.OK:
				agreed++
			case qualifies(tbl, got, env):
				t.Errorf("%s: rocectl refuses (%s) but NCCL selects %d, which qualifies", name, pick.Problem, got)
			default:
				refused++
			}
		}
	}
	// Both outcomes must have been exercised, or the test proves little.
	if agreed < 20 || refused < 20 {
		t.Fatalf("agreed on %d picks, refused %d: the fixtures no longer cover both", agreed, refused)
	}
	t.Logf("agreed on %d picks, refused %d", agreed, refused)
}

// The advice on the fixtures named in the issue, spelled out: what
// family rocectl derives, the index NCCL then selects, and which ports
// are errors and why.
func TestSelectOnFixtureHosts(t *testing.T) {
	all := fixturePorts(t)
	host := func(name string, devs ...string) []port.Port {
		var out []port.Port
		for _, fp := range all {
			if fp.host == name && (len(devs) == 0 || slices.Contains(devs, fp.dev)) {
				out = append(out, rocectlPort(t, fp))
			}
		}
		sort.Slice(out, func(i, j int) bool { return out[i].RDMADevice < out[j].RDMADevice })
		if len(out) == 0 {
			t.Fatalf("no ports of %s %v", name, devs)
		}
		return out
	}
	type want struct {
		family string
		picks  string // dev:port=index, or dev:port=! for a failure
		reason string // a substring of the first failure
	}
	summary := func(s Selection) string {
		parts := make([]string, len(s.Picks))
		for i, p := range s.Picks {
			if p.OK {
				parts[i] = fmt.Sprintf("%s=%d", p.Port, p.GID.Index)
			} else {
				parts[i] = p.Port + "=!"
			}
		}
		return strings.Join(parts, " ")
	}
	for _, tc := range []struct {
		name  string
		ports []port.Port
		c     ncclEnv
		want  want
	}{
		{"spectrumscale: IPv4 at 5", host("spectrumscale-cx6"), ncclEnv{}, want{"AF_INET", "mlx5_0:1=5", ""}},
		{"cx6dx two ports", host("cx6dx-ofed-lossless"), ncclEnv{}, want{"AF_INET", "mlx5_0:1=5 mlx5_1:1=3", ""}},
		{"RoCE LAG", host("cx5-roce-lag"), ncclEnv{}, want{"AF_INET", "mlx5_bond_0:1=3", ""}},
		{"Thor2 IPv6-only: AF_INET6 derived", host("derived-thor2-ipv6only"), ncclEnv{}, want{"AF_INET6", "bnxt_re0:1=3 bnxt_re1:1=3", ""}},
		{"Thor2 IPv6-only under AF_INET", host("derived-thor2-ipv6only"), ncclEnv{family: "AF_INET"}, want{"AF_INET", "bnxt_re0:1=! bnxt_re1:1=!", "bnxt_re0:1: IPv6-only (2001:db8:1:0:20a:f7ff:fe00:1 (index 2, IB/RoCE v1, enp202s0f0np0), 2001:db8:1:0:20a:f7ff:fe00:1 (index 3, RoCE v2, enp202s0f0np0)): NCCL_IB_ADDR_FAMILY=AF_INET finds no GID; NCCL would keep index 0"}},
		{"VLAN GID counts", host("derived-vlan-ipv6", "mlx5_0"), ncclEnv{}, want{"AF_INET", "mlx5_0:1=7", ""}},
		{"mixed: IPv6 before IPv4, two subnets, link-local only", host("derived-mixed"), ncclEnv{}, want{"AF_INET", "bnxt_re0:1=! mlx5_0:1=5 mlx5_1:1=3", "bnxt_re0:1: link-local only (fe80::20a:f7ff:fe00:1 (index 0"}},
		{"mixed: the VLAN's subnet by range", host("derived-mixed", "mlx5_1"), ncclEnv{rng: "192.168.2.0/24"}, want{"AF_INET", "mlx5_1:1=7", ""}},
		{"mixed: a range no GID is in", host("derived-mixed", "mlx5_0"), ncclEnv{rng: "10.9.0.0/16"}, want{"AF_INET", "mlx5_0:1=!", "no AF_INET GID in IB_ADDR_RANGE 10.9.0.0/16 (it has 192.168.1.11 (index 4"}},
		{"centos12: only mlx5_2 and mlx5_3 have IPv4", host("centos12-multidev"), ncclEnv{}, want{"AF_INET", "mlx5_0:1=! mlx5_1:1=! mlx5_2:1=3 mlx5_3:1=3 mlx5_4:1=! mlx5_6:1=! mlx5_7:1=!", "mlx5_0:1: link-local only"}},
		{"cx7 upstream: one port without an address", host("cx7-upstream-factory"), ncclEnv{}, want{"AF_INET", "rocep8s0f0:1=3 rocep8s0f1:1=!", "rocep8s0f1:1: link-local only"}},
		{"Thor2 show_gids dump: IPv6-only", host("dump:bnxt-thor2-show_gids-ipv6only.txt"), ncclEnv{}, want{"AF_INET6", "bnxt_re0:1=3 bnxt_re1:1=3", ""}},
		{"bnxt dump: VLAN, ULA and mlx5 rows", host("dump:bnxt-show_gids-nbsp-vlan-mixed.txt"), ncclEnv{}, want{"AF_INET", "bnxt_re0:1=7 mlx5_0:1=3", ""}},
		{"bnxt dump: the VLAN's subnet", host("dump:bnxt-show_gids-nbsp-vlan-mixed.txt", "bnxt_re0"), ncclEnv{rng: "10.200.11.0/24"}, want{"AF_INET", "bnxt_re0:1=9", ""}},
		{"bnxt dump: the ULA under AF_INET6", host("dump:bnxt-show_gids-nbsp-vlan-mixed.txt", "bnxt_re0"), ncclEnv{family: "AF_INET6"}, want{"AF_INET6", "bnxt_re0:1=5", ""}},
		{"RoCE v1 asked of a v2-only range", host("derived-mixed", "mlx5_0"), ncclEnv{version: 1, rng: "192.168.1.0/24"}, want{"AF_INET", "mlx5_0:1=4", ""}},
	} {
		s := Select(profileVars(tc.c), tc.ports)
		if s.Family != tc.want.family || summary(s) != tc.want.picks {
			t.Errorf("%s: family %s, picks %s; want %s, %s", tc.name, s.Family, summary(s), tc.want.family, tc.want.picks)
			continue
		}
		if f := s.Failed(); tc.want.reason != "" && (len(f) == 0 || !strings.Contains(f[0].Problem, tc.want.reason)) {
			t.Errorf("%s: first failure %+v, want it to contain %q", tc.name, f, tc.want.reason)
		}
	}
}

// The two-subnet port is a note (NCCL takes the lowest index), not an
// error; one GID per address pair is no note.
func TestSelectNotesSeveralCandidates(t *testing.T) {
	var mixed, plain port.Port
	for _, fp := range fixturePorts(t) {
		switch {
		case fp.host == "derived-mixed" && fp.dev == "mlx5_1":
			mixed = rocectlPort(t, fp)
		case fp.host == "spectrumscale-cx6":
			plain = rocectlPort(t, fp)
		}
	}
	s := Select(&policy.NCCL{}, []port.Port{mixed, plain})
	if len(s.Notes) != 1 || !strings.Contains(s.Notes[0], "mlx5_1:1: 2 GIDs qualify (10.0.0.11 (index 3, RoCE v2, enp8s0f1np1), 192.168.2.11 (index 7, RoCE v2, enp8s0f1np1.200)); NCCL takes the lowest index, 3") {
		t.Fatalf("notes %q", s.Notes)
	}
}
