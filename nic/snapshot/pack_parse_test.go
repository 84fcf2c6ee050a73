package snapshot

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/rocectl/rocectl/nic"
)

// A pack that is not well formed is refused whole, naming the byte offset
// of the entry at fault and what is wrong with it.
func TestPackFormatErrors(t *testing.T) {
	const ok = packMagic + "d 4 0\n/sys\nf 8 3\n/sys/mtu900\n"
	if _, err := parsePack("p", []byte(ok)); err != nil {
		t.Fatalf("well-formed pack: %v", err)
	}
	for _, c := range []struct{ pack, want string }{
		{"rocectl-files 2\n", `not a pack of format "rocectl-files 1"`},
		{"", `not a pack of format`},
		{packMagic + "d 4 0", "entry at byte 16: no end of line"},
		{packMagic + "x 4 0\n/sys\n", `"x 4 0" is not TYPE PATHLEN DATALEN`},
		{packMagic + "d 04 0\n/sys\n", `"d 04 0" is not TYPE`},
		{packMagic + "d 4 0 1\n/sys\n", `"d 4 0 1" is not TYPE`},
		{packMagic + "d 4  0\n/sys\n", `is not TYPE`},
		{packMagic + "d -4 0\n/sys\n", `is not TYPE`},
		{packMagic + "d 4 9999999999\n/sys\n", `is not TYPE`},
		{packMagic + "d 40 0\n/sys\n", "lengths 40 0 do not fit"},
		{packMagic + "f 4 2\n/sys\n", "lengths 4 2 do not fit"},
		{packMagic + "f 4 1\n/sysxy", "/sys: no newline after its data"},
		{packMagic + "d 4 1\n/sysx\n", "/sys: a directory with data"},
		{packMagic + "d 4 0\n/sys\nd 4 0\n/sys\n", "entry at byte 27: /sys: listed twice"},
		{packMagic + "f 8 0\n/sys/mtu\n", "/sys/mtu: its directory is not listed before it"},
		{packMagic + "f 4 0\n/sys\nf 8 0\n/sys/mtu\n", "/sys/mtu: its parent is not a directory"},
		{packMagic + "d 5 0\n/sys/\n", "/sys/: not an absolute, clean host path"},
		{packMagic + "d 3 0\nsys\n", "sys: not an absolute, clean host path"},
		{packMagic + "d 6 0\n/a/../\n", "not an absolute, clean host path"},
		{packMagic + "l 4 0\n/sys\n", "/sys: not an absolute, clean host path"}, // an empty link target
		{packMagic + "d 3 0\n//x\n", "//x: not an absolute, clean host path"},
		{packMagic + "f 4 1\n/a\x00bZ\n", "not an absolute, clean host path"},
		// Depth first, each directory's entries in name order.
		{packMagic + "d 2 0\n/b\nd 2 0\n/a\n", "entry at byte 25: /a: listed twice, or not after its directory's other entries in name order"},
		{packMagic + "d 2 0\n/a\nd 2 0\n/b\nf 4 0\n/a/x\n", "entry at byte 34: /a/x: its directory is not listed before it, or other entries came between"},
	} {
		_, err := parsePack("p", []byte(c.pack))
		if err == nil || !strings.Contains(err.Error(), c.want) || !strings.HasPrefix(err.Error(), "snapshot: p: ") {
			t.Errorf("%q: %v, want %q", c.pack, err, c.want)
		}
	}
}

// Pack and parsePack round-trip every kind of entry, any byte in a file
// included, and Open refuses a snapshot that holds both a pack and a tree.
func TestPackRoundTripAndMixedSnapshot(t *testing.T) {
	dir := t.TempDir()
	if err := Write(dir, testMeta(), nil, nic.NewFS(fixtureHost, true), []string{"/sys/class/net"}); err != nil {
		t.Fatal(err)
	}
	bin := "a\nb\x00\xff 3 4\n"
	for p, data := range map[string]string{"etc/bin": bin, "etc/empty": ""} {
		if err := os.MkdirAll(filepath.Join(dir, filepath.Dir(p)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, p), []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := Pack(dir); err != nil {
		t.Fatal(err)
	}
	ents, _ := os.ReadDir(dir)
	var names []string
	for _, e := range ents {
		names = append(names, e.Name())
	}
	if strings.Join(names, " ") != "files.pack kernel.json snapshot.json" {
		t.Errorf("packed snapshot holds %v", names)
	}
	s, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	fs := s.FS()
	for p, want := range map[string]string{"/etc/bin": bin, "/etc/empty": ""} {
		if got, err := fs.ReadFile(p); err != nil || string(got) != want {
			t.Errorf("%s: %q %v, want %q", p, got, err, want)
		}
	}
	if l, err := fs.Readlink("/sys/class/net/ens1f0np0"); err != nil || !strings.HasPrefix(l, "../../devices/") {
		t.Errorf("readlink: %q %v", l, err)
	}
	if err := Pack(dir); err == nil || !strings.Contains(err.Error(), "packed already") {
		t.Errorf("second Pack: %v", err)
	}
	if err := os.Mkdir(filepath.Join(dir, "sys"), 0o755); err != nil {
		t.Fatal(err)
	}
	if _, err := Open(dir); err == nil || !strings.Contains(err.Error(), "holds both files.pack and a tree of files (sys)") {
		t.Errorf("Open of a pack beside a tree: %v", err)
	}
	if err := Pack(t.TempDir()); !errors.Is(err, ErrNotSnapshot) {
		t.Errorf("Pack of an empty directory: %v, want ErrNotSnapshot", err)
	}
}

// The example in docs/snapshot-format.md is a pack that parses.
func TestPackDocExampleParses(t *testing.T) {
	doc, err := os.ReadFile("../../docs/snapshot-format.md")
	if err != nil {
		t.Fatal(err)
	}
	_, after, ok := strings.Cut(string(doc), "For example:\n\n```\n")
	example, _, ok2 := strings.Cut(after, "```\n")
	if !ok || !ok2 || !strings.HasPrefix(example, packMagic) {
		t.Fatalf("no pack example in the doc")
	}
	tr, err := parsePack("doc", []byte(example))
	if err != nil {
		t.Fatal(err)
	}
	fs := nic.NewMemFS(t.TempDir(), tr)
	if l, err := fs.Readlink("/sys/class/net/ens1f0np0"); err != nil || !strings.HasSuffix(l, "/net/ens1f0np0") {
		t.Errorf("the example's link reads %q, %v", l, err)
	}
}

// Pack refuses a FIFO in the tree (reading it would hang root's capture)
// and a file with another hard link (a secret of root's linked in), and
// copies a symlink as a link, never what it points at.
func TestPackRefusesAFIFOAndKeepsLinksAsLinks(t *testing.T) {
	dir := t.TempDir()
	if err := Write(dir, testMeta(), nil, nic.NewFS(fixtureHost, true), []string{"/sys/class/net"}); err != nil {
		t.Fatal(err)
	}
	secret := filepath.Join(t.TempDir(), "secret")
	if err := os.WriteFile(secret, []byte("root:$6$hash\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Dir(secret), filepath.Join(dir, "sys", "out")); err != nil {
		t.Fatal(err)
	}
	// A hard link to a file of root's, planted in the tree.
	if err := os.Link(secret, filepath.Join(dir, "sys", "planted")); err != nil {
		t.Fatal(err)
	}
	if err := Pack(dir); !errors.Is(err, nic.ErrHardLinked) || !strings.Contains(err.Error(), "planted") {
		t.Fatalf("Pack with a hard link to a secret: %v, want ErrHardLinked naming it", err)
	}
	if err := os.Remove(filepath.Join(dir, "sys", "planted")); err != nil {
		t.Fatal(err)
	}
	// A link at the top of the snapshot is packed as a link.
	if err := os.Symlink("sys", filepath.Join(dir, "top")); err != nil {
		t.Fatal(err)
	}
	fifo := filepath.Join(dir, "sys", "zz-fifo")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := Pack(dir); !errors.Is(err, nic.ErrNotRegular) || !strings.Contains(err.Error(), "zz-fifo") {
		t.Fatalf("Pack with a FIFO: %v, want ErrNotRegular naming it", err)
	}
	if _, err := os.Stat(filepath.Join(dir, PackFile)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a failed Pack left %s: %v", PackFile, err)
	}
	if err := os.Remove(fifo); err != nil {
		t.Fatal(err)
	}
	if err := Pack(dir); err != nil {
		t.Fatal(err)
	}
	pack, err := os.ReadFile(filepath.Join(dir, PackFile))
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(pack), "root:$6$") {
		t.Error("the pack holds the file a symlink pointed at")
	}
	s, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	if l, err := s.FS().Readlink("/sys/out"); err != nil || l != filepath.Dir(secret) {
		t.Errorf("/sys/out reads %q, %v: want the link as it was", l, err)
	}
	if l, err := s.FS().Readlink("/top"); err != nil || l != "sys" {
		t.Errorf("/top reads %q, %v: want the link as it was", l, err)
	}
}
