package apply

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/rocectl/rocectl/host"
	"github.com/rocectl/rocectl/policy"
	"github.com/rocectl/rocectl/statedir"
)

// nobody is the unprivileged user the attacks run as.
const nobody = 65534

func needRoot(t *testing.T) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root: ownership checks against another uid")
	}
}

// forgedJournal is an unfinished apply whose one step, undone, writes
// /etc/pwned (under root) with the attacker's data and mode: what any local
// user could make root do through a world-writable state dir.
func forgedJournal(t *testing.T, root string) (id string, data []byte) {
	t.Helper()
	j := &Journal{Version: JournalVersion, ID: "20261130T120000Z-000001", Profile: "forged", Root: root,
		Started: time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC), State: StateApplying,
		Steps: []host.Step{{Scope: policy.HostScope, Group: "nccl",
			Changes: []policy.Change{{Setting: policy.Setting{Key: "host.nccl.NCCL_IB_TC", Scope: policy.HostScope,
				Name: "nccl.NCCL_IB_TC", Kind: policy.KindNCCL, Arg: "NCCL_IB_TC", Value: "106"}, Before: "", Absent: true}},
			Undo: &host.UndoBlob{Path: "/etc/pwned", Data: []byte("attacker:x:0:0::/:/bin/sh\n"), Mode: 0o4755}}}}
	data, err := encodeJournal(j)
	if err != nil {
		t.Fatal(err)
	}
	return j.ID, data
}

// asNobody runs a shell script as uid/gid 65534, as a local user would.
func asNobody(t *testing.T, script string, stdin []byte, args ...string) {
	t.Helper()
	cmd := exec.Command("/bin/sh", append([]string{"-c", script, "sh"}, args...)...)
	cmd.Dir = "/"
	cmd.Stdin = bytes.NewReader(stdin)
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: nobody, Gid: nobody}}
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("as uid %d: %v\n%s", nobody, err, out)
	}
}

// Defect 1: with the state dir at 0777, an unprivileged user replaced
// journal/ with a forged journal and root's next apply wrote the file it
// named. Now the state dir is refused, and nothing is written.
func TestForgedJournalInWorldWritableStateDirIsRefused(t *testing.T) {
	needRoot(t)
	r := newRig(t, "cx6dx-ofed-factory", "connectx-lossless.toml")
	target := filepath.Join(r.root, "etc", "pwned")
	id, data := forgedJournal(t, r.root)

	// Control: the same journal, root's own, is acted on. So the refusal
	// below is the ownership check, not a journal rollback cannot use.
	own := Store{Store: statedir.Store{Dir: t.TempDir()}}
	if err := os.MkdirAll(own.JournalDir(), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(own.JournalPath(id), data, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := Recover(r.h, own, false, time.Now()); err != nil {
		t.Fatalf("control: %v", err)
	}
	if _, err := os.Stat(target); err != nil {
		t.Fatalf("control: root's own journal was not rolled back: %v", err)
	}
	if err := os.Remove(target); err != nil {
		t.Fatal(err)
	}

	// The attack.
	s := worldWritableStateDir(t, 0o777)
	asNobody(t, `mkdir "$1/journal" && cat > "$1/journal/$2.json"`, data, s.Dir, id)

	_, err := Recover(r.h, s, false, time.Now())
	var ue *statedir.UnsafePathError
	if !errors.As(err, &ue) || !errors.Is(err, statedir.ErrUnsafe) || ue.Path != s.Dir {
		t.Fatalf("Recover = %v; want the state dir refused as unsafe", err)
	}
	for _, want := range []string{s.Dir, "uid 0", "0777", "chown 0 " + s.Dir} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("message %q does not name %q", err, want)
		}
	}
	if strings.Contains(err.Error(), "\n") {
		t.Errorf("message is not one line: %q", err)
	}
	if _, err := os.Stat(target); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the forged journal's file was written (%v)", err)
	}
	if _, err := s.Acquire("apply"); !errors.Is(err, statedir.ErrUnsafe) {
		t.Errorf("Acquire = %v; want the state dir refused", err)
	}
	if err := s.Save(journalAt(0, StateApplying)); !errors.Is(err, statedir.ErrUnsafe) {
		t.Errorf("Save = %v; want the state dir refused", err)
	}

	// The state dir fixed, the attacker's journal/ and file are still
	// refused, each by its own path.
	if err := os.Chmod(s.Dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if _, err := Recover(r.h, s, false, time.Now()); !errors.As(err, &ue) || ue.Path != s.JournalDir() || ue.UID != nobody {
		t.Fatalf("Recover = %v; want journal/ (uid %d) refused", err, nobody)
	}
	if err := os.Chown(s.JournalDir(), 0, 0); err != nil {
		t.Fatal(err)
	}
	if _, err := Recover(r.h, s, false, time.Now()); !errors.As(err, &ue) || ue.Path != s.JournalPath(id) || ue.UID != nobody {
		t.Fatalf("Recover = %v; want the journal file (uid %d) refused", err, nobody)
	}
	if _, err := os.Stat(target); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the forged journal's file was written (%v)", err)
	}
}

// Group- or other-writable, another owner, a symlink: each refused.
func TestStatePathsMustBeOwnedAndPrivate(t *testing.T) {
	needRoot(t)
	for name, spoil := range map[string]func(t *testing.T, s Store, id string){
		"state dir group-writable": func(t *testing.T, s Store, id string) { chmod(t, s.Dir, 0o770) },
		"state dir other owner":    func(t *testing.T, s Store, id string) { chown(t, s.Dir) },
		"done/ other-writable":     func(t *testing.T, s Store, id string) { chmod(t, s.DoneDir(), 0o703) },
		"journal other owner":      func(t *testing.T, s Store, id string) { chown(t, s.DonePath(id)) },
		"journal group-writable":   func(t *testing.T, s Store, id string) { chmod(t, s.DonePath(id), 0o620) },
		"journal a symlink": func(t *testing.T, s Store, id string) {
			p := s.DonePath(id)
			if err := os.Rename(p, p+".real"); err != nil {
				t.Fatal(err)
			}
			if err := os.Symlink(p+".real", p); err != nil {
				t.Fatal(err)
			}
		},
		"lock other owner": func(t *testing.T, s Store, id string) { chown(t, filepath.Join(s.Dir, "lock")) },
	} {
		t.Run(name, func(t *testing.T) {
			s := Store{Store: statedir.Store{Dir: t.TempDir()}}
			l, err := s.Acquire("test")
			if err != nil {
				t.Fatal(err)
			}
			l.Release()
			j := journalAt(0, StateCommitted)
			save(t, s, j)
			// Created private.
			for p, want := range map[string]os.FileMode{s.JournalDir(): 0o700, s.DoneDir(): 0o700, s.DonePath(j.ID): 0o600, filepath.Join(s.Dir, "lock"): 0o600} {
				if fi, err := os.Stat(p); err != nil || fi.Mode().Perm() != want {
					t.Fatalf("%s: %v, %v; want mode %04o", p, fi.Mode(), err, want)
				}
			}
			spoil(t, s, j.ID)
			var err1 error
			if strings.HasPrefix(name, "lock") {
				_, err1 = s.Acquire("test")
			} else {
				_, err1 = s.LastCommitted()
			}
			if !errors.Is(err1, statedir.ErrUnsafe) {
				t.Fatalf("got %v; want statedir.ErrUnsafe", err1)
			}
		})
	}
}

func chmod(t *testing.T, p string, m os.FileMode) {
	t.Helper()
	if err := os.Chmod(p, m); err != nil {
		t.Fatal(err)
	}
}

func chown(t *testing.T, p string) {
	t.Helper()
	if err := os.Lchown(p, nobody, nobody); err != nil {
		t.Fatal(err)
	}
}

// worldWritableStateDir is a state dir of mode that another user can
// reach, as through /var/lib: its parents are 0711.
func worldWritableStateDir(t *testing.T, mode os.FileMode) Store {
	t.Helper()
	base := t.TempDir()
	chmod(t, filepath.Dir(base), 0o711)
	chmod(t, base, 0o711)
	s := Store{Store: statedir.Store{Dir: filepath.Join(base, "state")}}
	if err := os.Mkdir(s.Dir, 0o700); err != nil {
		t.Fatal(err)
	}
	chmod(t, s.Dir, mode) // Mkdir's mode is cut by the umask
	return s
}
