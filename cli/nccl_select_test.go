package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// nccl-env with IB_GID_INDEX = "select" on the captured hosts: the
// family and version instead of an index where every port has a GID
// NCCL selects, and nothing printed, with the port named, where one has
// none.
func TestNCCLEnvSelect(t *testing.T) {
	prof := filepath.Join(t.TempDir(), "select.toml")
	if err := os.WriteFile(prof, []byte("[roce]\ndefault_tos = 106\n[nccl]\nIB_HCA = \"auto\"\nIB_GID_INDEX = \"select\"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	code, out, errs := run(t, nil, "nccl-env", "-p", prof, "--snapshot", repo("testdata/hosts/cx6dx-ofed-lossless"))
	wantOut := "NCCL_IB_HCA==mlx5_0:1,mlx5_1:1\nNCCL_IB_GID_INDEX=-1\nNCCL_IB_ROCE_VERSION_NUM=2\nNCCL_IB_ADDR_FAMILY=AF_INET\nNCCL_IB_TC=106\n"
	wantErr := "NCCL_IB_GID_INDEX: select: NCCL ≥ 2.21 selects per device with ROCE_VERSION_NUM=2, ADDR_FAMILY=AF_INET: mlx5_0:1 → 172.19.0.60 (index 5, RoCE v2, ens1f0np0), mlx5_1:1 → "
	if code != ExitOK || out != wantOut || !strings.Contains(errs, wantErr) {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errs)
	}
	code, out, errs = run(t, nil, "nccl-env", "-p", prof, "--snapshot", repo("testdata/hosts/cx7-upstream-factory"))
	if code != ExitError || out != "" || !strings.Contains(errs, "IB_GID_INDEX: cannot derive: rocep8s0f1:1: link-local only (fe80::ba59:9fff:fe37:8269 (index 0, IB/RoCE v1, enp8s0f1np1)") ||
		strings.Contains(errs, "rocep8s0f0:1: ") {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errs)
	}

	// -o json carries the warning (NCCL 2.26: the file's IB_TC overrides
	// communicators' classes) and the LAG's note.
	if err := os.WriteFile(prof, []byte("[roce]\ndefault_tos = 106\n[nccl]\ngeneration = \"2.26\"\nIB_HCA = \"auto\"\nIB_GID_INDEX = \"select\"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	_, out, _ = run(t, nil, "nccl-env", "-o", "json", "-p", prof, "--snapshot", repo("testdata/hosts/cx5-roce-lag"))
	var nd struct {
		Variables map[string]string     `json:"variables"`
		Warnings  []string              `json:"warnings"`
		Notes     []string              `json:"notes"`
		GIDIndex  struct{ Mode string } `json:"gid_index"`
	}
	if err := json.Unmarshal([]byte(out), &nd); err != nil || nd.GIDIndex.Mode != "select" || nd.Variables["NCCL_IB_ADDR_FAMILY"] != "AF_INET" ||
		len(nd.Warnings) != 1 || !strings.HasPrefix(nd.Warnings[0], "NCCL_IB_TC=106 in the environment overrides") ||
		len(nd.Notes) != 1 || !strings.HasPrefix(nd.Notes[0], "mlx5_bond_0 is a RoCE LAG (bond0: ") {
		t.Fatalf("%v\n%s", err, out)
	}
}

// An IPv6-only Thor2 host known only from its show_gids dump (imported):
// "select" writes AF_INET6, as NCCL must select there; "auto" could not
// pin an index (there is no IPv4 GID) and leaves NCCL to AF_INET, which
// finds none.
func TestNCCLEnvSelectOnImportedIPv6OnlyDump(t *testing.T) {
	tmp := t.TempDir()
	snap := filepath.Join(tmp, "snap")
	if code, out, errs := run(t, nil, "import", "-o", snap, repo("nic/dump/testdata/constructed/bnxt-thor2-show_gids-ipv6only.txt")); code != ExitOK {
		t.Fatalf("import: exit %d\n%s%s", code, out, errs)
	}
	prof := filepath.Join(tmp, "p.toml")
	if err := os.WriteFile(prof, []byte("[match]\nrdma_devices = [\"bnxt_re*\"]\n[nccl]\nIB_HCA = \"auto\"\nIB_GID_INDEX = \"select\"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	code, out, errs := run(t, nil, "nccl-env", "-p", prof, "--snapshot", snap)
	if code != ExitOK || out != "NCCL_IB_HCA==bnxt_re0:1,bnxt_re1:1\nNCCL_IB_GID_INDEX=-1\nNCCL_IB_ROCE_VERSION_NUM=2\nNCCL_IB_ADDR_FAMILY=AF_INET6\n" ||
		!strings.Contains(errs, "bnxt_re0:1 → 2001:db8:c11:1:5e6f:69ff:fe31:a200 (index 3, RoCE v2, ens1f0np0)") {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errs)
	}
	// Forcing AF_INET names each port and says why.
	if err := os.WriteFile(prof, []byte("[match]\nrdma_devices = [\"bnxt_re*\"]\n[nccl]\nIB_HCA = \"auto\"\nIB_GID_INDEX = \"select\"\nIB_ADDR_FAMILY = \"AF_INET\"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	code, out, errs = run(t, nil, "nccl-env", "-p", prof, "--snapshot", snap)
	if code != ExitError || out != "" || !strings.Contains(errs, "bnxt_re0:1: IPv6-only (") || !strings.Contains(errs, "bnxt_re1:1: IPv6-only (") {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errs)
	}
}

// A user's pinned index left in /etc/nccl.conf would defeat "select":
// the managed block writes -1 and says that it now overrides the pin.
func TestNCCLEnvSelectOverridesAStalePin(t *testing.T) {
	root := t.TempDir()
	if err := os.MkdirAll(filepath.Join(root, "etc"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.CopyFS(filepath.Join(root, "sys"), os.DirFS(repo("testdata/hosts/cx6dx-ofed-lossless/sys"))); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "etc/nccl.conf"), []byte("NCCL_DEBUG=WARN\nNCCL_IB_GID_INDEX=3\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	prof := filepath.Join(t.TempDir(), "select.toml")
	if err := os.WriteFile(prof, []byte("[nccl]\nIB_HCA = \"auto\"\nIB_GID_INDEX = \"select\"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	code, _, errs := run(t, nil, "--root", root, "nccl-env", "-p", prof, "--write", "/etc/nccl.conf")
	data, err := os.ReadFile(filepath.Join(root, "etc/nccl.conf"))
	if code != ExitOK || err != nil || !strings.Contains(errs, "/etc/nccl.conf:2: NCCL_IB_GID_INDEX=3 is now overridden by rocectl's managed block") ||
		!strings.Contains(string(data), "NCCL_IB_GID_INDEX=-1\nNCCL_IB_ROCE_VERSION_NUM=2\nNCCL_IB_ADDR_FAMILY=AF_INET\n") {
		t.Fatalf("exit %d %v\nstderr:\n%s\nfile:\n%s", code, err, errs, data)
	}
}
