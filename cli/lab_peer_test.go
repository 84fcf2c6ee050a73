//go:build lab

package cli

// `rocectl peer` against the lab's real RoCE port: the profile matches
// rxe0, discovery finds the netdev that carries it (LAB_IF0, lab0), and the
// "switch" is an AF_PACKET socket on the other end of the wire (LAB_IF1),
// sending real LLDP frames. Only that wire can carry them: the lab
// kernel's (6.1) netdevsim has no receive path, so a netdevsim port with
// an rxe device on it would never hear its partner.

import (
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/rocectl/rocectl/lldp"
	"github.com/rocectl/rocectl/peer"
	"github.com/rocectl/rocectl/test/lab/labenv"
)

// labSwitch sends frame out of netdev (in the initial namespace, where the
// lab's wire is) every 20 ms until the test ends.
func labSwitch(t *testing.T, netdev string, frame []byte) {
	t.Helper()
	ifi, err := net.InterfaceByName(netdev)
	if err != nil {
		t.Fatalf("the switch end of the wire: %v", err)
	}
	fd, err := unix.Socket(unix.AF_PACKET, unix.SOCK_RAW|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	addr := unix.SockaddrLinklayer{Ifindex: ifi.Index, Halen: 6}
	copy(addr.Addr[:], lldp.MulticastNearestBridge)
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		tick := time.NewTicker(20 * time.Millisecond)
		defer tick.Stop()
		for {
			if err := unix.Sendto(fd, frame, 0, &addr); err != nil {
				t.Errorf("switch send on %s: %v", netdev, err)
				return
			}
			select {
			case <-stop:
				return
			case <-tick.C:
			}
		}
	}()
	t.Cleanup(func() {
		close(stop)
		wg.Wait()
		unix.Close(fd)
	})
}

func TestLabPeerOnRxePort(t *testing.T) {
	e := labenv.Get(t)
	// The profile matches the RDMA device, not the netdev: which port
	// peer listens on comes from discovery. The switch must announce
	// PFC on 3, DSCP 26 (TOS 106) → 3 and the CNPs' DSCP 48 → 6, which
	// lldptest.RoCEFrame does.
	prof := filepath.Join(t.TempDir(), "peer.toml")
	body := fmt.Sprintf(`name = "lab-peer"
[match]
rdma_devices = [%q]
[qos]
trust = "dscp"
dscp_to_priority = "default"
pfc_priorities = [3]
[ecn]
cnp_dscp = 48
[roce]
default_tos = 106
`, e.RXE[0])
	if err := os.WriteFile(prof, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	sw := fmt.Sprintf("%s <-> leaf-a12 (0c:42:a1:00:00:01) port swp7", e.If[0])
	cases := []struct {
		name    string
		change  func(*lldp.Frame)
		code    int
		verdict string
		line    string
	}{
		{"consistent", func(*lldp.Frame) {}, ExitOK, peer.Consistent,
			"  " + sw + ": consistent (IEEE DCBX, from LLDP)"},
		{"pfc on another priority", func(f *lldp.Frame) { f.IEEE.PFC.Enable = 1 << 4 }, ExitDrift, peer.Mismatch,
			"    " + sw + ": pfc: switch says priorities 4, profile says priorities 3 (from LLDP)"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			labSwitch(t, e.If[1], frameOf(t, c.change))
			state := t.TempDir()
			code, out, errs := run(t, nil, "--state-dir", state, "peer", "-p", prof, "--wait", "20s")
			if code != c.code {
				t.Errorf("exit %d, want %d\nstdout:\n%s\nstderr:\n%s", code, c.code, out, errs)
			}
			if !strings.Contains(out, c.line+"\n") {
				t.Errorf("output lacks %q:\n%s", c.line, out)
			}
			if !strings.Contains(out, "1 port(s):") {
				t.Errorf("peer checked other ports than %s:\n%s", e.If[0], out)
			}
			rep, err := peer.ReadState(state)
			if err != nil || rep == nil || len(rep.Ports) != 1 || rep.Ports[0].Netdev != e.If[0] || rep.Ports[0].Verdict != c.verdict {
				t.Errorf("stored result %+v, %v; want %s %s", rep, err, e.If[0], c.verdict)
			}
		})
	}
}
