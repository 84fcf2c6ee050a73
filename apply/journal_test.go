package apply

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/rocectl/rocectl/host"
	"github.com/rocectl/rocectl/policy"
	"github.com/rocectl/rocectl/port"
	"github.com/rocectl/rocectl/statedir"
)

// journalAt is a journal started at second sec of a fixed day, so that IDs
// sort by age as real ones do.
func journalAt(sec int, state string) *Journal {
	start := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC).Add(time.Duration(sec) * time.Second)
	return &Journal{Version: 1, ID: fmt.Sprintf("%s-%06x", start.Format("20060102T150405Z"), sec), Profile: "p",
		Started: start, State: state, Steps: []host.Step{{Scope: "ens1f0np0", Group: "link.mtu",
			Changes: []policy.Change{{Setting: policy.Setting{Key: "ens1f0np0.link.mtu", Scope: "ens1f0np0",
				Name: "link.mtu", Kind: policy.KindMTU, Value: "9000", Port: &port.Port{Netdev: "ens1f0np0", Driver: "mlx5_core"}},
				Before: "1500"}}}}}
}

// files lists the journal files of journal/ (s.OpenIDs) or journal/done/
// (s.DoneIDs) by ID.
func files(t *testing.T, dir func() ([]string, error)) []string {
	t.Helper()
	ids, err := dir()
	if err != nil {
		t.Fatal(err)
	}
	return ids
}

func save(t *testing.T, s Store, j *Journal) {
	t.Helper()
	if err := s.Save(j); err != nil {
		t.Fatal(err)
	}
}

func TestFinishedJournalsMoveToDone(t *testing.T) {
	s := Store{Store: statedir.Store{Dir: t.TempDir()}}
	j := journalAt(0, StateApplying)
	save(t, s, j)
	if got := files(t, s.OpenIDs); !slices.Equal(got, []string{j.ID}) {
		t.Fatalf("open journals on disk %v, want [%s]", got, j.ID)
	}
	if open, err := s.Open(); err != nil || len(open) != 1 || open[0].ID != j.ID {
		t.Fatalf("Open() = %v, %v; want the applying journal", open, err)
	}

	j.State = StateCommitted
	save(t, s, j)
	if got := files(t, s.OpenIDs); len(got) != 0 {
		t.Errorf("journal/ still holds %v after commit", got)
	}
	if got := files(t, s.DoneIDs); !slices.Equal(got, []string{j.ID}) {
		t.Errorf("journal/done/ holds %v, want [%s]", got, j.ID)
	}
	if open, err := s.Open(); err != nil || len(open) != 0 {
		t.Errorf("Open() = %v, %v; want nothing open", open, err)
	}
	for name, get := range map[string]func() (*Journal, error){
		"Load":          func() (*Journal, error) { return s.Load(j.ID) },
		"LastCommitted": s.LastCommitted,
	} {
		if got, err := get(); err != nil || got == nil || got.ID != j.ID || got.State != StateCommitted {
			t.Errorf("%s = %+v, %v; want the committed journal", name, got, err)
		}
	}
	if all, err := s.List(); err != nil || len(all) != 1 {
		t.Errorf("List() = %v, %v; want the one journal", all, err)
	}
}

// Starting an apply must not read the host's history: a damaged finished
// journal does not stop Open, only List (which reads everything) sees it.
func TestOpenReadsNoFinishedJournal(t *testing.T) {
	s := Store{Store: statedir.Store{Dir: t.TempDir()}}
	save(t, s, journalAt(0, StateCommitted))
	if err := os.WriteFile(filepath.Join(s.DoneDir(), "20261130T115959Z-000000.json"), []byte("{not json"), 0o600); err != nil {
		t.Fatal(err)
	}
	if open, err := s.Open(); err != nil || len(open) != 0 {
		t.Fatalf("Open() = %v, %v; want nothing open and no error", open, err)
	}
	if _, err := s.List(); err == nil {
		t.Fatal("List() read past a damaged journal")
	}
}

func TestPruneKeepsNewestAndLastCommitted(t *testing.T) {
	s := Store{Store: statedir.Store{Dir: t.TempDir(), Keep: 3}}
	// One commit, then five applies the guard rolled back; the first of
	// these had a confirm watcher, whose log goes with its journal.
	save(t, s, journalAt(0, StateCommitted))
	if err := os.WriteFile(s.WatcherLog(journalAt(1, "").ID), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	for sec := 1; sec <= 5; sec++ {
		save(t, s, journalAt(sec, StateRolledBack))
	}
	if _, err := os.Stat(s.WatcherLog(journalAt(1, "").ID)); !os.IsNotExist(err) {
		t.Errorf("the pruned apply's watcher log is still there (%v)", err)
	}
	want := []string{journalAt(0, "").ID, journalAt(3, "").ID, journalAt(4, "").ID, journalAt(5, "").ID}
	if got := files(t, s.DoneIDs); !slices.Equal(got, want) {
		t.Fatalf("journal/done/ holds %v, want the commit and the newest three %v", got, want)
	}
	if last, err := s.LastCommitted(); err != nil || last == nil || last.ID != want[0] {
		t.Fatalf("LastCommitted() = %v, %v; want %s", last, err, want[0])
	}
	// A newer commit frees the old one.
	save(t, s, journalAt(6, StateCommitted))
	want = []string{journalAt(4, "").ID, journalAt(5, "").ID, journalAt(6, "").ID}
	if got := files(t, s.DoneIDs); !slices.Equal(got, want) {
		t.Fatalf("journal/done/ holds %v, want %v", got, want)
	}
	// Open journals are never pruned.
	save(t, s, journalAt(7, StateConfirmPending))
	save(t, s, journalAt(8, StateCommitted))
	if got := files(t, s.OpenIDs); !slices.Equal(got, []string{journalAt(7, "").ID}) {
		t.Fatalf("journal/ holds %v, want the confirm-pending journal", got)
	}
}

// A rollback of a committed apply that fails reopens its journal: it must
// show up as open again, and no stale committed copy may remain.
func TestFinishedJournalReopensOnFailedRollback(t *testing.T) {
	s := Store{Store: statedir.Store{Dir: t.TempDir()}}
	j := journalAt(0, StateCommitted)
	save(t, s, j)
	j.State = StateRollbackFailed
	save(t, s, j)
	if got := files(t, s.DoneIDs); len(got) != 0 {
		t.Errorf("journal/done/ still holds %v", got)
	}
	open, err := s.Open()
	if err != nil || len(open) != 1 || open[0].State != StateRollbackFailed {
		t.Fatalf("Open() = %v, %v; want the rollback-failed journal", open, err)
	}
	if last, err := s.LastCommitted(); err != nil || last != nil {
		t.Errorf("LastCommitted() = %v, %v; want none", last, err)
	}
}

// The move to done/ is not fsynced: after a crash the final journal may be
// back in journal/. It is not open, it still counts as the last commit, and
// the next finished journal tidies it away.
func TestFinalJournalLeftInJournalDir(t *testing.T) {
	s := Store{Store: statedir.Store{Dir: t.TempDir()}}
	old := journalAt(0, StateCommitted)
	save(t, s, old)
	if err := os.Rename(s.DonePath(old.ID), s.JournalPath(old.ID)); err != nil {
		t.Fatal(err)
	}
	if open, err := s.Open(); err != nil || len(open) != 0 {
		t.Fatalf("Open() = %v, %v; want nothing open", open, err)
	}
	if last, err := s.LastCommitted(); err != nil || last == nil || last.ID != old.ID {
		t.Fatalf("LastCommitted() = %v, %v; want %s", last, err, old.ID)
	}
	save(t, s, journalAt(1, StateRolledBack))
	if got := files(t, s.OpenIDs); len(got) != 0 {
		t.Errorf("journal/ still holds %v", got)
	}
	if got := files(t, s.DoneIDs); len(got) != 2 {
		t.Errorf("journal/done/ holds %v, want both journals", got)
	}
}

// IDs carry the second only; within it the newest commit is found by its
// start time, not by the random part of the ID.
func TestLastCommittedWithinOneSecond(t *testing.T) {
	s := Store{Store: statedir.Store{Dir: t.TempDir()}}
	a, b := journalAt(0, StateCommitted), journalAt(0, StateCommitted)
	a.ID, b.ID = a.ID[:17]+"ffffff", b.ID[:17]+"000000"
	b.Started = a.Started.Add(time.Millisecond)
	save(t, s, a)
	save(t, s, b)
	if last, err := s.LastCommitted(); err != nil || last == nil || last.ID != b.ID {
		t.Fatalf("LastCommitted() = %v, %v; want the later-started %s", last, err, b.ID)
	}
}

func TestJournalIDsSortByStart(t *testing.T) {
	t0 := time.Date(2026, 11, 30, 12, 29, 55, 999_998_000, time.UTC)
	var prev string
	for i, d := range []time.Duration{0, time.Microsecond, time.Microsecond, time.Second, 10 * time.Minute} {
		t0 = t0.Add(d)
		id := newID(t0)
		if i > 0 && id <= prev {
			t.Errorf("newID(%v) = %s does not sort after %s", t0, id, prev)
		}
		prev = id
	}
	if got, want := newID(time.Date(2026, 11, 30, 12, 29, 55, 481_203_999, time.UTC)), "20261130T122955Z-481203"; got != want {
		t.Errorf("newID = %s, want %s", got, want)
	}
}
