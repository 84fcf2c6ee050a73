package cli

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rocectl/rocectl/nic/dump"
)

// Two mlnx_qos dumps of one --netdev used to be merged without a word,
// the later one winning: swapping them flipped what audit reported.
// Either order is now refused, naming both files, and nothing is
// written.
func TestImportRefusesDumpsOfTwoHosts(t *testing.T) {
	corpus := repo("nic/dump/testdata/corpus")
	a := filepath.Join(corpus, "mlx5-netarbiter-mlnx_qos-dscp-pfc3.txt")
	b := filepath.Join(corpus, "mlx5-mlnx_qos-trust-pcp-default-centos12.txt")
	for _, order := range [][]string{{a, b}, {b, a}} {
		dir := filepath.Join(t.TempDir(), "snap")
		_, err := execute(t, t.Context(), nil, append([]string{"import", "-o", dir, "--netdev", "eth4"}, order...)...)
		if !errors.Is(err, dump.ErrConflict) || ExitCode(err) != ExitError ||
			!strings.Contains(err.Error(), filepath.Base(a)) || !strings.Contains(err.Error(), filepath.Base(b)) ||
			!strings.Contains(err.Error(), "eth4 mlnx_qos output") {
			t.Errorf("%v", err)
		}
		if _, err := os.Stat(dir); !os.IsNotExist(err) {
			t.Errorf("wrote %s (%v)", dir, err)
		}
	}
	// Two hosts' GID tables: mlx5_0 port 1 differs.
	_, err := execute(t, t.Context(), nil, "import", "-o", filepath.Join(t.TempDir(), "snap"),
		filepath.Join(corpus, "mlx5-cx6-show_gids-ibm-spectrumscale.txt"), filepath.Join(corpus, "mlx5-show_gids-centos12-multidev.txt"))
	if !errors.Is(err, dump.ErrConflict) || !strings.Contains(err.Error(), "mlx5_0/1 default GID") {
		t.Errorf("two hosts' show_gids: %v", err)
	}
}

// A dump that names nothing of its host is imported with a note that
// nothing ties it to the others.
func TestImportNotesDumpsWithoutIdentity(t *testing.T) {
	corpus := repo("nic/dump/testdata/corpus")
	qos := filepath.Join(corpus, "mlx5-netarbiter-mlnx_qos-dscp-pfc3.txt")
	code, out, errs := run(t, nil, "import", "-o", filepath.Join(t.TempDir(), "snap"), "--netdev", "ens1f0",
		filepath.Join(corpus, "mlx5-cx6-show_gids-ibm-spectrumscale.txt"), qos)
	if code != ExitOK || !strings.Contains(out, "  note: mlx5-netarbiter-mlnx_qos-dscp-pfc3.txt names no host, MAC, PCI function or RDMA port") ||
		strings.Contains(out, "note: mlx5-cx6-show_gids") {
		t.Errorf("exit %d\n%s%s", code, out, errs)
	}
}
