package cli

import (
	"bytes"
	"errors"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rocectl/rocectl/nccl"
	"github.com/rocectl/rocectl/nic"
)

// -update-topo (or -update, where another test file of this package
// defines it) rewrites testdata/topo/*.golden.
var updateTopo = flag.Bool("update-topo", false, "rewrite agent/testdata/topo/*.golden")

func topoUpdating() bool {
	if *updateTopo {
		return true
	}
	if f := flag.Lookup("update"); f != nil {
		return f.Value.String() == "true"
	}
	return false
}

// The fixture hosts are nic's PCI trees (nic/testdata/pci, see its README).
func TestRenderTopologyGolden(t *testing.T) {
	for _, host := range []string{"hgx-h100-8gpu", "pcie-4gpu", "nested-switches"} {
		t.Run(host, func(t *testing.T) {
			topo, err := nccl.ReadTopology(nic.NewFS(filepath.Join("..", "nic", "testdata", "pci", host), true))
			if err != nil {
				t.Fatal(err)
			}
			var b bytes.Buffer
			if err := RenderTopology(&b, topo); err != nil {
				t.Fatal(err)
			}
			golden := filepath.Join("testdata", "topo", host+".golden")
			if topoUpdating() {
				if err := os.MkdirAll(filepath.Dir(golden), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(golden, b.Bytes(), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("%v (create it with -update-topo)", err)
			}
			if !bytes.Equal(b.Bytes(), want) {
				t.Errorf("output differs from %s (rerun with -update-topo if intended):\n%s", golden, b.String())
			}
			for i, l := range strings.Split(b.String(), "\n") {
				if strings.TrimRight(l, " ") != l {
					t.Errorf("line %d has trailing spaces: %q", i+1, l)
				}
			}
		})
	}
}

func TestRenderTopologyEmpty(t *testing.T) {
	var b bytes.Buffer
	if err := RenderTopology(&b, &nccl.Topology{}); err != nil {
		t.Fatal(err)
	}
	want := "GPU/NIC PCIe topology (NCCL path types)\n\nNo NVIDIA GPU and no RDMA NIC found.\n"
	if b.String() != want {
		t.Fatalf("got %q, want %q", b.String(), want)
	}

	// NICs but no GPU: the NICs are listed, no matrix, no affinity.
	b.Reset()
	topo := nccl.BuildTopology([]nic.PCIDevice{{Addr: "0000:41:00.0", Class: "0x020000", Vendor: "0x15b3", Device: "0x101b",
		NUMANode: 0, RDMADevs: []string{"mlx5_0"}, Netdevs: []string{"enp65s0np0"}}})
	if err := RenderTopology(&b, topo); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	if !strings.Contains(out, "No NVIDIA GPU found.") || !strings.Contains(out, "mlx5_0  0000:41:00.0  15b3:101b  NUMA 0  -  enp65s0np0") ||
		strings.Contains(out, "NCCL_IB_HCA") || strings.Contains(out, "affinity") {
		t.Fatalf("got:\n%s", out)
	}
}

type failWriter struct{ n int }

func (f *failWriter) Write(p []byte) (int, error) {
	if f.n <= 0 {
		return 0, errors.New("disk full")
	}
	f.n--
	return len(p), nil
}

func TestRenderTopologyWriteError(t *testing.T) {
	topo, err := nccl.ReadTopology(nic.NewFS(filepath.Join("..", "nic", "testdata", "pci", "pcie-4gpu"), true))
	if err != nil {
		t.Fatal(err)
	}
	for n := 0; n < 5; n++ {
		if err := RenderTopology(&failWriter{n: n}, topo); err == nil || err.Error() != "disk full" {
			t.Errorf("after %d writes: err %v, want disk full", n, err)
		}
	}
}
