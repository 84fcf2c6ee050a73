//go:build lab

// These run only in the lab guest (test/lab/run-go-tests.sh builds every
// package's lab-tagged tests). They check the guest contract that other lab
// tests rely on, and show how to use it.
package labenv_test

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/safchain/ethtool"

	"github.com/rocectl/rocectl/test/lab/labenv"
)

func readTrim(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(string(b))
}

// The GID index the env names really is the RoCE v2 GID of the IPv4 address
// on the rxe device's netdev.
func TestGIDIndex(t *testing.T) {
	e := labenv.Get(t)
	for i := range 2 {
		ip := e.IP[i].As4()
		want := fmt.Sprintf("0000:0000:0000:0000:0000:ffff:%02x%02x:%02x%02x", ip[0], ip[1], ip[2], ip[3])
		port := filepath.Join("/sys/class/infiniband", e.RXE[i], "ports/1")
		idx := fmt.Sprint(e.GIDIndex[i])
		if got := readTrim(t, filepath.Join(port, "gids", idx)); got != want {
			t.Errorf("%s gid[%s] = %s, want %s", e.RXE[i], idx, got, want)
		}
		if got := readTrim(t, filepath.Join(port, "gid_attrs/types", idx)); got != "RoCE v2" {
			t.Errorf("%s gid[%s] type = %q", e.RXE[i], idx, got)
		}
		if got := readTrim(t, filepath.Join(port, "gid_attrs/ndevs", idx)); got != e.If[i] {
			t.Errorf("%s gid[%s] ndev = %q, want %q", e.RXE[i], idx, got, e.If[i])
		}
	}
}

// stats reads ethtool -S through the ETHTOOL_GDRVINFO/GSTRINGS/GSTATS ioctls.
func stats(t *testing.T, et *ethtool.Ethtool, ifname string) map[string]uint64 {
	t.Helper()
	s, err := et.Stats(ifname)
	if err != nil {
		t.Fatalf("ethtool stats %s: %v", ifname, err)
	}
	return s
}

func keys(m map[string]uint64) []string {
	k := make([]string, 0, len(m))
	for n := range m {
		k = append(k, n)
	}
	slices.Sort(k)
	return k
}

// baseNames: a fresh port (PFC off, pause off) shows only these.
var baseNames = []string{
	"rx_discards_phy",
	"rx_prio0_buf_discard", "rx_prio1_buf_discard", "rx_prio2_buf_discard", "rx_prio3_buf_discard",
	"rx_prio4_buf_discard", "rx_prio5_buf_discard", "rx_prio6_buf_discard", "rx_prio7_buf_discard",
	"tx_pause_storm_error_events", "tx_pause_storm_warning_events",
}

var globalNames = []string{
	"rx_global_pause", "rx_global_pause_duration", "rx_global_pause_transition",
	"tx_global_pause", "tx_global_pause_duration",
}

// The runner starts every binary with no netdevsim device, so any id is free.
func TestCleanSlate(t *testing.T) {
	labenv.Get(t)
	ents, err := os.ReadDir("/sys/bus/netdevsim/devices")
	if err != nil {
		t.Fatal(err)
	}
	// only this file's tests create devices, and each removes its own
	if len(ents) != 0 {
		t.Errorf("netdevsim devices at start: %v", ents)
	}
}

// A netdevsim port's mlx5-like counters follow the global pause setting,
// read through the real ETHTOOL_GSTRINGS/GSTATS ioctls; values come from
// debugfs.
func TestNetdevsimGlobalPauseCounters(t *testing.T) {
	labenv.Get(t)
	p := labenv.NewNetdevsim(t, 1, 1).Ports[0]
	et, err := ethtool.NewEthtool()
	if err != nil {
		t.Fatal(err)
	}
	defer et.Close()

	if got := keys(stats(t, et, p.Ifname)); !slices.Equal(got, baseNames) {
		t.Fatalf("fresh port %s counters = %v, want %v", p.Ifname, got, baseNames)
	}
	if err := p.SetStat("rx_prio6_buf_discard", 77); err != nil {
		t.Fatal(err)
	}
	if err := p.SetStat("rx_global_pause_duration", 123456); err != nil {
		t.Fatal(err)
	}
	if got := stats(t, et, p.Ifname)["rx_prio6_buf_discard"]; got != 77 {
		t.Errorf("rx_prio6_buf_discard = %d, want 77", got)
	}

	if _, err := et.SetPause(p.Ifname, ethtool.Pause{RxPause: 1}); err != nil {
		t.Fatalf("SetPause rx on: %v", err)
	}
	if got, err := et.GetPause(p.Ifname); err != nil || got.RxPause != 1 || got.TxPause != 0 {
		t.Fatalf("GetPause after rx on = %+v, %v", got, err)
	}
	s := stats(t, et, p.Ifname)
	want := slices.Sorted(slices.Values(append(slices.Clone(baseNames), globalNames...)))
	if got := keys(s); !slices.Equal(got, want) {
		t.Errorf("with rx pause on, counters = %v, want %v", got, want)
	}
	if s["rx_global_pause_duration"] != 123456 {
		t.Errorf("rx_global_pause_duration = %d, want 123456", s["rx_global_pause_duration"])
	}

	if _, err := et.SetPause(p.Ifname, ethtool.Pause{}); err != nil {
		t.Fatalf("SetPause off: %v", err)
	}
	if got := keys(stats(t, et, p.Ifname)); !slices.Equal(got, baseNames) {
		t.Errorf("after pause off, counters = %v, want %v", got, baseNames)
	}
}

// NewNetdevsim maps ports to netdevs and removes the device with the test.
func TestNewNetdevsim(t *testing.T) {
	labenv.Get(t)
	var ifname string
	t.Run("create", func(t *testing.T) {
		d := labenv.NewNetdevsim(t, 10, 2)
		if d.Name != "netdevsim10" || len(d.Ports) != 2 {
			t.Fatalf("device = %+v", d)
		}
		ifname = d.Ports[1].Ifname
		if _, err := os.Stat(filepath.Join(d.Ports[1].Debugfs, "stats", "rx_prio7_pause_transition")); err != nil {
			t.Errorf("debugfs counters: %v", err)
		}
		if got := readTrim(t, filepath.Join("/sys/class/net", ifname, "phys_port_name")); got != "p2" {
			t.Errorf("port 1 phys_port_name = %q, want p2", got)
		}
	})
	if _, err := os.Stat(filepath.Join("/sys/class/net", ifname)); !os.IsNotExist(err) {
		t.Errorf("%s still exists after the subtest's cleanup: %v", ifname, err)
	}
}
