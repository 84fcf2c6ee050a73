package nic

import (
	"sort"
	"strconv"
	"strings"
	"sync"

	"github.com/Mellanox/rdmamap"
	"golang.org/x/sys/unix"
)

// rdmamap keeps its sysfs paths in package variables and has no per-call
// root. rocectl reads through a root prefix (--root, --snapshot, fixture
// trees), so every call goes through withRdmamapRoot, which points those
// variables at the root for the duration of the call under a lock. This is
// the only place rocectl touches a library's package state.
var rdmamapMu sync.Mutex

func withRdmamapRoot[T any](fs FS, fn func() T) T {
	rdmamapMu.Lock()
	defer rdmamapMu.Unlock()
	saved := rdmamap.RdmaClassDir
	rdmamap.RdmaClassDir = fs.Path("/sys/class/infiniband")
	defer func() { rdmamap.RdmaClassDir = saved }()
	return fn()
}

// RDMADevices lists the RDMA devices under /sys/class/infiniband (symlinks,
// as on real sysfs), sorted: every entry but directories, as
// rdmamap.GetRdmaDeviceList lists them, read inside the root and with the
// types getdents64 gives instead of an lstat per entry. nil when the
// directory cannot be listed.
func RDMADevices(fs FS) []string {
	const class = "/sys/class/infiniband"
	devs, err := fs.readDirWith(where{rel: class}, func(typ uint8) bool { return typ != unix.DT_DIR })
	if err != nil || len(devs) == 0 {
		return nil
	}
	return devs
}

// RDMAPorts lists a device's port numbers, ascending: the numeric names
// in its ports directory (rdmamap.GetPorts's list, read inside the root,
// as every FS read is).
func RDMAPorts(fs FS, dev string) []int {
	return portNumbers(fs.ReadDir("/sys/class/infiniband/" + dev + "/ports"))
}

// dirPorts is RDMAPorts of the device whose class directory is ib.
func dirPorts(ib Dir) []int { return portNumbers(ib.ReadDir("ports")) }

func portNumbers(names []string, err error) []int {
	if err != nil {
		return nil
	}
	var ports []int
	for _, n := range names {
		if p, err := strconv.Atoi(n); err == nil {
			ports = append(ports, p)
		}
	}
	sort.Ints(ports)
	return ports
}

// HWCounters reads ports/<port>/hw_counters of an RDMA device. The
// directory's "lifespan" file is a cache setting, not a counter, and is left
// out (rdmamap returns it as one).
func HWCounters(fs FS, dev string, port int) (map[string]uint64, error) {
	if fs.mem() != nil {
		return memHWCounters(fs, dev, port)
	}
	type res struct {
		e   []rdmamap.RdmaStatEntry
		err error
	}
	r := withRdmamapRoot(fs, func() res {
		e, err := rdmamap.GetRdmaSysfsHwStats(dev, port)
		return res{e, err}
	})
	if r.err != nil {
		return nil, r.err
	}
	out := make(map[string]uint64, len(r.e))
	for _, e := range r.e {
		if e.Name == "lifespan" {
			continue
		}
		out[e.Name] = e.Value
	}
	return out, nil
}

// memHWCounters is HWCounters of a tree in memory, which rdmamap (reading
// through package os) cannot see, answered as rdmamap answers
// (getCountersFromDir): every entry but directories, each read as a
// decimal number, 0 when the read or the number fails.
func memHWCounters(fs FS, dev string, port int) (map[string]uint64, error) {
	p := "/sys/class/infiniband/" + dev + "/ports/" + strconv.Itoa(port) + "/hw_counters"
	names, err := fs.readDirWith(where{rel: p}, func(typ uint8) bool { return typ != unix.DT_DIR })
	if err != nil {
		return nil, err
	}
	d := fs.Dir(p)
	out := make(map[string]uint64, len(names))
	for _, n := range names {
		if n == "lifespan" {
			continue
		}
		s, _ := d.ReadString(n)
		out[n], _ = strconv.ParseUint(strings.Trim(s, "\n"), 10, 64)
	}
	return out, nil
}
