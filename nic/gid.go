package nic

import (
	"bytes"
	"errors"
	"fmt"
	"net"
	"path"
	"sort"
	"strconv"
	"strings"
	"syscall"

	"github.com/rocectl/rocectl/port"
)

// GID types as the kernel prints them in gid_attrs/types/<i>
// (drivers/infiniband/core/cache.c gid_type_str).
const (
	GIDTypeRoCEv2 = "RoCE v2"
	GIDTypeRoCEv1 = "IB/RoCE v1" // also the type of every InfiniBand GID
)

// GID is one populated entry of a port's GID table (port.GID: a port
// carries its table to nccl, which checks NCCL's selection against it).
type GID = port.GID

// ReadGIDs returns the populated entries of the GID table of rdmaDev's port,
// lowest index first.
//
// An entry is skipped when its GID is all zero (unused slot), when gids/<i>
// cannot be read or parsed, or when gid_attrs/types/<i> cannot be read: the
// kernel answers EINVAL for unused slots, and inside containers also for
// slots not mapped into the container's sysfs (NCCL's
// ncclIbRoceGetVersionNum skips those the same way). An unreadable
// gid_attrs/ndevs/<i> does not skip the entry, it leaves Netdev empty: the
// kernel has no netdev for InfiniBand GIDs, and such an entry can never
// match a query that names a netdev.
//
// The only error is for a port whose gids directory cannot be listed (no such
// device or port, or no RDMA sysfs at all); it wraps the file system error, so
// errors.Is(err, os.ErrNotExist) holds for a missing device.
func ReadGIDs(fs FS, rdmaDev string, port int) ([]GID, error) {
	base, idx, err := openGIDTable(fs, rdmaDev, port)
	if err != nil {
		return nil, err
	}
	defer base.Close()
	var out []GID
	for _, i := range idx {
		s := strconv.Itoa(i)
		raw, err := base.ReadTrimmed("gids/" + s)
		if err != nil {
			continue
		}
		ip := net.ParseIP(raw)
		if ip == nil || ip.IsUnspecified() {
			continue
		}
		typ, err := base.ReadTrimmed("gid_attrs/types/" + s)
		if err != nil || typ == "" {
			continue
		}
		ndev, err := base.ReadTrimmed("gid_attrs/ndevs/" + s)
		if err != nil {
			ndev = ""
		}
		out = append(out, GID{Index: i, GID: ip.To16(), Type: typ, Netdev: ndev})
	}
	return out, nil
}

// GIDQuery says which GID a RoCE connection should use.
type GIDQuery struct {
	// Netdev the GID must belong to (gid_attrs/ndevs). Empty accepts any
	// netdev, which is what NCCL does (it never reads ndevs); name the netdev
	// to keep a VLAN child's GIDs apart from its parent's.
	Netdev string
	// Family is 4 (IPv4-mapped GIDs, NCCL's default AF_INET) or 6; 0 means 4.
	Family int
	// Subnet, when set, is NCCL_IB_ADDR_RANGE: the GID's address must be in it.
	Subnet *net.IPNet
	// RoCEVersion is NCCL_IB_ROCE_VERSION_NUM: 1 or 2; 0 means 2.
	RoCEVersion int
}

// SelectGID picks the GID that NCCL's dynamic selection (ncclIbGetGidIndex
// with NCCL_IB_GID_INDEX unset) settles on, restricted to q.Netdev: the
// lowest index whose GID
//   - is configured (not all zero) and not link-local (fe80::/64),
//   - has the asked address family: IPv4 means the IPv4-mapped form
//     ::ffff:a.b.c.d (or NCCL's IPv4-mapped multicast ff0e::ffff:a.b.c.d),
//     IPv6 means anything else,
//   - lies in q.Subnet when one is given,
//   - has the RoCE version asked for ("RoCE v2", or "IB/RoCE v1"/"RoCE v1"),
//   - and belongs to q.Netdev when one is named.
//
// It reports false when no entry qualifies. NCCL differs only where it would
// fall back: it then keeps index 0 or a same-family GID of the other RoCE
// version (and never checks index 0 against the subnet), which is a
// misconfiguration rocectl reports instead of reproducing.
func SelectGID(gids []GID, q GIDQuery) (GID, bool) {
	family, version := q.defaults()
	best := -1
	for i, g := range gids {
		if q.Netdev != "" && g.Netdev != q.Netdev {
			continue
		}
		if port.RoCEVersion(g.Type) != version || !q.addressMatches(g.GID, family) {
			continue
		}
		if best < 0 || g.Index < gids[best].Index {
			best = i
		}
	}
	if best < 0 {
		return GID{}, false
	}
	return gids[best], true
}

// addressMatches is the part of SelectGID's test that needs the address
// only: configured, not link-local, of the family, in the subnet.
func (q GIDQuery) addressMatches(gid net.IP, family int) bool {
	ip := gid.To16()
	if ip == nil || !gidValid(ip) {
		return false
	}
	v4, isV4 := gidIPv4(ip)
	if (family == 4) != isV4 {
		return false
	}
	if q.Subnet != nil {
		if isV4 && !q.Subnet.Contains(v4) {
			return false
		}
		if !isV4 && (q.Subnet.IP.To4() != nil || !q.Subnet.Contains(ip)) {
			return false
		}
	}
	return true
}

// SelectGIDOn is SelectGID(ReadGIDs(fs, rdmaDev, port), q) without reading
// the whole table: it reads the entries lowest index first, an entry's
// type only when its address qualifies and its netdev only when q names
// one, and stops at the first that qualifies, which is the one SelectGID
// would pick. A typical mlx5 table has its first RoCE v2 IPv4 GID at index
// 3 of up to 255: 8 files read instead of hundreds.
//
// It does not list the table first: the kernel numbers a port's entries
// 0 to the table size - 1, so it reads gids/0, gids/1, ... and turns to
// the listing only at the first entry that fails to read (the end of the
// table, or a slot a capture could not read), for the entries after it.
// Those it read exist, and are the listing's first ones, so the entries
// it considers, and their order, are ReadGIDs's. The errors are ReadGIDs's
// and, unlike ReadGIDs, the failed read of a qualifying entry's type (or
// netdev, when q names one) other than the kernel's EINVAL for an entry
// without one: NCCL stops there too, and the pick is not known.
func SelectGIDOn(fs FS, rdmaDev string, port int, q GIDQuery) (GID, bool, error) {
	base, err := gidTableDir(fs, rdmaDev, port)
	if err != nil {
		return GID{}, false, err
	}
	defer base.Close()
	family, version := q.defaults()
	var rest []int // the listing's entries after the first that failed
	listed := false
	for i := 0; ; i++ {
		if listed {
			if len(rest) == 0 {
				return GID{}, false, nil
			}
			i, rest = rest[0], rest[1:]
		}
		s := strconv.Itoa(i)
		raw, err := base.ReadTrimmed("gids/" + s)
		if err != nil {
			if !listed {
				idx, err := gidIndexes(base, rdmaDev, port)
				if err != nil {
					return GID{}, false, err
				}
				listed = true
				rest = idx[sort.SearchInts(idx, i+1):]
			}
			continue
		}
		ip := net.ParseIP(raw)
		if ip == nil || ip.IsUnspecified() || !q.addressMatches(ip, family) {
			continue
		}
		// As NCCL's ncclIbRoceGetVersionNum (NVIDIA/nccl
		// src/transport/net_ib): EINVAL is an entry the kernel (or a
		// container's sysfs) has no type for, skipped; any other
		// failure stops the selection, which rocectl then does not know.
		typ, err := base.ReadTrimmed("gid_attrs/types/" + s)
		if errors.Is(err, syscall.EINVAL) {
			continue
		}
		if err != nil {
			return GID{}, false, fmt.Errorf("GID %d of %s port %d: %w", i, rdmaDev, port, err)
		}
		if typ == "" || roceVersion(typ) != version {
			continue
		}
		g := GID{Index: i, GID: ip.To16(), Type: typ}
		if q.Netdev != "" {
			g.Netdev, err = base.ReadTrimmed("gid_attrs/ndevs/" + s)
			if err != nil && !errors.Is(err, syscall.EINVAL) { // EINVAL: no netdev
				return GID{}, false, fmt.Errorf("GID %d of %s port %d: %w", i, rdmaDev, port, err)
			}
			if g.Netdev != q.Netdev {
				continue
			}
		}
		return g, true, nil
	}
}

// openGIDTable is the port's directory, resolved and held once (a table is
// dozens, on mlx5 up to 255, entries of three files each), and the entry
// numbers its gids directory lists, sorted. The caller closes the Dir.
func openGIDTable(fs FS, rdmaDev string, port int) (Dir, []int, error) {
	base, err := gidTableDir(fs, rdmaDev, port)
	if err != nil {
		return Dir{}, nil, err
	}
	idx, err := gidIndexes(base, rdmaDev, port)
	if err != nil {
		base.Close()
		return Dir{}, nil, err
	}
	return base, idx, nil
}

// gidTableDir is the port's directory, resolved and held once; the
// caller closes it.
func gidTableDir(fs FS, rdmaDev string, port int) (Dir, error) {
	if rdmaDev == "" || strings.ContainsAny(rdmaDev, "/") || rdmaDev == "." || rdmaDev == ".." {
		return Dir{}, fmt.Errorf("read GIDs: invalid RDMA device name %q", rdmaDev)
	}
	return fs.Dir(path.Join("/sys/class/infiniband", rdmaDev, "ports", strconv.Itoa(port))), nil
}

// gidIndexes lists the entry numbers of the port's gids directory, sorted.
func gidIndexes(base Dir, rdmaDev string, port int) ([]int, error) {
	names, err := base.ReadDir("gids")
	if err != nil {
		return nil, fmt.Errorf("read GIDs of %s port %d: %w", rdmaDev, port, err)
	}
	idx := make([]int, 0, len(names))
	for _, n := range names {
		if i, err := strconv.Atoi(n); err == nil && i >= 0 {
			idx = append(idx, i)
		}
	}
	sort.Ints(idx)
	return idx, nil
}

// defaults are q's family and RoCE version with NCCL's defaults (4, 2)
// for zero.
func (q GIDQuery) defaults() (family, version int) {
	family, version = q.Family, q.RoCEVersion
	if family == 0 {
		family = 4
	}
	if version == 0 {
		version = 2
	}
	return family, version
}

// gidValid is NCCL's validGid: configured and not link-local. NCCL counts
// fe80:: with an all-zero rest as unconfigured and any fe80:0000:0000:0000/64
// address as link-local; both end up excluded.
func gidValid(ip net.IP) bool {
	if ip.IsUnspecified() {
		return false
	}
	linkLocal := ip[0] == 0xfe && ip[1] == 0x80 && bytes.Equal(ip[2:8], make([]byte, 6))
	return !linkLocal
}

// gidIPv4 reports whether the GID is NCCL's AF_INET kind (IPv4-mapped, or
// IPv4-mapped multicast ff0e::ffff:a.b.c.d) and returns the IPv4 address.
func gidIPv4(ip net.IP) (net.IP, bool) {
	tail := []byte{0, 0, 0, 0, 0, 0, 0xff, 0xff} // bytes 4..11
	mapped := bytes.Equal(ip[0:4], []byte{0, 0, 0, 0}) && bytes.Equal(ip[4:12], tail)
	mcast := bytes.Equal(ip[0:4], []byte{0xff, 0x0e, 0, 0}) && bytes.Equal(ip[4:12], tail)
	if !mapped && !mcast {
		return nil, false
	}
	return net.IPv4(ip[12], ip[13], ip[14], ip[15]).To4(), true
}

// roceVersion is port.RoCEVersion, under a name the functions above whose
// port number is called port can call.
var roceVersion = port.RoCEVersion
