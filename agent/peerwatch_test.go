package agent

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"golang.org/x/sys/unix"

	"github.com/rocectl/rocectl/internal/testkit/netnstest"
	"github.com/rocectl/rocectl/lldp"
	"github.com/rocectl/rocectl/lldp/lldptest"
	"github.com/rocectl/rocectl/nic"
	"github.com/rocectl/rocectl/nic/dcb"
	"github.com/rocectl/rocectl/nic/nictest"
	"github.com/rocectl/rocectl/nic/snapshot"
	"github.com/rocectl/rocectl/peer"
)

// The passive listener hears the switch on a veth in a test-owned
// namespace, exports the verdict and the partner's PFC bitmap, and leaves
// the result in the state dir for audit.
func TestPeerWatchOverVeth(t *testing.T) {
	ns := netnstest.New(t)
	ns.AddVeth("host0", "sw0")
	ns.SetUp("host0")
	ns.SetUp("sw0")
	pfc3 := uint8(1 << 3)
	dir := t.TempDir()
	w := newPeerWatch(lldp.Expect{PFC: &pfc3}, "test", dir, slog.New(slog.DiscardHandler))
	got := make(chan peer.Result, 8)
	w.onResult = func(r peer.Result) {
		select {
		case got <- r:
		default:
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	defer wg.Wait()
	defer cancel()
	if err := ns.Do(func() error { w.start(ctx, &wg, []string{"host0"}); return nil }); err != nil {
		t.Fatal(err)
	}
	f := lldptest.RoCEFrame()
	f.IEEE.PFC.Enable = 1 << 4
	frame, err := lldp.EncodeFrame(net.HardwareAddr{2, 0, 0, 0, 0, 1}, f)
	if err != nil {
		t.Fatal(err)
	}
	// The listener is bound before start returns: one frame is enough.
	err = ns.Do(func() error {
		ifi, err := net.InterfaceByName("sw0")
		if err != nil {
			return err
		}
		fd, err := unix.Socket(unix.AF_PACKET, unix.SOCK_RAW|unix.SOCK_CLOEXEC, 0)
		if err != nil {
			return err
		}
		defer unix.Close(fd)
		addr := unix.SockaddrLinklayer{Ifindex: ifi.Index, Halen: 6}
		copy(addr.Addr[:], lldp.MulticastNearestBridge)
		return unix.Sendto(fd, frame, 0, &addr)
	})
	if err != nil {
		t.Fatal(err)
	}
	select {
	case r := <-got:
		if r.Verdict != peer.Mismatch {
			t.Errorf("verdict %+v", r)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the listener heard nothing in 10s")
	}
	wantPeerMismatchMetrics(t, w, "host0")
	rep, err := peer.ReadState(dir)
	if err != nil || rep == nil || len(rep.Ports) != 1 || rep.Ports[0].Verdict != peer.Mismatch {
		t.Errorf("state file: %+v, %v", rep, err)
	}
}

// The agent polls the driver: the verdict, the partner's PFC bitmap in
// /metrics, the state file; when the driver stops reporting, unknown.
func TestPeerWatchPollsDriver(t *testing.T) {
	mode := uint8(dcb.DCBXLLDManaged | dcb.DCBXVerIEEE)
	s := nictest.NewSim(&snapshot.KernelState{Links: map[string]*snapshot.LinkState{
		"p0": {
			Link:   &nic.LinkInfo{Index: 4, MTU: 1500, OperState: "up", AdminUp: true},
			Driver: &nic.DriverInfo{Driver: snapshot.DriverQede},
			DCB:    &dcb.State{ETS: &dcb.ETS{ETSCap: 8}, PFC: &dcb.PFC{Cap: 8}, DCBX: &mode},
		},
	}})
	// The switch enables PFC on 4; the profile wants 3.
	s.SetPartner("p0", &nictest.Partner{PFC: 1 << 4, PFCCap: 8, ETSCap: 8})
	pfc3 := uint8(1 << 3)
	expectRoCE := lldp.Expect{PFC: &pfc3}
	dir := t.TempDir()
	w := newPeerWatch(expectRoCE, "test", dir, slog.New(slog.DiscardHandler))
	w.pollDriver(s, []string{"p0"})
	if !w.usesDriver("p0") {
		t.Fatal("the port's LLDP frames would still be recorded")
	}
	wantPeerMismatchMetrics(t, w, "p0")
	rep, err := peer.ReadState(dir)
	if err != nil || rep == nil || len(rep.Ports) != 1 || rep.Ports[0].Source != peer.SourceDCBNL || rep.Ports[0].Verdict != peer.Mismatch {
		t.Fatalf("state file %+v, %v", rep, err)
	}
	s.SetPartner("p0", nil)
	w.pollDriver(s, []string{"p0"})
	rep, _ = peer.ReadState(dir)
	if w.usesDriver("p0") || rep.Ports[0].Verdict != peer.Unknown || !strings.Contains(rep.Ports[0].Reason, "has heard none yet") {
		t.Errorf("after the partner went: %+v", rep.Ports[0])
	}
}

// wantPeerMismatchMetrics checks what w exports for device after a
// mismatch with a switch that enables PFC on priority 4 only.
func wantPeerMismatchMetrics(t *testing.T, w *peerWatch, device string) {
	t.Helper()
	reg := prometheus.NewRegistry()
	reg.MustRegister(w)
	want := fmt.Sprintf(`
# HELP rocectl_peer_consistent 1 when the switch's DCBX (heard in LLDP, or reported by the driver through dcbnl) agrees with the profile, 0 on a mismatch; absent until it was known.
# TYPE rocectl_peer_consistent gauge
rocectl_peer_consistent{device=%[1]q} 0
# HELP rocectl_peer_pfc_enabled_bitmap The PFC enable bitmap the switch announces (bit p = priority p).
# TYPE rocectl_peer_pfc_enabled_bitmap gauge
rocectl_peer_pfc_enabled_bitmap{device=%[1]q} 16
`, device)
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), "rocectl_peer_consistent", "rocectl_peer_pfc_enabled_bitmap"); err != nil {
		t.Error(err)
	}
}

// levelCounter is a slog handler that keeps every record's level and
// message, so that a test can assert what was logged at WARN.
type levelCounter struct {
	mu   sync.Mutex
	recs []slog.Record
}

func (h *levelCounter) Enabled(context.Context, slog.Level) bool { return true }
func (h *levelCounter) Handle(_ context.Context, r slog.Record) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.recs = append(h.recs, r.Clone())
	return nil
}
func (h *levelCounter) WithAttrs([]slog.Attr) slog.Handler { return h }
func (h *levelCounter) WithGroup(string) slog.Handler      { return h }

// blockedReads counts the goroutines parked in the poller inside an LLDP
// Read.
func blockedReads() int {
	buf := make([]byte, 1<<20)
	n := runtime.Stack(buf, true)
	c := 0
	for _, g := range strings.Split(string(buf[:n]), "\n\n") {
		if strings.Contains(g, "runtime_pollWait") && strings.Contains(g, "lldp.(*Listener).Read") {
			c++
		}
	}
	return c
}

// Shutdown (the context cancelled) closes every port's listener while it
// waits for a frame: that is the normal end of the watch, not a failure,
// so nothing is logged at WARN (it used to log "LLDP listener stopped:
// use of closed file" once per port at every stop of the agent).
func TestPeerWatchShutdownLogsNoWarning(t *testing.T) {
	ns := netnstest.New(t)
	ports := []string{"host0", "host1"}
	for i, p := range ports {
		ns.AddVeth(p, fmt.Sprintf("sw%d", i))
		ns.SetUp(p)
	}
	logs := &levelCounter{}
	pfc3 := uint8(1 << 3)
	w := newPeerWatch(lldp.Expect{PFC: &pfc3}, "test", "", slog.New(logs))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var wg sync.WaitGroup
	if err := ns.Do(func() error { w.start(ctx, &wg, ports); return nil }); err != nil {
		t.Fatal(err)
	}
	// Cancel only once every listener is inside its Read, so that the
	// close hits a Read in progress, as at a real shutdown.
	deadline := time.Now().Add(10 * time.Second)
	for blockedReads() < len(ports) {
		if time.Now().After(deadline) {
			cancel()
			wg.Wait()
			t.Fatalf("%d of %d listeners blocked in Read after 10s", blockedReads(), len(ports))
		}
		runtime.Gosched()
	}
	cancel()
	wg.Wait()
	logs.mu.Lock()
	defer logs.mu.Unlock()
	for _, r := range logs.recs {
		if r.Level >= slog.LevelWarn {
			var attrs []string
			r.Attrs(func(a slog.Attr) bool { attrs = append(attrs, a.String()); return true })
			t.Errorf("logged at %s on shutdown: %s %v", r.Level, r.Message, attrs)
		}
	}
}
