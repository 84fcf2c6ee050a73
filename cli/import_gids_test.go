package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rocectl/rocectl/doc"
)

// A show_gids dump of a bnxt host (no-break spaces, empty IPv4 cells, a
// VLAN's GIDs in the port's table, an mlx5 port's rows mixed in) used to
// end "nothing usable": the GIDs never reached the snapshot. Imported
// with the port's ethtool -i, nccl-env on the snapshot now gives the
// index NCCL itself picks on that host: 7, the first RoCE v2 IPv4 GID of
// bnxt_re0 port 1.
func TestImportShowGidsGivesNCCLGIDIndex(t *testing.T) {
	tmp := t.TempDir()
	snap := filepath.Join(tmp, "snap")
	code, out, errs := run(t, nil, "import", "-o", snap, "--netdev", "ens21f0np0",
		repo("nic/dump/testdata/constructed/bnxt-show_gids-nbsp-vlan-mixed.txt"),
		repo("nic/dump/testdata/corpus/bnxt_en-showmax-ethtool-i.txt"))
	if code != ExitOK || strings.Contains(out, "warning:") || !strings.Contains(out, "bnxt_re0/1: GID table (10 entries, netdev ens21f0np0) from show_gids") ||
		!strings.Contains(out, ", 2 GID table(s),") {
		t.Fatalf("import: exit %d\n%s%s", code, out, errs)
	}
	prof := filepath.Join(tmp, "bnxt.toml")
	// [match] by RDMA device, which show_gids names for every row: by
	// driver, the mlx5 port without an ethtool -i could not be told in or
	// out, and nccl-env would say so (TestNCCLEnvOnAnImportWithUnknownMatch).
	if err := os.WriteFile(prof, []byte("name = \"bnxt-nccl\"\n\n[match]\nrdma_devices = [\"bnxt_re*\"]\n\n[nccl]\nIB_HCA = \"auto\"\nIB_GID_INDEX = \"auto\"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	code, out, errs = run(t, nil, "nccl-env", "-o", "json", "-p", prof, "--snapshot", snap)
	var nd doc.NCCLEnv
	if err := json.Unmarshal([]byte(out), &nd); code != ExitOK || err != nil {
		t.Fatalf("nccl-env: exit %d (%v)\n%s%s", code, err, out, errs)
	}
	if nd.Variables["NCCL_IB_GID_INDEX"] != "7" || nd.Variables["NCCL_IB_HCA"] != "=bnxt_re0:1" || nd.GIDIndex == nil || nd.GIDIndex.Mode != "pinned" {
		t.Errorf("nccl-env: %+v %+v\n%s", nd.Variables, nd.GIDIndex, errs)
	}
	// The show_gids dump alone is usable too: its ports are RDMA ports.
	code, out, errs = run(t, nil, "import", "-o", filepath.Join(tmp, "gids-only"), repo("nic/dump/testdata/constructed/bnxt-show_gids-nbsp-vlan-mixed.txt"))
	if code != ExitOK || !strings.Contains(out, "0 netdev(s), 2 GID table(s)") {
		t.Errorf("show_gids alone: exit %d\n%s%s", code, out, errs)
	}
}
