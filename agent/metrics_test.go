package agent

import (
	"bytes"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/testutil"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"

	"github.com/rocectl/rocectl/apply"
	"github.com/rocectl/rocectl/host"
	"github.com/rocectl/rocectl/internal/testkit/fakemst"
	"github.com/rocectl/rocectl/internal/testkit/fixturehost"
	"github.com/rocectl/rocectl/nic"
	"github.com/rocectl/rocectl/nic/nictest"
	"github.com/rocectl/rocectl/nic/snapshot"
	"github.com/rocectl/rocectl/policy"
)

var update = flag.Bool("update", false, "rewrite testdata/metrics/*.prom from what the collector serves")

// simHost is the captured ConnectX-6 Dx factory host (ens1f0np0/mlx5_0,
// ens1f1np1/mlx5_1) on a simulated kernel, with its tree in a temporary
// root.
func simHost(t *testing.T) (*host.Host, *nictest.Sim, string) {
	t.Helper()
	root, sim := fixturehost.Copy(t, "cx6dx-ofed-factory")
	return &host.Host{FS: nic.NewFS(root, false), K: sim}, sim, root
}

var simPorts = []portRef{{Netdev: "ens1f0np0", RDMADevice: "mlx5_0", PortNum: 1}, {Netdev: "ens1f1np1", RDMADevice: "mlx5_1", PortNum: 1}}

// setHWCounter writes an RDMA port counter in the fixture root, as the
// driver's sysfs attribute would show it.
func setHWCounter(t *testing.T, root, dev, name string, v uint64) {
	t.Helper()
	p := filepath.Join(root, fmt.Sprintf("/sys/class/infiniband/%s/ports/%d/hw_counters/%s", dev, 1, name))
	if err := os.WriteFile(p, []byte(fmt.Sprintf("%d\n", v)), 0o644); err != nil {
		t.Fatal(err)
	}
}

// exposition returns the text format of what c serves.
func exposition(t *testing.T, cs ...prometheus.Collector) []byte {
	t.Helper()
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(cs...)
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	enc := expfmt.NewEncoder(&b, expfmt.NewFormat(expfmt.TypeTextPlain))
	for _, mf := range mfs {
		if err := enc.Encode(mf); err != nil {
			t.Fatal(err)
		}
	}
	return b.Bytes()
}

// The whole exposition of a scripted host, against a golden file: every
// name, label and value, pause durations in seconds, global pause and the
// RDMA congestion counters included. Build info varies with the toolchain
// and is checked on its own.
func TestExpositionGolden(t *testing.T) {
	h, sim, root := simHost(t)
	for name, v := range map[string]uint64{
		"rx_prio3_pause": 120, "rx_prio3_pause_duration": 2_500_000, // 2.5 s
		"tx_prio3_pause": 7, "tx_prio3_pause_duration": 250,
		"tx_global_pause": 4, "tx_global_pause_duration": 1500,
		"tx_pause_storm_warning_events": 2, "rx_discards_phy": 9, "rx_prio3_buf_discard": 5,
	} {
		sim.SetStat("ens1f0np0", name, v)
	}
	setHWCounter(t, root, "mlx5_0", "np_cnp_sent", 1000)
	setHWCounter(t, root, "mlx5_0", "rp_cnp_handled", 900)
	setHWCounter(t, root, "mlx5_0", "np_ecn_marked_roce_packets", 1100)

	p, err := policy.Load(profile("connectx-lossless.toml"), policy.LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	pr := apply.Prepare(h, p, false)
	at := time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)
	st := &state{profile: p.Name, lastCheck: at, lastOK: true, driftGroups: driftGroups(pr), unsupported: len(pr.Plan.Unsupported),
		applies: map[string]int{"applied": 2, "rolled_back": 1}, lastApply: "rolled_back", lastApplyAt: at.Add(-time.Minute),
		guard: "tripped", storms: map[string]int{"ens1f0np0": 1}, ports: simPorts}
	ctrs := newCounters(h, discardLog())
	ctrs.poll(simPorts, at.Add(time.Second))

	got := exposition(t, newCollector(st, ctrs, "v1.2.3", ""))
	got = dropFamily(got, "rocectl_build_info")
	checkGolden(t, got, "cx6dx-ofed-factory.prom")
	for _, line := range []string{
		`rocectl_pfc_pause_seconds_total{device="ens1f0np0",direction="rx",priority="3"} 2.5`,
		`rocectl_global_pause_seconds_total{device="ens1f0np0",direction="tx"} 0.0015`,
		`rocectl_cnp_sent_total{device="ens1f0np0",port="1",rdma_device="mlx5_0"} 1000`,
		`rocectl_drift_settings{device="ens1f0np0",kind="pfc",profile="connectx-lossless"} 1`,
	} {
		if !bytes.Contains(got, []byte(line+"\n")) {
			t.Errorf("exposition lacks %s", line)
		}
	}

	var bi bytes.Buffer
	for _, l := range strings.Split(string(exposition(t, newCollector(st, ctrs, "v1.2.3", ""))), "\n") {
		if strings.HasPrefix(l, "rocectl_build_info{") {
			bi.WriteString(l)
		}
	}
	if want := `goversion="go`; !strings.Contains(bi.String(), want) || !strings.Contains(bi.String(), `version="v1.2.3"`) ||
		!strings.Contains(bi.String(), `revision="`) || !strings.HasSuffix(bi.String(), "} 1") {
		t.Errorf("build info %q", bi.String())
	}
}

// checkGolden compares an exposition with testdata/metrics/<name>; -update
// rewrites the file.
func checkGolden(t *testing.T, got []byte, name string) {
	t.Helper()
	golden := filepath.Join("testdata", "metrics", name)
	if *update {
		if err := os.WriteFile(golden, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("exposition differs from %s (go test -update rewrites it):\n%s", golden, lineDiff(string(want), string(got)))
	}
}

// A RoCE LAG host (bond0 over ens1f0np0 + ens1f1np1, RDMA device
// mlx5_bond_0): the NIC series per slave, their sums per bond under
// rocectl_bond_*, the RDMA series on the bond, the guard's storms per
// slave, and nothing read from the bond's (absent) ethtool statistics.
func TestExpositionGoldenLAG(t *testing.T) {
	root, sim := fixturehost.Copy(t, "cx5-roce-lag")
	h := &host.Host{FS: nic.NewFS(root, false), K: sim}
	for nd, us := range map[string]uint64{"ens1f0np0": 1_500_000, "ens1f1np1": 250_000} {
		sim.SetStat(nd, "rx_prio3_pause_duration", us)
		sim.SetStat(nd, "rx_prio3_pause", us/100)
	}
	sim.SetStat("ens1f1np1", "tx_pause_storm_warning_events", 1)
	setHWCounter(t, root, "mlx5_bond_0", "np_cnp_sent", 500)

	p, err := policy.Load(profile("connectx-lossless.toml"), policy.LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	pr := apply.Prepare(h, p, false)
	ports := portRefsOf(pr.Desired.Ports)
	want := []portRef{{Netdev: "bond0", RDMADevice: "mlx5_bond_0", PortNum: 1, Slaves: []string{"ens1f0np0", "ens1f1np1"}},
		{Netdev: "ens1f0np0", Bond: "bond0"}, {Netdev: "ens1f1np1", Bond: "bond0"}}
	if !samePorts(ports, want) {
		t.Fatalf("ports %+v, want %+v", ports, want)
	}
	at := time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)
	st := &state{profile: p.Name, lastCheck: at, lastOK: true, driftGroups: driftGroups(pr), unsupported: len(pr.Plan.Unsupported),
		applies: map[string]int{"applied": 1, "rolled_back": 1}, lastApply: "rolled_back", lastApplyAt: at.Add(-time.Minute),
		guard: "tripped", storms: map[string]int{"bond0/ens1f1np1": 1}, ports: ports}
	ctrs := newCounters(h, discardLog())
	ctrs.poll(ports, at.Add(time.Second))
	// The next poll: ens1f0np0 paused another half second.
	sim.AddStat("ens1f0np0", "rx_prio3_pause_duration", 500_000)
	ctrs.poll(ports, at.Add(2*time.Second))

	c := newCollector(st, ctrs, "v1.2.3", "")
	got := dropFamily(exposition(t, c), "rocectl_build_info")
	checkGolden(t, got, "cx5-roce-lag.prom")
	for _, line := range []string{
		`rocectl_pfc_pause_seconds_total{device="ens1f0np0",direction="rx",priority="3"} 2`,
		`rocectl_pfc_pause_seconds_total{device="ens1f1np1",direction="rx",priority="3"} 0.25`,
		`rocectl_bond_pfc_pause_seconds_total{device="bond0",direction="rx",priority="3"} 2.25`,
		`rocectl_bond_pfc_pause_frames_total{device="bond0",direction="rx",priority="3"} 17500`,
		`rocectl_bond_pfc_storm_events_total{device="bond0",severity="warning"} 1`,
		`rocectl_cnp_sent_total{device="bond0",port="1",rdma_device="mlx5_bond_0"} 500`,
		`rocectl_guard_storms_total{device="ens1f1np1"} 1`,
		`rocectl_guard_storms_total{device="ens1f0np0"} 0`,
		`rocectl_bond_slave_info{bond="bond0",device="ens1f0np0"} 1`,
		`rocectl_bond_slave_info{bond="bond0",device="ens1f1np1"} 1`,
	} {
		if !bytes.Contains(got, []byte(line+"\n")) {
			t.Errorf("exposition lacks %s", line)
		}
	}
	for _, bad := range []string{`rocectl_stats_read_errors_total{device="bond0"}`, `rocectl_guard_storms_total{device="bond0"}`,
		`rocectl_pfc_pause_seconds_total{device="bond0"`, `rocectl_cnp_sent_total{device="ens1f0np0"`} {
		if bytes.Contains(got, []byte(bad)) {
			t.Errorf("exposition has %s", bad)
		}
	}
	problems, err := testutil.CollectAndLint(c)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range problems {
		t.Errorf("promlint: %s: %s", p.Metric, p.Text)
	}
}

// A setting whose value the host source does not hold (a snapshot that
// did not capture ens1f0np0's pause) or could not read (its storm tunable
// refused with EPERM) is exported as unknown, by reason, never as in sync:
// its drift series is absent, not 0, where none of the kind's settings was
// read. The same kinds on ens1f1np1, read in full, keep their drift series.
func TestExpositionUnknown(t *testing.T) {
	s, err := snapshot.Open(fixturehost.Dir("cx6dx-ofed-factory"))
	if err != nil {
		t.Fatal(err)
	}
	st := s.State()
	ls := st.Links["ens1f0np0"]
	ls.Pause, ls.PFCPreventionTimeout = nil, nil
	ls.NotCaptured = []string{snapshot.OpPause}
	if ls.Errors == nil {
		ls.Errors = map[string]string{}
	}
	ls.Errors[snapshot.OpTunable] = "EPERM"
	dir := filepath.Join(t.TempDir(), "snap")
	if err := snapshot.Write(dir, s.Meta, st, s.FS(), []string{"/sys"}); err != nil {
		t.Fatal(err)
	}
	if s, err = snapshot.Open(dir); err != nil {
		t.Fatal(err)
	}
	h := &host.Host{FS: s.FS(), K: s.Kernel(), NotCaptured: s.Meta.NotCaptured}
	p, err := policy.Load(profile("connectx-lossless.toml"), policy.LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	pr := apply.Prepare(h, p, false)
	if len(pr.Plan.Unknown) != 1 || len(pr.Plan.Errors) != 1 {
		t.Fatalf("plan: unknown %v, errors %v; want one of each", pr.Plan.Unknown, pr.Plan.Errors)
	}
	at := time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)
	state := &state{profile: p.Name, lastCheck: at, lastOK: true, driftGroups: driftGroups(pr), unsupported: len(pr.Plan.Unsupported),
		applies: map[string]int{}, storms: map[string]int{}, ports: simPorts}
	got := exposition(t, newCollector(state, nil, "v1.2.3", ""))
	got = dropFamily(got, "rocectl_build_info")
	checkGolden(t, got, "cx6dx-partial-snapshot.prom")
	for _, line := range []string{
		`rocectl_unknown_settings{device="ens1f0np0",kind="global_pause",profile="connectx-lossless",reason="not_captured"} 1`,
		`rocectl_unknown_settings{device="ens1f0np0",kind="pfc_storm_prevention",profile="connectx-lossless",reason="unreadable"} 1`,
		`rocectl_drift_settings{device="ens1f1np1",kind="global_pause",profile="connectx-lossless"} 1`,
		`rocectl_drift_settings{device="ens1f1np1",kind="pfc_storm_prevention",profile="connectx-lossless"} 1`,
	} {
		if !bytes.Contains(got, []byte(line+"\n")) {
			t.Errorf("exposition lacks %s", line)
		}
	}
	for _, absent := range []string{
		`rocectl_drift_settings{device="ens1f0np0",kind="global_pause",`,
		`rocectl_drift_settings{device="ens1f0np0",kind="pfc_storm_prevention",`,
		`rocectl_unknown_settings{device="ens1f1np1",`,
	} {
		if bytes.Contains(got, []byte(absent)) {
			t.Errorf("exposition has %s… (an unknown read as in sync or drift, or a known one as unknown)", absent)
		}
	}
}

// promlint (what `promtool check metrics` runs) finds nothing in the
// daemon's metrics; promtool itself, where installed, checks the full
// exposition with the Go and process collectors.
func TestExpositionLint(t *testing.T) {
	h, sim, _ := simHost(t)
	sim.SetStat("ens1f0np0", "rx_prio3_pause_duration", 10)
	st := &state{profile: "p", applies: map[string]int{}, storms: map[string]int{}, ports: simPorts,
		driftGroups: []driftGroup{{device: "ens1f0np0", kind: "pfc", n: 1, read: 1}, {device: "", kind: "nccl", read: 0, notCaptured: 2}}}
	ctrs := newCounters(h, discardLog())
	ctrs.poll(simPorts, time.Now())
	c := newCollector(st, ctrs, "dev", "")
	problems, err := testutil.CollectAndLint(c)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range problems {
		t.Errorf("promlint: %s: %s", p.Metric, p.Text)
	}

	promtool, err := exec.LookPath("promtool")
	if err != nil {
		t.Skip("promtool not installed (Debian: apt-get install prometheus; `make deps` installs it): promlint checked the rocectl_ series only")
	}
	text := exposition(t, c, collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	cmd := exec.Command(promtool, "check", "metrics")
	cmd.Stdin = bytes.NewReader(text)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("promtool check metrics: %v\n%s", err, out)
	}
}

// The totals stay monotonic where the driver's counters are not: a
// counter that vanishes while PFC is off on its priority keeps its total
// and continues from its last raw value; a reset (driver reload) adds what
// was counted since, once the next poll shows it was one; a port gone from
// the list loses its series.
func TestCounterTotals(t *testing.T) {
	h, sim, root := simHost(t)
	ctrs := newCounters(h, discardLog())
	c := newCollector(&state{applies: map[string]int{}, storms: map[string]int{}}, ctrs, "dev", "")
	pause := map[string]string{"device": "ens1f0np0", "priority": "3", "direction": "rx"}
	cnp := map[string]string{"device": "ens1f0np0", "rdma_device": "mlx5_0", "port": "1"}
	steps := []struct {
		what  string
		do    func()
		ports []portRef
		pause float64 // seconds; -1: no series
		cnp   float64
	}{
		{"first poll starts at the driver's count", func() {
			sim.SetStat("ens1f0np0", "rx_prio3_pause_duration", 1_000_000)
			setHWCounter(t, root, "mlx5_0", "np_cnp_sent", 10)
		}, simPorts, 1, 10},
		{"growth", func() {
			sim.SetStat("ens1f0np0", "rx_prio3_pause_duration", 3_000_000)
			setHWCounter(t, root, "mlx5_0", "np_cnp_sent", 25)
		}, simPorts, 3, 25},
		{"PFC off on priority 3: the counter is gone", func() { sim.DelStat("ens1f0np0", "rx_prio3_pause_duration") }, simPorts, 3, 25},
		{"PFC back on: the counter continues", func() { sim.SetStat("ens1f0np0", "rx_prio3_pause_duration", 3_500_000) }, simPorts, 3.5, 25},
		{"driver reload: counters restart, held until the next poll tells a reset from a bad read", func() {
			sim.SetStat("ens1f0np0", "rx_prio3_pause_duration", 200_000)
			setHWCounter(t, root, "mlx5_0", "np_cnp_sent", 5)
		}, simPorts, 3.5, 25},
		{"still below: a reset, and what was counted since it is added", func() {
			sim.SetStat("ens1f0np0", "rx_prio3_pause_duration", 300_000)
			setHWCounter(t, root, "mlx5_0", "np_cnp_sent", 8)
		}, simPorts, 3.8, 33},
		{"port gone", func() {}, simPorts[1:], -1, -1},
	}
	at := time.Now()
	for _, s := range steps {
		s.do()
		at = at.Add(time.Second)
		ctrs.poll(s.ports, at)
		if got := value(t, c, "rocectl_pfc_pause_seconds_total", pause); got != s.pause {
			t.Errorf("%s: pause seconds %v, want %v", s.what, got, s.pause)
		}
		if got := value(t, c, "rocectl_cnp_sent_total", cnp); got != s.cnp {
			t.Errorf("%s: CNPs sent %v, want %v", s.what, got, s.cnp)
		}
	}
}

// A counter that dips for one poll and comes back is a bad read: the
// total grows by the true increase, not by the dip's difference as well,
// and the bad read is counted.
func TestCounterTotalsDipAndReturn(t *testing.T) {
	h, sim, root := simHost(t)
	ctrs := newCounters(h, discardLog())
	c := newCollector(&state{applies: map[string]int{}, storms: map[string]int{}}, ctrs, "dev", "")
	pause := map[string]string{"device": "ens1f0np0", "priority": "3", "direction": "rx"}
	cnp := map[string]string{"device": "ens1f0np0", "rdma_device": "mlx5_0", "port": "1"}
	dev := map[string]string{"device": "ens1f0np0"}
	at := time.Now()
	for _, s := range []struct {
		what       string
		dur, cnps  uint64
		pause, cnp float64
		bad        float64
	}{
		{"start", 1_000_000, 10, 1, 10, 0},
		{"growth", 3_000_000, 25, 3, 25, 0},
		{"dip", 100_000, 2, 3, 25, 0},
		{"back, a little higher", 3_200_000, 27, 3.2, 27, 2},
		{"growth", 3_400_000, 30, 3.4, 30, 2},
	} {
		sim.SetStat("ens1f0np0", "rx_prio3_pause_duration", s.dur)
		setHWCounter(t, root, "mlx5_0", "np_cnp_sent", s.cnps)
		at = at.Add(time.Second)
		ctrs.poll(simPorts, at)
		if got := value(t, c, "rocectl_pfc_pause_seconds_total", pause); got != s.pause {
			t.Errorf("%s: pause seconds %v, want %v", s.what, got, s.pause)
		}
		if got := value(t, c, "rocectl_cnp_sent_total", cnp); got != s.cnp {
			t.Errorf("%s: CNPs sent %v, want %v", s.what, got, s.cnp)
		}
		if got := value(t, c, "rocectl_stats_bad_reads_total", dev); got != s.bad {
			t.Errorf("%s: bad reads %v, want %v", s.what, got, s.bad)
		}
	}
}

// bnxt_en and bnxt_re name the same counters differently; the series are
// the same.
func TestCounterTotalsBnxt(t *testing.T) {
	root, sim := fixturehost.Copy(t, "bnxt-re-factory")
	h := &host.Host{FS: nic.NewFS(root, false), K: sim}
	p := h.Ports(h.Discover(), false)
	if len(p) == 0 {
		t.Fatal("no ports discovered on bnxt-re-factory")
	}
	port := portRef{Netdev: p[0].Netdev, RDMADevice: p[0].RDMADevice, PortNum: p[0].PortNum}
	sim.SetStat(port.Netdev, "pfc_pri3_tx_duration_us", 750_000)
	sim.SetStat(port.Netdev, "tx_pfc_ena_frames_pri3", 42)
	sim.SetStat(port.Netdev, "rx_pause_frames", 3)
	// bnxt_re's names for the CNP and the transport loss counters
	// (hw_counters.c).
	for name, v := range map[string]string{"rx_cnp_pkts": "77", "oos_drop_count": "5", "seq_err_naks_rcvd": "6", "to_retransmits": "7", "rx_out_of_buffer": "8"} {
		if err := os.WriteFile(filepath.Join(root, fmt.Sprintf("/sys/class/infiniband/%s/ports/%d/hw_counters/%s", port.RDMADevice, port.PortNum, name)), []byte(v+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	ctrs := newCounters(h, discardLog())
	ctrs.poll([]portRef{port}, time.Now())
	c := newCollector(&state{applies: map[string]int{}, storms: map[string]int{}}, ctrs, "dev", "")
	for _, w := range []struct {
		name   string
		labels map[string]string
		want   float64
	}{
		{"rocectl_pfc_pause_seconds_total", map[string]string{"device": port.Netdev, "priority": "3", "direction": "tx"}, 0.75},
		{"rocectl_pfc_pause_frames_total", map[string]string{"device": port.Netdev, "priority": "3", "direction": "tx"}, 42},
		{"rocectl_global_pause_frames_total", map[string]string{"device": port.Netdev, "direction": "rx"}, 3},
		{"rocectl_cnp_handled_total", map[string]string{"device": port.Netdev, "rdma_device": port.RDMADevice, "port": "1"}, 77},
		{"rocectl_rdma_out_of_sequence_packets_total", map[string]string{"device": port.Netdev, "rdma_device": port.RDMADevice, "port": "1"}, 5},
		{"rocectl_rdma_sequence_error_naks_total", map[string]string{"device": port.Netdev, "rdma_device": port.RDMADevice, "port": "1"}, 6},
		{"rocectl_rdma_ack_timeouts_total", map[string]string{"device": port.Netdev, "rdma_device": port.RDMADevice, "port": "1"}, 7},
		{"rocectl_rdma_out_of_buffer_drops_total", map[string]string{"device": port.Netdev, "rdma_device": port.RDMADevice, "port": "1"}, 8},
	} {
		if got := value(t, c, w.name, w.labels); got != w.want {
			t.Errorf("%s%v = %v, want %v", w.name, w.labels, got, w.want)
		}
	}
}

// value is the series' value, or -1 when c does not serve it.
func value(t *testing.T, c prometheus.Collector, name string, labels map[string]string) float64 {
	t.Helper()
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(c)
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
	next:
		for _, m := range mf.GetMetric() {
			if len(m.GetLabel()) != len(labels) {
				continue
			}
			for _, l := range m.GetLabel() {
				if labels[l.GetName()] != l.GetValue() {
					continue next
				}
			}
			return metricValue(m)
		}
	}
	return -1
}

func metricValue(m *dto.Metric) float64 {
	if c := m.GetCounter(); c != nil {
		return c.GetValue()
	}
	return m.GetGauge().GetValue()
}

// dropFamily removes a metric family (HELP, TYPE, samples) from a text
// exposition.
func dropFamily(text []byte, name string) []byte {
	var out []string
	for _, l := range strings.SplitAfter(string(text), "\n") {
		if strings.HasPrefix(l, name+"{") || strings.HasPrefix(l, name+" ") ||
			strings.HasPrefix(l, "# HELP "+name+" ") || strings.HasPrefix(l, "# TYPE "+name+" ") {
			continue
		}
		out = append(out, l)
	}
	return []byte(strings.Join(out, ""))
}

// lineDiff lists the lines only one side has.
func lineDiff(want, got string) string {
	w, g := map[string]bool{}, map[string]bool{}
	for _, l := range strings.Split(want, "\n") {
		w[l] = true
	}
	for _, l := range strings.Split(got, "\n") {
		g[l] = true
	}
	var b strings.Builder
	for _, l := range strings.Split(want, "\n") {
		if !g[l] {
			fmt.Fprintf(&b, "- %s\n", l)
		}
	}
	for _, l := range strings.Split(got, "\n") {
		if !w[l] {
			fmt.Fprintf(&b, "+ %s\n", l)
		}
	}
	return b.String()
}

func discardLog() *slog.Logger { return slog.New(slog.DiscardHandler) }

// One poll of the two-port fixture host: bench/agent-footprint.sh runs
// four of them (8 ports) every 200 ms.
func BenchmarkPoll(b *testing.B) {
	root, sim := fixturehost.Copy(b, "cx6dx-ofed-factory")
	ctrs := newCounters(&host.Host{FS: nic.NewFS(root, true), K: sim}, discardLog())
	// With the storm machine, as the agent polls.
	ctrs.storm = newStorms(policy.GuardSpec{Poll: 200 * time.Millisecond, DetectionTime: 200 * time.Millisecond, MaxPauseOccupancy: 0.99})
	now := time.Now()
	b.ReportAllocs()
	for b.Loop() {
		now = now.Add(time.Second)
		ctrs.poll(simPorts, now)
	}
}

// rocectl_build_info carries the revision the build was given (make
// build's and the package's -X cli.Revision, what rocectl-agent
// --version prints), not "unknown" where Go stamped none.
func TestBuildInfoRevision(t *testing.T) {
	if got := buildInfo("v1.2.3", "0123abcd"); got[0] != "v1.2.3" || got[1] != "0123abcd" {
		t.Errorf("with a revision given: %v", got)
	}
	if got := buildInfo("", ""); got[0] != "dev" || got[1] == "" {
		t.Errorf("without: %v", got)
	}
	st := &state{applies: map[string]int{}, storms: map[string]int{}}
	exp := string(exposition(t, newCollector(st, nil, "v1.2.3", "0123abcd")))
	if !strings.Contains(exp, `rocectl_build_info{goversion="`) || !strings.Contains(exp, `revision="0123abcd"`) {
		t.Errorf("exposition lacks the revision:\n%s", exp)
	}
}

// A host whose firmware holds the profile's CC mask for the next boot only
// (one port) has a pending firmware setting on that port: the series says
// so per device, and a port without any has none; the pending setting is
// not drift.
func TestExpositionFirmwarePending(t *testing.T) {
	s, err := snapshot.Open(fixturehost.Dir("cx6dx-ofed-factory"))
	if err != nil {
		t.Fatal(err)
	}
	p := func(name string, cur, next uint64) *fakemst.Param {
		return &fakemst.Param{Name: name, Default: 255, Current: cur, Next: next}
	}
	fw := &fakemst.State{Devices: map[string]*fakemst.Device{"0000:3b:00.0": {Type: "ConnectX6DX", Params: []*fakemst.Param{
		p("ROCE_CC_PRIO_MASK_P1", 255, 8), p("ROCE_CC_PRIO_MASK_P2", 8, 8)}}},
		Alias: map[string]string{"0000:3b:00.1": "0000:3b:00.0"}}
	st := s.State()
	st.Firmware = map[string]string{"0000:3b:00.0": fw.QueryOutput("0000:3b:00.0"), "0000:3b:00.1": fw.QueryOutput("0000:3b:00.1")}
	dir := filepath.Join(t.TempDir(), "snap")
	if err := snapshot.Write(dir, s.Meta, st, s.FS(), []string{"/sys"}); err != nil {
		t.Fatal(err)
	}
	if s, err = snapshot.Open(dir); err != nil {
		t.Fatal(err)
	}
	prof := filepath.Join(t.TempDir(), "fw.toml")
	if err := os.WriteFile(prof, []byte("name = \"fw\"\n[match]\ndrivers = [\"mlx5_core\"]\n[firmware]\ncc_priorities = [3]\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	pol, err := policy.Load(prof, policy.LoadOptions{AllowInsecure: true})
	if err != nil {
		t.Fatal(err)
	}
	pr := apply.Prepare(&host.Host{FS: s.FS(), K: s.Kernel(), FW: s.Firmware(), NotCaptured: s.Meta.NotCaptured}, pol, false)
	state := &state{profile: pol.Name, lastOK: true, driftGroups: driftGroups(pr), fwPending: firmwarePending(pr),
		applies: map[string]int{}, storms: map[string]int{}, ports: simPorts}
	got := exposition(t, newCollector(state, nil, "v1.2.3", ""))
	for _, line := range []string{
		`rocectl_firmware_pending_settings{device="ens1f0np0",profile="fw"} 1`,
		`rocectl_drift_settings{device="ens1f0np0",kind="firmware",profile="fw"} 0`,
		`rocectl_drift_settings{device="ens1f1np1",kind="firmware",profile="fw"} 0`,
	} {
		if !bytes.Contains(got, []byte(line+"\n")) {
			t.Errorf("exposition lacks %s\n%s", line, got)
		}
	}
	if bytes.Contains(got, []byte(`rocectl_firmware_pending_settings{device="ens1f1np1"`)) {
		t.Errorf("a port without pending settings has the series")
	}
}
