package cli

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/rocectl/rocectl/internal/lib/input"
)

// inputBound is how long a command given an input that must not hang it
// may take: generous, for a busy machine. A command that hangs fails the
// test at the bound instead of hanging the test binary.
const inputBound = 30 * time.Second

// execute runs rocectl with args in-process under ctx, stdin as its
// standard input, and returns its error, failing the test if it has not
// returned within inputBound.
func execute(t *testing.T, ctx context.Context, stdin io.Reader, args ...string) (string, error) {
	t.Helper()
	var out, errb bytes.Buffer
	cmd := NewRootCommand(NewEnv(&out, &errb))
	cmd.SetArgs(args)
	if stdin != nil {
		cmd.SetIn(stdin)
	}
	ch := make(chan error, 1)
	go func() { ch <- cmd.ExecuteContext(ctx) }()
	select {
	case err := <-ch:
		return out.String(), err
	case <-time.After(inputBound):
		t.Fatalf("rocectl %s: still running after %v", strings.Join(args, " "), inputBound)
		return "", nil
	}
}

// notRegularInputs are inputs that used to hang import and report or
// grow them without bound: /dev/zero, a symlink to it with a dump's
// name, a FIFO without a writer.
func notRegularInputs(t *testing.T) []string {
	t.Helper()
	dir := t.TempDir()
	fifo := filepath.Join(dir, "mlnx_qos.txt")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "gpu-001.audit.json")
	if err := os.Symlink("/dev/zero", link); err != nil {
		t.Fatal(err)
	}
	return []string{"/dev/zero", link, fifo}
}

// import and report refuse what is not a regular file, at once, and
// name it; report prints the fleet view without it and exits 1.
func TestImportAndReportRefuseNonRegularInputs(t *testing.T) {
	for _, in := range notRegularInputs(t) {
		dir := filepath.Join(t.TempDir(), "snap")
		_, err := execute(t, context.Background(), nil, "import", "-o", dir, "--netdev", "eth4", in)
		if !errors.Is(err, input.ErrNotRegular) || !strings.Contains(err.Error(), in) || ExitCode(err) != ExitError {
			t.Errorf("import %s: %v", in, err)
		}
		if _, err := os.Stat(dir); !os.IsNotExist(err) {
			t.Errorf("import %s wrote %s (%v)", in, dir, err)
		}
		out, err := execute(t, context.Background(), nil, "report", repo("report/testdata/corpus/rack-a-01.audit.json"), in)
		if ExitCode(err) != ExitError || !strings.Contains(out, "rack-a-01") || !strings.Contains(out, "Unreadable files:\n  "+in+": not a regular file") {
			t.Errorf("report %s: exit %d (%v)\n%s", in, ExitCode(err), err, out)
		}
	}
	// Found by walking a directory: the same.
	dir := t.TempDir()
	if err := os.Symlink("/dev/zero", filepath.Join(dir, "gpu-002.audit.json")); err != nil {
		t.Fatal(err)
	}
	out, err := execute(t, context.Background(), nil, "report", "-o", "json", dir)
	if ExitCode(err) != ExitError || !strings.Contains(out, `"problems": [`) || !strings.Contains(out, "gpu-002.audit.json: not a regular file") {
		t.Errorf("report over a directory: exit %d (%v)\n%s", ExitCode(err), err, out)
	}
	// --expect-file too.
	if _, err := execute(t, context.Background(), nil, "report", "--expect-file", "/dev/zero", repo("report/testdata/corpus/rack-a-01.audit.json")); !errors.Is(err, input.ErrNotRegular) {
		t.Errorf("--expect-file /dev/zero: %v", err)
	}
}

// A regular file over the cap is refused with the cap in the error, by
// import and by report.
func TestImportAndReportCapInputs(t *testing.T) {
	big := filepath.Join(t.TempDir(), "ethtool-S.txt")
	f, err := os.Create(big)
	if err != nil {
		t.Fatal(err)
	}
	// Sparse: the size is what is refused, before a byte is read.
	if err := f.Truncate(ImportLimit.Max + 1); err != nil {
		t.Fatal(err)
	}
	f.Close()
	_, err = execute(t, context.Background(), nil, "import", "-o", filepath.Join(t.TempDir(), "snap"), "--netdev", "eth4", big)
	if !errors.Is(err, input.ErrTooLarge) || !strings.HasSuffix(err.Error(), big+": larger than the 16 MiB cap for an import input") {
		t.Errorf("import: %v", err)
	}
	out, err := execute(t, context.Background(), nil, "report", big)
	if ExitCode(err) != ExitError || !strings.Contains(out, big+": larger than the 16 MiB cap for a report document") {
		t.Errorf("report: exit %d (%v)\n%s", ExitCode(err), err, out)
	}
	// stdin: cut at the cap.
	zero, err := os.Open("/dev/zero")
	if err != nil {
		t.Fatal(err)
	}
	defer zero.Close()
	_, err = execute(t, context.Background(), zero, "import", "-o", filepath.Join(t.TempDir(), "snap"), "-")
	if !errors.Is(err, input.ErrTooLarge) || !strings.HasSuffix(err.Error(), "stdin: larger than the 16 MiB cap for an import input") {
		t.Errorf("import - < /dev/zero: %v", err)
	}
}

// SIGINT stops an import reading a stdin pipe whose writer neither
// writes more nor closes it (a paste cut short, a hung ssh): the command
// returns "interrupted by signal SIGINT" and writes nothing. The signal
// is sent once the import has started reading.
func TestImportStdinInterrupted(t *testing.T) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	defer w.Close()
	qos, err := os.ReadFile(repo("nic/dump/testdata/corpus/mlx5-netarbiter-mlnx_qos-dscp-pfc3.txt"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.Write(qos); err != nil {
		t.Fatal(err)
	}
	ctx, stop := NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	stdin := &startedReader{File: r, started: make(chan struct{})}
	done := make(chan struct{})
	killed := make(chan error, 1)
	go func() {
		select {
		case <-stdin.started:
			killed <- syscall.Kill(syscall.Getpid(), syscall.SIGINT)
		case <-done:
			killed <- nil
		}
	}()
	dir := filepath.Join(t.TempDir(), "snap")
	_, err = execute(t, ctx, stdin, "import", "-o", dir, "--netdev", "eth4", "-")
	close(done)
	if err := <-killed; err != nil {
		t.Fatal(err)
	}
	var in *Interrupted
	if !errors.As(err, &in) || in.Signal != os.Interrupt || ExitCode(err) != ExitError {
		t.Errorf("%v, want interrupted by SIGINT", err)
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("interrupted import wrote %s (%v)", dir, err)
	}
}

// startedReader is a pipe's read end that says when it was first read.
type startedReader struct {
	*os.File
	once    sync.Once
	started chan struct{}
}

func (r *startedReader) Read(p []byte) (int, error) {
	r.once.Do(func() { close(r.started) })
	return r.File.Read(p)
}

// A cancelled context (SIGTERM) stops report before it reads the fleet.
func TestReportInterrupted(t *testing.T) {
	ctx, cancel := context.WithCancelCause(context.Background())
	cancel(&Interrupted{Signal: syscall.SIGTERM})
	out, err := execute(t, ctx, nil, "report", repo("report/testdata/corpus"))
	if !errors.Is(err, context.Canceled) || !strings.Contains(err.Error(), "interrupted by signal SIGTERM") || out != "" {
		t.Errorf("%v\n%s", err, out)
	}
}
