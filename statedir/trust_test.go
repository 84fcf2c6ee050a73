package statedir

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// nobody is the unprivileged user the attacks run as.
const nobody = 65534

func needRoot(t *testing.T) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root: ownership checks against another uid")
	}
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

func chmod(t *testing.T, p string, m os.FileMode) {
	t.Helper()
	if err := os.Chmod(p, m); err != nil {
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
	s := Store{Dir: filepath.Join(base, "state")}
	if err := os.Mkdir(s.Dir, 0o700); err != nil {
		t.Fatal(err)
	}
	chmod(t, s.Dir, mode) // Mkdir's mode is cut by the umask
	return s
}

// A state dir owned by root is trusted by any user: the packaged one
// (root, 0700 or 0755) read by an operator's read-only audit was refused
// with "fix: chown <their uid>", advice that would hand root's state dir
// to them. Another user's, or a writable one, is still refused, and the
// fix named is root's.
func TestStateDirOwnedByRootIsTrustedByAnyUser(t *testing.T) {
	needRoot(t)
	dir := t.TempDir()
	for _, c := range []struct {
		owner int
		mode  os.FileMode
		ok    bool
	}{{0, 0o700, true}, {0, 0o755, true}, {1001, 0o700, true}, {1002, 0o700, false}, {0, 0o777, false}} {
		p := filepath.Join(dir, fmt.Sprintf("state-%d-%o", c.owner, c.mode))
		if err := os.Mkdir(p, 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(p, c.mode); err != nil {
			t.Fatal(err)
		}
		if err := os.Chown(p, c.owner, c.owner); err != nil {
			t.Fatal(err)
		}
		fi, err := os.Lstat(p)
		if err != nil {
			t.Fatal(err)
		}
		err = checkOwnerFor(p, fi, 1001) // as uid 1001
		if (err == nil) != c.ok {
			t.Errorf("owner %d mode %04o as uid 1001: %v, want ok %v", c.owner, c.mode, err, c.ok)
		}
		if err != nil && (!strings.Contains(err.Error(), "must be owned by root or uid 1001") || !strings.Contains(err.Error(), "chown 0 "+p)) {
			t.Errorf("message %q should want root or uid 1001 and say chown 0", err)
		}
	}
}

// The last switch-peer result is a state-dir file like a journal: in a
// world-writable state dir another user could forge it, and root's audit
// printed it as the switch's verdict; rocectl peer and the agent wrote into
// that dir too. Now reading and writing it are refused there.
func TestPeerStateInAWorldWritableStateDirIsRefused(t *testing.T) {
	needRoot(t)
	s := worldWritableStateDir(t, 0o777|os.ModeSticky)
	asNobody(t, `cat > "$1/peer.json"`, []byte(`{"verdict":"consistent","reason":"forged"}`), s.Dir)
	if _, err := s.ReadStateFile("peer.json"); !errors.Is(err, ErrUnsafe) {
		t.Errorf("ReadStateFile: %v, want %v", err, ErrUnsafe)
	}
	if err := s.WriteStateFile("peer.json", []byte("{}")); !errors.Is(err, ErrUnsafe) {
		t.Errorf("WriteStateFile: %v, want %v", err, ErrUnsafe)
	}
	// The state dir fixed, the other user's file is still refused.
	chmod(t, s.Dir, 0o700)
	if _, err := s.ReadStateFile("peer.json"); !errors.Is(err, ErrUnsafe) {
		t.Errorf("ReadStateFile of another user's file: %v, want %v", err, ErrUnsafe)
	}
	if err := os.Remove(filepath.Join(s.Dir, "peer.json")); err != nil {
		t.Fatal(err)
	}
	if err := s.WriteStateFile("peer.json", []byte("{}\n")); err != nil {
		t.Fatal(err)
	}
	if b, err := s.ReadStateFile("peer.json"); err != nil || string(b) != "{}\n" {
		t.Errorf("ReadStateFile of root's own file: %q, %v", b, err)
	}
	if fi, err := os.Stat(filepath.Join(s.Dir, "peer.json")); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("peer.json: %v, %v; want mode 0600, as journals", fi.Mode(), err)
	}
}
