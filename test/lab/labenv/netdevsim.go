package labenv

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// Paths of the netdevsim bus and its debugfs in the guest.
const (
	nsimBus     = "/sys/bus/netdevsim"
	nsimDebugfs = "/sys/kernel/debug/netdevsim"
)

// Device is a netdevsim device.
type Device struct {
	ID    int    // bus id: /sys/bus/netdevsim/devices/netdevsim<ID>
	Name  string // devlink name: "netdevsim<ID>"
	Ports []Port
}

// Port is one netdevsim port with the lab's DCB and stats patches.
type Port struct {
	Index  int    // port index: devlink port netdevsim<ID>/<Index>, phys_port_name p<Index+1>
	Ifname string // its netdev
	// Debugfs is /sys/kernel/debug/netdevsim/netdevsim<ID>/ports/<Index>;
	// counters live in Debugfs/stats/<ethtool -S name>.
	Debugfs string
}

// NewNetdevsim creates netdevsim device id with n ports, waits for their
// netdevs and removes the device in t.Cleanup. Each test binary starts with
// no netdevsim device, so any id is free unless the binary's own tests use
// it concurrently. The ports have the lab's DCB ops and mlx5-like counters,
// with PFC and pause off.
func NewNetdevsim(t testing.TB, id, n int) Device {
	t.Helper()
	if err := os.WriteFile(nsimBus+"/new_device", []byte(fmt.Sprintf("%d %d", id, n)), 0); err != nil {
		t.Fatalf("labenv: create netdevsim%d: %v", id, err)
	}
	t.Cleanup(func() {
		if err := os.WriteFile(nsimBus+"/del_device", []byte(strconv.Itoa(id)), 0); err != nil {
			t.Errorf("labenv: delete netdevsim%d: %v", id, err)
		}
	})
	var ports []Port
	var err error
	// netdevs appear asynchronously after new_device returns
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		ports, err = readPorts(nsimBus, nsimDebugfs, id, n)
		if err == nil || time.Now().After(deadline) {
			break
		}
	}
	if err != nil {
		t.Fatal(err)
	}
	return Device{ID: id, Name: "netdevsim" + strconv.Itoa(id), Ports: ports}
}

// readPorts maps the n ports of device id to their netdevs through
// phys_port_name, which netdevsim numbers from 1 ("p1" is port index 0).
func readPorts(bus, debugfs string, id, n int) ([]Port, error) {
	netDir := filepath.Join(bus, "devices", "netdevsim"+strconv.Itoa(id), "net")
	ents, err := os.ReadDir(netDir)
	if err != nil {
		return nil, fmt.Errorf("labenv: netdevsim%d: %w", id, err)
	}
	ports := make([]Port, n)
	found := 0
	for _, ent := range ents {
		b, err := os.ReadFile(filepath.Join(netDir, ent.Name(), "phys_port_name"))
		if err != nil {
			continue
		}
		idx, err := strconv.Atoi(strings.TrimPrefix(strings.TrimSpace(string(b)), "p"))
		if err != nil || idx < 1 || idx > n || ports[idx-1].Ifname != "" {
			continue
		}
		ports[idx-1] = Port{
			Index:   idx - 1,
			Ifname:  ent.Name(),
			Debugfs: filepath.Join(debugfs, "netdevsim"+strconv.Itoa(id), "ports", strconv.Itoa(idx-1)),
		}
		found++
	}
	if found != n {
		return nil, fmt.Errorf("labenv: netdevsim%d: %d of %d port netdevs present", id, found, n)
	}
	return ports, nil
}

// ErrNoCounter reports a counter name the lab's netdevsim does not have.
var ErrNoCounter = errors.New("labenv: no such netdevsim counter")

// SetStat sets counter name (as ethtool -S names it, e.g. "rx_prio3_pause")
// through debugfs; every name exists there whatever the PFC or pause state.
func (p Port) SetStat(name string, v uint64) error {
	path := filepath.Join(p.Debugfs, "stats", name)
	// Stat first: WriteFile would create a stray regular file where debugfs
	// allows it, and the typo would go unnoticed.
	if _, err := os.Stat(path); err != nil {
		return counterErr(name, err)
	}
	return os.WriteFile(path, []byte(strconv.FormatUint(v, 10)), 0)
}

// Stat reads counter name back from debugfs.
func (p Port) Stat(name string) (uint64, error) {
	b, err := os.ReadFile(filepath.Join(p.Debugfs, "stats", name))
	if err != nil {
		return 0, counterErr(name, err)
	}
	return strconv.ParseUint(strings.TrimSpace(string(b)), 10, 64)
}

func counterErr(name string, err error) error {
	if errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("%w: %s: %w", ErrNoCounter, name, err)
	}
	return fmt.Errorf("labenv: counter %s: %w", name, err)
}
