package nic

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"maps"
	"os"
	"slices"
	"strings"
	"sync"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// The ethtool ioctls are issued here rather than through
// github.com/safchain/ethtool (v0.7.0): that library passes the command
// buffer's address to its ioctl helper as a uintptr inside a struct, so when
// the goroutine's stack grows during the call the buffer moves and the kernel
// writes into the old, freed stack. Reproduced with -race, where DriverInfo
// on a veth returns empty strings at some stack depths. Here the buffer
// pointer stays an unsafe.Pointer (see ethtoolIoctl), which the runtime
// adjusts when it moves a stack.

// The ethtool ioctls (SIOCETHTOOL) address a netdev by an ifreq name of at
// most IFNAMSIZ-1 bytes; a longer name is refused rather than truncated into
// the name of some other netdev.
func checkIfreqName(ifname string) error {
	if err := checkLinkName(ifname); err != nil {
		return err
	}
	if len(ifname) >= unix.IFNAMSIZ {
		return syscall.EINVAL
	}
	return nil
}

// ethtoolPauseparam is struct ethtool_pauseparam (16 bytes).
type ethtoolPauseparam struct {
	cmd, autoneg, rxPause, txPause uint32
}

// ethtoolRingparam is struct ethtool_ringparam (36 bytes).
type ethtoolRingparam struct {
	cmd                                                             uint32
	rxMaxPending, rxMiniMaxPending, rxJumboMaxPending, txMaxPending uint32
	rxPending, rxMiniPending, rxJumboPending, txPending             uint32
}

// ethtoolValue is struct ethtool_value (8 bytes), used by G/SPFLAGS.
type ethtoolValue struct {
	cmd, data uint32
}

// DriverInfo is ETHTOOL_GDRVINFO.
func (l *Live) DriverInfo(ifname string) (DriverInfo, error) {
	const op = "ethtool get driver info"
	if err := checkIfreqName(ifname); err != nil {
		return DriverInfo{}, opErr(ifname, op, err)
	}
	d, err := unix.IoctlGetEthtoolDrvinfo(l.ioctlFD, ifname)
	if err != nil {
		return DriverInfo{}, opErr(ifname, op, err)
	}
	return DriverInfo{
		Driver:   unix.ByteSliceToString(d.Driver[:]),
		Version:  unix.ByteSliceToString(d.Version[:]),
		Firmware: unix.ByteSliceToString(d.Fw_version[:]),
		BusInfo:  unix.ByteSliceToString(d.Bus_info[:]),
	}, nil
}

// Pause is ETHTOOL_GPAUSEPARAM (global 802.3x pause). Drivers without
// pause support, veth among them, answer EOPNOTSUPP.
func (l *Live) Pause(ifname string) (Pause, error) {
	const op = "ethtool get pause"
	if err := checkIfreqName(ifname); err != nil {
		return Pause{}, opErr(ifname, op, err)
	}
	p := ethtoolPauseparam{cmd: unix.ETHTOOL_GPAUSEPARAM}
	if err := ethtoolIoctl(l.ioctlFD, ifname, unsafe.Pointer(&p)); err != nil {
		return Pause{}, opErr(ifname, op, err)
	}
	return Pause{Autoneg: p.autoneg != 0, Rx: p.rxPause != 0, Tx: p.txPause != 0}, nil
}

// SetPause is ETHTOOL_SPAUSEPARAM. p is written as given: the caller
// keeps autoneg as the port has it (mlx5 refuses autoneg on with EINVAL,
// and never reports it on).
func (l *Live) SetPause(ifname string, p Pause) error {
	op := "ethtool set pause " + pauseString(p)
	if err := checkIfreqName(ifname); err != nil {
		return opErr(ifname, op, err)
	}
	req := ethtoolPauseparam{cmd: unix.ETHTOOL_SPAUSEPARAM, autoneg: b2u(p.Autoneg), rxPause: b2u(p.Rx), txPause: b2u(p.Tx)}
	if err := ethtoolIoctl(l.ioctlFD, ifname, unsafe.Pointer(&req)); err != nil {
		return opErr(ifname, op, err)
	}
	return nil
}

// ethtoolLinkSettings is struct ethtool_link_settings without its link
// mode masks (48 bytes), which follow it: ETHTOOL_GLINKSETTINGS needs room
// for them, 3 × link_mode_masks_nwords u32 (supported, advertising, link
// partner).
type ethtoolLinkSettings struct {
	cmd, speed                                                  uint32
	duplex, port, phyAddress, autoneg, mdioSupport, mdix, mdixC uint8
	nwords                                                      int8
	transceiver, msCfg, msState, rateMatching                   uint8
	reserved                                                    [7]uint32
}

// speedUnknown is SPEED_UNKNOWN.
const speedUnknown = 0xffffffff

// Speed is the link's speed in Mb/s as ETHTOOL_GLINKSETTINGS reports it:
// 0 when the driver does not know it (SPEED_UNKNOWN: no carrier, or a link
// still training; mlx5 reads it from the port's operational protocol,
// PTYS, which calculate_xoff reads too). The request is made twice: the
// first, with no room for the link mode masks, only asks the kernel how
// many words they take.
func (l *Live) Speed(ifname string) (int, error) {
	const op = "ethtool get link settings"
	if err := checkIfreqName(ifname); err != nil {
		return 0, opErr(ifname, op, err)
	}
	const hdr = int(unsafe.Sizeof(ethtoolLinkSettings{}))
	b := make([]uint32, hdr/4+3*127) // room for the most words an int8 can ask for
	ls := (*ethtoolLinkSettings)(unsafe.Pointer(&b[0]))
	ls.cmd = unix.ETHTOOL_GLINKSETTINGS
	if err := ethtoolIoctl(l.ioctlFD, ifname, unsafe.Pointer(&b[0])); err != nil {
		return 0, opErr(ifname, op, err)
	}
	if ls.nwords >= 0 {
		return 0, opErr(ifname, op, fmt.Errorf("the kernel did not ask for its link mode mask size (%d words)", ls.nwords))
	}
	n := -ls.nwords
	clear(b)
	ls.cmd, ls.nwords = unix.ETHTOOL_GLINKSETTINGS, n
	if err := ethtoolIoctl(l.ioctlFD, ifname, unsafe.Pointer(&b[0])); err != nil {
		return 0, opErr(ifname, op, err)
	}
	if ls.speed == speedUnknown {
		return 0, nil
	}
	return int(ls.speed), nil
}

func pauseString(p Pause) string {
	return fmt.Sprintf("autoneg %s rx %s tx %s", onOffString(p.Autoneg), onOffString(p.Rx), onOffString(p.Tx))
}

func (l *Live) getRingparam(ifname string) (ethtoolRingparam, error) {
	r := ethtoolRingparam{cmd: unix.ETHTOOL_GRINGPARAM}
	err := ethtoolIoctl(l.ioctlFD, ifname, unsafe.Pointer(&r))
	return r, err
}

// Rings is ETHTOOL_GRINGPARAM.
func (l *Live) Rings(ifname string) (Rings, error) {
	const op = "ethtool get rings"
	if err := checkIfreqName(ifname); err != nil {
		return Rings{}, opErr(ifname, op, err)
	}
	r, err := l.getRingparam(ifname)
	if err != nil {
		return Rings{}, opErr(ifname, op, err)
	}
	return Rings{Rx: r.rxPending, Tx: r.txPending, RxMax: r.rxMaxPending, TxMax: r.txMaxPending}, nil
}

// SetRings sets the rx and tx ring sizes (ETHTOOL_SRINGPARAM). A zero Rx or Tx leaves that ring as it is; RxMax and TxMax are
// read-only. The mini and jumbo rings are kept, since the ioctl writes the
// whole struct. A size above the maximum is refused by the kernel (EINVAL).
func (l *Live) SetRings(ifname string, r Rings) error {
	op := fmt.Sprintf("ethtool set rings rx %d tx %d", r.Rx, r.Tx)
	if err := checkIfreqName(ifname); err != nil {
		return opErr(ifname, op, err)
	}
	want, err := l.getRingparam(ifname)
	if err != nil {
		return opErr(ifname, op, err)
	}
	want.cmd = unix.ETHTOOL_SRINGPARAM
	if r.Rx != 0 {
		want.rxPending = r.Rx
	}
	if r.Tx != 0 {
		want.txPending = r.Tx
	}
	if err := ethtoolIoctl(l.ioctlFD, ifname, unsafe.Pointer(&want)); err != nil {
		return opErr(ifname, op, err)
	}
	return nil
}

// privFlagNames returns the driver's private flag names in bit order
// (ETH_SS_PRIV_FLAGS). The set is fixed per driver; should it change between
// the count and the read anyway, the caller gets EAGAIN.
func (l *Live) privFlagNames(ifname string) ([]string, error) {
	n, err := l.ssetCount(ifname, ethSSPrivFlags)
	if errors.Is(err, syscall.EOPNOTSUPP) {
		return nil, nil // no private flags at all, as on veth
	}
	if err != nil || n == 0 {
		return nil, err
	}
	l.bufs.mu.Lock()
	defer l.bufs.mu.Unlock()
	b, err := l.gstrings(ifname, ethSSPrivFlags, n, &l.bufs.names)
	if errors.Is(err, errStringSetMoved) {
		return nil, fmt.Errorf("private flag set changed while reading: %w", syscall.EAGAIN)
	}
	if err != nil {
		return nil, err
	}
	names := make([]string, n)
	for i := range names {
		names[i] = unix.ByteSliceToString(b[i*ethGstringLen : (i+1)*ethGstringLen])
	}
	return names, nil
}

// PrivFlags returns the driver's private flags by name (ETH_SS_PRIV_FLAGS +
// ETHTOOL_GPFLAGS). A driver without private flags gives an empty map.
func (l *Live) PrivFlags(ifname string) (map[string]bool, error) {
	const op = "ethtool get private flags"
	if err := checkIfreqName(ifname); err != nil {
		return nil, opErr(ifname, op, err)
	}
	names, err := l.privFlagNames(ifname)
	if err != nil {
		return nil, opErr(ifname, op, err)
	}
	m := make(map[string]bool, len(names))
	if len(names) == 0 {
		return m, nil
	}
	v := ethtoolValue{cmd: unix.ETHTOOL_GPFLAGS}
	if err := ethtoolIoctl(l.ioctlFD, ifname, unsafe.Pointer(&v)); err != nil {
		return nil, opErr(ifname, op, err)
	}
	for i, n := range names {
		if n != "" && i < 32 {
			m[n] = v.data&(1<<i) != 0
		}
	}
	return m, nil
}

// SetPrivFlags changes the named private flags and leaves the others
// alone. A flag the driver does not offer is reported as
// EOPNOTSUPP before anything is written (dropless_rq, say, exists only in
// NVIDIA's out-of-tree mlx5).
func (l *Live) SetPrivFlags(ifname string, flags map[string]bool) error {
	keys := slices.Sorted(maps.Keys(flags))
	op := "ethtool set private flags " + strings.Join(keys, ",")
	if err := checkIfreqName(ifname); err != nil {
		return opErr(ifname, op, err)
	}
	if len(flags) == 0 {
		return nil
	}
	names, err := l.privFlagNames(ifname)
	if err != nil {
		return opErr(ifname, op, err)
	}
	for _, k := range keys {
		if i := slices.Index(names, k); i < 0 || i >= 32 {
			return opErr(ifname, fmt.Sprintf("ethtool set private flag %q (driver offers %s)", k, flagList(names)), syscall.EOPNOTSUPP)
		}
	}
	v := ethtoolValue{cmd: unix.ETHTOOL_GPFLAGS}
	if err := ethtoolIoctl(l.ioctlFD, ifname, unsafe.Pointer(&v)); err != nil {
		return opErr(ifname, op, err)
	}
	v.cmd = unix.ETHTOOL_SPFLAGS
	for k, on := range flags {
		bit := uint32(1) << slices.Index(names, k)
		if on {
			v.data |= bit
		} else {
			v.data &^= bit
		}
	}
	if err := ethtoolIoctl(l.ioctlFD, ifname, unsafe.Pointer(&v)); err != nil {
		return opErr(ifname, op, err)
	}
	return nil
}

func flagList(names []string) string {
	if len(names) == 0 {
		return "none"
	}
	return strings.Join(names, ",")
}

func b2u(b bool) uint32 {
	if b {
		return 1
	}
	return 0
}

func onOffString(b bool) string {
	if b {
		return "on"
	}
	return "off"
}

// uapi values x/sys/unix does not export (include/uapi/linux/ethtool.h).
const (
	ethSSStats     = 1  // ETH_SS_STATS
	ethSSPrivFlags = 2  // ETH_SS_PRIV_FLAGS
	ethGstringLen  = 32 // ETH_GSTRING_LEN

	// Header sizes, checked with gcc on x86_64: struct ethtool_gstrings
	// {cmd, string_set, len} = 12, struct ethtool_stats {cmd, n_stats} = 8,
	// struct ethtool_sset_info {cmd, reserved, u64 sset_mask} = 16 + data[].
	gstringsHeaderLen = 12
	gstatsHeaderLen   = 8
	ssetInfoHeaderLen = 16
)

// statsAttempts bounds how often Stats starts over when the driver's stat
// set changes while it reads. mlx5 adds and removes the per-priority pause
// counters when PFC or global pause is reconfigured, and per-channel ones
// when channels are added; a second attempt almost always succeeds.
const statsAttempts = 5

// errStringSetMoved is internal: a string set (stat names) changed during
// one attempt.
var errStringSetMoved = errors.New("ethtool string set changed while reading")

// Stats returns the driver's statistics by name (ethtool -S).
//
// The ioctl interface gives names (GSTRINGS) and values (GSTATS) in two
// calls, matched by position, and the kernel fills each with as many entries
// as the driver has at that moment, whatever count the caller passed. So
// Stats reads the names, the values, and the names again, and accepts the
// result only when both name reads are identical and all three counts agree;
// otherwise it starts over, at most statsAttempts times, then fails with
// EAGAIN. (safchain/ethtool's Stats trusts the count from before the reads,
// so it can pair values with the wrong names while PFC is being changed,
// which is exactly when rocectl's guard is watching pause counters.)
func (l *Live) Stats(ifname string) (map[string]uint64, error) {
	const op = "ethtool get stats"
	if err := checkIfreqName(ifname); err != nil {
		return nil, opErr(ifname, op, err)
	}
	for attempt := 1; attempt <= statsAttempts; attempt++ {
		m, err := l.statsOnce(ifname)
		if errors.Is(err, errStringSetMoved) {
			l.log.Debug("ethtool stat set changed while reading, reading again", "ifname", ifname, "attempt", attempt)
			continue
		}
		if err != nil {
			return nil, opErr(ifname, op, err)
		}
		return m, nil
	}
	return nil, opErr(ifname, op, fmt.Errorf("stat set changed during each of %d attempts: %w", statsAttempts, syscall.EAGAIN))
}

func (l *Live) statsOnce(ifname string) (map[string]uint64, error) {
	n, err := l.ssetCount(ifname, ethSSStats)
	if err != nil {
		return nil, err
	}
	if n == 0 {
		return map[string]uint64{}, nil
	}
	l.bufs.mu.Lock()
	defer l.bufs.mu.Unlock()
	names, err := l.gstrings(ifname, ethSSStats, n, &l.bufs.names)
	if err != nil {
		return nil, err
	}
	values, err := l.gstats(ifname, n, &l.bufs.values)
	if err != nil {
		return nil, err
	}
	again, err := l.gstrings(ifname, ethSSStats, n, &l.bufs.namesAgain)
	if err != nil {
		return nil, err
	}
	if !bytes.Equal(names, again) {
		return nil, errStringSetMoved
	}
	return statsMap(names, values), nil
}

// statsMap pairs ETH_GSTRING_LEN-byte, NUL-padded names with host-endian
// u64 values. Empty names are skipped; if a driver repeats a name, the last
// value wins. Surrounding spaces are trimmed: some mlx5 releases name a
// counter "tx_pause_storm_warning_events " (trailing space, en_stats.c).
func statsMap(names, values []byte) map[string]uint64 {
	n := len(values) / 8
	m := make(map[string]uint64, n)
	for i := range n {
		name := strings.TrimSpace(unix.ByteSliceToString(names[i*ethGstringLen : (i+1)*ethGstringLen]))
		if name != "" {
			m[name] = binary.NativeEndian.Uint64(values[8*i:])
		}
	}
	return m
}

// ssetCount is ETHTOOL_GSSET_INFO for one string set. The kernel clears the
// set's bit in sset_mask when the driver does not have that set, which is
// reported as EOPNOTSUPP.
func (l *Live) ssetCount(ifname string, set uint) (int, error) {
	var b [ssetInfoHeaderLen + 8]byte
	ne := binary.NativeEndian
	ne.PutUint32(b[0:], unix.ETHTOOL_GSSET_INFO)
	ne.PutUint64(b[8:], 1<<set)
	if err := ethtoolIoctl(l.ioctlFD, ifname, unsafe.Pointer(&b[0])); err != nil {
		return 0, err
	}
	if ne.Uint64(b[8:])&(1<<set) == 0 {
		return 0, syscall.EOPNOTSUPP
	}
	return int(ne.Uint32(b[ssetInfoHeaderLen:])), nil
}

// gstrings is ETHTOOL_GSTRINGS for a set expected to hold n strings, read
// into g. It returns the n*ETH_GSTRING_LEN name bytes (inside g, valid until
// g's next use), or errStringSetMoved when the kernel reports, or tried to
// write, another number.
func (l *Live) gstrings(ifname string, set uint32, n int, g *guardedBuf) ([]byte, error) {
	b, err := g.bytes(gstringsHeaderLen + n*ethGstringLen)
	if err != nil {
		return nil, err
	}
	ne := binary.NativeEndian
	ne.PutUint32(b[0:], unix.ETHTOOL_GSTRINGS)
	ne.PutUint32(b[4:], set)
	ne.PutUint32(b[8:], uint32(n))
	err = ethtoolIoctl(l.ioctlFD, ifname, unsafe.Pointer(&b[0]))
	got := int(ne.Uint32(b[8:]))
	switch {
	case errors.Is(err, syscall.EFAULT) && got > n:
		return nil, errStringSetMoved // grew: the copy ran into the guard page
	case err != nil:
		return nil, err
	case got != n:
		return nil, errStringSetMoved
	}
	return b[gstringsHeaderLen:], nil
}

// gstats is ETHTOOL_GSTATS expecting n values, read into g; it returns the
// n host-endian u64 values as bytes inside g.
func (l *Live) gstats(ifname string, n int, g *guardedBuf) ([]byte, error) {
	b, err := g.bytes(gstatsHeaderLen + n*8)
	if err != nil {
		return nil, err
	}
	ne := binary.NativeEndian
	ne.PutUint32(b[0:], unix.ETHTOOL_GSTATS)
	ne.PutUint32(b[4:], uint32(n))
	err = ethtoolIoctl(l.ioctlFD, ifname, unsafe.Pointer(&b[0]))
	got := int(ne.Uint32(b[4:]))
	switch {
	case errors.Is(err, syscall.EFAULT) && got > n:
		return nil, errStringSetMoved
	case err != nil:
		return nil, err
	case got != n:
		return nil, errStringSetMoved
	}
	return b[gstatsHeaderLen:], nil
}

// ioctlBufs are the reply buffers Stats and PrivFlags reuse across calls
// (mapping fresh ones cost ~12 µs each, most of a Stats call); mu serialises
// their use.
type ioctlBufs struct {
	mu                        sync.Mutex
	names, namesAgain, values guardedBuf
}

func (b *ioctlBufs) free() {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.names.free()
	b.namesAgain.free()
	b.values.free()
}

// guardedBuf is an ioctl reply buffer that ends right at an inaccessible
// page. GSTRINGS and GSTATS write as many entries as the driver has now, not
// as many as asked for; should the set grow between the count and the read,
// the kernel's copy_to_user runs into the guard page and the ioctl fails with
// EFAULT, where a Go slice would have let it overwrite the heap.
type guardedBuf struct {
	mem    []byte // the whole mapping, guard page included; nil until used
	usable int    // bytes before the guard page
}

// bytes returns size bytes that end at the guard page, mapping a larger
// region first when the current one is too small.
func (g *guardedBuf) bytes(size int) ([]byte, error) {
	if size > g.usable {
		g.free()
		page := os.Getpagesize()
		usable := (size + page - 1) / page * page
		mem, err := unix.Mmap(-1, 0, usable+page, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS)
		if err != nil {
			return nil, fmt.Errorf("mmap ioctl buffer: %w", err)
		}
		if err := unix.Mprotect(mem[usable:], unix.PROT_NONE); err != nil {
			unix.Munmap(mem)
			return nil, fmt.Errorf("mprotect guard page: %w", err)
		}
		g.mem, g.usable = mem, usable
	}
	// size is a multiple of 4 (gstrings) or 8 (gstats), so the headers'
	// u32 and the values' u64 stay naturally aligned.
	return g.mem[g.usable-size : g.usable], nil
}

func (g *guardedBuf) free() {
	if g.mem != nil {
		unix.Munmap(g.mem)
		g.mem, g.usable = nil, 0
	}
}
