package systemd

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/rocectl/rocectl/internal/testkit/netnstest"
	"github.com/rocectl/rocectl/lldp"
	"github.com/rocectl/rocectl/lldp/lldptest"
)

// familiesEnv makes the test binary a wrapper (see TestMain): it installs
// a seccomp filter that refuses socket(2) of every address family but the
// comma-separated ones listed, as RestrictAddressFamilies= does, and then
// executes its remaining arguments (after "--").
const familiesEnv = "ROCECTL_TEST_RESTRICT_FAMILIES"

// addressFamilies maps the names RestrictAddressFamilies= takes to numbers.
var addressFamilies = map[string]uint32{
	"AF_UNIX":    unix.AF_UNIX,
	"AF_INET":    unix.AF_INET,
	"AF_INET6":   unix.AF_INET6,
	"AF_NETLINK": unix.AF_NETLINK,
	"AF_PACKET":  unix.AF_PACKET,
}

// auditArch is the AUDIT_ARCH_ of the architectures the filter knows.
var auditArch = map[string]uint32{
	"amd64": unix.AUDIT_ARCH_X86_64,
	"arm64": unix.AUDIT_ARCH_AARCH64,
}

// restrictFamiliesAndExec is the wrapper's body: it never returns on
// success (the process becomes argv[0]).
func restrictFamiliesAndExec(list string, argv []string) error {
	arch, ok := auditArch[runtime.GOARCH]
	if !ok {
		return fmt.Errorf("no seccomp filter for %s", runtime.GOARCH)
	}
	var fams []uint32
	for _, name := range strings.Split(list, ",") {
		f, ok := addressFamilies[name]
		if !ok {
			return fmt.Errorf("unknown address family %q", name)
		}
		fams = append(fams, f)
	}
	// struct seccomp_data: int nr; __u32 arch; __u64 ip; __u64 args[6].
	// args[0] of socket(2) is the family; its low word is at 16
	// (little-endian: amd64, arm64).
	const offNr, offArch, offArg0 = 0, 4, 16
	allow := unix.SockFilter{Code: unix.BPF_RET | unix.BPF_K, K: unix.SECCOMP_RET_ALLOW}
	deny := unix.SockFilter{Code: unix.BPF_RET | unix.BPF_K, K: unix.SECCOMP_RET_ERRNO | uint32(unix.EAFNOSUPPORT)}
	prog := []unix.SockFilter{
		{Code: unix.BPF_LD | unix.BPF_W | unix.BPF_ABS, K: offArch},
		{Code: unix.BPF_JMP | unix.BPF_JEQ | unix.BPF_K, Jt: 1, K: arch},
		allow, // another ABI: not this test's concern
		{Code: unix.BPF_LD | unix.BPF_W | unix.BPF_ABS, K: offNr},
		{Code: unix.BPF_JMP | unix.BPF_JEQ | unix.BPF_K, Jt: 1, K: unix.SYS_SOCKET},
		allow,
		{Code: unix.BPF_LD | unix.BPF_W | unix.BPF_ABS, K: offArg0},
	}
	for i, f := range fams {
		// Jump to the allow after the deny that ends the list.
		prog = append(prog, unix.SockFilter{Code: unix.BPF_JMP | unix.BPF_JEQ | unix.BPF_K, Jt: uint8(len(fams) - i), K: f})
	}
	prog = append(prog, deny, allow)
	runtime.LockOSThread()
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		return fmt.Errorf("no_new_privs: %w", err)
	}
	fprog := unix.SockFprog{Len: uint16(len(prog)), Filter: &prog[0]}
	if _, _, errno := unix.Syscall(unix.SYS_SECCOMP, unix.SECCOMP_SET_MODE_FILTER, unix.SECCOMP_FILTER_FLAG_TSYNC, uintptr(unsafe.Pointer(&fprog))); errno != 0 {
		return fmt.Errorf("seccomp: %w", errno)
	}
	return unix.Exec(argv[0], argv, os.Environ())
}

// familiesWrapper returns at once unless this process was started as the
// address-family wrapper (familiesEnv set); then it execs the command
// after "--" under the filter, or exits 126.
func familiesWrapper() {
	list := os.Getenv(familiesEnv)
	if list == "" {
		return
	}
	i := 0
	for i < len(os.Args) && os.Args[i] != "--" {
		i++
	}
	if i+1 >= len(os.Args) {
		fmt.Fprintln(os.Stderr, "familiesWrapper: no command after --")
		os.Exit(126)
	}
	os.Unsetenv(familiesEnv)
	err := restrictFamiliesAndExec(list, os.Args[i+1:])
	fmt.Fprintln(os.Stderr, "familiesWrapper:", err)
	os.Exit(126)
}

// TestLLDPListenerUnderAgentUnitSandbox opens the real LLDP listener (an
// AF_PACKET socket, lldp.Listen, the one the agent's peer watch uses) in
// the built binary, under exactly what rocectl-agent.service leaves it:
// the CapabilityBoundingSet= (with NoNewPrivileges=, through setpriv(1))
// and the RestrictAddressFamilies= allow-list (a seccomp filter refusing
// socket(2) of other families with EAFNOSUPPORT, as systemd's does). It
// listens on a veth in a namespace this test created, and must hear the
// LLDP frame the test sends on the peer end. Without CAP_NET_RAW or
// AF_PACKET the socket is refused ("packet socket: operation not
// permitted") and on an mlx5 host, whose driver reports no switch DCBX,
// the agent's rocectl_peer_* series never appear.
//
// `rocectl peer --netdev` runs the listener: the agent listens only on the
// RoCE ports its profile matches, which a veth is not.
func TestLLDPListenerUnderAgentUnitSandbox(t *testing.T) {
	bin := needBinary(t)
	if _, ok := auditArch[runtime.GOARCH]; !ok {
		t.Skipf("no seccomp filter for %s in this test", runtime.GOARCH)
	}
	setpriv, err := exec.LookPath("setpriv")
	if err != nil {
		t.Skip("setpriv (util-linux) not installed")
	}
	ns := netnstest.New(t) // skips unless root
	ns.AddVeth("host0", "sw0")
	ns.SetUp("host0")
	ns.SetUp("sw0")

	u := loadUnit(t, "rocectl-agent.service")
	caps := u.list("Service", "CapabilityBoundingSet")
	fams := u.list("Service", "RestrictAddressFamilies")
	if v, _ := u.value("Service", "NoNewPrivileges"); v != "yes" {
		t.Fatalf("NoNewPrivileges=%q: this test emulates the unit with it", v)
	}
	for _, f := range fams {
		if _, ok := addressFamilies[f]; !ok {
			t.Fatalf("RestrictAddressFamilies= names %s, which this test cannot emulate: add it to addressFamilies", f)
		}
	}
	bounding := "-all"
	for _, c := range caps {
		bounding += ",+" + strings.ToLower(strings.TrimPrefix(c, "CAP_"))
	}
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	profile, err := filepath.Abs(filepath.Join(repoRoot, "profiles/connectx-lossless.toml"))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, setpriv, "--bounding-set", bounding, "--inh-caps", "-all", "--no-new-privs", "--",
		self, "--", bin, "peer", "-p", profile, "--netdev", "host0", "--wait", "30s", "-o", "json",
		"--root", t.TempDir(), "--state-dir", t.TempDir())
	cmd.Env = append(os.Environ(), familiesEnv+"="+strings.Join(fams, ","))
	var stdout, stderr strings.Builder
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	// A child forked from a thread inside the namespace starts in it; it
	// cannot enter it itself without CAP_SYS_ADMIN.
	if err := ns.Do(cmd.Start); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()

	frame, err := lldp.EncodeFrame(net.HardwareAddr{2, 0, 0, 0, 0, 1}, lldptest.RoCEFrame())
	if err != nil {
		t.Fatal(err)
	}
	var sock int
	err = ns.Do(func() (err error) {
		sock, err = unix.Socket(unix.AF_PACKET, unix.SOCK_RAW|unix.SOCK_CLOEXEC, 0)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(sock)
	var ifIndex int
	if err := ns.Do(func() error {
		ifi, err := net.InterfaceByName("sw0")
		if err == nil {
			ifIndex = ifi.Index
		}
		return err
	}); err != nil {
		t.Fatal(err)
	}
	addr := unix.SockaddrLinklayer{Ifindex: ifIndex, Halen: 6}
	copy(addr.Addr[:], lldp.MulticastNearestBridge)
	// Like a switch, the peer end repeats its LLDP frame until the
	// listener has heard one (rocectl peer then exits): the test cannot
	// see when the child's socket is bound.
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	var werr error
send:
	for {
		if err := unix.Sendto(sock, frame, 0, &addr); err != nil {
			t.Fatalf("send LLDP on sw0: %v", err)
		}
		select {
		case werr = <-exited:
			break send
		case <-tick.C:
		}
	}
	var rep struct {
		Ports []struct {
			Netdev, Verdict, Reason, Source string
			HeardAt                         *time.Time `json:"heard_at"`
		}
	}
	if err := json.Unmarshal([]byte(stdout.String()), &rep); err != nil || len(rep.Ports) != 1 {
		t.Fatalf("rocectl peer under CapabilityBoundingSet=%v RestrictAddressFamilies=%v: %v; want one port in its JSON (%v)\nstdout:\n%s\nstderr:\n%s",
			caps, fams, werr, err, stdout.String(), stderr.String())
	}
	p := rep.Ports[0]
	if p.HeardAt == nil {
		t.Fatalf("under CapabilityBoundingSet=%v RestrictAddressFamilies=%v the LLDP listener on host0 heard no frame: verdict %s: %s\nstderr:\n%s",
			caps, fams, p.Verdict, p.Reason, stderr.String())
	}
}

// The wrapper itself: a family it was not given is refused with
// EAFNOSUPPORT, one it was given is not, so that the test above fails
// for the address family and not for a broken filter.
func TestFamiliesWrapperRefusesOtherFamilies(t *testing.T) {
	if _, ok := auditArch[runtime.GOARCH]; !ok {
		t.Skipf("no seccomp filter for %s in this test", runtime.GOARCH)
	}
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	python, err := exec.LookPath("python3")
	if err != nil {
		t.Skip("python3 not installed")
	}
	script := `import socket, sys
try:
    socket.socket(socket.AF_INET6, socket.SOCK_DGRAM).close()
except OSError as e:
    sys.exit("AF_INET6: %s" % e)
try:
    socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
except OSError as e:
    print(e.errno)
    sys.exit(0)
sys.exit("AF_INET allowed")
`
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, self, "--", python, "-c", script)
	cmd.Env = append(os.Environ(), familiesEnv+"=AF_INET6,AF_UNIX")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if got := strings.TrimSpace(string(out)); got != fmt.Sprint(int(syscall.EAFNOSUPPORT)) {
		t.Errorf("socket(AF_INET) under the filter: errno %s, want %d (EAFNOSUPPORT)", got, int(syscall.EAFNOSUPPORT))
	}
}
