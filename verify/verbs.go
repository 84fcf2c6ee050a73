package verify

import (
	"errors"
	"fmt"
	"log/slog"
	"math"
	"slices"
	"time"
)

// This file holds what the verbs loopback and the two-host test share and
// what needs no cgo: the configuration, the result, defaults and the
// arithmetic on the measurements. The libibverbs calls live in
// verbs_cgo.go (build tags cgo && verbs); verbs_stub.go answers
// ErrVerbsNotBuiltIn everywhere else.

// ErrVerbsNotBuiltIn is wrapped by every verbs entry point of a binary built
// without libibverbs (the default build, which stays static and cgo-free).
var ErrVerbsNotBuiltIn = errors.New("verbs support not built in (build with -tags verbs and libibverbs-dev)")

// Operation names accepted in LoopbackConfig.Ops.
const (
	OpWrite = "write" // RDMA WRITE stream: bandwidth
	OpSend  = "send"  // SEND/RECV ping-pong: latency
)

// LoopbackConfig says which port to test and how. The zero value of every
// field but Device means "default" (see the field comments).
type LoopbackConfig struct {
	Device   string // RDMA device, e.g. "mlx5_0", "rxe0"
	Port     int    // port number, 1-based; 0 = 1
	GIDIndex int    // source GID index; for RoCE v2 over IPv4 this is the ::ffff:a.b.c.d entry
	// RequireRoCEv2 fails the test early when the GID at GIDIndex is not a
	// RoCE v2 entry (NCCL and rdma_cm use v2; a v1 entry "works" on the
	// same host but is not routable).
	RequireRoCEv2 bool
	// TrafficClass is the IPv6 traffic class / IPv4 TOS byte of every
	// packet: DSCP<<2 | ECN, e.g. 106 = DSCP 26 + ECT(0) (ah_attr.grh.traffic_class).
	TrafficClass uint8
	SL           uint8 // service level (the PCP when the port trusts PCP); 0..15
	HopLimit     uint8 // GRH hop limit / IP TTL; 0 = 255 as NCCL sets it
	// PathMTU in bytes (256, 512, 1024, 2048 or 4096); 0 = the largest the
	// port's active_mtu allows. A value above active_mtu is refused with
	// ErrPathMTU before any QP is touched.
	PathMTU    int
	MsgSize    int           // bytes per message for both operations; 0 = 4096
	Iterations int           // messages per operation; 0 = 1000 unless Duration is set
	Duration   time.Duration // time per operation; stops at whichever of Iterations/Duration comes first
	Ops        []string      // OpWrite and/or OpSend; nil = both
	Root       string        // sysfs root for hw_counters; "" = "/"
	Log        *slog.Logger  // nil = discard
	// Pause reads the ethtool statistics of the tested port's netdev(s)
	// (a RoCE LAG bond's slaves): a two-host run records how its pause
	// counters moved during the traffic (LoopbackResult.PauseDeltas).
	Pause []CounterSource

	// skipMTUCheck lets a lab test hand the kernel a path MTU above
	// active_mtu, to show how that failure looks on the wire.
	skipMTUCheck bool
	// stall overrides defaultStallTimeout (lab tests that provoke a stall).
	stall time.Duration
	// depth overrides the RDMA WRITEs in flight (1..qpSendDepth), for lab experiments.
	depth int
	// maxTest, on a passive end, refuses a test plan with larger
	// messages or more iterations, or any duration (probe servers).
	maxTest *wireTest
	// noCounters skips the hw_counters window of a two-host run
	// (probes: the agent polls the counters itself).
	noCounters bool
}

// LoopbackResult is what one test run measured. Two-host runs fill it on
// both ends; the passive end reports the numbers the active end measured.
type LoopbackResult struct {
	Device       string `json:"device"`
	Port         int    `json:"port"`
	GIDIndex     int    `json:"gid_index"`
	GID          string `json:"gid"`      // source GID, IPv6 text form ("::ffff:192.168.77.1")
	PeerGID      string `json:"peer_gid"` // destination GID (own GID in loopback)
	PathMTU      int    `json:"path_mtu"` // bytes
	TrafficClass uint8  `json:"traffic_class"`

	WriteGbps  float64 `json:"write_gbps"`  // RDMA WRITE goodput, 10^9 bit/s
	WriteMsgs  int     `json:"write_msgs"`  // RDMA WRITEs completed successfully
	WriteBytes int64   `json:"write_bytes"` // payload bytes in those

	// LatP50/LatP99 are half the SEND/RECV round trip, the convention of
	// perftest's ib_send_lat/ib_write_lat ("typical latency" = RTT/2).
	LatP50   time.Duration `json:"lat_p50"`
	LatP99   time.Duration `json:"lat_p99"`
	SendMsgs int           `json:"send_msgs"` // ping-pong round trips completed

	// CounterDeltas are the non-zero changes of the port's hw_counters over
	// the run (sent_pkts, rcvd_pkts on rxe; np_cnp_sent, out_of_sequence ...
	// on mlx5). Nil when the port has no hw_counters directory.
	CounterDeltas map[string]int64 `json:"counter_deltas,omitempty"`
	// PauseDeltas are the changes of this end's pause counters
	// (PauseCounters: per priority and global, rx and tx) over a two-host
	// run, zeros included: a priority that never paused is a result too.
	// PauseWindow is the time between the two samples, the denominator of
	// the fraction of the run a priority was paused. Nil without
	// LoopbackConfig.Pause or when no netdev has pause counters.
	PauseDeltas []PauseDelta  `json:"pause_deltas,omitempty"`
	PauseWindow time.Duration `json:"pause_window,omitempty"`
	// Errors are the failed work completions, first one first (the ones
	// after it are usually WR_FLUSH_ERR of the already broken QP).
	Errors []CompletionError `json:"errors,omitempty"`
}

// opStats is what one traffic phase measured on one end.
type opStats struct {
	msgs    int
	bytes   int64
	elapsed time.Duration
	samples []time.Duration // ping-pong RTT/2, at most maxLatSamples (the last ones)
	errs    []CompletionError
}

// Defaults applied by normalize.
const (
	defaultMsgSize    = 4096
	defaultIterations = 1000
	defaultHopLimit   = 255 // NCCL's choice: the GRH must survive any number of L3 hops
	maxMsgSize        = 1 << 30
)

// QP transport parameters (reference §D steps 8-9). timeout 14 is
// 4.096 µs·2^14 ≈ 67 ms per try; with retry_cnt 6 a dead path is reported
// as IBV_WC_RETRY_EXC_ERR after about half a second instead of NCCL's
// minutes, which is what a verification wants. Not 7: Soft-RoCE reads
// retry_cnt 7 as "retry forever" (rxe_completer never decrements it,
// rxe_comp.c), so a dead path there never completed and only the stall
// timeout ended the run (seen in the lab's sweep with a pulled cable).
// rnr_retry 7 means "retry forever" (IBTA): our receivers are always
// posted, so RNR only means "slow".
const (
	qpTimeout     = 14
	qpRetryCount  = 6
	qpRNRRetry    = 7
	qpMinRNRTimer = 12
	qpSendDepth   = 128 // outstanding RDMA WRITEs, like perftest's default tx_depth
	qpRecvDepth   = 64
	qpMaxInline   = 64 // small SENDs go inline (copied at post time), as perftest's latency tests do
	// defaultStallTimeout ends a run that sees no completion at all for this
	// long: a dead path fails with RETRY_EXC_ERR within about a second, so
	// silence means the device keeps retrying on its own (rxe does when the
	// netdev refuses its packets) or the peer process is stuck.
	defaultStallTimeout = 10 * time.Second
	maxLatSamples       = 1 << 20
	hwCountersPath      = "/sys/class/infiniband/%s/ports/%d/hw_counters"
)

// normalize fills defaults and rejects what cannot work. It does not look
// at the device; Loopback checks the port itself.
func (c LoopbackConfig) normalize() (LoopbackConfig, error) {
	if c.Device == "" {
		return c, fmt.Errorf("verbs: no RDMA device given")
	}
	if c.Port == 0 {
		c.Port = 1
	}
	if c.Port < 0 || c.Port > 255 {
		return c, fmt.Errorf("verbs: port %d out of range 1..255", c.Port)
	}
	if c.GIDIndex < 0 {
		return c, fmt.Errorf("verbs: GID index %d is negative", c.GIDIndex)
	}
	if c.SL > 15 {
		return c, fmt.Errorf("verbs: SL %d out of range 0..15", c.SL)
	}
	if c.HopLimit == 0 {
		c.HopLimit = defaultHopLimit
	}
	if c.PathMTU != 0 {
		if _, ok := ibMTUEnum(c.PathMTU); !ok {
			return c, fmt.Errorf("verbs: path MTU %d is not an IB MTU (256, 512, 1024, 2048, 4096)", c.PathMTU)
		}
	}
	if c.MsgSize == 0 {
		c.MsgSize = defaultMsgSize
	}
	if c.MsgSize < 1 || c.MsgSize > maxMsgSize {
		return c, fmt.Errorf("verbs: message size %d out of range 1..%d", c.MsgSize, maxMsgSize)
	}
	if c.Iterations < 0 || c.Duration < 0 {
		return c, fmt.Errorf("verbs: negative iterations or duration")
	}
	if c.Iterations == 0 && c.Duration == 0 {
		c.Iterations = defaultIterations
	}
	if c.Ops == nil {
		c.Ops = []string{OpWrite, OpSend}
	}
	if len(c.Ops) == 0 {
		return c, fmt.Errorf("verbs: no operation selected")
	}
	for _, op := range c.Ops {
		if op != OpWrite && op != OpSend {
			return c, fmt.Errorf("verbs: unknown operation %q (want %q or %q)", op, OpWrite, OpSend)
		}
	}
	if c.Root == "" {
		c.Root = "/"
	}
	if c.Log == nil {
		c.Log = slog.New(slog.DiscardHandler)
	}
	if c.stall <= 0 {
		c.stall = defaultStallTimeout
	}
	if c.depth <= 0 || c.depth > qpSendDepth {
		c.depth = qpSendDepth
	}
	return c, nil
}

func (c LoopbackConfig) wants(op string) bool { return slices.Contains(c.Ops, op) }

// ibMTUEnum maps an MTU in bytes to enum ibv_mtu (IBV_MTU_256 = 1 ...
// IBV_MTU_4096 = 5, infiniband/verbs.h).
func ibMTUEnum(bytes int) (int, bool) {
	switch bytes {
	case 256:
		return 1, true
	case 512:
		return 2, true
	case 1024:
		return 3, true
	case 2048:
		return 4, true
	case 4096:
		return 5, true
	}
	return 0, false
}

// ibMTUBytes is the inverse of ibMTUEnum; 0 for an unknown enum.
func ibMTUBytes(enum int) int {
	if enum < 1 || enum > 5 {
		return 0
	}
	return 128 << enum
}

// gbps is payload bits per nanosecond, i.e. 10^9 bit/s, the unit of
// perftest's --report_gbits.
func gbps(bytes int64, elapsed time.Duration) float64 {
	if elapsed <= 0 {
		return 0
	}
	return float64(bytes) * 8 / float64(elapsed.Nanoseconds())
}

// latencyPercentiles returns the 50th and 99th percentile of the samples
// (nearest rank, as perftest does: the sample at index ceil(p*n)-1 of the
// sorted list). It sorts samples in place.
func latencyPercentiles(samples []time.Duration) (p50, p99 time.Duration) {
	if len(samples) == 0 {
		return 0, 0
	}
	slices.Sort(samples)
	rank := func(p float64) time.Duration {
		i := int(math.Ceil(p*float64(len(samples)))) - 1
		i = max(0, min(i, len(samples)-1))
		return samples[i]
	}
	return rank(0.50), rank(0.99)
}

// VerbsBuiltIn says whether this binary can run verbs traffic (built
// with -tags verbs): a traffic test asked of one that cannot is an error
// before anything is read, on any host.
func VerbsBuiltIn() bool { return verbsBuiltIn }
