//go:build lab && verbs

package verify

// Real verbs traffic on Soft-RoCE, inside the lab guest (test/lab or
// ../shared/lab): rxe0 on lab0 (LAB_IP0) is wired to rxe1 on lab1
// (LAB_IP1); GID index 1 is each port's RoCE v2 IPv4 GID.
//
//	CGO_ENABLED=1 go test -tags "lab verbs" -c -o /tmp/verbs.test ./verify
//	LAB_QUIET=1 ../shared/lab/run-lab.sh /tmp/verbs.test -test.v

import (
	"context"
	"encoding/binary"
	"errors"
	"log/slog"
	"maps"
	"net"
	"os"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"

	"github.com/rocectl/rocectl/nic"
)

type verbsLabEnv struct {
	rxe0, rxe1, if0, if1, ip0, ip1 string
}

func verbsLab(t *testing.T) verbsLabEnv {
	t.Helper()
	e := verbsLabEnv{os.Getenv("LAB_RXE0"), os.Getenv("LAB_RXE1"), os.Getenv("LAB_IF0"), os.Getenv("LAB_IF1"),
		os.Getenv("LAB_IP0"), os.Getenv("LAB_IP1")}
	if e.rxe0 == "" || e.rxe1 == "" || e.ip0 == "" || e.ip1 == "" {
		t.Skip("not in the Soft-RoCE lab guest (LAB_RXE0/1, LAB_IP0/1 unset)")
	}
	return e
}

func verbsLabLog(t *testing.T) *slog.Logger {
	return slog.New(slog.NewTextHandler(verbsTestWriter{t}, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

type verbsTestWriter struct{ t *testing.T }

func (w verbsTestWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

func verbsLabCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	return ctx
}

func logVerbsResult(t *testing.T, r *LoopbackResult) {
	t.Helper()
	if r == nil {
		return
	}
	t.Logf("%s/%d gid[%d]=%s -> %s mtu=%d tos=%d: write %d msgs %.4f Gb/s; ping-pong %d, p50 %v p99 %v; counters %v; errors %v",
		r.Device, r.Port, r.GIDIndex, r.GID, r.PeerGID, r.PathMTU, r.TrafficClass, r.WriteMsgs, r.WriteGbps,
		r.SendMsgs, r.LatP50, r.LatP99, r.CounterDeltas, r.Errors)
}

// packets is the number of RoCE packets a message of size bytes takes.
func rocePackets(size, mtu int) int64 { return int64((size + mtu - 1) / mtu) }

func TestLabLoopbackRoCEv2TOS106(t *testing.T) {
	e := verbsLab(t)
	const iters, size = 300, 8192
	res, err := Loopback(verbsLabCtx(t), LoopbackConfig{Device: e.rxe0, GIDIndex: 1, RequireRoCEv2: true,
		TrafficClass: 106, MsgSize: size, Iterations: iters, Log: verbsLabLog(t)})
	logVerbsResult(t, res)
	if err != nil {
		t.Fatalf("Loopback: %v", err)
	}
	if res.GID != "::ffff:"+e.ip0 || res.PeerGID != res.GID || res.TrafficClass != 106 {
		t.Errorf("GID %q peer %q tos %d, want ::ffff:%s to itself with tos 106", res.GID, res.PeerGID, res.TrafficClass, e.ip0)
	}
	if res.PathMTU != 1024 { // lab0 has MTU 1500: 1500-80 fits 1024, not 2048
		t.Errorf("path MTU %d, want 1024 (active_mtu of a 1500-byte netdev)", res.PathMTU)
	}
	if res.WriteMsgs != iters || res.WriteBytes != iters*size || res.WriteGbps <= 0 {
		t.Errorf("write: %d msgs, %d bytes, %.4f Gb/s; want %d msgs of %d bytes", res.WriteMsgs, res.WriteBytes, res.WriteGbps, iters, size)
	}
	if res.SendMsgs != iters || res.LatP50 <= 0 || res.LatP99 < res.LatP50 {
		t.Errorf("ping-pong: %d round trips, p50 %v p99 %v", res.SendMsgs, res.LatP50, res.LatP99)
	}
	// Both QPs are on rxe0, so rxe0 sent and received every packet: each
	// RDMA WRITE is size/MTU request packets, each ping-pong two messages
	// of as many packets (plus ACKs, which rxe counts too).
	want := iters*rocePackets(size, res.PathMTU) + 2*iters*rocePackets(size, res.PathMTU)
	for _, c := range []string{"sent_pkts", "rcvd_pkts"} {
		if res.CounterDeltas[c] < want {
			t.Errorf("hw_counters %s moved by %d, want at least %d", c, res.CounterDeltas[c], want)
		}
	}
	if len(res.Errors) != 0 {
		t.Errorf("completion errors: %v", res.Errors)
	}
}

func TestLabLoopbackDuration(t *testing.T) {
	e := verbsLab(t)
	start := time.Now()
	res, err := Loopback(verbsLabCtx(t), LoopbackConfig{Device: e.rxe0, GIDIndex: 1, MsgSize: 64,
		Duration: 300 * time.Millisecond, Log: verbsLabLog(t)})
	logVerbsResult(t, res)
	if err != nil {
		t.Fatal(err)
	}
	if res.WriteMsgs == 0 || res.SendMsgs == 0 {
		t.Errorf("no traffic in 2 x 300ms: %+v", res)
	}
	if el := time.Since(start); el > 20*time.Second {
		t.Errorf("a 2 x 300ms run took %v", el)
	}
}

func TestLabLoopbackUnpopulatedGID(t *testing.T) {
	e := verbsLab(t)
	_, err := Loopback(verbsLabCtx(t), LoopbackConfig{Device: e.rxe0, GIDIndex: 2, Iterations: 10, Log: verbsLabLog(t)})
	t.Logf("err: %v", err)
	if !errors.Is(err, ErrGIDInvalid) {
		t.Fatalf("GID index 2 (empty on rxe): got %v, want ErrGIDInvalid", err)
	}
	if !strings.Contains(err.Error(), "GID index 2") {
		t.Errorf("error does not name the index: %v", err)
	}
}

func TestLabLoopbackLinkLocalGID(t *testing.T) {
	e := verbsLab(t)
	// GID 0 is lab0's fe80:: address. The lab routes fe80::/64 out of the
	// wire (table 101), so a QP aimed at its own link-local GID talks to
	// lab1, which does not own that address.
	res, err := Loopback(verbsLabCtx(t), LoopbackConfig{Device: e.rxe0, GIDIndex: 0, Iterations: 10, Log: verbsLabLog(t)})
	logVerbsResult(t, res)
	t.Logf("err: %v", err)
	if err == nil {
		t.Fatal("loopback through the link-local GID succeeded; the lab routes it away, it must fail")
	}
	// Linux 6.1 resolves the destination's MAC when the QP goes to RTR:
	// neighbour discovery for fe80::… out of lab0 gets no answer, and
	// ib_resolve_eth_dmac gives up with ETIMEDOUT.
	if !errors.Is(err, ErrQPTransition) || !errors.Is(err, syscall.ETIMEDOUT) ||
		!strings.Contains(err.Error(), "INIT->RTR") || !strings.Contains(err.Error(), "no route or neighbour") {
		t.Errorf("got %v, want RTR refused with ETIMEDOUT and the no-route diagnosis", err)
	}
}

func TestLabLoopbackPathMTUTooBig(t *testing.T) {
	e := verbsLab(t)
	_, err := Loopback(verbsLabCtx(t), LoopbackConfig{Device: e.rxe0, GIDIndex: 1, PathMTU: 4096, Iterations: 10, Log: verbsLabLog(t)})
	// Refused before any QP exists, with the port's numbers in the message.
	t.Logf("err: %v", err)
	if !errors.Is(err, ErrPathMTU) || !strings.Contains(err.Error(), "active_mtu 1024") {
		t.Fatalf("path MTU 4096 on a 1024 port: got %v, want ErrPathMTU naming active_mtu 1024", err)
	}
}

func TestLabPathMTUTooBigOnTheWire(t *testing.T) {
	e := verbsLab(t)
	// What the active_mtu check prevents, shown across the wire (same-port
	// loopback never leaves the host's IP stack, so it needs two ports):
	// the kernel accepts path MTU 4096 on ports whose netdevs carry 1500
	// bytes, and 4 KiB messages leave as 4 KiB packets that lab0 refuses.
	// rxe then retries the transmit forever (no completion at all; its
	// send_err counter races up) where a NIC would drop on the wire and
	// end in RETRY_EXC_ERR. Small messages pass, which is why this
	// misconfiguration hides so well.
	ctx := verbsLabCtx(t)
	addr := e.ip1 + ":18602"
	var wg sync.WaitGroup
	var serr error
	wg.Go(func() {
		_, serr = Listen(ctx, addr, LoopbackConfig{Device: e.rxe1, GIDIndex: 1, PathMTU: 4096, skipMTUCheck: true,
			Log: verbsLabLog(t).With("end", "listen")})
	})
	res, err := Connect(ctx, addr, LoopbackConfig{Device: e.rxe0, GIDIndex: 1, PathMTU: 4096, MsgSize: 4096,
		Iterations: 10, Ops: []string{OpWrite}, skipMTUCheck: true, stall: 3 * time.Second,
		Log: verbsLabLog(t).With("end", "connect")})
	wg.Wait()
	logVerbsResult(t, res)
	t.Logf("connect: %v; listen: %v", err, serr)
	if !errors.Is(err, ErrStalled) || !strings.Contains(err.Error(), "send_err +") || !strings.Contains(err.Error(), "MTU mismatch") {
		t.Fatalf("got %v, want ErrStalled with send_err evidence of an MTU mismatch", err)
	}
	if res == nil || res.PathMTU != 4096 || res.WriteMsgs != 0 {
		t.Errorf("result %+v, want path MTU 4096 and no completed write", res)
	}
	// The passive end learns it from the active end's error message.
	if !errors.Is(serr, ErrPeerFailed) || !strings.Contains(serr.Error(), "RDMA WRITE") {
		t.Errorf("listen end: %v, want ErrPeerFailed carrying the peer's diagnosis", serr)
	}
}

func TestLabTwoHost(t *testing.T) {
	e := verbsLab(t)
	ctx := verbsLabCtx(t)
	addr := e.ip1 + ":18600"
	const iters, size = 200, 16384
	var wg sync.WaitGroup
	var sres *LoopbackResult
	var serr error
	wg.Go(func() {
		sres, serr = Listen(ctx, addr, LoopbackConfig{Device: e.rxe1, GIDIndex: 1, Log: verbsLabLog(t).With("end", "listen")})
	})
	cres, cerr := Connect(ctx, addr, LoopbackConfig{Device: e.rxe0, GIDIndex: 1, TrafficClass: 106, MsgSize: size,
		Iterations: iters, Log: verbsLabLog(t).With("end", "connect")})
	wg.Wait()
	logVerbsResult(t, cres)
	logVerbsResult(t, sres)
	if cerr != nil || serr != nil {
		t.Fatalf("connect: %v; listen: %v", cerr, serr)
	}
	if cres.GID != "::ffff:"+e.ip0 || cres.PeerGID != "::ffff:"+e.ip1 || sres.GID != cres.PeerGID || sres.PeerGID != cres.GID {
		t.Errorf("GIDs: connect %s->%s, listen %s->%s", cres.GID, cres.PeerGID, sres.GID, sres.PeerGID)
	}
	if sres.TrafficClass != 106 {
		t.Errorf("listen end used tos %d, want the active end's 106", sres.TrafficClass)
	}
	for _, r := range []*LoopbackResult{cres, sres} {
		if r.WriteMsgs != iters || r.WriteBytes != iters*size || r.WriteGbps <= 0 || r.SendMsgs != iters ||
			r.LatP50 <= 0 || r.LatP99 < r.LatP50 {
			t.Errorf("%s: %+v", r.Device, r)
		}
	}
	// Each end's rxe counted its own side: rxe0 sent the writes, rxe1
	// received them, and the ping-pong went both ways.
	want := iters*rocePackets(size, cres.PathMTU) + iters*rocePackets(size, cres.PathMTU)
	if cres.CounterDeltas["sent_pkts"] < want || sres.CounterDeltas["rcvd_pkts"] < want {
		t.Errorf("sent_pkts(rxe0) %d, rcvd_pkts(rxe1) %d, want at least %d",
			cres.CounterDeltas["sent_pkts"], sres.CounterDeltas["rcvd_pkts"], want)
	}
}

func TestLabTwoHostNoListener(t *testing.T) {
	e := verbsLab(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	start := time.Now()
	_, err := Connect(ctx, e.ip1+":18601", LoopbackConfig{Device: e.rxe0, GIDIndex: 1, Iterations: 10, Log: verbsLabLog(t)})
	t.Logf("err after %v: %v", time.Since(start), err)
	if err == nil || !errors.Is(err, context.DeadlineExceeded) && !errors.Is(err, syscall.ECONNREFUSED) {
		t.Fatalf("got %v, want a dial failure", err)
	}
	if time.Since(start) > 10*time.Second {
		t.Errorf("gave up only after %v", time.Since(start))
	}
}

// roceCapture counts the RoCE v2 packets (IPv4, UDP port 4791) seen on one
// interface by their TOS byte, through an AF_PACKET socket: proof of what
// the QP attributes put on the wire.
type roceCapture struct {
	fd   int
	mu   sync.Mutex
	tos  map[uint8]int
	done chan struct{}
}

func captureRoCE(t *testing.T, ifname string) *roceCapture {
	t.Helper()
	ifi, err := net.InterfaceByName(ifname)
	if err != nil {
		t.Fatal(err)
	}
	proto := uint16(unix.ETH_P_ALL<<8&0xff00 | unix.ETH_P_ALL>>8) // htons
	fd, err := unix.Socket(unix.AF_PACKET, unix.SOCK_RAW, int(proto))
	if err != nil {
		t.Fatalf("AF_PACKET socket: %v", err)
	}
	if err := unix.Bind(fd, &unix.SockaddrLinklayer{Protocol: proto, Ifindex: ifi.Index}); err != nil {
		unix.Close(fd)
		t.Fatalf("bind to %s: %v", ifname, err)
	}
	tv := unix.Timeval{Usec: 100000}
	if err := unix.SetsockoptTimeval(fd, unix.SOL_SOCKET, unix.SO_RCVTIMEO, &tv); err != nil {
		t.Fatal(err)
	}
	c := &roceCapture{fd: fd, tos: map[uint8]int{}, done: make(chan struct{})}
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		buf := make([]byte, 65536)
		for {
			select {
			case <-c.done:
				return
			default:
			}
			n, _, err := unix.Recvfrom(fd, buf, 0)
			if err != nil {
				continue // SO_RCVTIMEO: look at done again
			}
			if tos, ok := roceTOS(buf[:n]); ok {
				c.mu.Lock()
				c.tos[tos]++
				c.mu.Unlock()
			}
		}
	}()
	t.Cleanup(func() {
		c.stop()
		<-stopped
		unix.Close(fd)
	})
	return c
}

func (c *roceCapture) stop() {
	select {
	case <-c.done:
	default:
		close(c.done)
	}
}

func (c *roceCapture) counts() map[uint8]int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return maps.Clone(c.tos)
}

// roceTOS returns the TOS of an Ethernet frame carrying IPv4/UDP to 4791.
func roceTOS(f []byte) (uint8, bool) {
	if len(f) < 14+20+8 || binary.BigEndian.Uint16(f[12:]) != 0x0800 {
		return 0, false
	}
	ip := f[14:]
	ihl := int(ip[0]&0x0f) * 4
	if ip[0]>>4 != 4 || ip[9] != unix.IPPROTO_UDP || len(ip) < ihl+8 {
		return 0, false
	}
	if binary.BigEndian.Uint16(ip[ihl+2:]) != 4791 {
		return 0, false
	}
	return ip[1], true
}

func TestLabTwoHostTOSOnTheWire(t *testing.T) {
	e := verbsLab(t)
	if e.if1 == "" {
		t.Skip("LAB_IF1 unset")
	}
	capture := captureRoCE(t, e.if1)
	ctx := verbsLabCtx(t)
	addr := e.ip1 + ":18603"
	var wg sync.WaitGroup
	var serr error
	wg.Go(func() {
		_, serr = Listen(ctx, addr, LoopbackConfig{Device: e.rxe1, GIDIndex: 1, TrafficClass: 0, Log: verbsLabLog(t).With("end", "listen")})
	})
	res, err := Connect(ctx, addr, LoopbackConfig{Device: e.rxe0, GIDIndex: 1, TrafficClass: 106, SL: 3, MsgSize: 2048,
		Iterations: 50, Log: verbsLabLog(t).With("end", "connect")})
	wg.Wait()
	capture.stop()
	logVerbsResult(t, res)
	if err != nil || serr != nil {
		t.Fatalf("connect: %v; listen: %v", err, serr)
	}
	got := capture.counts()
	t.Logf("RoCE packets on %s by TOS: %v", e.if1, got)
	// Requests (rxe0 -> rxe1) and responses/ACKs (rxe1 -> rxe0) both cross
	// lab1; all of them must carry the active end's TOS 106 = DSCP 26 | ECT(0).
	if got[106] < 50*2 || len(got) != 1 {
		t.Errorf("TOS of RoCE packets on %s: %v, want only 106 (at least 100 packets)", e.if1, got)
	}
}

func TestLabMemlockDiagnosis(t *testing.T) {
	e := verbsLab(t)
	// Capabilities are per thread, RLIMIT_MEMLOCK per process. The thread
	// stays locked to this goroutine and is never unlocked, so Go destroys
	// it (and its reduced capabilities) when the test ends.
	runtime.LockOSThread()
	var old unix.Rlimit
	if err := unix.Getrlimit(unix.RLIMIT_MEMLOCK, &old); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { unix.Setrlimit(unix.RLIMIT_MEMLOCK, &old) })
	if err := unix.Setrlimit(unix.RLIMIT_MEMLOCK, &unix.Rlimit{Cur: 64 << 10, Max: old.Max}); err != nil {
		t.Fatal(err)
	}
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	var caps [2]unix.CapUserData
	if err := unix.Capget(&hdr, &caps[0]); err != nil {
		t.Fatal(err)
	}
	caps[0].Effective &^= 1 << unix.CAP_IPC_LOCK // root pins without limit while it holds CAP_IPC_LOCK
	if err := unix.Capset(&hdr, &caps[0]); err != nil {
		t.Fatal(err)
	}
	_, err := Loopback(verbsLabCtx(t), LoopbackConfig{Device: e.rxe0, GIDIndex: 1, MsgSize: 1 << 20, Iterations: 1, Log: verbsLabLog(t)})
	t.Logf("err: %v", err)
	if !errors.Is(err, ErrMemlock) || !errors.Is(err, syscall.ENOMEM) || !strings.Contains(err.Error(), "LimitMEMLOCK=infinity") ||
		!strings.Contains(err.Error(), "RLIMIT_MEMLOCK is 65536 bytes") {
		t.Fatalf("got %v, want ErrMemlock/ENOMEM naming LimitMEMLOCK and the 64 KiB limit", err)
	}
}

func TestLabLoopbackCancel(t *testing.T) {
	e := verbsLab(t)
	ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
	defer cancel()
	start := time.Now()
	res, err := Loopback(ctx, LoopbackConfig{Device: e.rxe0, GIDIndex: 1, MsgSize: 4096, Duration: time.Hour, Log: verbsLabLog(t)})
	logVerbsResult(t, res)
	t.Logf("err after %v: %v", time.Since(start), err)
	if !errors.Is(err, context.DeadlineExceeded) || res == nil || res.WriteMsgs == 0 {
		t.Fatalf("got %v with %+v, want the context's deadline after some writes", err, res)
	}
	if time.Since(start) > 15*time.Second {
		t.Errorf("cancel took %v", time.Since(start))
	}
}

// rdmaPortState reads /sys/class/infiniband/<dev>/ports/1/state ("4: ACTIVE").
func rdmaPortState(t *testing.T, dev string) string {
	b, err := os.ReadFile("/sys/class/infiniband/" + dev + "/ports/1/state")
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(string(b))
}

func TestLabPortDown(t *testing.T) {
	e := verbsLab(t)
	link, err := netlink.LinkByName(e.if0)
	if err != nil {
		t.Fatal(err)
	}
	gid1 := func() string {
		b, _ := os.ReadFile("/sys/class/infiniband/" + e.rxe0 + "/ports/1/gids/1")
		return strings.TrimSpace(string(b))
	}
	wantGID := gid1()
	if err := netlink.LinkSetDown(link); err != nil {
		t.Fatal(err)
	}
	// Later tests (and other packages' lab tests in this boot) need the
	// port back exactly as it was: ACTIVE with the IPv4 GID at index 1.
	t.Cleanup(func() {
		if err := netlink.LinkSetUp(link); err != nil {
			t.Fatal(err)
		}
		for i := 0; i < 100 && (rdmaPortState(t, e.rxe0) != "4: ACTIVE" || gid1() != wantGID); i++ {
			time.Sleep(100 * time.Millisecond)
		}
		if s, g := rdmaPortState(t, e.rxe0), gid1(); s != "4: ACTIVE" || g != wantGID {
			t.Fatalf("%s did not come back: state %q, gid[1] %q (want %q)", e.rxe0, s, g, wantGID)
		}
	})
	for i := 0; i < 50 && rdmaPortState(t, e.rxe0) == "4: ACTIVE"; i++ {
		time.Sleep(100 * time.Millisecond)
	}
	t.Logf("%s with %s down: %s", e.rxe0, e.if0, rdmaPortState(t, e.rxe0))
	_, err = Loopback(verbsLabCtx(t), LoopbackConfig{Device: e.rxe0, GIDIndex: 1, Iterations: 1, Log: verbsLabLog(t)})
	t.Logf("err: %v", err)
	if !errors.Is(err, ErrPortNotActive) || !strings.Contains(err.Error(), `port state is "down"`) {
		t.Fatalf("got %v, want ErrPortNotActive saying the port is down", err)
	}
}

// A hw_counters file held open (nic.Attr, as the agent's Sampler reads each
// counter five times a second) reads the kernel's new value after traffic:
// sysfs makes the value anew for a pread at offset 0. A fresh open of the
// same file agrees with it.
func TestLabHeldHWCounterReadsTheNewValue(t *testing.T) {
	e := verbsLab(t)
	fs := nic.NewFS("/", true)
	d := fs.Dir("/sys/class/infiniband/" + e.rxe0 + "/ports/1/hw_counters")
	defer d.Close()
	a, err := d.OpenAttr("sent_pkts")
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	before, err := a.ReadUint()
	if err != nil {
		t.Fatal(err)
	}
	const iters = 50
	res, err := Loopback(verbsLabCtx(t), LoopbackConfig{Device: e.rxe0, GIDIndex: 1, RequireRoCEv2: true,
		MsgSize: 4096, Iterations: iters, Log: verbsLabLog(t)})
	if err != nil {
		t.Fatalf("Loopback: %v", err)
	}
	after, err := a.ReadUint()
	if err != nil {
		t.Fatal(err)
	}
	fresh, err := d.ReadUint("sent_pkts")
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("sent_pkts %d before, %d after through the held file, %d through a fresh open (the loopback counted %d)", before, after, fresh, res.CounterDeltas["sent_pkts"])
	if after < before+iters {
		t.Errorf("held sent_pkts went from %d to %d over %d RDMA writes and more", before, after, iters)
	}
	if fresh < after {
		t.Errorf("a fresh open reads %d, less than the held file's %d", fresh, after)
	}
}
