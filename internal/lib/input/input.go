package input

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	"golang.org/x/sys/unix"
)

// Limit is the cap on one input, and what the input is, for the error:
// "a.txt: larger than the 16 MiB cap for an import input".
type Limit struct {
	Max  int64  // bytes
	What string // "an import input", "a report document"
}

// ErrNotRegular marks a path that is not a regular file (a FIFO, a
// device such as /dev/zero, a socket, a directory), whatever symlink led
// to it.
var ErrNotRegular = errors.New("not a regular file")

// ErrTooLarge marks an input larger than its Limit; the error is a
// *TooLargeError.
var ErrTooLarge = errors.New("input larger than its cap")

// TooLargeError is an input over its cap.
type TooLargeError struct {
	Name  string
	Limit Limit
}

func (e *TooLargeError) Error() string {
	return fmt.Sprintf("%s: larger than the %s cap for %s", e.Name, Size(e.Limit.Max), e.Limit.What)
}

// Is makes a TooLargeError match ErrTooLarge.
func (e *TooLargeError) Is(target error) bool { return target == ErrTooLarge }

// Size prints a cap: "16 MiB", "512 KiB", "100 bytes".
func Size(n int64) string {
	switch {
	case n >= 1<<20 && n%(1<<20) == 0:
		return fmt.Sprintf("%d MiB", n>>20)
	case n >= 1<<10 && n%(1<<10) == 0:
		return fmt.Sprintf("%d KiB", n>>10)
	}
	return fmt.Sprintf("%d bytes", n)
}

// chunk is how much one read asks for: between two, ctx is checked.
const chunk = 1 << 20

// ReadFile reads the regular file at path, symlinks followed. The open
// does not block (O_NONBLOCK: a FIFO with no writer would wait forever);
// the file opened is then checked, not its name, so nothing can be
// swapped in between: anything but a regular file is refused with
// ErrNotRegular, a file over lim.Max with a *TooLargeError, before a byte
// is read. A file that grows while read is cut at lim.Max+1 bytes and
// refused the same way. ctx is checked between reads.
func ReadFile(ctx context.Context, path string, lim Limit) ([]byte, error) {
	if err := ctxErr(ctx); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	fd, err := unix.Open(path, unix.O_RDONLY|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, &os.PathError{Op: "open", Path: path, Err: err}
	}
	f := os.NewFile(uintptr(fd), path)
	defer f.Close()
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return nil, &os.PathError{Op: "stat", Path: path, Err: err}
	}
	if st.Mode&unix.S_IFMT != unix.S_IFREG {
		return nil, fmt.Errorf("%s: %w (%s)", path, ErrNotRegular, typeName(st.Mode))
	}
	if st.Size > lim.Max {
		return nil, &TooLargeError{Name: path, Limit: lim}
	}
	b, err := readAll(ctx, f, st.Size, lim.Max)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if int64(len(b)) > lim.Max {
		return nil, &TooLargeError{Name: path, Limit: lim}
	}
	return b, nil
}

// deadliner is a reader whose blocked Read a deadline ends: an *os.File
// of a pipe or socket the runtime polls (os.Pipe's, a non-blocking
// stdin).
type deadliner interface {
	SetReadDeadline(time.Time) error
}

// Read reads r (stdin: a pipe, a terminal, a file) to its end, at most
// lim.Max bytes (a *TooLargeError past that: the rest is not read), and
// returns as soon as ctx is done, with ctx's cause, even while a Read
// blocks: a pipe whose writer neither writes nor closes must not make
// the command deaf to SIGINT. The Read runs on a goroutine for that;
// when ctx ends the wait, a reader that takes a deadline (os.Pipe's, a
// socket) is unblocked and the goroutine joined. One that does not (a
// blocking stdin inherited from a shell) keeps its goroutine in the Read
// until the writer writes or closes, or the process exits, which is what
// a command interrupted by a signal does next.
func Read(ctx context.Context, r io.Reader, name string, lim Limit) ([]byte, error) {
	if err := ctxErr(ctx); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	type result struct {
		b   []byte
		err error
	}
	done := make(chan result, 1)
	go func() {
		b, err := readAll(ctx, r, 0, lim.Max)
		done <- result{b, err}
	}()
	select {
	case res := <-done:
		if res.err != nil {
			return nil, fmt.Errorf("%s: %w", name, res.err)
		}
		if int64(len(res.b)) > lim.Max {
			return nil, &TooLargeError{Name: name, Limit: lim}
		}
		return res.b, nil
	case <-ctx.Done():
		if d, ok := r.(deadliner); ok && d.SetReadDeadline(time.Now()) == nil {
			<-done
		}
		return nil, fmt.Errorf("%s: %w", name, context.Cause(ctx))
	}
}

// readAll reads r to its end or max+1 bytes, whichever is first, a chunk
// at a time, checking ctx between chunks. size is what the caller expects
// (a regular file's size), 0 when unknown.
func readAll(ctx context.Context, r io.Reader, size, max int64) ([]byte, error) {
	r = io.LimitReader(r, max+1)
	b := make([]byte, 0, min(size+1, max+1, chunk))
	for {
		if err := ctxErr(ctx); err != nil {
			return nil, err
		}
		if len(b) == cap(b) {
			b = append(b, 0)[:len(b)]
		}
		want := min(cap(b)-len(b), chunk)
		n, err := r.Read(b[len(b) : len(b)+want])
		b = b[:len(b)+n]
		if errors.Is(err, io.EOF) {
			return b, nil
		}
		if err != nil {
			return nil, err
		}
	}
}

// ctxErr is ctx's cause once it is done (an interruption by a signal
// says which), nil before.
func ctxErr(ctx context.Context) error {
	if ctx.Err() != nil {
		return context.Cause(ctx)
	}
	return nil
}

func typeName(mode uint32) string {
	switch mode & unix.S_IFMT {
	case unix.S_IFIFO:
		return "a FIFO"
	case unix.S_IFCHR:
		return "a character device"
	case unix.S_IFBLK:
		return "a block device"
	case unix.S_IFSOCK:
		return "a socket"
	case unix.S_IFDIR:
		return "a directory"
	case unix.S_IFLNK:
		return "a symlink"
	}
	return fmt.Sprintf("file type %#o", mode&unix.S_IFMT)
}
