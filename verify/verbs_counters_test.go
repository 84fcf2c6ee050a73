package verify

import (
	"fmt"
	"log/slog"
	"maps"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/rocectl/rocectl/nic"
)

// hwTree is a temp sysfs root with one port's hw_counters, laid out as
// the kernel does: class/infiniband/<dev> is a symlink into devices/.
type hwTree struct {
	t    *testing.T
	root string
	dir  string // .../ports/<p>/hw_counters on this machine
}

func newHWTree(t *testing.T, devPath, dev string, port int) *hwTree {
	t.Helper()
	root := t.TempDir()
	real := filepath.Join(root, "sys", devPath, "infiniband", dev)
	dir := filepath.Join(real, "ports", fmt.Sprint(port), "hw_counters")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	class := filepath.Join(root, "sys/class/infiniband")
	if err := os.MkdirAll(class, 0o755); err != nil {
		t.Fatal(err)
	}
	rel, err := filepath.Rel(class, real)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(rel, filepath.Join(class, dev)); err != nil {
		t.Fatal(err)
	}
	return &hwTree{t: t, root: root, dir: dir}
}

func (h *hwTree) set(vals map[string]uint64) {
	h.t.Helper()
	for n, v := range vals {
		if err := os.WriteFile(filepath.Join(h.dir, n), fmt.Appendf(nil, "%d\n", v), 0o644); err != nil {
			h.t.Fatal(err)
		}
	}
}

var verbsTestLog = slog.New(slog.DiscardHandler)

// rxe0 port 1 of the lab guest (Linux 6.1 rdma_rxe, names of reference
// §A4.2): the values after two 100-iteration ibv_rc_pingpong runs, and the
// deltas TestLabLoopbackRoCEv2TOS106 printed for a 300 x 8 KiB loopback
// (write + ping-pong). lifespan 12 is the real value (10 ms in jiffies at
// HZ=250).
var (
	rxeIdle = map[string]uint64{"ack_deferred": 0, "completer_retry_err": 0, "duplicate_request": 0,
		"link_downed": 0, "out_of_seq_request": 0, "rcvd_pkts": 1000, "rcvd_rnr_err": 0, "rcvd_seq_err": 0,
		"rdma_recvs": 200, "rdma_sends": 200, "retry_exceeded_err": 0, "retry_rnr_exceeded_err": 0,
		"send_err": 0, "send_rnr_err": 0, "sent_pkts": 1000, "lifespan": 12}
	rxeRunDelta = map[string]int64{"ack_deferred": 1, "completer_retry_err": 4, "duplicate_request": 23,
		"rcvd_pkts": 8146, "rdma_recvs": 600, "rdma_sends": 600, "sent_pkts": 8146}
)

func TestHWCountersRxeRun(t *testing.T) {
	h := newHWTree(t, "devices/virtual", "rxe0", 1)
	h.set(rxeIdle)
	fs := nic.NewFS(h.root, true)
	before, err := readHWCounters(fs, "rxe0", 1, verbsTestLog)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := before["lifespan"]; ok || len(before) != len(rxeIdle)-1 {
		t.Fatalf("read %d counters %v; want the %d counters without lifespan", len(before), before, len(rxeIdle)-1)
	}
	after := maps.Clone(rxeIdle)
	for n, d := range rxeRunDelta {
		after[n] += uint64(d)
	}
	after["lifespan"] = 20 // changes, but is no counter
	h.set(after)
	got := hwCounterDeltas(before, mustReadHW(t, fs, "rxe0", 1))
	if !maps.Equal(got, rxeRunDelta) {
		t.Errorf("deltas\n got %v\nwant %v", got, rxeRunDelta)
	}
	if d := hwCountersSettle(fs, "rxe0", 1); d != 21*time.Millisecond {
		t.Errorf("settle for lifespan 20 = %v, want 21ms", d)
	}
}

func mustReadHW(t *testing.T, fs nic.FS, dev string, port int) map[string]uint64 {
	t.Helper()
	m, err := readHWCounters(fs, dev, port, verbsTestLog)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// mlx5_0 port 1 hw_counters from prometheus/procfs's fixtures
// (../shared/fixtures/upstream/procfs-testdata-fixtures.ttar, a ConnectX
// host), every file of that directory.
var mlx5HW = map[string]uint64{"duplicate_request": 41, "implied_nak_seq_err": 0, "lifespan": 10,
	"local_ack_timeout_err": 131, "out_of_buffer": 0, "out_of_sequence": 1, "packet_seq_err": 1,
	"req_cqe_error": 3481, "req_cqe_flush_error": 80, "req_remote_access_errors": 0,
	"req_remote_invalid_request": 0, "resp_cqe_error": 8109, "resp_cqe_flush_error": 4708,
	"resp_local_length_error": 0, "resp_remote_access_errors": 0, "rnr_nak_retry_err": 0,
	"roce_adp_retrans": 99, "roce_adp_retrans_to": 4, "roce_slow_restart": 0, "roce_slow_restart_cnps": 131,
	"roce_slow_restart_trans": 0, "rx_atomic_requests": 0, "rx_dct_connect": 0,
	"rx_read_requests": 175528982, "rx_write_requests": 742114}

func TestHWCountersMlx5Wraps(t *testing.T) {
	h := newHWTree(t, "devices/pci0000:00/0000:00:02.0/0000:3b:00.0", "mlx5_0", 1)
	before := maps.Clone(mlx5HW)
	before["out_of_sequence"] = 1<<32 - 6      // a 32-bit FW q counter about to wrap
	before["rx_read_requests"] = 5_000_000_000 // above 2^32: not a 32-bit counter
	before["rx_write_requests"] = 1<<32 - 1    // at the edge
	h.set(before)
	// A counter the driver cannot read (EOPNOTSUPP in real life; here a
	// directory, which fails to read) and one that is not a number are skipped.
	if err := os.Mkdir(filepath.Join(h.dir, "rx_icrc_encapsulated"), 0o755); err != nil {
		t.Fatal(err)
	}
	h.set(map[string]uint64{})
	if err := os.WriteFile(filepath.Join(h.dir, "cc_rx_ce_pkts"), []byte("N/A\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	fs := nic.NewFS(h.root, true)
	b := mustReadHW(t, fs, "mlx5_0", 1)
	if len(b) != len(mlx5HW)-1 {
		t.Fatalf("read %d counters, want %d (no lifespan, no unreadable ones): %v", len(b), len(mlx5HW)-1, b)
	}
	after := maps.Clone(before)
	after["out_of_sequence"] = 5   // wrapped: 6 to reach 2^32, 5 more
	after["rx_read_requests"] = 10 // went down from above 2^32: reset, counted 10 since
	after["rx_write_requests"] = 0 // wrapped by one
	after["np_cnp_sent"] = 3       // appeared during the run: no "before", no delta
	after["local_ack_timeout_err"] = 131 + 7
	h.set(after)
	got := hwCounterDeltas(b, mustReadHW(t, fs, "mlx5_0", 1))
	want := map[string]int64{"out_of_sequence": 11, "rx_read_requests": 10, "rx_write_requests": 1, "local_ack_timeout_err": 7}
	if !maps.Equal(got, want) {
		t.Errorf("deltas\n got %v\nwant %v", got, want)
	}
}

func TestHWCountersAbsent(t *testing.T) {
	fs := nic.NewFS(t.TempDir(), true)
	m, err := readHWCounters(fs, "bnxt_re0", 1, verbsTestLog)
	if m != nil || err != nil {
		t.Errorf("no hw_counters directory: got %v, %v; want nil, nil (no data)", m, err)
	}
	if hwCounterDeltas(nil, map[string]uint64{"x": 1}) != nil {
		t.Error("deltas without a before read must be nil")
	}
	if hwCountersSettle(fs, "bnxt_re0", 1) != 0 {
		t.Error("settle without lifespan must be 0")
	}
}

func TestHWCountersSettleCap(t *testing.T) {
	h := newHWTree(t, "devices/virtual", "rxe0", 1)
	h.set(map[string]uint64{"lifespan": 60000})
	if d := hwCountersSettle(nic.NewFS(h.root, true), "rxe0", 1); d != time.Second {
		t.Errorf("lifespan 60 s: settle %v, want the 1 s cap", d)
	}
}
