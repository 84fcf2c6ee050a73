package nccl

import (
	"reflect"
	"strings"
	"testing"

	"github.com/rocectl/rocectl/port"
)

func fixtureHostPorts(t *testing.T, host string) []port.Port {
	t.Helper()
	var out []port.Port
	for _, fp := range fixturePorts(t) {
		if fp.host == host {
			out = append(out, rocectlPort(t, fp))
		}
	}
	return out
}

// "select" writes no index: the family rocectl derives from the tables
// (AF_INET6 on an IPv6-only host) and the RoCE version, after the HCA
// list, with rails.
func TestDeriveSelectWritesFamilyNotIndex(t *testing.T) {
	p := loadProfile(t, "[nccl]\ngeneration = \"2.30\"\nIB_HCA = \"auto\"\nIB_GID_INDEX = \"select\"\n[nccl.rails]\nbnxt_re0 = [0, 0]\nbnxt_re1 = [0, 1]\n")
	d := Derive(p, fixtureHostPorts(t, "derived-thor2-ipv6only"))
	want := []Var{{"NCCL_IB_HCA", "=bnxt_re0:1:0:0,bnxt_re1:1:0:1"}, {"NCCL_IB_GID_INDEX", "-1"}, {"NCCL_IB_ROCE_VERSION_NUM", "2"}, {"NCCL_IB_ADDR_FAMILY", "AF_INET6"}}
	if len(d.Unresolved) != 0 || !reflect.DeepEqual(d.Vars, want) {
		t.Fatalf("Derive = %v, unresolved %v; want %v", d.Vars, d.Unresolved, want)
	}
	if d.GID == nil || d.GID.Mode != GIDSelected || !strings.Contains(d.GID.Reason, "bnxt_re0:1 → 2001:db8:1:0:20a:f7ff:fe00:1 (index 3, RoCE v2, enp202s0f0np0)") {
		t.Fatalf("choice %+v", d.GID)
	}
}

// A port no GID of the family serves refuses the whole file, naming the
// port: a partial NCCL setup is never written.
func TestDeriveSelectRefusesNamingThePort(t *testing.T) {
	p := loadProfile(t, "[nccl]\nIB_HCA = \"auto\"\nIB_GID_INDEX = \"select\"\nIB_ADDR_FAMILY = \"AF_INET\"\nIB_TIMEOUT = 22\n")
	d := Derive(p, fixtureHostPorts(t, "cx7-upstream-factory"))
	if len(d.Unresolved) != 1 || d.Unresolved[0].Key != "host.nccl.NCCL_IB_GID_INDEX" ||
		!strings.Contains(d.Unresolved[0].Reason, "rocep8s0f1:1: link-local only") || strings.Contains(d.Unresolved[0].Reason, "rocep8s0f0:1:") {
		t.Fatalf("unresolved %+v", d.Unresolved)
	}
	// Tables not read: unknown, not an error about the host.
	ports := fixtureHostPorts(t, "cx7-upstream-factory")
	for i := range ports {
		ports[i].GIDs = nil
	}
	d = Derive(p, ports)
	if d.GID == nil || d.GID.Mode != GIDUnknown || !strings.Contains(d.GID.Reason, "were not read") {
		t.Fatalf("choice %+v", d.GID)
	}
}

// From 2.26 a file-wide IB_TC overrides each communicator's own traffic
// class; before it there is nothing to override. A LAG gets its note.
func TestDeriveNotes(t *testing.T) {
	const prof = "[roce]\ndefault_tos = 106\n[nccl]\nwrite = \"/etc/nccl.conf\"\nIB_HCA = \"auto\"\nIB_SL = 3\n"
	lag := fixtureHostPorts(t, "cx5-roce-lag")
	lag[0].Bond = &port.Bond{Name: "bond0", Mode: "802.3ad", Slaves: []port.Slave{{Netdev: "ens1f0np0"}, {Netdev: "ens1f1np1"}}}
	old := Derive(loadProfile(t, prof+"generation = \"2.25\"\n"), lag)
	if len(old.Warnings) != 0 {
		t.Errorf("2.25: %q", old.Warnings)
	}
	d := Derive(loadProfile(t, prof+"generation = \"2.26\"\n"), lag)
	var got []string
	for _, n := range append(d.Warnings, d.Notes...) {
		got = append(got, n[:strings.Index(n, ":")])
	}
	want := []string{"NCCL_IB_SL=3 in /etc/nccl.conf overrides the trafficClass a communicator asks for (ncclConfig_t, NCCL ≥ 2.26; ncclIbConnectImpl takes NCCL_IB_SL first)",
		"NCCL_IB_TC=106 in /etc/nccl.conf overrides the trafficClass a communicator asks for (ncclConfig_t, NCCL ≥ 2.26; ncclIbConnectImpl takes NCCL_IB_TC first)",
		"mlx5_bond_0 is a RoCE LAG (bond0"}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("notes %q", d.Notes)
	}
}

// Rails that differ on two ports of one NIC: NCCL would merge them and
// lose both rails, unless [nccl.extra] keeps them apart.
func TestDeriveWarnsOfMergedRails(t *testing.T) {
	const prof = "[nccl]\ngeneration = \"2.30\"\nIB_HCA = \"auto\"\n[nccl.rails]\nmlx5_0 = 0\nmlx5_1 = 1\n"
	d := Derive(loadProfile(t, prof), twoPorts)
	if len(d.Warnings) != 1 || !strings.HasPrefix(d.Warnings[0], "mlx5_0 (rail 0) and mlx5_1 (rail 1) are ports of one NIC (0000:3b:00): NCCL merges them into one device, mlx5_0+mlx5_1,") {
		t.Fatalf("warnings %q", d.Warnings)
	}
	if v := d.Vars[0]; v.Value != "=mlx5_0:1:0,mlx5_1:1:1" {
		t.Fatalf("HCA %v", v)
	}
	d = Derive(loadProfile(t, prof+"[nccl.extra]\nNCCL_NET_MERGE_POLICY = \"RAIL\"\n"), twoPorts)
	if len(d.Warnings) != 0 {
		t.Fatalf("with RAIL: %q", d.Warnings)
	}
	d = Derive(loadProfile(t, "[nccl]\ngeneration = \"2.30\"\nIB_HCA = \"auto\"\n[nccl.rails]\nmlx5_0 = 0\nmlx5_1 = 0\n"), twoPorts)
	if len(d.Warnings) != 0 {
		t.Fatalf("same rail: %q", d.Warnings)
	}
}
