package agent

import (
	"context"
	"fmt"
	"log/slog"
	"runtime"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/rocectl/rocectl/host"
	"github.com/rocectl/rocectl/policy"
	"github.com/rocectl/rocectl/verify"
)

// The daemon's /metrics, in Prometheus conventions: base units (seconds,
// not the drivers' microseconds), _total on counters, one rocectl_ prefix,
// and node_exporter's "device" label for the netdev so that a query can
// join rocectl's series with node_network_*. docs/metrics.md lists every
// series.
//
// NIC counters are not read at scrape time: a poller reads them every
// Config.CounterInterval and keeps, per series, a running total built from
// the deltas between polls. A scrape serves the last poll. Totals kept that
// way stay monotonic where the raw counters are not: mlx5 removes a
// priority's pause counters while PFC is off on it (and brings them back
// later), and a driver reload or firmware reset starts every counter from
// zero. Prometheus' rate() would read either as a reset and lose what was
// counted between the last scrape and the reset; polling every second
// keeps that loss to one poll. A counter that reads lower for one poll and
// comes back is a bad read, not a reset: a value below the last is held
// until the next poll tells which (verify.Monotonic), so a dip is never
// counted twice.
//
// A bond (RoCE LAG) has no NIC counters of its own: each slave is polled
// as a port of its own (device = the slave's netdev), and the bond gets
// the sum over its slaves under rocectl_bond_<name> (device = the bond).
// Separate names, not a device="bond0" series in the same family: a sum()
// over rocectl_pfc_pause_seconds_total would count every LAG twice.
// rocectl_bond_slave_info says which slave is under which bond. The RDMA
// counters belong to the LAG's one RDMA device and are the bond's.

const counterDefaultInterval = time.Second

// family is one metric name with its labels after "device" (and, for RDMA
// counters, "rdma_device" and "port"). The driver's count divided by per is
// the exposed value (µs → s). A division, not a multiplication by 1e-6:
// 3700000/1e6 is 3.7, 3700000*1e-6 is 3.6999999999999997.
type family struct {
	desc *prometheus.Desc
	// bond is the per-bond sum of a NIC family (rocectl_bond_...), nil
	// for the RDMA families.
	bond *prometheus.Desc
	per  float64
}

func newFamily(name, help string, rdma bool, per float64, labels ...string) *family {
	l := []string{"device"}
	if rdma {
		l = append(l, "rdma_device", "port")
	}
	f := &family{desc: prometheus.NewDesc(name, help, append(l, labels...), nil), per: per}
	if !rdma {
		f.bond = prometheus.NewDesc("rocectl_bond_"+strings.TrimPrefix(name, "rocectl_"),
			"RoCE LAG bond (device): the sum over its slaves of "+name+": "+help, append(l, labels...), nil)
	}
	return f
}

const microseconds = 1e6 // per second

var (
	famPFCPauseFrames = newFamily("rocectl_pfc_pause_frames_total",
		"PFC pause frames per priority; direction rx: received from the link partner (it paused us), tx: sent.", false, 1, "priority", "direction")
	famPFCPauseSeconds = newFamily("rocectl_pfc_pause_seconds_total",
		"Time a priority was paused; rx: we were paused by the link partner, tx: we paused it.", false, microseconds, "priority", "direction")
	famGlobalPauseFrames = newFamily("rocectl_global_pause_frames_total",
		"IEEE 802.3x global pause frames (they stop every priority); a RoCE port with PFC should count none.", false, 1, "direction")
	famGlobalPauseSeconds = newFamily("rocectl_global_pause_seconds_total",
		"Time the port was paused by (rx) or pausing (tx) 802.3x global pause.", false, microseconds, "direction")
	famStormEvents = newFamily("rocectl_pfc_storm_events_total",
		"Events of the NIC's own PFC storm watchdog (mlx5 pfc_storm_prevention): warning, then error when it stops honouring pause.", false, 1, "severity")
	famPortDiscards = newFamily("rocectl_port_discards_total",
		"Packets the port discarded (mlx5 *_discards_phy, e.g. no receive buffer).", false, 1, "direction")
	famPrioDiscards = newFamily("rocectl_priority_discards_total",
		"Received packets of a priority the port discarded.", false, 1, "priority")
	famPrioBufDiscards = newFamily("rocectl_priority_buffer_discards_total",
		"Received packets of a priority dropped for lack of receive buffer; on a lossless (PFC) priority this means PFC headroom is too small.", false, 1, "priority")
	famCNPSent = newFamily("rocectl_cnp_sent_total",
		"Congestion notification packets sent by the notification point (ECN-marked RoCE packets received).", true, 1)
	famCNPHandled = newFamily("rocectl_cnp_handled_total",
		"Congestion notification packets the reaction point received and slowed down for.", true, 1)
	famECNMarked = newFamily("rocectl_ecn_marked_packets_total",
		"RoCE packets received with ECN congestion experienced (CE) marks.", true, 1)
	famOutOfSequence = newFamily("rocectl_rdma_out_of_sequence_packets_total",
		"RoCE packets the RDMA port received out of sequence: on a lossless class, loss where there should be none.", true, 1)
	famPacketSeqErr = newFamily("rocectl_rdma_sequence_error_naks_total",
		"NAKs for a sequence error the RDMA port received: the peer saw a packet of ours go missing.", true, 1)
	famLocalAckTimeout = newFamily("rocectl_rdma_ack_timeouts_total",
		"Times a queue pair's ACK timer expired at the sender, each a retransmit after loss or a stalled peer.", true, 1)
	famOutOfBuffer = newFamily("rocectl_rdma_out_of_buffer_drops_total",
		"RoCE packets dropped because no receive WQE was posted: the application posts receives too slowly.", true, 1)
	famCNPIgnored = newFamily("rocectl_cnp_ignored_total",
		"CNPs the reaction point received and did not slow down for (DCQCN off on the QP's priority, or the QP already at its minimum rate).", true, 1)
	famImpliedNak = newFamily("rocectl_rdma_implied_nak_sequence_errors_total",
		"Read responses or atomic ACKs that implied a NAK for a sequence error: loss on RDMA reads.", true, 1)
	famAdpRetrans = newFamily("rocectl_roce_adaptive_retransmissions_total",
		"Retransmissions by the NIC's adaptive retransmission (mlx5 RoCE accelerator, roce_adp_retrans).", true, 1)
	famAdpRetransTO = newFamily("rocectl_roce_adaptive_retransmission_timeouts_total",
		"Adaptive retransmissions that timed out (mlx5 roce_adp_retrans_to).", true, 1)
	famSlowRestart = newFamily("rocectl_roce_slow_restarts_total",
		"Times a QP entered slow restart after a loss (mlx5 roce_slow_restart).", true, 1)
	famSlowRestartCNPs = newFamily("rocectl_roce_slow_restart_cnps_total",
		"CNPs generated by slow restart (mlx5 roce_slow_restart_cnps).", true, 1)
	famSlowRestartTrans = newFamily("rocectl_roce_slow_restart_transitions_total",
		"Times a QP left slow restart for normal operation (mlx5 roce_slow_restart_trans).", true, 1)
)

// counterSeries is one series: a family, its label values after the port's,
// and the counter's name in each driver that has it (mlx5 first).
type counterSeries struct {
	fam    *family
	labels []string
	names  []string
	// rdma: the series is the RDMA port's congestion counter cong (its
	// driver names are verify's), not an ethtool -S counter.
	rdma bool
	cong verify.CongCounter
	// role marks the series "throttled with no drops" reads.
	role seriesRole
}

type seriesRole int

const (
	roleNone seriesRole = iota
	rolePauseTime
	roleDiscard
)

// counterTable is every series the poller reads, built once: its names are
// looked up for every port at every poll.
//
// Driver names: mlx5 en_stats.c and counters.c, reference §A4.1/§A4.2;
// bnxt_en ethtool -S (shared/fixtures/bnxt_en-showmax-ethtool-S.txt); the
// RDMA congestion counters' names (mlx5, bnxt_re) are verify's.
// bnxt_en has no global pause duration, storm-watchdog events or
// per-priority discards under these meanings: those series are mlx5 only.
var counterTable = func() []counterSeries {
	var t []counterSeries
	add := func(fam *family, labels []string, names ...string) {
		role := roleNone
		switch fam {
		case famPFCPauseSeconds, famGlobalPauseSeconds:
			role = rolePauseTime
		case famPortDiscards, famPrioDiscards, famPrioBufDiscards:
			role = roleDiscard
		}
		t = append(t, counterSeries{fam: fam, labels: labels, names: names, role: role})
	}
	for p := range 8 {
		prio := strconv.Itoa(p)
		for _, dir := range []string{"rx", "tx"} {
			add(famPFCPauseFrames, []string{prio, dir}, fmt.Sprintf("%s_prio%d_pause", dir, p), fmt.Sprintf("%s_pfc_ena_frames_pri%d", dir, p))
			add(famPFCPauseSeconds, []string{prio, dir}, fmt.Sprintf("%s_prio%d_pause_duration", dir, p), fmt.Sprintf("pfc_pri%d_%s_duration_us", p, dir))
		}
	}
	for _, dir := range []string{"rx", "tx"} {
		add(famGlobalPauseFrames, []string{dir}, dir+"_global_pause", dir+"_pause_frames")
		add(famGlobalPauseSeconds, []string{dir}, dir+"_global_pause_duration")
	}
	for _, sev := range []string{"warning", "error"} {
		add(famStormEvents, []string{sev}, "tx_pause_storm_"+sev+"_events")
	}
	for _, dir := range []string{"rx", "tx"} {
		add(famPortDiscards, []string{dir}, dir+"_discards_phy")
	}
	for p := range 8 {
		prio := strconv.Itoa(p)
		add(famPrioDiscards, []string{prio}, fmt.Sprintf("rx_prio%d_discards", p))
		add(famPrioBufDiscards, []string{prio}, fmt.Sprintf("rx_prio%d_buf_discard", p))
	}
	for _, c := range []struct {
		fam  *family
		cong verify.CongCounter
	}{
		{famCNPSent, verify.CNPSent},
		{famCNPHandled, verify.CNPHandled},
		{famECNMarked, verify.ECNMarked},
		{famOutOfSequence, verify.OutOfSequence},
		{famPacketSeqErr, verify.PacketSeqErr},
		{famLocalAckTimeout, verify.LocalAckTimeout},
		{famOutOfBuffer, verify.OutOfBuffer},
		{famCNPIgnored, verify.CNPIgnored},
		{famImpliedNak, verify.ImpliedNakSeqErr},
		{famAdpRetrans, verify.AdpRetrans},
		{famAdpRetransTO, verify.AdpRetransTimeout},
		{famSlowRestart, verify.SlowRestart},
		{famSlowRestartCNPs, verify.SlowRestartCNPs},
		{famSlowRestartTrans, verify.SlowRestartTrans},
	} {
		t = append(t, counterSeries{fam: c.fam, cong: c.cong, rdma: true})
	}
	return t
}()

// portRef is a RoCE port the poller reads (verify.Sampler's source): its
// netdev (ethtool -S) and its RDMA device port (hw_counters). A slave of a
// bond (RoCE LAG) has no RDMA device of its own, and its NIC series are
// summed into the bond's; the bond has no ethtool -S counters (its NIC
// series are its slaves' sums) and carries the RDMA series.
type portRef = verify.Source

// portRefsOf lists what the poller reads for the matched ports: a port
// under no bond as it is; a bond as itself (RDMA counters) and each of
// its slaves (NIC counters).
func portRefsOf(ports []policy.DesiredPort) []portRef {
	var out []portRef
	for _, dp := range ports {
		out = verify.AppendSources(out, dp.Port)
	}
	return out
}

// counterKey is one series of one port: an index into counterTable.
type counterKey struct {
	series int
	netdev string
}

// counterTotal is a running total and the raw counter it follows.
type counterTotal struct {
	m     verify.Monotonic
	total uint64
}

// counters is the poller and what it has counted; Collect reads it.
type counters struct {
	// smp reads the ports; each poll sets its sources. read is
	// its sample, reused from poll to poll (no per-poll allocation);
	// readMu keeps two polls from sharing it.
	smp    verify.Sampler
	readMu sync.Mutex
	read   verify.Sample
	log    *slog.Logger

	mu       sync.Mutex
	ports    []portRef
	totals   map[counterKey]*counterTotal
	lastPoll time.Time
	// pollErrors counts failed reads per netdev (ethtool -S unanswered).
	pollErrors map[string]uint64
	// badReads counts, per netdev, counter readings that dipped for one
	// poll and came back (verify.BadRead).
	badReads map[string]uint64
	// storm, when set, gets every port's reading (the storm machine).
	storm *storms
	// The last poll's interval: occ is each pause-time series' share
	// of it, discGrowth each port's discard growth (discKnown: it had
	// a discard counter with a delta), throttled the verdict per port
	// (absent: unknown). shares is judgeThrottled's scratch.
	occ        map[counterKey]float64
	discGrowth map[string]uint64
	discKnown  map[string]struct{}
	throttled  map[string]bool
	shares     []verify.PauseShare
}

func newCounters(h *host.Host, log *slog.Logger) *counters {
	return &counters{smp: verify.Sampler{K: h.K, FS: &h.FS, Log: log}, log: log, totals: map[counterKey]*counterTotal{}, pollErrors: map[string]uint64{}, badReads: map[string]uint64{},
		occ: map[counterKey]float64{}, discGrowth: map[string]uint64{}, discKnown: map[string]struct{}{}, throttled: map[string]bool{}}
}

// run polls every interval until ctx ends, reading the port list from
// ports at each poll (drift checks keep it current).
func (c *counters) run(ctx context.Context, interval time.Duration, ports func() []portRef) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			c.poll(ports(), time.Now())
		}
	}
}

// poll reads every series of every port once and adds the deltas since the
// last poll to the totals. A port gone from the list loses its series (a
// driver reload renamed it); a counter missing at this poll keeps its total
// and continues from its last raw value when it returns (mlx5 per-priority
// pause counters while PFC is off).
func (c *counters) poll(ports []portRef, now time.Time) {
	type sample struct {
		key  counterKey
		v    uint64
		wrap bool // a 32-bit counter (verify.Wraps32)
	}
	var samples []sample
	var failed []string
	c.readMu.Lock()
	// The sampler itself, not a copy: it keeps each RDMA port's
	// hw_counters listing from poll to poll.
	c.smp.Sources = ports
	c.smp.SampleInto(&c.read)
	for i := range c.read.Ports {
		ps := &c.read.Ports[i]
		if ps.Err != nil {
			c.log.Debug("counters unreadable", "device", ps.Netdev, "err", ps.Err)
			failed = append(failed, ps.Netdev)
		}
		for j, s := range counterTable {
			if v, ok := read1(ps, s); ok {
				samples = append(samples, sample{counterKey{j, ps.Netdev}, v, s.rdma && verify.Wraps32(ps.CongName(s.cong))})
			}
		}
		if c.storm != nil && !ps.IsBond() {
			if s := c.storm.observe(ps.Name(), now, ps.Stats, ps.Err); s != nil {
				c.log.Warn("pause storm", "device", ps.Netdev, "storm", s.String())
			}
		}
		ps.Stats = nil // the map is the kernel's: let it go before the next poll
	}
	c.readMu.Unlock()

	c.mu.Lock()
	defer c.mu.Unlock()
	secs := 0.0
	if !c.lastPoll.IsZero() {
		secs = now.Sub(c.lastPoll).Seconds()
	}
	c.lastPoll = now
	// This poll's interval: each pause-time series' share of it and
	// each port's discard growth, for "throttled with no drops". A
	// series seen for the first time (or a port's first poll) has no
	// interval yet.
	clear(c.occ)
	clear(c.discGrowth)
	for _, nd := range failed {
		c.pollErrors[nd]++
	}
	if !samePorts(c.ports, ports) {
		keep := make(map[string]bool, len(ports))
		for _, p := range ports {
			keep[p.Netdev] = true
		}
		for k := range c.totals {
			if !keep[k.netdev] {
				delete(c.totals, k)
			}
		}
		for nd := range c.pollErrors {
			if !keep[nd] {
				delete(c.pollErrors, nd)
			}
		}
		for nd := range c.badReads {
			if !keep[nd] {
				delete(c.badReads, nd)
			}
		}
		c.ports = append(c.ports[:0], ports...)
		if c.storm != nil {
			names := make(map[string]bool, len(ports))
			for _, p := range ports {
				names[p.Name()] = true
			}
			c.storm.keep(names)
		}
	}
	for _, s := range samples {
		t := c.totals[s.key]
		if t == nil {
			// First sight: start from the driver's count, so the series
			// reads as ethtool -S does.
			t = &counterTotal{total: s.v}
			t.m.Wrap32 = s.wrap
			t.m.Next(s.v)
			c.totals[s.key] = t
			continue
		}
		// A value below the last is held until the next poll: back
		// up, it was a bad read and the growth counts once from
		// before it; still below, a reset (driver reload, firmware
		// reset) and what it shows was counted since. The counters
		// read here are 64 bits wide in mlx5 and bnxt (PPCNT,
		// congestion statistics), so a smaller value is no wrap.
		d, kind := t.m.Next(s.v)
		t.total += d
		if kind == verify.BadRead {
			c.badReads[s.key.netdev]++
		}
		if secs <= 0 || kind == verify.Dip {
			continue // no interval, or undecided: no share this poll
		}
		switch counterTable[s.key.series].role {
		case rolePauseTime:
			c.occ[s.key] = float64(d) / microseconds / secs
		case roleDiscard:
			c.discGrowth[s.key.netdev] += d
			if _, ok := c.discKnown[s.key.netdev]; !ok {
				c.discKnown[s.key.netdev] = struct{}{}
			}
		}
	}
	c.judgeThrottled()
}

// judgeThrottled sets, per port, "throttled with no drops" over the last
// poll's interval (verify.ThrottledNoDrops): 1 or 0, absent (unknown)
// where the port had no discard counter with a delta this poll.
func (c *counters) judgeThrottled() {
	clear(c.throttled)
	for _, p := range c.ports {
		if p.IsBond() {
			continue
		}
		c.shares = c.shares[:0]
		for k, occ := range c.occ {
			if k.netdev == p.Netdev {
				s := counterTable[k.series]
				c.shares = append(c.shares, verify.PauseShare{HasDuration: true, Occupancy: occ, Direction: s.labels[len(s.labels)-1]})
			}
		}
		_, known := c.discKnown[p.Netdev]
		where, ok := verify.ThrottledNoDrops(c.shares, c.discGrowth[p.Netdev], known, verify.DefaultThrottleOccupancy)
		if ok {
			c.throttled[p.Netdev] = len(where) > 0
		}
	}
	clear(c.discKnown)
}

// read1 returns the series' raw value in the port's sample: from its
// ethtool -S counters under the first name the driver has, or its RDMA
// port's congestion counter.
func read1(ps *verify.PortSample, s counterSeries) (uint64, bool) {
	if s.rdma {
		return ps.Cong(s.cong)
	}
	for _, n := range s.names {
		if v, ok := ps.Stats[n]; ok {
			return v, true
		}
	}
	return 0, false
}

func samePorts(a, b []portRef) bool { return slices.EqualFunc(a, b, verify.Source.Equal) }

// Descriptions of the daemon's own state.
var (
	descBuildInfo = prometheus.NewDesc("rocectl_build_info",
		"rocectl's version, VCS revision and Go version; always 1.", []string{"version", "revision", "goversion"}, nil)
	descDrift = prometheus.NewDesc("rocectl_drift_settings",
		"Settings that differ from the profile at the last check, per port (device; empty for host settings) and setting kind.",
		[]string{"profile", "device", "kind"}, nil)
	descUnknown = prometheus.NewDesc("rocectl_unknown_settings",
		"Settings whose value the last check could not compare with the profile, per port (device; empty for host settings), setting kind and reason: "+
			"not_captured (the source does not hold it: a snapshot imported from dumps), unreadable (the read failed). Neither in sync nor drift.",
		[]string{"profile", "device", "kind", "reason"}, nil)
	descFWPending = prometheus.NewDesc("rocectl_firmware_pending_settings",
		"Firmware (NVConfig) settings per port (device) whose next-boot value holds the profile's while the device still runs with another, at the last check: "+
			"they take effect at the next firmware reset (mstfwreset) or reboot, which rocectl never does. Absent for ports without any.",
		[]string{"profile", "device"}, nil)
	descUnsupported = prometheus.NewDesc("rocectl_unsupported_settings",
		"Profile settings this host cannot take.", []string{"profile"}, nil)
	descCheckSuccess = prometheus.NewDesc("rocectl_last_check_success",
		"Whether the last drift check could load the profile and read the host.", nil, nil)
	descCheckTime = prometheus.NewDesc("rocectl_last_check_timestamp_seconds",
		"Time of the last drift check.", nil, nil)
	descApplies = prometheus.NewDesc("rocectl_applies_total",
		"Applies by the agent, by result.", []string{"result"}, nil)
	descLastApply = prometheus.NewDesc("rocectl_last_apply_result",
		"Result of the agent's last apply: 1 on that result, 0 on the others (all 0 before the first).", []string{"result"}, nil)
	descLastApplyTime = prometheus.NewDesc("rocectl_last_apply_timestamp_seconds",
		"Time the agent's last apply ended (absent before the first).", nil, nil)
	descGuardState = prometheus.NewDesc("rocectl_guard_state",
		"The pause-storm guard: 1 on its state, 0 on the others. soaking: an apply is being verified and watched; "+
			"tripped: the last apply's guard found a storm and rolled back; idle otherwise.", []string{"state"}, nil)
	descGuardStorms = prometheus.NewDesc("rocectl_guard_storms_total",
		"Pause storms the guard found after an apply of the agent (each rolled the apply back).", []string{"device"}, nil)
	descPollTime = prometheus.NewDesc("rocectl_stats_last_poll_timestamp_seconds",
		"Time of the last poll of the NIC statistics the NIC series come from.", nil, nil)
	descPollErrors = prometheus.NewDesc("rocectl_stats_read_errors_total",
		"Polls that could not read the port's ethtool statistics.", []string{"device"}, nil)
	descBadReads = prometheus.NewDesc("rocectl_stats_bad_reads_total",
		"NIC or RDMA counter readings of the port that fell below the one before and were back at the next poll: a bad read, not a reset; the totals skip it.", []string{"device"}, nil)
	descPauseRatio = prometheus.NewDesc("rocectl_pause_time_ratio",
		"Share of the last counter poll's interval the port was paused, per priority (\"global\" for 802.3x pause) and direction (rx: received, the partner paused us; tx: sent): the pause-time counters' delta over the interval.",
		[]string{"device", "priority", "direction"}, nil)
	descThrottled = prometheus.NewDesc("rocectl_throttled_no_drops",
		"1 when, over the last counter poll's interval, a priority (or global pause) of the port was paused at least 10 % of the time while every discard counter it has stayed flat: slow with nothing lost. 0 when not; absent when the port has no discard counter to judge by.",
		[]string{"device"}, nil)
	descBondSlave = prometheus.NewDesc("rocectl_bond_slave_info",
		"A physical port (device) under a RoCE LAG bond (bond); always 1.", []string{"bond", "device"}, nil)
)

var (
	applyResults = []string{"applied", "failed", "rolled_back"}
	guardStates  = []string{"idle", "soaking", "tripped"}
)

// collector serves the daemon's state and the last counter poll.
type collector struct {
	st    *state
	ctrs  *counters
	build [3]string
}

var _ prometheus.Collector = (*collector)(nil)

func newCollector(st *state, ctrs *counters, version, revision string) *collector {
	return &collector{st: st, ctrs: ctrs, build: buildInfo(version, revision)}
}

// buildInfo returns version, revision and Go version. The revision is the
// one the build was given (the Makefile's -X cli.Revision, what
// `rocectl-agent --version` prints), else the VCS revision the go command
// stamped into the binary ("unknown" when it built without VCS
// information: -buildvcs=false, or -trimpath from a linked worktree).
func buildInfo(version, revision string) [3]string {
	if version == "" {
		version = "dev"
	}
	if revision != "" {
		return [3]string{version, revision, runtime.Version()}
	}
	rev := "unknown"
	if bi, ok := debug.ReadBuildInfo(); ok {
		dirty := false
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				rev = s.Value
			case "vcs.modified":
				dirty = s.Value == "true"
			}
		}
		if dirty && rev != "unknown" {
			rev += "-dirty"
		}
	}
	return [3]string{version, rev, runtime.Version()}
}

func (c *collector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range stormDescs {
		ch <- d
	}
	for _, d := range []*prometheus.Desc{descBuildInfo, descDrift, descUnknown, descFWPending, descUnsupported, descCheckSuccess, descCheckTime,
		descApplies, descLastApply, descLastApplyTime, descGuardState, descGuardStorms, descPollTime, descPollErrors, descBadReads, descBondSlave,
		descPauseRatio, descThrottled} {
		ch <- d
	}
	seen := map[*family]bool{}
	for _, s := range counterTable {
		if !seen[s.fam] {
			seen[s.fam] = true
			ch <- s.fam.desc
			if s.fam.bond != nil {
				ch <- s.fam.bond
			}
		}
	}
}

func (c *collector) Collect(ch chan<- prometheus.Metric) {
	gauge := func(d *prometheus.Desc, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, labels...)
	}
	b := c.build
	gauge(descBuildInfo, 1, b[0], b[1], b[2])
	c.collectState(gauge, ch)
	if c.ctrs != nil {
		c.collectCounters(gauge, ch)
	}
}

func (c *collector) collectState(gauge func(*prometheus.Desc, float64, ...string), ch chan<- prometheus.Metric) {
	st := c.st
	st.mu.Lock()
	defer st.mu.Unlock()
	for _, g := range st.driftGroups {
		if g.read > 0 {
			// Only a group with a setting that was read has a drift
			// count; 0 for one whose settings are all unknown would read
			// as in sync.
			gauge(descDrift, float64(g.n), st.profile, g.device, g.kind)
		}
		// Present only where something is unknown: the drift series are
		// the zero baseline an alert watches.
		if g.notCaptured > 0 {
			gauge(descUnknown, float64(g.notCaptured), st.profile, g.device, g.kind, "not_captured")
		}
		if g.unreadable > 0 {
			gauge(descUnknown, float64(g.unreadable), st.profile, g.device, g.kind, "unreadable")
		}
	}
	for dev, n := range st.fwPending {
		gauge(descFWPending, float64(n), st.profile, dev)
	}
	gauge(descUnsupported, float64(st.unsupported), st.profile)
	gauge(descCheckSuccess, boolFloat(st.lastOK))
	if !st.lastCheck.IsZero() {
		gauge(descCheckTime, unixSeconds(st.lastCheck))
	}
	for _, r := range applyResults {
		ch <- prometheus.MustNewConstMetric(descApplies, prometheus.CounterValue, float64(st.applies[r]), r)
		gauge(descLastApply, boolFloat(st.lastApply == r), r)
	}
	if !st.lastApplyAt.IsZero() {
		gauge(descLastApplyTime, unixSeconds(st.lastApplyAt))
	}
	guard := st.guard
	if guard == "" {
		guard = "idle"
	}
	for _, s := range guardStates {
		gauge(descGuardState, boolFloat(guard == s), s)
	}
	for _, p := range st.ports {
		if p.IsBond() {
			continue // the guard watches the slaves
		}
		ch <- prometheus.MustNewConstMetric(descGuardStorms, prometheus.CounterValue, float64(st.storms[p.Name()]), p.Netdev)
		if st.storm != nil {
			st.storm.collect(ch, p.Name(), p.Netdev)
		}
		if p.Bond != "" {
			gauge(descBondSlave, 1, p.Bond, p.Netdev)
		}
	}
}

func (c *collector) collectCounters(gauge func(*prometheus.Desc, float64, ...string), ch chan<- prometheus.Metric) {
	ct := c.ctrs
	ct.mu.Lock()
	defer ct.mu.Unlock()
	if ct.lastPoll.IsZero() {
		return
	}
	gauge(descPollTime, unixSeconds(ct.lastPoll))
	labels := make([]string, 0, 6)
	for _, p := range ct.ports {
		if p.IsBond() {
			ct.collectBond(ch, p.Netdev)
		} else {
			ch <- prometheus.MustNewConstMetric(descPollErrors, prometheus.CounterValue, float64(ct.pollErrors[p.Netdev]), p.Netdev)
		}
		ch <- prometheus.MustNewConstMetric(descBadReads, prometheus.CounterValue, float64(ct.badReads[p.Netdev]), p.Netdev)
		if th, ok := ct.throttled[p.Netdev]; ok {
			gauge(descThrottled, boolFloat(th), p.Netdev)
		}
		for i, s := range counterTable {
			t := ct.totals[counterKey{i, p.Netdev}]
			if t == nil {
				continue
			}
			labels = append(labels[:0], p.Netdev)
			if s.rdma {
				labels = append(labels, p.RDMADevice, strconv.Itoa(p.PortNum))
			}
			labels = append(labels, s.labels...)
			ch <- prometheus.MustNewConstMetric(s.fam.desc, prometheus.CounterValue, float64(t.total)/s.fam.per, labels...)
			if occ, ok := ct.occ[counterKey{i, p.Netdev}]; ok {
				prio := "global"
				if s.fam == famPFCPauseSeconds {
					prio = s.labels[0]
				}
				gauge(descPauseRatio, occ, p.Netdev, prio, s.labels[len(s.labels)-1])
			}
		}
	}
}

// collectBond serves a bond's NIC series: per series, the sum of its
// slaves' totals, where at least one slave has the counter. A slave that
// leaves the bond takes its share with it (a drop Prometheus reads as a
// reset). The caller holds c.mu.
func (c *counters) collectBond(ch chan<- prometheus.Metric, bond string) {
	labels := make([]string, 0, 3)
	for i, s := range counterTable {
		if s.rdma {
			continue
		}
		var sum uint64
		found := false
		for _, p := range c.ports {
			if t := c.totals[counterKey{i, p.Netdev}]; t != nil && p.Bond == bond {
				sum += t.total
				found = true
			}
		}
		if !found {
			continue
		}
		labels = append(append(labels[:0], bond), s.labels...)
		ch <- prometheus.MustNewConstMetric(s.fam.bond, prometheus.CounterValue, float64(sum)/s.fam.per, labels...)
	}
}

func boolFloat(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

func unixSeconds(t time.Time) float64 { return float64(t.UnixNano()) / 1e9 }
