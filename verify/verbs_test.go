package verify

import (
	"slices"
	"strings"
	"testing"
	"time"
)

func TestNormalizeDefaults(t *testing.T) {
	c, err := LoopbackConfig{Device: "rxe0"}.normalize()
	if err != nil {
		t.Fatal(err)
	}
	if c.Port != 1 || c.HopLimit != 255 || c.MsgSize != 4096 || c.Iterations != 1000 || c.Root != "/" ||
		!slices.Equal(c.Ops, []string{OpWrite, OpSend}) || c.Log == nil || c.stall != defaultStallTimeout || c.PathMTU != 0 {
		t.Errorf("defaults: %+v", c)
	}
	// A duration alone means "for that long", not "1000 messages or that long".
	c, err = LoopbackConfig{Device: "rxe0", Duration: time.Second, HopLimit: 64, Ops: []string{OpSend}}.normalize()
	if err != nil || c.Iterations != 0 || c.HopLimit != 64 || !c.wants(OpSend) || c.wants(OpWrite) {
		t.Errorf("duration run: %+v, %v", c, err)
	}
}

func TestNormalizeRejects(t *testing.T) {
	for _, tc := range []struct {
		cfg  LoopbackConfig
		want string
	}{
		{LoopbackConfig{}, "no RDMA device"},
		{LoopbackConfig{Device: "d", Port: 256}, "port 256"},
		{LoopbackConfig{Device: "d", GIDIndex: -1}, "GID index -1"},
		{LoopbackConfig{Device: "d", SL: 16}, "SL 16"},
		{LoopbackConfig{Device: "d", PathMTU: 1500}, "path MTU 1500 is not an IB MTU"},
		{LoopbackConfig{Device: "d", MsgSize: -1}, "message size -1"},
		{LoopbackConfig{Device: "d", MsgSize: 1<<30 + 1}, "message size"},
		{LoopbackConfig{Device: "d", Iterations: -1}, "negative"},
		{LoopbackConfig{Device: "d", Ops: []string{}}, "no operation"},
		{LoopbackConfig{Device: "d", Ops: []string{"read"}}, `unknown operation "read"`},
	} {
		_, err := tc.cfg.normalize()
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: got %v, want %q", tc.cfg, err, tc.want)
		}
	}
}

func TestIBMTU(t *testing.T) {
	// enum ibv_mtu: IBV_MTU_256 = 1 ... IBV_MTU_4096 = 5 (infiniband/verbs.h).
	for enum, bytes := range map[int]int{1: 256, 2: 512, 3: 1024, 4: 2048, 5: 4096} {
		if got := ibMTUBytes(enum); got != bytes {
			t.Errorf("ibMTUBytes(%d) = %d, want %d", enum, got, bytes)
		}
		if got, ok := ibMTUEnum(bytes); !ok || got != enum {
			t.Errorf("ibMTUEnum(%d) = %d, %v", bytes, got, ok)
		}
	}
	for _, bad := range []int{0, 6, -1} {
		if ibMTUBytes(bad) != 0 {
			t.Errorf("ibMTUBytes(%d) != 0", bad)
		}
	}
	for _, bad := range []int{0, 1500, 9000, 8192} {
		if _, ok := ibMTUEnum(bad); ok {
			t.Errorf("ibMTUEnum(%d) accepted", bad)
		}
	}
}

func TestGbps(t *testing.T) {
	// 1000 x 64 KiB in 3.084 s = 0.17 Gb/s, the lab's ib_write_bw figure.
	if got := gbps(1000*65536, 3084*time.Millisecond); got < 0.1699 || got > 0.1701 {
		t.Errorf("gbps = %v", got)
	}
	if gbps(100, 0) != 0 {
		t.Error("zero elapsed must give 0, not Inf")
	}
}

func TestLatencyPercentiles(t *testing.T) {
	var s []time.Duration
	for i := 100; i >= 1; i-- { // unsorted on purpose
		s = append(s, time.Duration(i)*time.Microsecond)
	}
	p50, p99 := latencyPercentiles(s)
	if p50 != 50*time.Microsecond || p99 != 99*time.Microsecond {
		t.Errorf("1..100 µs: p50 %v p99 %v, want 50µs 99µs (nearest rank)", p50, p99)
	}
	p50, p99 = latencyPercentiles([]time.Duration{7})
	if p50 != 7 || p99 != 7 {
		t.Errorf("one sample: %v %v", p50, p99)
	}
	// 1000 samples with ten slow outliers: p99 must land on the outliers' edge.
	s = s[:0]
	for i := range 1000 {
		d := 10 * time.Microsecond
		if i >= 990 {
			d = time.Millisecond
		}
		s = append(s, d)
	}
	if p50, p99 = latencyPercentiles(s); p50 != 10*time.Microsecond || p99 != 10*time.Microsecond {
		t.Errorf("990 fast + 10 slow: p50 %v p99 %v, want 10µs 10µs (rank 990 is still fast)", p50, p99)
	}
	s[989] = time.Millisecond
	if _, p99 = latencyPercentiles(s); p99 != time.Millisecond {
		t.Errorf("989 fast + 11 slow: p99 %v, want 1ms", p99)
	}
	if p50, p99 = latencyPercentiles(nil); p50 != 0 || p99 != 0 {
		t.Error("no samples must give zeros")
	}
}
