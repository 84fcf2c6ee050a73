package snapshot

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"testing"
)

// Write's files are created, never opened if something is already at the
// name: the output directory was empty when it began, so a file there now
// was put by someone else, such as a hard link to a file outside the
// directory (which os.Root's confinement does not stop). Writing through it
// would truncate and overwrite the linked file, as root.
func TestCreateFileRefusesWhatIsAlreadyThere(t *testing.T) {
	tmp := t.TempDir()
	outside := filepath.Join(tmp, "outside")
	if err := os.WriteFile(outside, []byte("precious\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(tmp, "snap")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Link(outside, filepath.Join(dir, MetaFile)); err != nil {
		t.Fatal(err)
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer root.Close()
	if err := createFile(root, MetaFile, []byte("{}\n")); !errors.Is(err, fs.ErrExist) {
		t.Errorf("a hard link at the name: %v, want ErrExist", err)
	}
	if got, _ := os.ReadFile(outside); string(got) != "precious\n" {
		t.Errorf("the linked file now holds %q", got)
	}
	if err := createFile(root, KernelFile, []byte("{}\n")); err != nil {
		t.Fatal(err)
	}
	if got, err := os.ReadFile(filepath.Join(dir, KernelFile)); err != nil || string(got) != "{}\n" {
		t.Errorf("a new file holds %q, %v", got, err)
	}
}
