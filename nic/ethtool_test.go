package nic

import (
	"encoding/binary"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"unsafe"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"
)

func TestDriverInfoVeth(t *testing.T) {
	_, l := liveInNS(t)
	got, err := l.DriverInfo("va")
	if err != nil {
		t.Fatal(err)
	}
	// veth_get_drvinfo: driver "veth", version "1.0", no firmware or bus.
	if want := (DriverInfo{Driver: "veth", Version: "1.0"}); got != want {
		t.Fatalf("DriverInfo(va) = %+v, want %+v", got, want)
	}
}

// vethStatNames are the ethtool -S names of a veth with one rx queue, as
// kernel 6.18 prints them (veth_gstrings_stats, veth_rq_stats_desc,
// veth_tq_stats_desc): peer_ifindex, then per rx queue and per tx queue.
var vethStatNames = []string{
	"peer_ifindex",
	"rx_queue_0_xdp_packets",
	"rx_queue_0_xdp_bytes",
	"rx_queue_0_drops",
	"rx_queue_0_xdp_redirect",
	"rx_queue_0_xdp_drops",
	"rx_queue_0_xdp_tx",
	"rx_queue_0_xdp_tx_errors",
	"tx_queue_0_xdp_xmit",
	"tx_queue_0_xdp_xmit_errors",
}

func TestStatsVeth(t *testing.T) {
	ns, l := liveInNS(t)
	got, err := l.Stats("va")
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(vethStatNames) {
		t.Errorf("Stats(va) has %d counters, want %d: %v", len(got), len(vethStatNames), got)
	}
	for _, n := range vethStatNames {
		if _, ok := got[n]; !ok {
			t.Errorf("Stats(va) lacks %q", n)
		}
	}
	var peer int
	if err := ns.Do(func() error {
		link, err := netlink.LinkByName("vb")
		if err == nil {
			peer = link.Attrs().Index
		}
		return err
	}); err != nil {
		t.Fatal(err)
	}
	if got["peer_ifindex"] != uint64(peer) {
		t.Fatalf("peer_ifindex = %d, want vb's ifindex %d", got["peer_ifindex"], peer)
	}
}

func TestStatsMatchEthtoolCommand(t *testing.T) {
	needTool(t, "ethtool")
	ns, l := liveInNS(t)
	got, err := l.Stats("vb")
	if err != nil {
		t.Fatal(err)
	}
	out, err := ns.Command("ethtool", "-S", "vb").Output()
	if err != nil {
		t.Fatalf("ethtool -S vb: %v", err)
	}
	want := map[string]uint64{}
	for _, line := range strings.Split(string(out), "\n")[1:] { // skip "NIC statistics:"
		name, val, ok := strings.Cut(strings.TrimSpace(line), ": ")
		if !ok {
			continue
		}
		v, err := strconv.ParseUint(val, 10, 64)
		if err != nil {
			t.Fatalf("ethtool line %q: %v", line, err)
		}
		want[name] = v
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("Stats(vb)\n got %v\nwant %v (ethtool -S)", got, want)
	}
}

// The guard page at work: asking for fewer strings than the driver has
// makes the kernel's copy run past the buffer; it must fail with EFAULT
// inside the ioctl (reported as a changed set), not scribble on memory.
func TestGstringsCountMismatch(t *testing.T) {
	_, l := liveInNS(t)
	n, err := l.ssetCount("va", ethSSStats)
	if err != nil {
		t.Fatal(err)
	}
	if n != len(vethStatNames) {
		t.Fatalf("ssetCount = %d, want %d", n, len(vethStatNames))
	}
	var g guardedBuf
	defer g.free()
	for _, ask := range []int{1, n - 1, n + 1, 4 * n} {
		if _, err := l.gstrings("va", ethSSStats, ask, &g); !errors.Is(err, errStringSetMoved) {
			t.Errorf("gstrings(n=%d) with %d strings = %v, want errStringSetMoved", ask, n, err)
		}
		if _, err := l.gstats("va", ask, &g); !errors.Is(err, errStringSetMoved) {
			t.Errorf("gstats(n=%d) with %d stats = %v, want errStringSetMoved", ask, n, err)
		}
	}
	// The same buffer, now larger than needed, still ends at its guard
	// page and serves the right count.
	names, err := l.gstrings("va", ethSSStats, n, &g)
	if err != nil {
		t.Fatal(err)
	}
	if got := unix.ByteSliceToString(names[:ethGstringLen]); got != "peer_ifindex" {
		t.Fatalf("first stat name %q, want peer_ifindex", got)
	}
	if _, err := l.gstrings("va", ethSSStats, 1, &g); !errors.Is(err, errStringSetMoved) {
		t.Fatalf("gstrings(n=1) in a reused larger buffer = %v, want errStringSetMoved", err)
	}
}

func TestStatsMap(t *testing.T) {
	names := make([]byte, 4*ethGstringLen)
	copy(names[0:], "rx_prio3_pause")
	// names[32:64] empty: skipped
	copy(names[64:], strings.Repeat("x", ethGstringLen)) // no NUL: all 32 bytes
	copy(names[96:], "tx_pause_storm_warning_events ")   // as some mlx5 releases spell it
	values := make([]byte, 4*8)
	for i, v := range []uint64{7, 8, 9, 10} {
		binary.NativeEndian.PutUint64(values[8*i:], v)
	}
	got := statsMap(names, values)
	want := map[string]uint64{"rx_prio3_pause": 7, strings.Repeat("x", ethGstringLen): 9, "tx_pause_storm_warning_events": 10}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("statsMap = %v, want %v", got, want)
	}
}

func TestStatsMissingDevice(t *testing.T) {
	_, l := liveInNS(t)
	if _, err := l.Stats("nosuchdev"); !errors.Is(err, syscall.ENODEV) {
		t.Fatalf("Stats(nosuchdev) = %v, want ENODEV", err)
	}
}

// veth implements neither get_pauseparam nor get_ringparam: the kernel says
// EOPNOTSUPP, and the setters fail the same way before writing anything.
func TestPauseAndRingsUnsupportedOnVeth(t *testing.T) {
	_, l := liveInNS(t)
	checks := []struct {
		name string
		err  error
	}{
		{"Pause", func() error { _, err := l.Pause("va"); return err }()},
		{"SetPause", l.SetPause("va", Pause{})},
		{"Rings", func() error { _, err := l.Rings("va"); return err }()},
		{"SetRings", l.SetRings("va", Rings{Rx: 1024})},
	}
	for _, c := range checks {
		if !errors.Is(c.err, syscall.EOPNOTSUPP) {
			t.Errorf("%s(veth) = %v, want EOPNOTSUPP", c.name, c.err)
		}
		var oe *OpError
		if !errors.As(c.err, &oe) || oe.Dev != "va" {
			t.Errorf("%s(veth) error %v does not name the interface", c.name, c.err)
		}
	}
}

func TestPrivFlagsVeth(t *testing.T) {
	_, l := liveInNS(t)
	got, err := l.PrivFlags("va")
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 0 {
		t.Fatalf("PrivFlags(veth) = %v, want none", got)
	}
	if err := l.SetPrivFlags("va", nil); err != nil {
		t.Fatalf("SetPrivFlags(nothing) = %v", err)
	}
	err = l.SetPrivFlags("va", map[string]bool{"dropless_rq": true})
	if !errors.Is(err, syscall.EOPNOTSUPP) || !strings.Contains(err.Error(), `"dropless_rq"`) {
		t.Fatalf("SetPrivFlags(dropless_rq) = %v, want EOPNOTSUPP naming the flag", err)
	}
}

func TestEthtoolNameChecks(t *testing.T) {
	_, l := liveInNS(t)
	// 16 bytes: safchain would truncate it to "abcdefghijklmno", another
	// possible netdev. It must be refused instead.
	const long = "abcdefghijklmnop"
	errs := map[string]error{
		"DriverInfo":    func() error { _, err := l.DriverInfo(long); return err }(),
		"Stats":         func() error { _, err := l.Stats(long); return err }(),
		"Pause":         func() error { _, err := l.Pause(long); return err }(),
		"PrivFlags":     func() error { _, err := l.PrivFlags(long); return err }(),
		"PFCPrevention": func() error { _, err := l.PFCPreventionTimeout(long); return err }(),
		"SetPFCPrev":    l.SetPFCPreventionTimeout(long, 100),
	}
	for name, err := range errs {
		if !errors.Is(err, syscall.EINVAL) {
			t.Errorf("%s(%q) = %v, want EINVAL", name, long, err)
		}
	}
}

func BenchmarkStatsVeth(b *testing.B) {
	_, l := liveInNS(b)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := l.Stats("va"); err != nil {
			b.Fatal(err)
		}
	}
}

// deepCall runs fn with depth extra stack frames below it, so that across
// depths some call inside fn has to grow (move) the goroutine's stack.
func deepCall(depth int, fn func() string) string {
	var pad [64]byte
	if depth == 0 {
		return fn()
	}
	s := deepCall(depth-1, fn)
	pad[0] = byte(len(s))
	return s + string(pad[:0])
}

// Regression for the defect that made this package stop using
// safchain/ethtool: a command buffer on a stack that moves during the ioctl
// call must still receive the kernel's reply. With safchain v0.7.0 this
// failed under -race at some depths (DriverInfo returned empty strings: the
// kernel wrote into the old stack). Run it with -race to make stack growth
// frequent.
func TestEthtoolIoctlSurvivesStackGrowth(t *testing.T) {
	_, l := liveInNS(t)
	for depth := range 300 {
		ch := make(chan string, 1)
		go func() {
			ch <- deepCall(depth, func() string {
				d, err := l.DriverInfo("va")
				if err != nil {
					return err.Error()
				}
				n, err := l.ssetCount("va", ethSSStats)
				if err != nil {
					return err.Error()
				}
				_, err = l.PFCPreventionTimeout("va") // heap buffer, EOPNOTSUPP
				return fmt.Sprintf("%s/%d/%v", d.Driver, n, errors.Is(err, syscall.EOPNOTSUPP))
			})
		}()
		if got, want := <-ch, fmt.Sprintf("veth/%d/true", len(vethStatNames)); got != want {
			t.Fatalf("at depth %d: %q, want %q", depth, got, want)
		}
	}
}

// setRxChannels is ETHTOOL_GCHANNELS + SCHANNELS with a new rx count (struct
// ethtool_channels: cmd, max_rx, max_tx, max_other, max_combined, rx_count,
// tx_count, other_count, combined_count).
func setRxChannels(fd int, ifname string, rx uint32) error {
	var ch [9]uint32
	ch[0] = unix.ETHTOOL_GCHANNELS
	if err := ethtoolIoctl(fd, ifname, unsafe.Pointer(&ch[0])); err != nil {
		return err
	}
	ch[0] = unix.ETHTOOL_SCHANNELS
	ch[5] = rx
	return ethtoolIoctl(fd, ifname, unsafe.Pointer(&ch[0]))
}

func statNames(m map[string]uint64) string {
	return strings.Join(slices.Sorted(maps.Keys(m)), " ")
}

// The stat set of a veth follows its rx channel count, as mlx5's follows
// its PFC configuration. While another goroutine flips the count, every
// result Stats returns must be one of the two real sets, never a mix.
func TestStatsConsistentWhileSetChanges(t *testing.T) {
	ns, l := liveInNS(t)
	if err := ns.Do(func() error {
		return netlink.LinkAdd(&netlink.Veth{
			LinkAttrs:       netlink.LinkAttrs{Name: "ca", NumRxQueues: 4, NumTxQueues: 4},
			PeerName:        "cb",
			PeerNumRxQueues: 4, PeerNumTxQueues: 4,
		})
	}); err != nil {
		t.Fatal(err)
	}
	sets := map[string]string{}
	for _, rx := range []uint32{1, 2} {
		if err := setRxChannels(l.ioctlFD, "ca", rx); err != nil {
			t.Fatalf("set rx channels %d: %v", rx, err)
		}
		m, err := l.Stats("ca")
		if err != nil {
			t.Fatal(err)
		}
		sets[statNames(m)] = fmt.Sprintf("rx=%d (%d counters)", rx, len(m))
	}
	if len(sets) != 2 {
		t.Fatalf("rx 1 and rx 2 give the same stat set: %v", sets)
	}

	// The flipping runs until the reads are done: with a fixed number of
	// flips, a busy machine could finish them before the first read, and
	// nothing was checked (the test failed "no Stats call succeeded").
	stop := make(chan struct{})
	done := make(chan error, 1)
	go func() {
		for i := 0; ; i++ {
			select {
			case <-stop:
				done <- nil
				return
			default:
			}
			if err := setRxChannels(l.ioctlFD, "ca", uint32(1+i%2)); err != nil {
				done <- err
				return
			}
		}
	}()
	stopped := false
	halt := func() error {
		if stopped {
			return nil
		}
		stopped = true
		close(stop)
		return <-done
	}
	t.Cleanup(func() { _ = halt() }) // a Fatal below: the goroutine ends with the test
	seen := map[string]int{}
	var again int
	// 500 reads while the set flips, and on until one has succeeded
	// (EAGAIN is a read that met a change each time it tried).
	for n := 0; n < 500 || len(seen) == 0 && n < 100_000; n++ {
		m, err := l.Stats("ca")
		if errors.Is(err, syscall.EAGAIN) {
			again++
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		which, ok := sets[statNames(m)]
		if !ok {
			t.Fatalf("Stats returned a set that is neither configuration's: %v", slices.Sorted(maps.Keys(m)))
		}
		seen[which]++
	}
	if err := halt(); err != nil {
		t.Fatal(err)
	}
	t.Logf("results: %v; EAGAIN %d times", seen, again)
	if len(seen) == 0 {
		t.Fatal("no Stats call succeeded while the set changed")
	}
}

// ETHTOOL_GLINKSETTINGS in two steps (the mask size, then the settings):
// veth reports 10 Gb/s (veth_get_link_ksettings), and a missing device is
// ENODEV, named.
func TestSpeedOfVeth(t *testing.T) {
	_, l := liveInNS(t)
	if mbps, err := l.Speed("va"); err != nil || mbps != 10000 {
		t.Fatalf("Speed(veth) = %d, %v; want 10000", mbps, err)
	}
	_, err := l.Speed("nosuchdev")
	var oe *OpError
	if !errors.Is(err, syscall.ENODEV) || !errors.As(err, &oe) || oe.Dev != "nosuchdev" {
		t.Fatalf("Speed(nosuchdev) = %v, want ENODEV naming it", err)
	}
}
