package agent

import (
	"context"
	"log/slog"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"golang.org/x/sys/unix"

	"github.com/rocectl/rocectl/internal/netnstest"
	"github.com/rocectl/rocectl/lldp"
	"github.com/rocectl/rocectl/lldp/lldptest"
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
	got := make(chan PeerResult, 8)
	w.onResult = func(r PeerResult) {
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
		if r.Verdict != PeerMismatch {
			t.Errorf("verdict %+v", r)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the listener heard nothing in 10s")
	}
	reg := prometheus.NewRegistry()
	reg.MustRegister(w)
	want := `
# HELP rocectl_peer_consistent 1 when the switch's DCBX (heard in LLDP, or reported by the driver through dcbnl) agrees with the profile, 0 on a mismatch; absent until it was known.
# TYPE rocectl_peer_consistent gauge
rocectl_peer_consistent{device="host0"} 0
# HELP rocectl_peer_pfc_enabled_bitmap The PFC enable bitmap the switch announces (bit p = priority p).
# TYPE rocectl_peer_pfc_enabled_bitmap gauge
rocectl_peer_pfc_enabled_bitmap{device="host0"} 16
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), "rocectl_peer_consistent", "rocectl_peer_pfc_enabled_bitmap"); err != nil {
		t.Error(err)
	}
	rep, err := ReadPeerState(dir)
	if err != nil || rep == nil || len(rep.Ports) != 1 || rep.Ports[0].Verdict != PeerMismatch {
		t.Errorf("state file: %+v, %v", rep, err)
	}
}
