package nic

import (
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"testing"
)

// ReadUint reads a counter attribute as a number; anything else is an
// error strconv names, never a 0.
func TestReadUint(t *testing.T) {
	root := t.TempDir()
	for name, body := range map[string]string{"n": "123\n", "sp": " 7 \n", "na": "N/A\n", "big": "18446744073709551616\n", "empty": ""} {
		if err := os.WriteFile(filepath.Join(root, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	fs := NewFS(root, true)
	if v, err := fs.ReadUint("/n"); v != 123 || err != nil {
		t.Errorf("n: %d %v", v, err)
	}
	if v, err := fs.ReadUint("/sp"); v != 7 || err != nil {
		t.Errorf("sp: %d %v", v, err)
	}
	for name, want := range map[string]error{"/na": strconv.ErrSyntax, "/big": strconv.ErrRange, "/empty": strconv.ErrSyntax, "/gone": os.ErrNotExist} {
		if v, err := fs.ReadUint(name); !errors.Is(err, want) || v != 0 && want != strconv.ErrRange {
			t.Errorf("%s: %d %v, want %v", name, v, err, want)
		}
	}
}
