package labenv

import (
	"errors"
	"io/fs"
	"net/netip"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// guestEnv is what guest-init and guest-go-tests.sh export in a veth boot
// (copied from a real run's `env`).
var guestEnv = map[string]string{
	"LAB_GUEST": "1", "LAB_TOPO": "veth",
	"LAB_RXE0": "rxe0", "LAB_RXE1": "rxe1", "LAB_IF0": "lab0", "LAB_IF1": "lab1",
	"LAB_IP0": "192.168.77.1", "LAB_IP1": "192.168.77.2",
	"LAB_GID_INDEX0": "1", "LAB_GID_INDEX1": "1",
	"LAB_ROCECTL": "/lab/share/bin/rocectl", "LAB_ROCECTL_VERBS": "/lab/share/bin/rocectl-verbs", "LAB_MLNX_TOOLS": "/lab/share/mlnx-tools",
}

func getenvFrom(m map[string]string, drop ...string) func(string) string {
	return func(k string) string {
		for _, d := range drop {
			if k == d {
				return ""
			}
		}
		return m[k]
	}
}

func TestParse(t *testing.T) {
	got, err := Parse(getenvFrom(guestEnv))
	if err != nil {
		t.Fatal(err)
	}
	want := Env{
		RXE:          [2]string{"rxe0", "rxe1"},
		If:           [2]string{"lab0", "lab1"},
		IP:           [2]netip.Addr{netip.MustParseAddr("192.168.77.1"), netip.MustParseAddr("192.168.77.2")},
		GIDIndex:     [2]int{1, 1},
		Topo:         "veth",
		Rocectl:      "/lab/share/bin/rocectl",
		RocectlVerbs: "/lab/share/bin/rocectl-verbs",
		MlnxTools:    "/lab/share/mlnx-tools",
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("Parse:\n got %+v\nwant %+v", got, want)
	}
}

func TestParseWithoutRocectl(t *testing.T) {
	// a binary started by run-lab.sh directly, or a tree without cmd/rocectl
	got, err := Parse(getenvFrom(guestEnv, "LAB_ROCECTL", "LAB_ROCECTL_VERBS", "LAB_TOPO", "LAB_MLNX_TOOLS"))
	if err != nil {
		t.Fatal(err)
	}
	if got.Rocectl != "" || got.RocectlVerbs != "" || got.Topo != "" || got.MlnxTools != "" || got.RXE[1] != "rxe1" {
		t.Errorf("Parse = %+v", got)
	}
}

func TestParseErrors(t *testing.T) {
	for _, tc := range []struct {
		drop, key, val, want string
	}{
		{drop: "LAB_RXE1", want: "LAB_RXE1 is not set"},
		{drop: "LAB_GID_INDEX0", want: "LAB_GID_INDEX0 is not set"},
		{key: "LAB_IP1", val: "192.168.77", want: "LAB_IP1"},
		{key: "LAB_GID_INDEX1", val: "one", want: "LAB_GID_INDEX1"},
	} {
		m := map[string]string{}
		for k, v := range guestEnv {
			m[k] = v
		}
		if tc.key != "" {
			m[tc.key] = tc.val
		}
		_, err := Parse(getenvFrom(m, tc.drop))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("drop %q set %s=%q: err = %v, want it to mention %q", tc.drop, tc.key, tc.val, err, tc.want)
		}
	}
}

// fakeBus builds the sysfs layout of netdevsim<id>: devices/netdevsim<id>/net/<if>/phys_port_name.
func fakeBus(t *testing.T, id string, ports map[string]string) string {
	t.Helper()
	bus := t.TempDir()
	for ifname, ppn := range ports {
		d := filepath.Join(bus, "devices", "netdevsim"+id, "net", ifname)
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(d, "phys_port_name"), []byte(ppn+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return bus
}

func TestReadPorts(t *testing.T) {
	// netdevsim numbers devlink ports from 1: "p1" is port index 0
	bus := fakeBus(t, "10", map[string]string{"eth3": "p2", "eth2": "p1"})
	got, err := readPorts(bus, "/dfs", 10, 2)
	if err != nil {
		t.Fatal(err)
	}
	want := []Port{
		{Index: 0, Ifname: "eth2", Debugfs: "/dfs/netdevsim10/ports/0"},
		{Index: 1, Ifname: "eth3", Debugfs: "/dfs/netdevsim10/ports/1"},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("readPorts = %+v, want %+v", got, want)
	}
	if _, err := readPorts(bus, "/dfs", 10, 3); err == nil {
		t.Error("readPorts with a missing port: want error")
	}
	if _, err := readPorts(fakeBus(t, "11", map[string]string{"eth0": "pf0vf0"}), "/dfs", 11, 1); err == nil {
		t.Error("readPorts with a VF name only: want error")
	}
}

func TestStatRoundTrip(t *testing.T) {
	p := Port{Debugfs: t.TempDir()}
	if err := os.MkdirAll(filepath.Join(p.Debugfs, "stats"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(p.Debugfs, "stats", "rx_prio3_pause"), []byte("0\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := p.SetStat("rx_prio3_pause", 18446744073709551615); err != nil {
		t.Fatal(err)
	}
	if v, err := p.Stat("rx_prio3_pause"); err != nil || v != 18446744073709551615 {
		t.Errorf("Stat = %d, %v", v, err)
	}
	err := p.SetStat("rx_prio3_pauses", 1)
	if !errors.Is(err, ErrNoCounter) || !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("SetStat(typo) = %v, want ErrNoCounter wrapping ErrNotExist", err)
	}
	if _, err := os.Stat(filepath.Join(p.Debugfs, "stats", "rx_prio3_pauses")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("SetStat(typo) created a file: %v", err)
	}
	if _, err := p.Stat("nope"); !errors.Is(err, ErrNoCounter) {
		t.Errorf("Stat(nope) = %v, want ErrNoCounter", err)
	}
}
