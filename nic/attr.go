package nic

import (
	"bytes"
	"os"
	"runtime"
	"strconv"
	"sync"

	"golang.org/x/sys/unix"
)

// Attr is one attribute file held open to be read again and again: each
// read is a single pread(2) at offset 0, where a read through FS or a Dir
// opens the file, checks it is a regular file, reads and closes it. sysfs
// makes the value anew for a read at offset 0 (seq_read_iter starts the
// iterator again there, and sysfs_kf_read calls show), so a held
// descriptor reads today's value, as a fresh open does. The agent reads
// every RDMA port's congestion counters five times a second: the opens,
// fstats and closes were a third of its CPU.
//
// A device that goes away (driver reload) leaves the descriptor on an
// attribute that no longer exists: kernfs fails the read (ENODEV), and the
// holder closes the Attr and opens the name again (verify's Sampler lists
// the directory again). A file of a tree under --root or a snapshot stays
// readable through its descriptor after it is removed or replaced, so
// there each read also checks that the file still has a name (fstat's
// link count) and fails like the device when it has none.
//
// On a snapshot whose files are in memory nothing is held: each read goes
// through the Dir. Close the Attr when done; one left to the garbage
// collector is closed by a cleanup.
type Attr struct {
	d   Dir
	rel string

	mu sync.Mutex
	fd int // -1 when nothing is held (in memory, or closed)
	// busy counts reads under way, one that its deadline abandoned
	// included: the descriptor is closed only when none is left, so
	// that its number is never reused under a read that still uses it.
	busy    int
	closing bool
	cleanup runtime.Cleanup
}

// OpenAttr opens d/rel to be read again and again (Attr.ReadUint). It must
// be a regular file, as for every attribute read. On the live host the
// open has the FS's deadline; an open it abandons closes what it opened
// when the kernel answers.
func (d Dir) OpenAttr(rel string) (*Attr, error) {
	a := &Attr{d: d, rel: rel, fd: -1}
	if d.fs.mem() != nil { // a Dir of such an FS has its node (d.mem) or none
		return a, nil
	}
	w := where{d: d, in: true, rel: rel}
	var mu sync.Mutex
	fd, abandoned := -1, false
	err := d.fs.withDeadline("open", w.asked(), func() error {
		got, err := d.fs.openAttr(w, unix.O_RDONLY)
		mu.Lock()
		defer mu.Unlock()
		if err == nil && abandoned {
			unix.Close(got)
			return nil
		}
		fd = got
		return err
	})
	if err != nil {
		mu.Lock()
		abandoned = true
		if fd >= 0 {
			unix.Close(fd)
		}
		mu.Unlock()
		return nil, err
	}
	a.fd = fd
	a.cleanup = runtime.AddCleanup(a, func(fd int) { unix.Close(fd) }, fd)
	return a, nil
}

// ReadUint reads the attribute as a one-line decimal number, as
// FS.ReadUint does: content that is not a number (or is longer than any
// number) is an error wrapping strconv's ErrSyntax or ErrRange, never a 0.
func (a *Attr) ReadUint() (uint64, error) {
	if a.d.fs.mem() != nil {
		return a.d.ReadUint(a.rel)
	}
	asked := a.d.path + "/" + a.rel
	fd, ok := a.acquire()
	if !ok {
		return 0, &os.PathError{Op: "read", Path: a.d.fs.Path(asked), Err: os.ErrClosed}
	}
	// One buffer for the read: with a deadline the read runs on a
	// goroutine of its own and may outlive this call.
	buf := make([]byte, attrBuf)
	var n int
	err := a.d.fs.withDeadline("read", asked, func() error {
		defer a.release()
		var err error
		n, err = retryEINTR(func() (int, error) { return unix.Pread(fd, buf, 0) })
		if err == nil && a.d.fs.root != "/" {
			var st unix.Stat_t
			if err = unix.Fstat(fd, &st); err == nil && st.Nlink == 0 {
				err = unix.ENOENT
			}
		}
		if err != nil {
			return &os.PathError{Op: "read", Path: a.d.fs.Path(asked), Err: err}
		}
		return nil
	})
	if err != nil {
		return 0, err
	}
	if n == len(buf) {
		return 0, &os.PathError{Op: "read", Path: a.d.fs.Path(asked), Err: &strconv.NumError{Func: "ParseUint", Num: string(buf[:16]) + "…", Err: strconv.ErrRange}}
	}
	return strconv.ParseUint(string(bytes.TrimSpace(buf[:n])), 10, 64)
}

// Close releases the descriptor: now, or when the last read still under
// way (abandoned by its deadline) returns. Closing twice, or a nil Attr,
// does nothing.
func (a *Attr) Close() {
	if a == nil {
		return
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.fd < 0 || a.closing {
		return
	}
	a.closing = true
	a.cleanup.Stop()
	if a.busy == 0 {
		unix.Close(a.fd)
		a.fd = -1
	}
}

func (a *Attr) acquire() (int, bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.fd < 0 || a.closing {
		return -1, false
	}
	a.busy++
	return a.fd, true
}

func (a *Attr) release() {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.busy--
	if a.closing && a.busy == 0 {
		unix.Close(a.fd)
		a.fd = -1
	}
}
