package cli

import (
	"bufio"
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestMlnxQosLabCorpusHashes ties testdata/lab-mlnx_qos.sha256, against
// which the lab test TestLabMlnxQosImport checks what the real mlnx_qos
// prints in the guest, to the nic/dump corpus files of that output (the
// guest has only cli's testdata): every netdevsim-mlnx_qos-*.txt there is
// listed, with its current hash.
func TestMlnxQosLabCorpusHashes(t *testing.T) {
	f, err := os.Open("testdata/lab-mlnx_qos.sha256")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	listed := map[string]bool{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		want, file, ok := strings.Cut(sc.Text(), "  ")
		if !ok {
			t.Fatalf("bad line %q (want sha256sum's \"HASH  FILE\")", sc.Text())
		}
		listed[file] = true
		b, err := os.ReadFile(repo(filepath.Join("nic/dump/testdata/corpus", file)))
		if err != nil {
			t.Error(err)
			continue
		}
		sum := sha256.Sum256(b)
		if got := hex.EncodeToString(sum[:]); got != want {
			t.Errorf("%s: sha256 %s, listed as %s", file, got, want)
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	files, _ := filepath.Glob(repo("nic/dump/testdata/corpus/netdevsim-mlnx_qos-*.txt"))
	for _, p := range files {
		if !listed[filepath.Base(p)] {
			t.Errorf("%s is not in testdata/lab-mlnx_qos.sha256", filepath.Base(p))
		}
	}
	if len(listed) == 0 {
		t.Error("testdata/lab-mlnx_qos.sha256 lists no file")
	}
}
