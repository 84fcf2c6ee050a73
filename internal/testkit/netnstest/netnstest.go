package netnstest

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"testing"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"
	"golang.org/x/sys/unix"
)

// NS is a network namespace created for one test.
type NS struct {
	t testing.TB
	h netns.NsHandle
}

// New creates a fresh network namespace for t and registers its cleanup. It
// skips t when the process is not root, because unshare(CLONE_NEWNET) needs
// CAP_SYS_ADMIN, and fails t when the kernel refuses.
func New(t testing.TB) *NS {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("netnstest: needs root (CAP_SYS_ADMIN) to create a network namespace")
	}
	type result struct {
		h   netns.NsHandle
		err error
	}
	res := make(chan result, 1)
	go func() {
		var r result
		defer func() { res <- r }()
		r.err = inThread(func() error {
			// netns.New unshares this thread into a new namespace;
			// inThread moves it back afterwards.
			var err error
			r.h, err = netns.New()
			return err
		})
	}()
	r := <-res
	if r.err != nil {
		if r.h.IsOpen() {
			r.h.Close()
		}
		t.Fatalf("netnstest: create network namespace: %v", r.err)
	}
	ns := &NS{t: t, h: r.h}
	t.Cleanup(func() {
		if err := ns.h.Close(); err != nil {
			t.Errorf("netnstest: close namespace handle: %v", err)
		}
	})
	return ns
}

// Handle is the namespace's file handle, e.g. for netlink.NewHandleAt or
// LinkSubscribeOptions.Namespace. It stays owned by ns: do not close it.
func (ns *NS) Handle() netns.NsHandle { return ns.h }

// Inode is the namespace's inode number, the N in the "net:[N]" that
// readlink /proc/<pid>/ns/net shows for a process inside it.
func (ns *NS) Inode() uint64 {
	var st unix.Stat_t
	if err := unix.Fstat(int(ns.h), &st); err != nil {
		ns.t.Fatalf("netnstest: fstat namespace handle: %v", err)
	}
	return st.Ino
}

// Do runs fn on an OS thread that is inside the namespace and returns fn's
// error. Everything fn opens there (netlink and ethtool sockets) stays bound
// to the namespace after Do returns; goroutines fn starts do not inherit the
// namespace. A panic in fn is re-raised in the caller; a t.FailNow in fn
// (which should rather return an error) ends the caller's test too.
func (ns *NS) Do(fn func() error) error {
	type result struct {
		err      error
		finished bool
		panicVal any
	}
	res := make(chan result, 1)
	go func() {
		var r result
		defer func() {
			if !r.finished {
				// fn panicked (recover gives the value) or called
				// runtime.Goexit (recover gives nil).
				r.panicVal = recover()
			}
			res <- r
		}()
		r.err = inThread(func() error {
			if err := netns.Set(ns.h); err != nil {
				return fmt.Errorf("netnstest: enter namespace: %w", err)
			}
			return fn()
		})
		r.finished = true
	}()
	r := <-res
	switch {
	case r.finished:
		return r.err
	case r.panicVal != nil:
		panic(r.panicVal)
	default:
		ns.t.FailNow()
		return nil // not reached
	}
}

// inThread runs fn locked to the current OS thread and then puts the thread
// back into the network namespace it started in, also when fn panics. Only
// then is the thread unlocked; if it cannot be put back it stays locked, so
// that the runtime retires it when the goroutine ends.
func inThread(fn func() error) error {
	runtime.LockOSThread()
	orig, err := netns.Get()
	if err != nil {
		runtime.UnlockOSThread()
		return fmt.Errorf("netnstest: current namespace: %w", err)
	}
	defer func() {
		if err := netns.Set(orig); err == nil {
			runtime.UnlockOSThread()
		}
		orig.Close()
	}()
	return fn()
}

// AddVeth creates a veth pair a <-> b inside the namespace (both ends stay
// there), failing the test on error.
func (ns *NS) AddVeth(a, b string) {
	ns.t.Helper()
	err := ns.Do(func() error {
		return netlink.LinkAdd(&netlink.Veth{
			LinkAttrs: netlink.LinkAttrs{Name: a},
			PeerName:  b,
		})
	})
	if err != nil {
		ns.t.Fatalf("netnstest: add veth %s/%s: %v", a, b, err)
	}
}

// AddDummy creates a dummy link inside the namespace. It returns the kernel's
// error rather than failing the test, because kernels built without
// CONFIG_DUMMY answer EOPNOTSUPP ("Unknown device type") and a test may
// prefer to skip then; see SkipIfNoDummy.
func (ns *NS) AddDummy(name string) error {
	return ns.Do(func() error {
		return netlink.LinkAdd(&netlink.Dummy{LinkAttrs: netlink.LinkAttrs{Name: name}})
	})
}

// SkipIfNoDummy adds a dummy link and skips the test when the kernel has no
// dummy driver; any other failure fails the test.
func (ns *NS) SkipIfNoDummy(name string) {
	ns.t.Helper()
	err := ns.AddDummy(name)
	switch {
	case err == nil:
	case errors.Is(err, unix.EOPNOTSUPP):
		ns.t.Skipf("netnstest: kernel has no dummy link type (CONFIG_DUMMY): %v", err)
	default:
		ns.t.Fatalf("netnstest: add dummy %s: %v", name, err)
	}
}

// SetUp sets a link administratively up, failing the test on error.
func (ns *NS) SetUp(name string) {
	ns.t.Helper()
	err := ns.Do(func() error {
		l, err := netlink.LinkByName(name)
		if err != nil {
			return err
		}
		return netlink.LinkSetUp(l)
	})
	if err != nil {
		ns.t.Fatalf("netnstest: set %s up: %v", name, err)
	}
}

// Cmd is an exec.Cmd whose process is started inside the namespace. Start,
// Run, Output and CombinedOutput fork from a thread that is in the namespace;
// everything else (Stdout, Env, Wait, ...) is the embedded exec.Cmd's.
//
// A plain *exec.Cmd cannot do this: the child inherits the namespace of the
// thread that forks it, which is whatever thread the caller's goroutine
// happens to run on.
type Cmd struct {
	*exec.Cmd
	ns *NS
}

// Command is exec.Command for a process inside the namespace.
func (ns *NS) Command(name string, arg ...string) *Cmd {
	return &Cmd{Cmd: exec.Command(name, arg...), ns: ns}
}

// Start starts the process inside the namespace.
func (c *Cmd) Start() error {
	return c.ns.Do(c.Cmd.Start)
}

// Run starts the process inside the namespace and waits for it.
func (c *Cmd) Run() error {
	if err := c.Start(); err != nil {
		return err
	}
	return c.Wait()
}

// Output runs the process inside the namespace and returns its stdout; as
// with exec.Cmd.Output, an *exec.ExitError carries the captured stderr.
func (c *Cmd) Output() ([]byte, error) {
	if c.Stdout != nil {
		return nil, errors.New("netnstest: Stdout already set")
	}
	var out bytes.Buffer
	c.Stdout = &out
	captureErr := c.Stderr == nil
	var errb bytes.Buffer
	if captureErr {
		c.Stderr = &errb
	}
	err := c.Run()
	var ee *exec.ExitError
	if captureErr && errors.As(err, &ee) {
		ee.Stderr = errb.Bytes()
	}
	return out.Bytes(), err
}

// CombinedOutput runs the process inside the namespace and returns stdout
// and stderr together.
func (c *Cmd) CombinedOutput() ([]byte, error) {
	if c.Stdout != nil || c.Stderr != nil {
		return nil, errors.New("netnstest: Stdout or Stderr already set")
	}
	var b bytes.Buffer
	c.Stdout = &b
	c.Stderr = &b
	err := c.Run()
	return b.Bytes(), err
}
