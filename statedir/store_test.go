package statedir

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
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

// ids lists what OpenIDs or DoneIDs finds.
func ids(t *testing.T, list func() ([]string, error)) []string {
	t.Helper()
	got, err := list()
	if err != nil {
		t.Fatal(err)
	}
	return got
}

// An open journal lies in journal/ with room reserved for its next write;
// a final one goes to done/ and its room is freed; one reopened (a failed
// rollback of a committed apply) is back in journal/ with no done/ copy.
func TestWriteJournalPlacesByFinality(t *testing.T) {
	s := Store{Dir: t.TempDir()}
	const id = "20261130T120000Z-000000"
	writeJournal(t, s, id, false)
	if got := ids(t, s.OpenIDs); !slices.Equal(got, []string{id}) {
		t.Fatalf("journal/ holds %v, want [%s]", got, id)
	}
	fi, err := os.Stat(s.ReservePath(id))
	if err != nil || fi.Size() < 16<<10 {
		t.Fatalf("reserve: %v, %v; want at least 16 KiB", fi, err)
	}
	for p, want := range map[string]os.FileMode{s.JournalDir(): 0o700, s.JournalPath(id): 0o600} {
		if fi, err := os.Stat(p); err != nil || fi.Mode().Perm() != want {
			t.Errorf("%s: %v, %v; want mode %04o", p, fi, err, want)
		}
	}

	writeJournal(t, s, id, true)
	if got := ids(t, s.OpenIDs); len(got) != 0 {
		t.Errorf("journal/ still holds %v", got)
	}
	if got := ids(t, s.DoneIDs); !slices.Equal(got, []string{id}) {
		t.Errorf("done/ holds %v, want [%s]", got, id)
	}
	if _, err := os.Stat(s.ReservePath(id)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the final journal's reserve is still there (%v)", err)
	}
	if b, err := ReadFile(s.DonePath(id)); err != nil || !strings.Contains(string(b), id) {
		t.Errorf("ReadFile = %q, %v", b, err)
	}

	writeJournal(t, s, id, false)
	if got := ids(t, s.DoneIDs); len(got) != 0 {
		t.Errorf("done/ still holds %v after the journal reopened", got)
	}
	if src, err := s.Find(id); err != nil || src != s.JournalPath(id) {
		t.Errorf("Find = %s, %v; want %s", src, err, s.JournalPath(id))
	}
}

// Prune tidies final journals a crash left in journal/ into done/, then
// deletes the oldest finished ones beyond Keep with their watcher logs,
// sparing the one the caller names; it never touches open journals.
func TestPruneKeepsNewestAndSpared(t *testing.T) {
	s := Store{Dir: t.TempDir(), Keep: 2}
	id := func(sec int) string { return fmt.Sprintf("20261130T1200%02dZ-%06d", sec, sec) }
	for sec := 0; sec < 5; sec++ {
		writeJournal(t, s, id(sec), true)
	}
	if err := os.WriteFile(s.WatcherLog(id(2)), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	// 5 was final but its move to done/ was lost; 6 is open.
	if err := os.Rename(s.DonePath(id(4)), s.JournalPath(id(4))); err != nil {
		t.Fatal(err)
	}
	writeJournal(t, s, id(6), false)
	final := func(x string) bool { return x != id(6) }
	var asked []string
	spare := func(done []string) (string, error) { asked = done; return id(1), nil }
	if err := s.Prune(final, spare); err != nil {
		t.Fatal(err)
	}
	if want := []string{id(0), id(1), id(2), id(3), id(4)}; !slices.Equal(asked, want) {
		t.Errorf("spare was asked about %v, want %v", asked, want)
	}
	if got, want := ids(t, s.DoneIDs), []string{id(1), id(3), id(4)}; !slices.Equal(got, want) {
		t.Errorf("done/ holds %v, want the spared one and the newest two %v", got, want)
	}
	if got := ids(t, s.OpenIDs); !slices.Equal(got, []string{id(6)}) {
		t.Errorf("journal/ holds %v, want the open journal", got)
	}
	if _, err := os.Stat(s.WatcherLog(id(2))); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the pruned journal's watcher log is still there (%v)", err)
	}
	// Within Keep, spare is not asked (it reads journals).
	s.Keep = 10
	if err := s.Prune(final, func([]string) (string, error) { t.Error("spare asked"); return "", nil }); err != nil {
		t.Fatal(err)
	}
}

// A journal that Find locates is set aside in abandoned/, with its
// reserve and any done/ copy, after which the store no longer has it.
func TestSetAside(t *testing.T) {
	s := Store{Dir: t.TempDir()}
	const id = "20261130T120000Z-000000"
	if _, err := s.Find(id); err == nil || err.Error() != "no apply with ID "+id+" in "+s.JournalDir() {
		t.Fatalf("Find of nothing = %v", err)
	}
	for _, bad := range []string{"", "../x", ".hidden", `a\b`} {
		if _, err := s.Find(bad); err == nil || !strings.Contains(err.Error(), "is not a journal ID") {
			t.Errorf("Find(%q) = %v; want it refused as an ID", bad, err)
		}
	}
	writeJournal(t, s, id, true)
	writeJournal(t, s, id, false) // reopened; a stale done/ copy made by hand below
	if err := os.WriteFile(s.DonePath(id), []byte("{}"), 0o600); err != nil {
		t.Fatal(err)
	}
	src, err := s.Find(id)
	if err != nil || src != s.JournalPath(id) {
		t.Fatalf("Find = %s, %v", src, err)
	}
	dst, err := s.SetAside(id, src)
	if err != nil || dst != filepath.Join(s.AbandonedDir(), id+".json") {
		t.Fatalf("SetAside = %s, %v", dst, err)
	}
	for _, p := range []string{s.JournalPath(id), s.DonePath(id), s.ReservePath(id)} {
		if _, err := os.Lstat(p); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s is still there (%v)", p, err)
		}
	}
	if _, err := s.Find(id); err == nil {
		t.Error("Find still finds the journal set aside")
	}
}

// ReadFile reads no symlink, nothing but a regular file, and no more than
// MaxFile bytes.
func TestReadFileRefuses(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "big.json")
	if err := os.WriteFile(p, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(p, MaxFile+1); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadFile(p); err == nil || err.Error() != fmt.Sprintf("%s: %d bytes is not a journal", p, MaxFile+1) {
		t.Errorf("ReadFile of %d bytes = %v", MaxFile+1, err)
	}
	link := filepath.Join(dir, "link.json")
	if err := os.Symlink(p, link); err != nil {
		t.Fatal(err)
	}
	var ue *UnsafePathError
	if _, err := ReadFile(link); !errors.As(err, &ue) || ue.Why != "is a symlink" || !errors.Is(err, ErrUnsafe) {
		t.Errorf("ReadFile of a symlink = %v", err)
	}
	fifo := filepath.Join(dir, "fifo.json")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadFile(fifo); !errors.As(err, &ue) || ue.Why == "" {
		t.Errorf("ReadFile of a FIFO = %v", err)
	}
	s := Store{Dir: dir}
	if err := os.MkdirAll(s.JournalDir(), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(fifo, s.JournalPath("x")); err != nil {
		t.Fatal(err)
	}
	if _, err := s.OpenIDs(); !errors.As(err, &ue) || ue.Path != s.JournalPath("x") {
		t.Errorf("OpenIDs past a FIFO = %v; want it refused", err)
	}
}
