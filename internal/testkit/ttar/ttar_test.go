package ttar

import (
	"bytes"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const captures = "../../../testdata/captures"

// TestParseMlx5Capture checks values and escaping against the real procfs
// archive (counted with grep on the archive itself).
func TestParseMlx5Capture(t *testing.T) {
	f, err := os.Open(filepath.Join(captures, "mlx5-procfs-sysfs-infiniband-ecn.ttar"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	entries, err := Parse(f)
	if err != nil {
		t.Fatal(err)
	}
	var dirs, files int
	byPath := map[string]Entry{}
	for _, e := range entries {
		byPath[e.Path] = e
		switch e.Kind {
		case Dir:
			dirs++
		case File:
			files++
		}
	}
	// grep -c '^Directory:' / '^Path:' on the capture.
	if dirs != 10 || files != 89 {
		t.Errorf("got %d dirs, %d files; want 10, 89", dirs, files)
	}
	for p, want := range map[string]string{
		"fixtures/sys/class/infiniband/mlx5_0/board_id":                     "SM_2001000001034\n",
		"fixtures/sys/class/infiniband/mlx5_0/node_guid":                    "0a7f:bc12:45ef:d23b", // "EOF": no newline
		"fixtures/sys/class/infiniband/mlx5_0/ports/1/hw_counters/lifespan": "10\n",
		"fixtures/sys/class/infiniband/mlx5_0/ports/1/rate":                 "25 Gb/sec (1X EDR)\n",
		"fixtures/sys/class/net/eth0/ecn/roce_np/cnp_dscp":                  "48\n",
		"fixtures/sys/class/net/eth0/ecn/roce_rp/rpg_time_reset":            "300\n",
	} {
		e, ok := byPath[p]
		if !ok {
			t.Errorf("%s missing", p)
			continue
		}
		if e.Kind != File || string(e.Data) != want || e.Mode != 0o644 {
			t.Errorf("%s = %v %q %o; want file %q 644", p, e.Kind, e.Data, e.Mode, want)
		}
	}
	if e := byPath["fixtures/sys/class/net/eth0/ecn"]; e.Kind != Dir || e.Mode != 0o755 {
		t.Errorf("ecn dir = %+v", e)
	}
}

func TestExtractNodeExporterCapture(t *testing.T) {
	dir := t.TempDir()
	if err := ExtractFile(filepath.Join(captures, "mlx4-i40iw-node_exporter-sysfs-infiniband.ttar"), dir); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(dir, "sys/class/infiniband/mlx4_0/ports/1/counters/port_rcv_data"))
	if err != nil {
		t.Fatal(err)
	}
	if string(b) != "4631917\n" {
		t.Errorf("port_rcv_data = %q", b)
	}
	st, err := os.Stat(filepath.Join(dir, "sys/class/infiniband/mlx4_0"))
	if err != nil || !st.IsDir() {
		t.Fatalf("mlx4_0: %v %v", st, err)
	}
}

// TestEscapes pins the ttar script's escaping rules: NULLBYTE, \NULLBYTE,
// \EOF and a trailing EOF that means "no newline at end of file".
func TestEscapes(t *testing.T) {
	archive := strings.Join([]string{
		"# Archive created by ttar -c -f x.ttar d",
		"Directory: d",
		"Mode: 755",
		"# ttar - - - - - -",
		"Path: d/cmdline",
		"Lines: 1",
		"vimNULLBYTEtest.goNULLBYTE+10NULLBYTEEOF",
		"Mode: 444",
		"# ttar - - - - - -",
		"Path: d/words",
		"Lines: 3",
		`a \EOF b \NULLBYTE c`,
		"",
		"\tlast\rEOF",
		"Mode: 600",
		"Path: d/empty",
		"Lines: 0",
		"Mode: 644",
		"Path: d/link",
		"SymlinkTo: ../d/words",
		"",
	}, "\n")
	entries, err := Parse(strings.NewReader(archive))
	if err != nil {
		t.Fatal(err)
	}
	want := []Entry{
		{Kind: Dir, Path: "d", Mode: 0o755},
		{Kind: File, Path: "d/cmdline", Mode: 0o444, Data: []byte("vim\x00test.go\x00+10\x00")},
		{Kind: File, Path: "d/words", Mode: 0o600, Data: []byte("a EOF b NULLBYTE c\n\n\tlast\r")},
		{Kind: File, Path: "d/empty", Mode: 0o644, Data: []byte{}},
		{Kind: Symlink, Path: "d/link", Target: "../d/words"},
	}
	if len(entries) != len(want) {
		t.Fatalf("got %d entries, want %d: %+v", len(entries), len(want), entries)
	}
	for i := range want {
		g, w := entries[i], want[i]
		if g.Kind != w.Kind || g.Path != w.Path || g.Mode != w.Mode || !bytes.Equal(g.Data, w.Data) || g.Target != w.Target {
			t.Errorf("entry %d = %+v, want %+v", i, g, w)
		}
	}

	dir := t.TempDir()
	if err := WriteEntries(entries, dir); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(dir, "d/link"))
	if err != nil || string(b) != "a EOF b NULLBYTE c\n\n\tlast\r" {
		t.Errorf("through link: %q %v", b, err)
	}
	if target, _ := os.Readlink(filepath.Join(dir, "d/link")); target != "../d/words" {
		t.Errorf("link target %q", target)
	}
	st, err := os.Stat(filepath.Join(dir, "d/cmdline"))
	if err != nil || st.Mode().Perm() != 0o444 {
		t.Errorf("cmdline mode %v %v", st, err)
	}
	if st, err := os.Stat(filepath.Join(dir, "d/empty")); err != nil || st.Size() != 0 {
		t.Errorf("empty: %v %v", st, err)
	}
}

func TestLaterEntryReplaces(t *testing.T) {
	archive := "Path: a\nLines: 1\none\nMode: 644\nPath: a\nSymlinkTo: b\nPath: b\nLines: 1\ntwo\nMode: 644\n"
	dir := t.TempDir()
	if err := Extract(strings.NewReader(archive), dir); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(dir, "a"))
	if err != nil || string(b) != "two\n" {
		t.Errorf("a = %q %v", b, err)
	}
}

func TestSyntaxErrors(t *testing.T) {
	for name, archive := range map[string]string{
		"escape":          "Path: ../etc/passwd\nLines: 0\nMode: 644\n",
		"absolute":        "Directory: /etc\nMode: 755\n",
		"unknown keyword": "Directory: a\nMode: 755\nFoo: bar\n",
		"missing mode":    "Path: a\nLines: 1\nx\nPath: b\nLines: 0\nMode: 644\n",
		"truncated":       "Path: a\nLines: 3\nx\n",
		"bad count":       "Path: a\nLines: many\n",
		"bad mode":        "Directory: a\nMode: 999\n",
		"stray mode":      "Mode: 644\n",
		"no body":         "Path: a\n",
	} {
		_, err := Parse(strings.NewReader(archive))
		var se *SyntaxError
		if !errors.As(err, &se) || se.Line == 0 {
			t.Errorf("%s: err = %v, want *SyntaxError with a line", name, err)
		}
	}
}

// TestSymlinkCannotEscape: a link pointing outside, then a file "through"
// it, must not write outside the extraction directory.
func TestSymlinkCannotEscape(t *testing.T) {
	outside := t.TempDir()
	dir := t.TempDir()
	archive := "Path: evil\nSymlinkTo: " + outside + "\nPath: evil/pwned\nLines: 1\nx\nMode: 644\n"
	err := Extract(strings.NewReader(archive), dir)
	if err == nil {
		t.Fatal("extract through an absolute symlink succeeded")
	}
	if _, err := os.Stat(filepath.Join(outside, "pwned")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("file escaped the root: %v", err)
	}
}

// TestUpstreamArchives extracts the complete procfs and node_exporter
// archives when the shared fixture directory is present (it is not part of
// the repository); it exercises symlinks and NULL bytes at scale.
func TestUpstreamArchives(t *testing.T) {
	const up = "/work/shared/fixtures/upstream"
	for _, name := range []string{"procfs-testdata-fixtures.ttar", "node_exporter-collector-fixtures-sys.ttar"} {
		p := filepath.Join(up, name)
		if _, err := os.Stat(p); err != nil {
			t.Skipf("%s not available: %v", p, err)
		}
		dir := t.TempDir()
		if err := ExtractFile(p, dir); err != nil {
			t.Fatal(err)
		}
	}
	dir := t.TempDir()
	if err := ExtractFile(filepath.Join(up, "procfs-testdata-fixtures.ttar"), dir); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(dir, "fixtures/proc/26231/cmdline"))
	if err != nil || string(b) != "vim\x00test.go\x00+10\x00" {
		t.Errorf("cmdline = %q %v", b, err)
	}
}

func FuzzParse(f *testing.F) {
	f.Add("Directory: a\nMode: 755\nPath: a/b\nLines: 1\nxEOF\nMode: 644\n")
	f.Add("Path: l\nSymlinkTo: x\n")
	f.Add("Path: a\nLines: 2\nNULLBYTE\\EOF\n\\NULLBYTEEOF\nMode: 600\n")
	f.Fuzz(func(t *testing.T, s string) {
		entries, err := Parse(strings.NewReader(s))
		if err != nil {
			return
		}
		for _, e := range entries {
			if filepath.IsAbs(e.Path) || e.Path == ".." || strings.HasPrefix(e.Path, "../") {
				t.Fatalf("escaping path accepted: %q", e.Path)
			}
		}
	})
}
