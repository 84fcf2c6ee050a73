package nccl

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/rocectl/rocectl/policy"
	"github.com/rocectl/rocectl/port"
)

func loadProfile(t *testing.T, text string) *policy.Profile {
	t.Helper()
	path := filepath.Join(t.TempDir(), "p.toml")
	if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	p, err := policy.Load(path, policy.LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

var twoPorts = []port.Port{
	{Netdev: "ens1f0np0", RDMADevice: "mlx5_0", PortNum: 1, Driver: "mlx5_core", PCI: "0000:3b:00.0", RoCEv2GID: 3, Role: port.RolePF},
	{Netdev: "ens1f1np1", RDMADevice: "mlx5_1", PortNum: 1, Driver: "mlx5_core", PCI: "0000:3b:00.1", RoCEv2GID: 3, Role: port.RolePF},
}

func TestEnvDerivesAutoValues(t *testing.T) {
	p := loadProfile(t, "[roce]\ndefault_tos = 106\n[nccl]\nIB_HCA = \"auto\"\nIB_GID_INDEX = \"auto\"\nIB_TIMEOUT = 22\n")
	vars, unresolved := Env(p, twoPorts)
	want := []Var{{"NCCL_IB_HCA", "=mlx5_0:1,mlx5_1:1"}, {"NCCL_IB_GID_INDEX", "3"}, {"NCCL_IB_TIMEOUT", "22"}, {"NCCL_IB_TC", "106"}}
	if len(unresolved) != 0 || !reflect.DeepEqual(vars, want) {
		t.Fatalf("Env = %v, unresolved %v; want %v", vars, unresolved, want)
	}
}

// With pre-2.21 NCCL there is no per-device selection: ports whose RoCE v2
// IPv4 GIDs sit at different indexes cannot share one, and nothing else
// is a safe answer.
func TestEnvRefusesDisagreeingGIDIndexBefore221(t *testing.T) {
	p := loadProfile(t, "[nccl]\ngeneration = \"pre-2.21\"\nIB_GID_INDEX = \"auto\"\n")
	ports := append([]port.Port(nil), twoPorts...)
	ports[1].RoCEv2GID = 5
	d := Derive(p, ports)
	if len(d.Vars) != 0 || len(d.Unresolved) != 1 || !strings.Contains(d.Unresolved[0].Reason, "ports disagree (mlx5_0:1=3, mlx5_1:1=5)") ||
		!strings.Contains(d.Unresolved[0].Reason, "RoCE v1 link-local") {
		t.Fatalf("Derive = %v, unresolved %+v", d.Vars, d.Unresolved)
	}
	if d.GID == nil || d.GID.Mode != GIDRefused || d.GID.Index != nil {
		t.Fatalf("choice %+v", d.GID)
	}
	ports[1].RoCEv2GID = -1
	d = Derive(p, ports)
	if len(d.Unresolved) != 1 || !strings.Contains(d.Unresolved[0].Reason, "mlx5_1:1 has no RoCE v2 IPv4 GID yet") {
		t.Fatalf("missing GID: %+v", d.Unresolved)
	}
	// Agreeing ports are pinned on old NCCL too.
	d = Derive(p, twoPorts)
	if len(d.Unresolved) != 0 || !reflect.DeepEqual(d.Vars, []Var{{"NCCL_IB_GID_INDEX", "3"}}) || d.GID.String() != "pinned: all ports agree on index 3 (mlx5_0:1=3, mlx5_1:1=3)" {
		t.Fatalf("agreeing ports: %v %+v %v", d.Vars, d.Unresolved, d.GID)
	}
}

// NCCL 2.21+ (the default): "auto" pins only an index every port agrees
// on, with no selection filter set; otherwise it leaves the choice to
// NCCL's per-device selection, naming the version and family to select by.
func TestEnvGIDIndexChoice(t *testing.T) {
	disagree := append([]port.Port(nil), twoPorts...)
	disagree[1].RoCEv2GID = 5
	missing := append([]port.Port(nil), twoPorts...)
	missing[0].RoCEv2GID = -1
	for _, c := range []struct {
		name    string
		profile string
		ports   []port.Port
		vars    []Var
		choice  string
	}{
		{"agree", "", twoPorts, []Var{{"NCCL_IB_GID_INDEX", "3"}},
			"pinned: all ports agree on index 3 (mlx5_0:1=3, mlx5_1:1=3)"},
		{"disagree", "", disagree,
			[]Var{{"NCCL_IB_GID_INDEX", "-1"}, {"NCCL_IB_ROCE_VERSION_NUM", "2"}, {"NCCL_IB_ADDR_FAMILY", "AF_INET"}},
			"dynamic: ports disagree (mlx5_0:1=3, mlx5_1:1=5); NCCL ≥ 2.21 selects per device with ROCE_VERSION_NUM=2, ADDR_FAMILY=AF_INET"},
		{"missing", "", missing,
			[]Var{{"NCCL_IB_GID_INDEX", "-1"}, {"NCCL_IB_ROCE_VERSION_NUM", "2"}, {"NCCL_IB_ADDR_FAMILY", "AF_INET"}},
			"dynamic: mlx5_0:1 has no RoCE v2 IPv4 GID yet (no IPv4 address on ens1f0np0 or a VLAN above it); the others: mlx5_1:1=3; " +
				"NCCL uses index 0 there until such an address exists; NCCL ≥ 2.21 selects per device with ROCE_VERSION_NUM=2, ADDR_FAMILY=AF_INET"},
		// A pinned index makes NCCL skip the range: agreeing ports are
		// left to NCCL when the profile restricts the subnet.
		{"agree with a range", "IB_ADDR_RANGE = \"10.0.0.0/8\"\n", twoPorts,
			[]Var{{"NCCL_IB_GID_INDEX", "-1"}, {"NCCL_IB_ROCE_VERSION_NUM", "2"}, {"NCCL_IB_ADDR_FAMILY", "AF_INET"}, {"NCCL_IB_ADDR_RANGE", "10.0.0.0/8"}},
			"dynamic: the profile sets IB_ADDR_RANGE, which NCCL applies only when it selects the GID itself; NCCL ≥ 2.21 selects per device with ROCE_VERSION_NUM=2, ADDR_FAMILY=AF_INET, ADDR_RANGE=10.0.0.0/8"},
		// The profile's own family is what NCCL selects by, and is not
		// written twice.
		{"family set", "IB_ADDR_FAMILY = \"AF_INET6\"\n", twoPorts,
			[]Var{{"NCCL_IB_GID_INDEX", "-1"}, {"NCCL_IB_ROCE_VERSION_NUM", "2"}, {"NCCL_IB_ADDR_FAMILY", "AF_INET6"}},
			"dynamic: the profile sets IB_ADDR_FAMILY, which NCCL applies only when it selects the GID itself; NCCL ≥ 2.21 selects per device with ROCE_VERSION_NUM=2, ADDR_FAMILY=AF_INET6"},
	} {
		t.Run(c.name, func(t *testing.T) {
			p := loadProfile(t, "[nccl]\nIB_GID_INDEX = \"auto\"\n"+c.profile)
			d := Derive(p, c.ports)
			if len(d.Unresolved) != 0 || !reflect.DeepEqual(d.Vars, c.vars) {
				t.Errorf("vars %v, unresolved %+v; want %v", d.Vars, d.Unresolved, c.vars)
			}
			if d.GID == nil || d.GID.String() != c.choice {
				t.Errorf("choice %v\nwant     %s", d.GID, c.choice)
			}
		})
	}
}

// A file rocectl manages is written whole or not at all: one variable
// that cannot be derived leaves every setting of the file out.
func TestResolveNeverWritesPartOfTheFile(t *testing.T) {
	p := loadProfile(t, "[nccl]\nwrite = \"/etc/nccl.conf\"\ngeneration = \"pre-2.21\"\nIB_HCA = \"auto\"\nIB_GID_INDEX = \"auto\"\nIB_TIMEOUT = 22\n")
	ports := append([]port.Port(nil), twoPorts...)
	ports[1].RoCEv2GID = 5
	d := policy.Resolve(p, ports)
	Resolve(d)
	if len(d.Host) != 0 || len(d.Unresolved) != 1 || d.Unresolved[0].Key != "host.nccl.NCCL_IB_GID_INDEX" ||
		!strings.Contains(d.Unresolved[0].Reason, "/etc/nccl.conf is left as it is") {
		t.Fatalf("host settings %+v, unresolved %+v", d.Host, d.Unresolved)
	}
}

// Resolve adds the file's settings only when the profile manages the file
// and a port matched.
func TestResolveAddsNCCLFileSettings(t *testing.T) {
	p := loadProfile(t, "[nccl]\nwrite = \"/etc/nccl.conf\"\nIB_HCA = \"auto\"\n")
	d := policy.Resolve(p, twoPorts)
	Resolve(d)
	if len(d.Host) != 1 || d.Host[0].Key != "host.nccl.NCCL_IB_HCA" || d.Host[0].Kind != policy.KindNCCL || d.Host[0].Value != "=mlx5_0:1,mlx5_1:1" {
		t.Fatalf("host settings %+v", d.Host)
	}
	d = policy.Resolve(p, nil)
	Resolve(d)
	if len(d.Host) != 0 {
		t.Fatalf("host settings without a matched port: %+v", d.Host)
	}
}

// Every NCCL setting a profile can produce is in the profiles README's
// settings table (policy's docs test covers the port settings).
func TestReadmeDocumentsNCCLSettings(t *testing.T) {
	readme, err := os.ReadFile("../profiles/README.md")
	if err != nil {
		t.Fatal(err)
	}
	p, err := policy.Load("../policy/testdata/all-keys.toml", policy.LoadOptions{AllowInsecure: true})
	if err != nil {
		t.Fatal(err)
	}
	d := policy.Resolve(p, twoPorts)
	Resolve(d)
	if len(d.Host) == 0 {
		t.Fatal("all-keys.toml gives no NCCL file setting")
	}
	if !strings.Contains(string(readme), "`host.nccl.NCCL_<NAME>`") && !strings.Contains(string(readme), "host.nccl.") {
		t.Errorf("profiles/README.md does not document the host.nccl.* settings")
	}
}

// IB_HCA = "auto" names a RoCE LAG device once and leaves VFs out unless
// the profile targets them by role.
func TestHCAListLAGAndVFs(t *testing.T) {
	ports := []port.Port{
		{Netdev: "bond0", RDMADevice: "mlx5_bond_0", PortNum: 1, Role: port.RoleBond, Bond: &port.Bond{Name: "bond0", Slaves: []port.Slave{{Netdev: "ens1f0np0"}, {Netdev: "ens1f1np1"}}}},
		{Netdev: "bond0", RDMADevice: "mlx5_bond_0", PortNum: 1, Role: port.RoleBond},
		{Netdev: "enp7s2f2", RDMADevice: "mlx5_4", PortNum: 1, Role: port.RoleVF, PF: "enp7s0f0np0"},
	}
	p := &policy.Profile{}
	if got, _ := hcaList(hcaPorts(p, ports)); got != "=mlx5_bond_0:1" {
		t.Errorf("IB_HCA %q, want =mlx5_bond_0:1", got)
	}
	p.Match.Roles = []string{port.RoleBond, port.RoleVF}
	if got, _ := hcaList(hcaPorts(p, ports)); got != "=mlx5_bond_0:1,mlx5_4:1" {
		t.Errorf("IB_HCA with roles vf: %q", got)
	}
}
