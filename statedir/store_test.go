package statedir

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

// writeJournal stores data standing for journal id, final or open.
func writeJournal(t *testing.T, s Store, id string, final bool) {
	t.Helper()
	if err := s.WriteJournal(id, []byte(`{"id":"`+id+`"}`), final); err != nil {
		t.Fatal(err)
	}
}

// An interrupted fallocate (tmpfs, with the runtime's preemption signals)
// is tried again, not a failed apply.
func TestReserveRetriesEINTR(t *testing.T) {
	calls := 0
	fallocate = func(fd int, mode uint32, off, size int64) error {
		calls++
		if calls < 3 {
			return syscall.EINTR
		}
		return syscall.Fallocate(fd, mode, off, size)
	}
	t.Cleanup(func() { fallocate = syscall.Fallocate })
	p := filepath.Join(t.TempDir(), ".x.reserve")
	if err := reserve(p, 4096); err != nil || calls != 3 {
		t.Fatalf("reserve: %v after %d calls, want success on the 3rd", err, calls)
	}
	if fi, err := os.Stat(p); err != nil || fi.Size() != 4096 {
		t.Errorf("reserved file %v, %v; want 4096 bytes", fi, err)
	}
}
