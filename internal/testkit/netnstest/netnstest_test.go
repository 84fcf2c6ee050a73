package netnstest

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"
)

// nsOf returns the "net:[inode]" link of a /proc ns file.
func nsOf(t *testing.T, path string) string {
	t.Helper()
	s, err := os.Readlink(path)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestNewIsolatedNamespace(t *testing.T) {
	ns := New(t)
	want := fmt.Sprintf("net:[%d]", ns.Inode())
	if host := nsOf(t, "/proc/thread-self/ns/net"); host == want {
		t.Fatalf("new namespace %s is the test goroutine's own", want)
	}
	var inside string
	if err := ns.Do(func() error {
		var err error
		inside, err = os.Readlink("/proc/thread-self/ns/net")
		return err
	}); err != nil {
		t.Fatal(err)
	}
	if inside != want {
		t.Fatalf("Do ran in %s, want %s", inside, want)
	}
}

func TestAddVethStaysInside(t *testing.T) {
	ns := New(t)
	ns.AddVeth("nnt-a", "nnt-b")
	var names []string
	if err := ns.Do(func() error {
		links, err := netlink.LinkList()
		for _, l := range links {
			names = append(names, l.Attrs().Name)
		}
		return err
	}); err != nil {
		t.Fatal(err)
	}
	got := strings.Join(names, ",")
	if got != "lo,nnt-a,nnt-b" && got != "lo,nnt-b,nnt-a" {
		t.Fatalf("links inside = %s, want lo and the veth pair", got)
	}
	// The test goroutine is not in the namespace: the link must not exist
	// here. (The name is unusual enough not to exist on the host.)
	if _, err := netlink.LinkByName("nnt-a"); err == nil {
		t.Fatal("nnt-a is visible outside the test namespace")
	}
}

func TestDoReturnsErrorAndDoesNotLeakThreads(t *testing.T) {
	ns := New(t)
	sentinel := errors.New("boom")
	for range 20 {
		if err := ns.Do(func() error { return sentinel }); !errors.Is(err, sentinel) {
			t.Fatalf("Do error = %v, want %v", err, sentinel)
		}
	}
	// Do puts its thread back before returning, so every thread of the
	// process must now be in the test goroutine's namespace.
	host := nsOf(t, "/proc/thread-self/ns/net")
	tasks, err := filepath.Glob("/proc/self/task/*/ns/net")
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range tasks {
		s, err := os.Readlink(p)
		if err != nil {
			continue // thread exited meanwhile
		}
		if s != host {
			t.Errorf("%s is in %s, want %s (test namespace is net:[%d])", p, s, host, ns.Inode())
		}
	}
}

func TestDoRepanics(t *testing.T) {
	ns := New(t)
	defer func() {
		if r := recover(); r != "inside" {
			t.Fatalf("recovered %v, want the panic value from fn", r)
		}
	}()
	_ = ns.Do(func() error { panic("inside") })
	t.Fatal("Do returned after fn panicked")
}

func TestCommandRunsInside(t *testing.T) {
	ns := New(t)
	ns.AddVeth("nnt-c", "nnt-d")
	out, err := ns.Command("readlink", "/proc/self/ns/net").Output()
	if err != nil {
		t.Fatal(err)
	}
	if got, want := strings.TrimSpace(string(out)), fmt.Sprintf("net:[%d]", ns.Inode()); got != want {
		t.Fatalf("child in %s, want %s", got, want)
	}

	// Independent check: the kernel's own view from inside, via ip(8).
	if _, err := exec.LookPath("ip"); err != nil {
		t.Skip("ip(8) not installed; namespace inode check passed")
	}
	out, err = ns.Command("ip", "-o", "link", "show").CombinedOutput()
	if err != nil {
		t.Fatalf("ip link: %v\n%s", err, out)
	}
	if !strings.Contains(string(out), "nnt-c@nnt-d") || !strings.Contains(string(out), "nnt-d@nnt-c") {
		t.Fatalf("ip link inside does not list the veth pair:\n%s", out)
	}
}

func TestCommandStartWait(t *testing.T) {
	ns := New(t)
	cmd := ns.Command("sh", "-c", "readlink /proc/self/ns/net; exit 3")
	var out strings.Builder
	cmd.Stdout = &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	err := cmd.Wait()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 3 {
		t.Fatalf("Wait = %v, want exit status 3", err)
	}
	if got, want := strings.TrimSpace(out.String()), fmt.Sprintf("net:[%d]", ns.Inode()); got != want {
		t.Fatalf("child in %s, want %s", got, want)
	}
}

func TestOutputKeepsStderr(t *testing.T) {
	ns := New(t)
	_, err := ns.Command("sh", "-c", "echo oops >&2; exit 1").Output()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || strings.TrimSpace(string(ee.Stderr)) != "oops" {
		t.Fatalf("Output error = %#v, want ExitError with stderr \"oops\"", err)
	}
}

func TestAddDummy(t *testing.T) {
	ns := New(t)
	err := ns.AddDummy("nnt-dummy")
	if errors.Is(err, unix.EOPNOTSUPP) {
		// This kernel (no CONFIG_DUMMY) answers "Unknown device type";
		// make sure that is what AddDummy passes on.
		t.Skipf("no dummy driver here: %v", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	if err := ns.Do(func() error {
		l, err := netlink.LinkByName("nnt-dummy")
		if err == nil && l.Type() != "dummy" {
			return fmt.Errorf("link type %q, want dummy", l.Type())
		}
		return err
	}); err != nil {
		t.Fatal(err)
	}
}
