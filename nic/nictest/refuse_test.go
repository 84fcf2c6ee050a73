package nictest

import (
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/rocectl/rocectl/nic"
)

// A refused attribute fails the write the way the kernel does (EPERM from
// open, through nic.FS), still reads back its value, and is writable again
// once the test that refused it has ended.
func TestRefuseWrites(t *testing.T) {
	root := t.TempDir()
	dir := filepath.Join(root, "sys", "class", "net", "x", "ecn", "roce_np", "enable")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	attr := filepath.Join(dir, "3")
	if err := os.WriteFile(attr, []byte("0\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	fs := nic.NewFS(root, false)
	const p = "/sys/class/net/x/ecn/roce_np/enable/3"
	t.Run("refused", func(t *testing.T) {
		RefuseWrites(t, attr)
		RefuseWrites(t, dir)
		if err := fs.WriteString(p, "1"); !errors.Is(err, syscall.EPERM) {
			t.Errorf("write to a refused file: %v, want EPERM", err)
		}
		if err := os.WriteFile(filepath.Join(dir, "new"), nil, 0o644); !errors.Is(err, syscall.EPERM) {
			t.Errorf("create in a refused directory: %v, want EPERM", err)
		}
		if v, err := fs.ReadString(p); err != nil || v != "0" {
			t.Errorf("read of a refused file: %q, %v; want the old value", v, err)
		}
	})
	if err := fs.WriteString(p, "1"); err != nil {
		t.Fatalf("write after the refusing test ended: %v", err)
	}
	if v, _ := fs.ReadString(p); v != "1" {
		t.Errorf("read back %q, want 1", v)
	}
}
