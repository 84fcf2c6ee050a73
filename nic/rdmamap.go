package nic

import (
	"sort"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// RDMADevices lists the RDMA devices under /sys/class/infiniband (symlinks,
// as on real sysfs), sorted: every entry but directories (what
// github.com/Mellanox/rdmamap's GetRdmaDeviceList listed before rocectl
// dropped it, docs/decisions.md), read inside the root and with the types
// getdents64 gives instead of an lstat per entry. nil when the
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
// in its ports directory, read inside the root, as every FS read is.
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

// HWCounters reads ports/<port>/hw_counters of an RDMA device: every entry
// but directories, each a bounded FS read (inside the root, size-capped,
// with the FS's deadline) of a decimal number. The directory's "lifespan"
// file is a cache setting, not a counter, and is left out; a file that
// cannot be read or does not hold a number is left out too (absent, not
// 0: a zero would read as a counter reset).
func HWCounters(fs FS, dev string, port int) (map[string]uint64, error) {
	p := "/sys/class/infiniband/" + dev + "/ports/" + strconv.Itoa(port) + "/hw_counters"
	names, err := fs.readDirWith(where{rel: p}, func(typ uint8) bool { return typ != unix.DT_DIR })
	if err != nil {
		return nil, err
	}
	d := fs.Dir(p)
	defer d.Close()
	out := make(map[string]uint64, len(names))
	for _, n := range names {
		if n == "lifespan" {
			continue
		}
		s, err := d.ReadString(n)
		if err != nil {
			continue
		}
		if v, err := strconv.ParseUint(strings.TrimSpace(s), 10, 64); err == nil {
			out[n] = v
		}
	}
	return out, nil
}
