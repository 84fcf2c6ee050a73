package nic

import (
	"errors"
	"os"
	"path/filepath"
	"strings"

	"slices"
	"syscall"
	"testing"
)

// fileInRoot is a root with etc/ and a second directory other/ that a
// swapped etc could be made to point to.
func fileInRoot(t *testing.T) (root string, fs FS) {
	t.Helper()
	root = t.TempDir()
	for _, d := range []string{"etc", "other"} {
		if err := os.Mkdir(filepath.Join(root, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return root, NewFS(root, false)
}

// openIn is fs.OpenFileIn(p), closed when the test ends.
func openIn(t *testing.T, fs FS, p string) *FileIn {
	t.Helper()
	f, err := fs.OpenFileIn(p)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return f
}

func readFile(t *testing.T, p string) string {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// Read takes only a regular file with one name, read from the file it
// opened: a symlink (even to a file root may read), a second hard link, a
// FIFO and a missing file each get their own error.
func TestFileInReadRefusesLinks(t *testing.T) {
	root, fs := fileInRoot(t)
	etc := filepath.Join(root, "etc")
	secret := filepath.Join(root, "other", "secret")
	if err := os.WriteFile(secret, []byte("key=SECRET\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	read := func(name string) error {
		t.Helper()
		f := openIn(t, fs, "/etc/"+name)
		data, _, err := f.Read()
		if err != nil && data != nil {
			t.Errorf("%s: data %q with error %v", name, data, err)
		}
		return err
	}
	if err := os.Symlink("../other/secret", filepath.Join(etc, "symlink")); err != nil {
		t.Fatal(err)
	}
	if err := read("symlink"); !errors.Is(err, ErrSymlink) {
		t.Errorf("symlink: %v, want ErrSymlink", err)
	}
	if err := os.Link(secret, filepath.Join(etc, "hardlink")); err != nil {
		t.Fatal(err)
	}
	if err := read("hardlink"); !errors.Is(err, ErrHardLinked) {
		t.Errorf("hard link: %v, want ErrHardLinked", err)
	}
	if err := syscall.Mkfifo(filepath.Join(etc, "fifo"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := read("fifo"); !errors.Is(err, ErrNotRegular) {
		t.Errorf("FIFO: %v, want ErrNotRegular", err)
	}
	if err := read("missing"); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("missing: %v, want ErrNotExist", err)
	}
	if err := os.WriteFile(filepath.Join(etc, "plain"), []byte("A=1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	f := openIn(t, fs, "/etc/plain")
	if data, st, err := f.Read(); err != nil || string(data) != "A=1\n" || st.Mode&0o777 != 0o644 {
		t.Errorf("plain file: %q, mode %o, %v", data, st.Mode&0o777, err)
	}
}

// The directory is resolved once: when it is swapped for a symlink to
// another directory after OpenFileIn (a user who can write its parent),
// Replace and Remove still act in the directory that was opened, and the
// symlink's target is untouched.
func TestFileInActsInTheDirectoryItOpened(t *testing.T) {
	root, fs := fileInRoot(t)
	f := openIn(t, fs, "/etc/nccl.conf")
	if err := os.Rename(filepath.Join(root, "etc"), filepath.Join(root, "etc.old")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("other", filepath.Join(root, "etc")); err != nil {
		t.Fatal(err)
	}
	if err := f.Replace([]byte("A=1\n"), 0o644, nil); err != nil {
		t.Fatal(err)
	}
	if got := readFile(t, filepath.Join(root, "etc.old", "nccl.conf")); got != "A=1\n" {
		t.Errorf("the opened directory holds %q", got)
	}
	if _, err := os.Lstat(filepath.Join(root, "other", "nccl.conf")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the write followed the swapped-in symlink: %v", err)
	}
	if err := f.Remove(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Lstat(filepath.Join(root, "etc.old", "nccl.conf")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("Remove left the file: %v", err)
	}
}

// A symlinked directory on the way is followed inside the root, as every
// FS path is: an absolute link to /etc reaches the root's etc.
func TestFileInResolvesTheDirectoryInTheRoot(t *testing.T) {
	root, fs := fileInRoot(t)
	if err := os.Symlink("/etc", filepath.Join(root, "conf")); err != nil {
		t.Fatal(err)
	}
	f := openIn(t, fs, "/conf/nccl.conf")
	if err := f.Replace([]byte("B=2\n"), 0o640, nil); err != nil {
		t.Fatal(err)
	}
	if got := readFile(t, filepath.Join(root, "etc", "nccl.conf")); got != "B=2\n" {
		t.Errorf("root's etc holds %q", got)
	}
	st, err := os.Stat(filepath.Join(root, "etc", "nccl.conf"))
	if err != nil || st.Mode().Perm() != 0o640 {
		t.Errorf("mode %v, %v; want 0640", st.Mode().Perm(), err)
	}
	ents, _ := os.ReadDir(filepath.Join(root, "etc"))
	if len(ents) != 1 {
		t.Errorf("etc holds %d entries (a temporary file left behind?)", len(ents))
	}
	if _, err := fs.OpenFileIn("etc/nccl.conf"); err == nil {
		t.Error("a relative path was accepted")
	}
	if _, err := fs.OpenFileIn("/missing/nccl.conf"); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("missing directory: %v, want ErrNotExist", err)
	}
}

// Replace puts a file at a name that holds a symlink: the link is
// replaced, the file it pointed to keeps its content.
func TestFileInReplaceDoesNotWriteThroughASymlink(t *testing.T) {
	root, fs := fileInRoot(t)
	target := filepath.Join(root, "other", "real")
	if err := os.WriteFile(target, []byte("old\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("../other/real", filepath.Join(root, "etc", "nccl.conf")); err != nil {
		t.Fatal(err)
	}
	f := openIn(t, fs, "/etc/nccl.conf")
	if err := f.Replace([]byte("new\n"), 0o644, nil); err != nil {
		t.Fatal(err)
	}
	if got := readFile(t, target); got != "old\n" {
		t.Errorf("the link's target now holds %q", got)
	}
	if st, err := os.Lstat(filepath.Join(root, "etc", "nccl.conf")); err != nil || !st.Mode().IsRegular() {
		t.Errorf("the name is not a regular file now: %v", err)
	}
}

// A file rocectl edits in place (the NCCL config file) above the cap is
// refused before it is read, the cap in the error: a sparse 17 MiB
// nccl.conf allocates nothing.
func TestFileInReadCap(t *testing.T) {
	root := t.TempDir()
	p := filepath.Join(root, "nccl.conf")
	f, err := os.Create(p)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Truncate(MaxFileIn + 1); err != nil {
		t.Fatal(err)
	}
	f.Close()
	in, err := NewFS(root, false).OpenFileIn("/nccl.conf")
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	if _, _, err := in.Read(); !errors.Is(err, ErrTooLarge) || !strings.Contains(err.Error(), "16 MiB cap") {
		t.Errorf("read of a %d-byte file: %v", MaxFileIn+1, err)
	}
}

// An attribute file of a --root tree above the cap is refused as it is
// read, the cap in the error, not read whole.
func TestAttributeReadCap(t *testing.T) {
	root := t.TempDir()
	p := filepath.Join(root, "attr")
	f, err := os.Create(p)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Truncate(MaxAttr + 1); err != nil {
		t.Fatal(err)
	}
	f.Close()
	if _, err := NewFS(root, true).ReadFile("/attr"); !errors.Is(err, ErrTooLarge) || !strings.Contains(err.Error(), "16 MiB cap for an attribute") {
		t.Errorf("read of a %d-byte attribute: %v", MaxAttr+1, err)
	}
}

// A temp file a killed Replace left has a name Replace knows (TempName,
// or an older rocectl's random one): the next Replace removes it, and
// does not write through a symlink put at the name, nor touch what it
// points to or a file that merely looks alike.
func TestFileInReplaceRemovesLeftTemps(t *testing.T) {
	root, fs := fileInRoot(t)
	etc := filepath.Join(root, "etc")
	secret := filepath.Join(root, "secret")
	if err := os.WriteFile(secret, []byte("s3cret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(secret, filepath.Join(etc, TempName("nccl.conf"))); err != nil {
		t.Fatal(err)
	}
	for name, data := range map[string]string{".nccl.conf.rocectl-0123456789abcdef": "old", ".nccl.conf.rocectl-keep": "not ours"} {
		if err := os.WriteFile(filepath.Join(etc, name), []byte(data), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	f := openIn(t, fs, "/etc/nccl.conf")
	temps, err := f.Temps()
	if err != nil || !slices.Equal(temps, []string{".nccl.conf.rocectl-0123456789abcdef", ".nccl.conf.rocectl-tmp"}) {
		t.Fatalf("Temps = %q, %v", temps, err)
	}
	if err := f.Replace([]byte("A=1\n"), 0o644, nil); err != nil {
		t.Fatal(err)
	}
	if got := readFile(t, filepath.Join(etc, "nccl.conf")); got != "A=1\n" {
		t.Errorf("nccl.conf holds %q", got)
	}
	if got := readFile(t, secret); got != "s3cret\n" {
		t.Errorf("the symlink's target holds %q", got)
	}
	if temps, err := f.Temps(); err != nil || len(temps) != 0 {
		t.Errorf("Temps after Replace = %q, %v", temps, err)
	}
	if got := readFile(t, filepath.Join(etc, ".nccl.conf.rocectl-keep")); got != "not ours" {
		t.Errorf("a file that is no temp of rocectl's holds %q", got)
	}
}
