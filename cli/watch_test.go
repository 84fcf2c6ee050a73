package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rocectl/rocectl/host"
	"github.com/rocectl/rocectl/internal/testkit/fixturehost"
	"github.com/rocectl/rocectl/nic"
	"github.com/rocectl/rocectl/nic/nictest"
	"github.com/rocectl/rocectl/verify"
)

// watchT0 is the scripted clock's start; UTC, so that the head line's
// clock time does not depend on the machine's zone.
var watchT0 = time.Date(2025, 3, 4, 5, 6, 7, 0, time.UTC)

// watchSim is a fixture host on a simulated kernel, its tree in a
// temporary root, with the sampler the command builds over the ports
// discovery finds, its clock set by the test.
type watchSim struct {
	t    *testing.T
	sim  *nictest.Sim
	root string
	s    *verify.Sampler
	now  time.Time
}

func newSim(t *testing.T, fixture string, nports int) *watchSim {
	root, sim := fixturehost.Copy(t, fixture)
	h := &host.Host{FS: nic.NewFS(root, false), K: sim}
	w := &watchSim{t: t, sim: sim, root: root, now: watchT0}
	ports := h.Discover().Ports
	if len(ports) != nports {
		t.Fatalf("fixture ports: %+v", ports)
	}
	w.s = &verify.Sampler{K: h.K, FS: &h.FS, Sources: verify.Sources(ports), Link: true, Now: func() time.Time { return w.now }}
	return w
}

// newWatchSim is the configured ConnectX-6 Dx host (PFC on priority 3).
func newWatchSim(t *testing.T) *watchSim { return newSim(t, "cx6dx-ofed-lossless", 2) }

// hw adds to an RDMA port counter as the driver's sysfs file shows it.
func (w *watchSim) hw(dev, name string, delta uint64) {
	w.t.Helper()
	fixturehost.AddHWCounter(w.t, w.root, dev, name, delta)
}

// busyInterval is half a second of a congested port 0
// (fixturehost.CongestPort0).
func (w *watchSim) busyInterval() {
	w.now = w.now.Add(500 * time.Millisecond)
	fixturehost.CongestPort0(w.t, w.root, w.sim)
}

func fv(p *float64) any {
	if p == nil {
		return nil
	}
	return *p
}

// statsFailing is a kernel whose ethtool -S fails on one netdev.
type statsFailing struct {
	nic.Kernel
	bad string
}

func (k statsFailing) Stats(ifname string) (map[string]uint64, error) {
	if ifname == k.bad {
		return nil, errors.New("ethtool -S: no such device")
	}
	return k.Kernel.Stats(ifname)
}

// A port whose counters cannot be read says why on its row (the rates:
// verify's TestRatesUnreadablePort).
func TestWatchShowsUnreadablePort(t *testing.T) {
	w := newWatchSim(t)
	prev := w.s.Sample()
	w.s.K = statsFailing{w.sim, "ens1f1np1"}
	w.now = w.now.Add(time.Second)
	rep := verify.Rates(prev, w.s.Sample())
	lines := strings.Join(watchLines(watchHead{interval: time.Second, scope: "all RoCE ports"}, rep, 0), "\n")
	if !strings.Contains(lines, "ens1f1np1       up    ethtool -S: no such device") {
		t.Errorf("the error is not on the port's row:\n%s", lines)
	}
}

// The layout at fixed widths: the wide table on a 130-column terminal
// (and piped), the narrow one on 70 columns, against golden text.
func TestWatchLayoutGolden(t *testing.T) {
	w := newWatchSim(t)
	prev := w.s.Sample()
	w.busyInterval()
	rep := verify.Rates(prev, w.s.Sample())
	head := watchHead{interval: 500 * time.Millisecond, scope: "all RoCE ports", keys: true}
	wide := strings.Join(watchLines(head, rep, 130), "\n") + "\n"
	golden(t, "watch/wide.txt", wide)
	if piped := strings.Join(watchLines(head, rep, 0), "\n") + "\n"; piped != wide {
		t.Errorf("piped output differs from the wide table:\n%s", piped)
	}
	golden(t, "watch/narrow.txt", strings.Join(watchLines(head, rep, 70), "\n")+"\n")
	if watchWideWidth > 120 {
		t.Errorf("the wide table needs %d columns: more than a 120-column terminal", watchWideWidth)
	}
}

// scriptedLoop runs watchLoop over the simulated host with one tick per
// step; each sample first applies that step's changes to the counters:
// a scripted counter source, driven without timers.
func scriptedLoop(t *testing.T, w *watchSim, out *bytes.Buffer, json, once bool, steps ...func()) error {
	ticks := make(chan time.Time, len(steps))
	for range steps {
		ticks <- time.Time{}
	}
	close(ticks)
	n := 0
	sample := func() *verify.Sample {
		if n > 0 {
			steps[n-1]()
		}
		n++
		return w.s.Sample()
	}
	l := &watchLoop{sample: sample, ticks: ticks, out: out, json: json, once: once,
		head: watchHead{interval: time.Second, scope: "all RoCE ports"}}
	return l.run(context.Background())
}

// -o json: one object per line per interval, with stable field names
// (docs/watch.md), the values of each interval its own.
func TestWatchJSONLines(t *testing.T) {
	w := newWatchSim(t)
	var out bytes.Buffer
	step := func(frames uint64) func() {
		return func() {
			w.now = w.now.Add(time.Second)
			w.sim.AddStat("ens1f0np0", "rx_prio3_pause", frames)
		}
	}
	if err := scriptedLoop(t, w, &out, true, false, step(1000), step(0), step(250)); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n")
	if len(lines) != 3 {
		t.Fatalf("%d lines, want one per interval:\n%s", len(lines), out.String())
	}
	for i, want := range []float64{1000, 0, 250} {
		var rep verify.WatchReport
		if err := json.Unmarshal([]byte(lines[i]), &rep); err != nil {
			t.Fatal(err)
		}
		if got := fv(rep.Ports[0].Priorities[0].RX.FramesPerS); got != want {
			t.Errorf("interval %d: rx prio 3 pause frames/s %v, want %v", i, got, want)
		}
	}
	golden(t, "watch/interval.json", lines[2]+"\n")
}

// Piped text: plain snapshots, one per interval, no escape sequences.
// --once: one interval, then the loop returns; interrupted before it
// ends, it says so.
func TestWatchPlainAndOnce(t *testing.T) {
	w := newWatchSim(t)
	var out bytes.Buffer
	next := func() { w.now = w.now.Add(time.Second) }
	if err := scriptedLoop(t, w, &out, false, false, next, next); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(out.String(), "\x1b") {
		t.Errorf("escape sequences in piped output: %q", out.String())
	}
	if n := strings.Count(out.String(), "rocectl watch  05:06:0"); n != 2 {
		t.Errorf("%d snapshots, want 2:\n%s", n, out.String())
	}

	out.Reset()
	if err := scriptedLoop(t, w, &out, false, true, next, next, next); err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(out.String(), "PORT "); n != 1 {
		t.Errorf("--once printed %d snapshots:\n%s", n, out.String())
	}

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	l := &watchLoop{sample: w.s.Sample, ticks: make(chan time.Time), out: &out, once: true}
	if err := l.run(ctx); !errors.Is(err, context.Canceled) {
		t.Errorf("--once interrupted: %v", err)
	}
}

// A frame on the terminal: from home, every line cut to the width and
// cleared to its end, lines beyond the height replaced by a note, the
// rest of the screen cleared, no newline after the last row.
func TestWatchTTYDraw(t *testing.T) {
	f, err := os.Create(filepath.Join(t.TempDir(), "screen"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	tty := &watchTTY{out: f, w: 10, h: 4}
	tty.draw([]string{"0123456789abc", "b", "c", "d", "e", "f"})
	got, _ := os.ReadFile(f.Name())
	want := "\x1b[H0123456789\x1b[K\r\nb\x1b[K\r\nc\x1b[K\r\n... 3 more\x1b[K\x1b[J"
	if string(got) != want {
		t.Errorf("frame\n got %q\nwant %q", got, want)
	}
}

// The command: the snapshot host once as JSON, a profile that selects
// one port, one that selects none, a bad interval.
func TestWatchCommand(t *testing.T) {
	snap := repo("testdata/hosts/cx6dx-ofed-lossless")
	code, out, errs := run(t, nil, "--snapshot", snap, "watch", "--once", "-o", "json", "--interval", "10ms")
	var rep verify.WatchReport
	if code != ExitOK || json.Unmarshal([]byte(out), &rep) != nil || len(rep.Ports) != 2 {
		t.Fatalf("exit %d\n%s%s", code, out, errs)
	}
	prof := filepath.Join(t.TempDir(), "p.toml")
	write := func(match string) {
		if err := os.WriteFile(prof, []byte("name = \"one\"\n[match]\nnetdevs = [\""+match+"\"]\n[link]\nmtu = 9000\n"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write("ens1f1*")
	code, out, errs = run(t, nil, "--snapshot", snap, "watch", "--once", "-p", prof, "--interval", "10ms")
	if code != ExitOK || !strings.Contains(out, "every 10ms  profile one, snapshot ") || strings.Contains(out, "ens1f0np0") ||
		!strings.Contains(out, "ens1f1np1       up    port") {
		t.Fatalf("exit %d\n%s%s", code, out, errs)
	}
	write("eth*")
	// Nothing matched: said, exit 0; an error under --require-match.
	if code, out, errs = run(t, nil, "--snapshot", snap, "watch", "--once", "-p", prof); code != ExitOK ||
		!strings.Contains(out, "Nothing to watch: no RoCE port matches the profile's [match]") {
		t.Errorf("no match: exit %d %s%s", code, out, errs)
	}
	if code, _, errs = run(t, nil, "--snapshot", snap, "watch", "--once", "--require-match", "-p", prof); code != ExitError ||
		!strings.Contains(errs, "no RoCE port to work on (--require-match)") {
		t.Errorf("no match, --require-match: exit %d %s", code, errs)
	}
	if code, _, errs = run(t, nil, "--snapshot", snap, "watch", "--interval", "0s"); code != ExitError || !strings.Contains(errs, "--interval must be positive") {
		t.Errorf("--interval 0: exit %d %s", code, errs)
	}
}

// "Throttled with no drops" and the RDMA counters on screen and in JSON:
// the partner pauses priority 3 of port 0 for a quarter of the interval
// while no discard counter moves, and its RDMA port sees packets out of
// sequence and adaptive retransmissions. Port 1 is quiet: "no".
func TestWatchThrottledNoDropsAndRDMA(t *testing.T) {
	w := newWatchSim(t)
	prev := w.s.Sample()
	w.now = w.now.Add(time.Second)
	w.sim.AddStat("ens1f0np0", "rx_prio3_pause_duration", 250_000)
	w.sim.AddStat("ens1f0np0", "rx_prio3_pause", 5000)
	w.hw("mlx5_0", "out_of_sequence", 5)
	w.hw("mlx5_0", "roce_adp_retrans", 2)
	rep := verify.Rates(prev, w.s.Sample())
	p0, p1 := rep.Ports[0], rep.Ports[1]
	if p0.ThrottledNoDrops != "yes" || len(p0.ThrottledWhere) != 1 || p0.ThrottledWhere[0] != (verify.WatchThrottled{Priority: 3, Direction: "rx", PausePct: 25}) {
		t.Errorf("port 0: %q %+v", p0.ThrottledNoDrops, p0.ThrottledWhere)
	}
	if p1.ThrottledNoDrops != "no" {
		t.Errorf("port 1: %q", p1.ThrottledNoDrops)
	}
	text := strings.Join(watchLines(watchHead{interval: time.Second, scope: "all RoCE ports"}, rep, 0), "\n")
	for _, want := range []string{
		"                      rdma/s  oos 5.0  seq-nak 0  impl-nak 0  ack-tmo 0  no-wqe 0  adp-rtx 2.0\n",
		"                      ! throttled with no drops: priority 3 (rx) paused 25%, every discard counter flat\nens1f1np1",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("missing %q in\n%s", want, text)
		}
	}
	if strings.Count(text, "throttled") != 1 {
		t.Errorf("throttled shown on the quiet port too:\n%s", text)
	}
}
