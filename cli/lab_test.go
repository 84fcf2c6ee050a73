//go:build lab

package cli

// These tests run inside the Soft-RoCE lab VM (test/lab, make lab): a
// netdevsim port whose DCB requests go through the kernel's real dcbnl
// code, with an rxe RDMA device on top, so discovery, GID selection,
// rdma_cm configfs, MTU, ethtool and dcbnl are all the real kernel's. The
// guest is the test's own; nothing here runs on the host.

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rocectl/rocectl/nic"
	"github.com/rocectl/rocectl/test/lab/labenv"
)

type labNIC struct {
	port  labenv.Port
	rxe   string
	state string
	nccl  string
}

// newLabNIC makes netdevsim device 7 with one port, an address on it, and
// rxe7 over it.
func newLabNIC(t *testing.T) *labNIC {
	labenv.Get(t)
	dev := labenv.NewNetdevsim(t, 7, 1)
	p := dev.Ports[0]
	sh(t, "ip", "link", "set", p.Ifname, "up")
	sh(t, "ip", "addr", "add", "10.77.7.1/24", "dev", p.Ifname)
	sh(t, "rdma", "link", "add", "rxe7", "type", "rxe", "netdev", p.Ifname)
	t.Cleanup(func() { exec.Command("rdma", "link", "del", "rxe7").Run() })
	// The IPv4 RoCE v2 GID appears once the address is there.
	deadline := time.Now().Add(5 * time.Second)
	for {
		gids, _ := nic.ReadGIDs(nic.NewFS("/", true), "rxe7", 1)
		if _, ok := nic.SelectGID(gids, nic.GIDQuery{Netdev: p.Ifname}); ok {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no RoCE v2 IPv4 GID on rxe7: %+v", gids)
		}
		time.Sleep(100 * time.Millisecond)
	}
	return &labNIC{port: p, rxe: "rxe7", state: t.TempDir(), nccl: filepath.Join(t.TempDir(), "nccl.conf")}
}

func sh(t *testing.T, name string, args ...string) string {
	t.Helper()
	out, err := exec.Command(name, args...).CombinedOutput()
	if err != nil {
		t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
	}
	return string(out)
}

func (l *labNIC) profile(t *testing.T, pfc string, soak string) string {
	p := filepath.Join(t.TempDir(), "lab.toml")
	body := fmt.Sprintf(`name = "lab"
[match]
netdevs = [%q]
[link]
mtu = 4200                      # rxe's active_mtu 4096 needs >= 4176
[qos]
dcbx = "host"
trust = "dscp"
dscp_to_priority = "default"
pfc_priorities = %s
global_pause = false
pfc_storm_prevention = "auto"
[qos.ets]
priority_to_tc = [0, 1, 2, 3, 4, 5, 6, 7]
tc_tsa = ["ets", "ets", "ets", "ets", "ets", "ets", "ets", "ets"]
tc_bandwidth = [10, 10, 10, 40, 10, 10, 5, 5]
[buffers]
priority_to_buffer = [0, 0, 0, 1, 0, 0, 0, 0]
buffer_size = ["64KiB", "128KiB", 0, 0, 0, 0, 0, 0]
[roce]
mode = "v2"
default_tos = 106
[nccl]
write = %q
IB_HCA = "auto"
IB_GID_INDEX = "auto"
[guard]
soak = %q
poll = "100ms"
detection_time = "300ms"
`, l.port.Ifname, pfc, l.nccl, soak)
	if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func (l *labNIC) rocectl(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	return run(t, nil, append([]string{"--state-dir", l.state}, args...)...)
}

// dcbJSON is iproute2's view of the port, the cross-check.
func dcbJSON(t *testing.T, what, dev string, extra ...string) map[string]any {
	t.Helper()
	out := sh(t, "dcb", append([]string{"-j", what, "show", "dev", dev}, extra...)...)
	var m map[string]any
	if err := json.Unmarshal([]byte(out), &m); err != nil {
		t.Fatalf("dcb %s: %v\n%s", what, err, out)
	}
	return m
}

// pfcEnabled reads `dcb -j pfc show`, whose prio_pfc is [false,false,...].
func pfcEnabled(t *testing.T, dev string) []int {
	j := dcbJSON(t, "pfc", dev)
	m, ok := j["prio_pfc"].([]any)
	if !ok || len(m) != 8 {
		t.Fatalf("dcb -j pfc show: unexpected shape %v", j)
	}
	var prios []int
	for p, on := range m {
		if on == true {
			prios = append(prios, p)
		}
	}
	return prios
}

func TestLabAuditApplyAuditOnNetdevsimWithRxe(t *testing.T) {
	l := newLabNIC(t)
	prof := l.profile(t, "[3]", "1s")
	code, out, errs := l.rocectl(t, "audit", "-p", prof)
	if code != ExitDrift {
		t.Fatalf("audit before: exit %d\n%s%s", code, out, errs)
	}
	for _, want := range []string{
		fmt.Sprintf("~ %s (rxe7 port 1, netdevsim)", l.port.Ifname),
		l.port.Ifname + ".qos.pfc = [] -> [3]",
		"rxe7.roce.default_roce_tos = 0 -> 106",
		"+ host.nccl.NCCL_IB_HCA = =rxe7:1",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("audit lacks %q\n%s", want, out)
		}
	}
	code, out, errs = l.rocectl(t, "apply", "-p", prof)
	if code != ExitOK {
		t.Fatalf("apply: exit %d\n%s%s", code, out, errs)
	}
	code, out, errs = l.rocectl(t, "audit", "-p", prof)
	if code != ExitOK {
		t.Fatalf("audit after apply: exit %d\n%s%s", code, out, errs)
	}
	// What iproute2 and the kernel say, independently of rocectl.
	if got := pfcEnabled(t, l.port.Ifname); len(got) != 1 || got[0] != 3 {
		t.Errorf("dcb pfc show: enabled %v, want [3]", got)
	}
	apps := dcbJSON(t, "app", l.port.Ifname, "dscp-prio")
	if n := len(apps["dscp_prio"].([]any)); n != 64 {
		t.Errorf("dcb app show: %d DSCP entries, want 64", n)
	}
	if b := dcbJSON(t, "buffer", l.port.Ifname); fmt.Sprint(b["prio_buffer"]) != "[0 0 0 1 0 0 0 0]" {
		t.Errorf("dcb buffer show: %v", b)
	}
	if mtu := strings.TrimSpace(sh(t, "cat", "/sys/class/net/"+l.port.Ifname+"/mtu")); mtu != "4200" {
		t.Errorf("MTU %s", mtu)
	}
	if info := sh(t, "ibv_devinfo", "-d", "rxe7"); !strings.Contains(info, "active_mtu:\t\t4096") {
		t.Errorf("MTU did not propagate to rxe7's active_mtu:\n%s", info)
	}
	if _, tos, err := nic.RoCEDefaults(nic.NewFS("/", false), "rxe7", 1); err != nil || tos != 106 {
		t.Errorf("rdma_cm default_roce_tos = %d, %v", tos, err)
	}
	conf, err := os.ReadFile(l.nccl)
	if err != nil || !strings.Contains(string(conf), "NCCL_IB_HCA==rxe7:1\n") || !strings.Contains(string(conf), "NCCL_IB_GID_INDEX=") {
		t.Errorf("nccl.conf:\n%s (%v)", conf, err)
	}

	// rollback undoes the committed apply: the kernel is back to netdevsim's defaults.
	code, out, errs = l.rocectl(t, "rollback")
	if code != ExitOK {
		t.Fatalf("rollback: exit %d\n%s%s", code, out, errs)
	}
	if got := pfcEnabled(t, l.port.Ifname); len(got) != 0 {
		t.Errorf("after rollback PFC enabled on %v", got)
	}
	if apps := dcbJSON(t, "app", l.port.Ifname, "dscp-prio"); apps["dscp_prio"] != nil && len(apps["dscp_prio"].([]any)) != 0 {
		t.Errorf("after rollback APP entries remain: %v", apps)
	}
	if _, err := os.Stat(l.nccl); !os.IsNotExist(err) {
		t.Errorf("nccl.conf should be gone again: %v", err)
	}
}

// A pause storm driven through netdevsim's mlx5-named counters reaches the
// guard through the real ethtool ioctl, and the rollback restores the real
// dcbnl state.
func TestLabStormRollsBackRealDCB(t *testing.T) {
	l := newLabNIC(t)
	if code, out, errs := l.rocectl(t, "apply", "-p", l.profile(t, "[3]", "0s")); code != ExitOK {
		t.Fatalf("first apply: exit %d\n%s%s", code, out, errs)
	}
	// The writer ends, and is waited for, once the apply returns or the
	// test ends (this cleanup runs before netdevsim's is torn down).
	stop := make(chan struct{})
	var wg sync.WaitGroup
	halt := sync.OnceFunc(func() { close(stop); wg.Wait() })
	t.Cleanup(halt)
	wg.Go(func() {
		// Priority 4 is paused without end. The emulated guest schedules
		// this writer irregularly, so the counter runs 25 % ahead of
		// wall-clock time: a window then stays above the 99 % threshold
		// despite a late tick, and below the 150 % past which the guard
		// takes a reading for a bad sample (verify.MaxPlausibleOccupancy):
		// more than all the time paused is no paused queue's.
		start := time.Now()
		tick := time.NewTicker(10 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-stop:
				return
			case <-tick.C:
			}
			_ = l.port.SetStat("rx_prio4_pause_duration", uint64(1.25*float64(time.Since(start).Microseconds())))
		}
	})
	code, out, errs := l.rocectl(t, "apply", "-p", l.profile(t, "[3, 4]", "5s"))
	halt()
	if code != ExitRolledBack {
		t.Fatalf("apply with a storm: exit %d, want 3\n%s%s", code, out, errs)
	}
	if !strings.Contains(errs, "pause storm on "+l.port.Ifname+" priority 4 (rx)") {
		t.Errorf("stderr should name the storm:\n%s", errs)
	}
	if got := pfcEnabled(t, l.port.Ifname); len(got) != 1 || got[0] != 3 {
		t.Errorf("after the storm rollback, dcb pfc show says %v, want [3]", got)
	}
}

// devlink through the real genl family: netdevsim's max_macs is a
// driverinit parameter, so the plan says it needs a reload.
func TestLabDevlinkDriverinitParam(t *testing.T) {
	l := newLabNIC(t)
	prof := filepath.Join(t.TempDir(), "dl.toml")
	os.WriteFile(prof, []byte(fmt.Sprintf("[match]\nnetdevs = [%q]\n[devlink]\nmax_macs = 16\n", l.port.Ifname)), 0o600)
	code, out, errs := l.rocectl(t, "audit", "-p", prof)
	if code != ExitDrift || !strings.Contains(out, "note: driverinit parameter: takes effect after `devlink dev reload netdevsim/netdevsim7`") {
		t.Fatalf("audit: exit %d\n%s%s", code, out, errs)
	}
	if code, out, errs := l.rocectl(t, "apply", "--soak", "0", "-p", prof); code != ExitOK {
		t.Fatalf("apply: exit %d\n%s%s", code, out, errs)
	}
	if show := sh(t, "devlink", "dev", "param", "show", "netdevsim/netdevsim7", "name", "max_macs"); !strings.Contains(show, "cmode driverinit value 16") {
		t.Errorf("devlink says:\n%s", show)
	}
}
