package nccl

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/rocectl/rocectl/policy"
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

var twoPorts = []policy.Port{
	{Netdev: "ens1f0np0", RDMADevice: "mlx5_0", PortNum: 1, Driver: "mlx5_core", PCI: "0000:3b:00.0", RoCEv2GID: 3},
	{Netdev: "ens1f1np1", RDMADevice: "mlx5_1", PortNum: 1, Driver: "mlx5_core", PCI: "0000:3b:00.1", RoCEv2GID: 3},
}

func TestEnvDerivesAutoValues(t *testing.T) {
	p := loadProfile(t, "[roce]\ndefault_tos = 106\n[nccl]\nIB_HCA = \"auto\"\nIB_GID_INDEX = \"auto\"\nIB_TIMEOUT = 22\n")
	vars, unresolved := Env(p, twoPorts)
	want := []Var{{"NCCL_IB_HCA", "=mlx5_0:1,mlx5_1:1"}, {"NCCL_IB_GID_INDEX", "3"}, {"NCCL_IB_TIMEOUT", "22"}, {"NCCL_IB_TC", "106"}}
	if len(unresolved) != 0 || !reflect.DeepEqual(vars, want) {
		t.Fatalf("Env = %v, unresolved %v; want %v", vars, unresolved, want)
	}
}

func TestEnvRefusesDisagreeingGIDIndex(t *testing.T) {
	p := loadProfile(t, "[nccl]\nIB_GID_INDEX = \"auto\"\n")
	ports := append([]policy.Port(nil), twoPorts...)
	ports[1].RoCEv2GID = 5
	vars, unresolved := Env(p, ports)
	if len(vars) != 0 || len(unresolved) != 1 || !strings.Contains(unresolved[0].Reason, "mlx5_0:1=3, mlx5_1:1=5") {
		t.Fatalf("Env = %v, unresolved %+v", vars, unresolved)
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
