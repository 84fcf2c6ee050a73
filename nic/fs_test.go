package nic

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
)

// ReadString stops after a read that does not fill its 4 KiB buffer; files
// of a buffer's size and more must still come back whole.
func TestReadStringWholeFileAtAnySize(t *testing.T) {
	dir := t.TempDir()
	fs := NewFS(dir, true)
	for _, size := range []int{0, 1, 4095, 4096, 4097, 8192, 10000} {
		data := bytes.Repeat([]byte("x"), size)
		if size > 0 {
			data[size-1] = '\n'
		}
		if err := os.WriteFile(filepath.Join(dir, "f"), data, 0o600); err != nil {
			t.Fatal(err)
		}
		got, err := fs.ReadString("/f")
		if want := string(bytes.TrimSuffix(data, []byte("\n"))); err != nil || got != want {
			t.Errorf("%d bytes: read %d bytes, %v", size, len(got), err)
		}
	}
}
