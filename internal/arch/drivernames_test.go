package arch

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/rocectl/rocectl/internal/testkit/fixturehost"
)

// driverName matches code that decides by a kernel driver's name: a
// module's name as a string literal compared or switched on.
var driverName = regexp.MustCompile(`(==|!=|case|HasPrefix\([^)]*,)\s*"(mlx5[a-z_]*|bnxt[a-z_]*|ice|i40e|irdma|mlx4[a-z_]*)"`)

// TestDriverNamesOnlyInDriverKnown: what a driver does lives in its
// package under driver/, picked by driver/known; code elsewhere asks the
// port's driver.Driver and never looks at the module's name. nic is
// exempt: discovery reads what the kernel names, and which interface
// reaches a port's ECN knobs (nic/ecn.go) is found there until the
// congestion-control work moves it to the driver layer. Test files and
// test kits are exempt: they build hosts of each driver.
func TestDriverNamesOnlyInDriverKnown(t *testing.T) {
	root := fixturehost.RepoRoot()
	exempt := []string{"driver/known/", "nic/", "internal/testkit/", "internal/tools/", "testdata/", "test/", "bench/"}
	checked := 0
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		if d.IsDir() {
			if strings.HasPrefix(d.Name(), ".") && rel != "." {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(rel, ".go") || strings.HasSuffix(rel, "_test.go") {
			return nil
		}
		for _, e := range exempt {
			if strings.HasPrefix(rel, e) {
				return nil
			}
		}
		checked++
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		for i, line := range strings.Split(string(data), "\n") {
			if strings.HasPrefix(strings.TrimSpace(line), "//") {
				continue
			}
			if m := driverName.FindString(line); m != "" {
				t.Errorf("%s:%d decides by a driver's name (%s): ask known.For(module) for the port's driver.Driver instead", rel, i+1, m)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if checked < 100 {
		t.Fatalf("checked only %d files", checked)
	}
}
