package input

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

var lim = Limit{Max: 1 << 20, What: "a test input"}

// bound is how long a read that must not hang may take: generous, for a
// busy machine; a read that hangs is caught, not waited for.
const bound = 30 * time.Second

// within runs f and fails the test if it has not returned within bound.
func within(t *testing.T, f func() error) error {
	t.Helper()
	ch := make(chan error, 1)
	go func() { ch <- f() }()
	select {
	case err := <-ch:
		return err
	case <-time.After(bound):
		t.Fatalf("still reading after %v", bound)
		return nil
	}
}

// /dev/zero (named, or through a symlink) and a FIFO without a writer are
// refused at once: neither an endless read nor a blocked open.
func TestReadFileRefusesWhatIsNotARegularFile(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "zero.txt")
	if err := os.Symlink("/dev/zero", link); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{"/dev/zero", link, fifo, dir} {
		err := within(t, func() error { _, err := ReadFile(context.Background(), p, lim); return err })
		if !errors.Is(err, ErrNotRegular) || !strings.Contains(err.Error(), p) {
			t.Errorf("%s: %v, want ErrNotRegular naming the path", p, err)
		}
	}
}

// A regular file over the cap is refused before it is read, and the error
// names the cap and what it bounds.
func TestReadFileCap(t *testing.T) {
	dir := t.TempDir()
	big := filepath.Join(dir, "big.txt")
	if err := os.WriteFile(big, make([]byte, lim.Max+1), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err := ReadFile(context.Background(), big, lim)
	var tl *TooLargeError
	if !errors.As(err, &tl) || !errors.Is(err, ErrTooLarge) || err.Error() != big+": larger than the 1 MiB cap for a test input" {
		t.Errorf("%v", err)
	}
	exact := filepath.Join(dir, "exact.txt")
	want := strings.Repeat("x", int(lim.Max))
	if err := os.WriteFile(exact, []byte(want), 0o600); err != nil {
		t.Fatal(err)
	}
	if b, err := ReadFile(context.Background(), exact, lim); err != nil || string(b) != want {
		t.Errorf("a file of exactly the cap: %d bytes, %v", len(b), err)
	}
	if _, err := ReadFile(context.Background(), filepath.Join(dir, "absent"), lim); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("absent file: %v", err)
	}
}

// A cancelled context stops a read of stdin (a pipe) whose writer neither
// writes nor closes: Read returns the context's cause, and the goroutine
// that was blocked in the read is joined (the leak check would fail the
// package otherwise).
func TestReadStopsWhenCancelled(t *testing.T) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	defer w.Close()
	if _, err := w.WriteString("partial output, then nothing"); err != nil {
		t.Fatal(err)
	}
	stop := errors.New("interrupted by signal SIGINT")
	ctx, cancel := context.WithCancelCause(context.Background())
	started := make(chan struct{})
	ch := make(chan error, 1)
	go func() {
		close(started)
		_, err := Read(ctx, r, "stdin", lim)
		ch <- err
	}()
	<-started
	cancel(stop)
	select {
	case err := <-ch:
		if !errors.Is(err, stop) || !strings.HasPrefix(err.Error(), "stdin: ") {
			t.Errorf("%v, want the cancellation's cause", err)
		}
	case <-time.After(bound):
		t.Fatalf("Read still blocked %v after the cancel", bound)
	}
}

// Stdin is capped: the read stops past the cap, however much the writer
// has left.
func TestReadCap(t *testing.T) {
	zero, err := os.Open("/dev/zero")
	if err != nil {
		t.Fatal(err)
	}
	defer zero.Close()
	_, err = within2(t, func() ([]byte, error) { return Read(context.Background(), zero, "stdin", lim) })
	if !errors.Is(err, ErrTooLarge) || err.Error() != "stdin: larger than the 1 MiB cap for a test input" {
		t.Errorf("%v", err)
	}
	b, err := Read(context.Background(), strings.NewReader("eth0 up\n"), "stdin", lim)
	if err != nil || string(b) != "eth0 up\n" {
		t.Errorf("%q %v", b, err)
	}
}

func within2(t *testing.T, f func() ([]byte, error)) ([]byte, error) {
	t.Helper()
	var b []byte
	err := within(t, func() error {
		var err error
		b, err = f()
		return err
	})
	return b, err
}

func TestSize(t *testing.T) {
	for n, want := range map[int64]string{16 << 20: "16 MiB", 512 << 10: "512 KiB", 100: "100 bytes", 1<<20 + 1: "1048577 bytes"} {
		if got := Size(n); got != want {
			t.Errorf("Size(%d) = %q, want %q", n, got, want)
		}
	}
}
