package nic

import (
	"flag"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
)

// Fixture trees under testdata/gid and testdata/pci are generated from the
// descriptions in gid_fixture_test.go and pci_fixture_test.go and committed.
// Regenerate them with
//
//	go test ./nic -run 'Fixture' -update-fixtures
//
// (-update, where another test file of this package defines it, works too).
var fxUpdate = flag.Bool("update-fixtures", false, "rewrite nic/testdata/{gid,pci} from their descriptions")

func fxUpdating() bool {
	if *fxUpdate {
		return true
	}
	if f := flag.Lookup("update"); f != nil {
		return f.Value.String() == "true"
	}
	return false
}

// fxTree is a file tree in memory: regular files with their content and
// symlinks with their (relative) target. Paths are slash-separated and
// relative to the tree's root. There are no empty directories: git cannot
// commit them, so every directory a fixture needs holds at least one file.
type fxTree struct {
	files map[string]string
	links map[string]string
}

func newFxTree() *fxTree {
	return &fxTree{files: map[string]string{}, links: map[string]string{}}
}

func (t *fxTree) file(p, content string) { t.files[p] = content }
func (t *fxTree) link(p, target string)  { t.links[p] = target }

// write creates the tree under root.
func (t *fxTree) write(root string) error {
	for p, c := range t.files {
		full := filepath.Join(root, p)
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(full, []byte(c), 0o644); err != nil {
			return err
		}
	}
	for p, target := range t.links {
		full := filepath.Join(root, p)
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			return err
		}
		if err := os.Symlink(target, full); err != nil {
			return err
		}
	}
	return nil
}

// readFxTree loads a tree from disk: every regular file and symlink.
func readFxTree(root string) (*fxTree, error) {
	t := newFxTree()
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		rel = filepath.ToSlash(rel)
		if rel == "." {
			return nil
		}
		switch {
		case d.Type()&fs.ModeSymlink != 0:
			target, err := os.Readlink(p)
			if err != nil {
				return err
			}
			t.links[rel] = target
		case d.IsDir():
		default:
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			t.files[rel] = string(b)
		}
		return nil
	})
	return t, err
}

// fxSync makes dir hold exactly tree: with -update-fixtures it rewrites the
// directory, otherwise it fails the test when the committed tree differs
// from what the description generates (so nobody edits one without the
// other).
func fxSync(t *testing.T, dir string, tree *fxTree) {
	t.Helper()
	if fxUpdating() {
		if err := os.RemoveAll(dir); err != nil {
			t.Fatal(err)
		}
		if err := tree.write(dir); err != nil {
			t.Fatal(err)
		}
		return
	}
	got, err := readFxTree(dir)
	if err != nil {
		t.Fatalf("read committed fixture %s: %v (regenerate with -update-fixtures)", dir, err)
	}
	var diffs []string
	for p, c := range tree.files {
		if g, ok := got.files[p]; !ok {
			diffs = append(diffs, "missing file "+p)
		} else if g != c {
			diffs = append(diffs, "content differs: "+p)
		}
	}
	for p := range got.files {
		if _, ok := tree.files[p]; !ok {
			diffs = append(diffs, "extra file "+p)
		}
	}
	for p, l := range tree.links {
		if g, ok := got.links[p]; !ok || g != l {
			diffs = append(diffs, "symlink differs: "+p+" -> "+l)
		}
	}
	for p := range got.links {
		if _, ok := tree.links[p]; !ok {
			diffs = append(diffs, "extra symlink "+p)
		}
	}
	if len(diffs) > 0 {
		sort.Strings(diffs)
		if len(diffs) > 20 {
			diffs = append(diffs[:20], "...")
		}
		t.Fatalf("committed fixture %s is out of date (regenerate with -update-fixtures):\n%s", dir, strings.Join(diffs, "\n"))
	}
}
