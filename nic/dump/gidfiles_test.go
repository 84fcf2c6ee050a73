package dump

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A show_gids dump pasted with no-break spaces (prompt and columns) is
// read as one with spaces: the prompt names its host, every row is a GID.
func TestShowGidsNoBreakSpaces(t *testing.T) {
	b, err := os.ReadFile("testdata/constructed/bnxt-show_gids-nbsp-vlan-mixed.txt")
	if err != nil {
		t.Fatal(err)
	}
	blocks, warns := Parse("g.txt", b)
	if len(warns) != 0 || len(blocks) != 1 || blocks[0].Kind != KindShowGids || blocks[0].Host != "gpu-b07" || len(blocks[0].GIDs) != 14 {
		t.Fatalf("%d blocks %+v, warnings %v", len(blocks), blocks, warns)
	}
	g := blocks[0].GIDs[7]
	if g.Device != "bnxt_re0" || g.Index != 7 || !g.RoCEv2 || g.IPv4 != "10.20.11.7" || g.Netdev != "ens21f0np0" {
		t.Errorf("row 7: %+v", g)
	}
}

// The GID tables become the sysfs files show_gids reads, under
// ImportDevices; an InfiniBand port (no netdev) is left out with a
// warning.
func TestWriteSysTree(t *testing.T) {
	im, err := Build(parseFiles(t, "mlx5-show_gids-centos12-multidev.txt"), "")
	if err != nil {
		t.Fatal(err)
	}
	root := t.TempDir()
	paths, err := im.WriteSysTree(root)
	if err != nil || len(paths) != 2 {
		t.Fatalf("%v %v", paths, err)
	}
	read := func(p string) string {
		t.Helper()
		b, err := os.ReadFile(filepath.Join(root, p))
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	port := "sys/class/infiniband/mlx5_2/ports/1/"
	for file, want := range map[string]string{
		"gids/3":            "0000:0000:0000:0000:0000:ffff:ac11:f238\n",
		"gid_attrs/types/3": "RoCE v2\n",
		"gid_attrs/types/2": "IB/RoCE v1\n",
		"gid_attrs/ndevs/3": "ens6\n",
		"link_layer":        "Ethernet\n",
	} {
		if got := read(port + file); got != want {
			t.Errorf("%s = %q, want %q", port+file, got, want)
		}
	}
	if target, err := os.Readlink(filepath.Join(root, "sys/class/infiniband/mlx5_2")); err != nil || target != "../../devices/rocectl-import/infiniband/mlx5_2" {
		t.Errorf("class link: %q %v", target, err)
	}
	if _, err := os.Lstat(filepath.Join(root, "sys/class/infiniband/mlx5_5")); !os.IsNotExist(err) {
		t.Errorf("the InfiniBand port mlx5_5 was written (%v)", err)
	}
	found := false
	for _, w := range im.Warnings {
		found = found || strings.Contains(w.Msg, "mlx5_5/1 has GIDs without a netdev")
	}
	if !found || im.GIDTables() != 7 {
		t.Errorf("%d GID tables, warnings %v", im.GIDTables(), im.Warnings)
	}
}
