//go:build lab

package ansible

// The rack sweep with real verbs traffic, in the Soft-RoCE lab guest
// (test/lab): four "hosts", each a netdevsim NIC with an rxe device on
// its port and its own profile, state directory and listener port, joined
// by labenv.NewFabric's switch, so every --listen/--peer pair of the
// sweep is real RoCE v2 traffic between two rxe devices through their
// netdevs, and the pause counters verify records around each test are the
// NICs' (mlx5-named, netdevsim-stats.patch). One host's cable is pulled
// after round 1: the sweep completes, and the report names that host.
//
// Why a pulled cable and not a downed netdev or a removed rxe device: both
// of those make that host's verify fail before any traffic (the RoCE GIDs
// go with the link), so its partner waits for a peer that never comes
// until the sweep's timeout, or dials one that is not there for 30 s:
// right, but half a minute or more per pair in the lab. With the cable
// pulled the host looks healthy, its tests start, and RDMA traffic to and
// from it fails (IBV_WC_RETRY_EXC_ERR within a second): both ends record
// the failure.
//
// Who runs the sweep: with ansible-playbook in the guest (an image with
// the optional Ansible layer, LAB_ANSIBLE=1), the real sweep.yml, embedded
// below, against an inventory of the four hosts (connection local).
// Without it (the default image: Ansible under TCG costs minutes, see
// test/lab/README.md), sweepDirect runs the playbook's rounds itself with
// the same command lines and writes the same records; the playbook's own
// logic is tested with ansible-playbook on the build host (TestSweep).

import (
	"context"
	"embed"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rocectl/rocectl/test/lab/labenv"
)

//go:embed sweep.yml roles
var playbookFS embed.FS

// The sweep's variables, as the lab runs it.
const (
	labSweepTimeout  = 60 // s, each end (rocectl_sweep_timeout); no test should need it
	labSweepDuration = "500ms"
	labSweepSize     = 65536 // bytes per RDMA WRITE (rocectl_sweep_bytes)
	labSweepPort     = 18640 // + host number
	labFailHost      = "h1"  // its cable is pulled after its first test
	labPauseHost     = "h2"  // its port reports a steady 40 % priority-3 pause
)

type labSweepHost struct {
	name    string
	ep      labenv.Endpoint
	bin     string // its rocectl (h1's: a wrapper that pulls its cable)
	profile string
	state   string
	port    int
}

// labSweepRecord is one end's record, as the playbook writes it
// (sweep_round.yml, "Record the round's tests").
type labSweepRecord struct {
	Sweep struct {
		Round    int      `json:"round"`
		Pair     []string `json:"pair"`
		Host     string   `json:"host"`
		Peer     string   `json:"peer"`
		Role     string   `json:"role"`
		RC       int      `json:"rc"`
		TimedOut bool     `json:"timed_out"`
		ElapsedS float64  `json:"elapsed_s"`
		Stderr   string   `json:"stderr"`
	} `json:"sweep"`
	Verify *struct {
		OK         bool     `json:"ok"`
		Errors     []string `json:"errors"`
		Mismatches []any    `json:"mismatches"`
		Traffic    []struct {
			Device        string           `json:"device"`
			GID           string           `json:"gid"`
			PeerGID       string           `json:"peer_gid"`
			WriteGbps     float64          `json:"write_gbps"`
			WriteMsgs     int64            `json:"write_msgs"`
			WriteBytes    int64            `json:"write_bytes"`
			SendMsgs      int64            `json:"send_msgs"`
			CounterDeltas map[string]int64 `json:"counter_deltas"`
			PauseDeltas   []struct {
				Netdev      string `json:"netdev"`
				Priority    int    `json:"priority"`
				Direction   string `json:"direction"`
				Frames      uint64 `json:"frames"`
				DurationUs  uint64 `json:"duration_us"`
				HasDuration bool   `json:"has_duration"`
			} `json:"pause_deltas"`
		} `json:"traffic"`
	} `json:"verify"`
}

func TestLabSweep(t *testing.T) {
	e := labenv.Get(t)
	if e.RocectlVerbs == "" {
		t.Fatal("LAB_ROCECTL_VERBS is not set: test/lab/run-go-tests.sh builds bin/rocectl-verbs")
	}
	dir := t.TempDir()
	eps := labenv.NewFabric(t, 41, 4)
	hosts := make([]*labSweepHost, len(eps))
	by := map[string]*labSweepHost{}
	for i, ep := range eps {
		h := &labSweepHost{name: fmt.Sprintf("h%d", i+1), ep: ep, bin: e.RocectlVerbs, port: labSweepPort + i + 1,
			profile: filepath.Join(dir, fmt.Sprintf("h%d.toml", i+1)), state: filepath.Join(dir, fmt.Sprintf("state-h%d", i+1))}
		// What site.yml would have installed: PFC on priority 3, so the
		// port has mlx5's per-priority pause counters.
		write(t, h.profile, fmt.Sprintf("name = \"sweep-%s\"\n[match]\nrdma_devices = [%q]\n[qos]\npfc_priorities = [3]\n[guard]\nenabled = false\n", h.name, ep.RXE))
		if out, err := exec.Command(e.RocectlVerbs, "--state-dir", h.state, "apply", "--no-verify", "-p", h.profile).CombinedOutput(); err != nil {
			t.Fatalf("%s: apply: %v\n%s", h.name, err, out)
		}
		hosts[i], by[h.name] = h, h
	}
	fail := by[labFailHost]
	// Its rocectl is the real one; before its second test its cable is
	// pulled (labenv's PullCable). Its netdev, rxe port and GIDs stay up.
	fail.bin = filepath.Join(dir, "rocectl-"+fail.name)
	used, cut := filepath.Join(dir, fail.name+".used"), filepath.Join(dir, fail.name+".cut")
	write(t, fail.bin, fmt.Sprintf("#!/bin/sh\nif [ -e %[1]q ] && [ ! -e %[2]q ]; then %[3]s || exit 99; touch %[2]q; fi\ntouch %[1]q\nexec %[4]q \"$@\"\n",
		used, cut, fail.ep.PullCable(), e.RocectlVerbs))
	if err := os.Chmod(fail.bin, 0o755); err != nil {
		t.Fatal(err)
	}
	stopPause := pauseStorm(t, by[labPauseHost].ep.Port)

	results := filepath.Join(dir, "results")
	t0 := time.Now()
	if ap, err := exec.LookPath("ansible-playbook"); err == nil {
		sweepAnsible(t, ap, dir, results, e.RocectlVerbs, hosts)
	} else {
		t.Logf("no ansible-playbook in this guest (LAB_ANSIBLE=1 adds it): running the playbook's rounds directly")
		sweepDirect(t, results, hosts)
		report(t, e.RocectlVerbs, results, hosts)
	}
	stopPause()
	t.Logf("sweep of %d hosts with its report: %.1f s", len(hosts), time.Since(t0).Seconds())

	checkLabSweep(t, results, hosts)
}

// pauseStorm makes p report priority 3 paused 40 % of the time (rx: 1
// frame and 4000 µs every 10 ms) until the returned stop is called.
func pauseStorm(t *testing.T, p labenv.Port) (stop func()) {
	t.Helper()
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		tick := time.NewTicker(10 * time.Millisecond)
		defer tick.Stop()
		var frames, us uint64
		for {
			select {
			case <-done:
				return
			case <-tick.C:
			}
			frames, us = frames+1, us+4000
			if err := p.SetStat("rx_prio3_pause", frames); err != nil {
				t.Errorf("pause storm: %v", err)
				return
			}
			if err := p.SetStat("rx_prio3_pause_duration", us); err != nil {
				t.Errorf("pause storm: %v", err)
				return
			}
		}
	})
	var once sync.Once
	stop = func() { once.Do(func() { close(done); wg.Wait() }) }
	t.Cleanup(stop)
	return stop
}

// circleRounds is the playbook's "all" schedule (tasks/sweep.yml): host 0
// fixed, the others rotating, host i meeting host n-1-i; a "-" bye pads
// an odd group.
func circleRounds(hosts []string) [][][2]string {
	ring := slices.Sorted(slices.Values(hosts))
	if len(ring)%2 == 1 {
		ring = append(ring, "-")
	}
	n := len(ring)
	var rounds [][][2]string
	for r := range n - 1 {
		arr := append(append([]string{ring[0]}, ring[1+r:]...), ring[1:1+r]...)
		var pairs [][2]string
		for i := range n / 2 {
			if arr[i] != "-" && arr[n-1-i] != "-" {
				pairs = append(pairs, [2]string{arr[i], arr[n-1-i]})
			}
		}
		rounds = append(rounds, pairs)
	}
	return rounds
}

// sweepDirect runs the rounds as sweep_round.yml does: both ends of every
// pair of a round at once, each under coreutils timeout, with the
// playbook's command line (connect delay 0: the connector retries its
// dial until the listener is up), and records every end.
func sweepDirect(t *testing.T, results string, hosts []*labSweepHost) {
	t.Helper()
	if err := os.MkdirAll(results, 0o755); err != nil {
		t.Fatal(err)
	}
	by := map[string]*labSweepHost{}
	var names []string
	for _, h := range hosts {
		by[h.name] = h
		names = append(names, h.name)
	}
	for ri, pairs := range circleRounds(names) {
		start := time.Now()
		var wg sync.WaitGroup
		var mu sync.Mutex
		slowest := 0.0
		var records []any // the round's, in one file as sweep_round.yml writes it
		for _, pair := range pairs {
			for role, h := range []*labSweepHost{by[pair[0]], by[pair[1]]} {
				wg.Go(func() {
					argv := []string{"timeout", strconv.Itoa(labSweepTimeout), h.bin, "verify", "-p", h.profile, "-o", "json",
						"--duration", labSweepDuration, "--size", strconv.Itoa(labSweepSize)}
					if role == 0 {
						argv = append(argv, "--listen", fmt.Sprintf(":%d", h.port))
					} else {
						l := by[pair[0]]
						argv = append(argv, "--peer", fmt.Sprintf("%s:%d", l.ep.IP, l.port))
					}
					argv = append(argv, "--state-dir", h.state)
					cmd := exec.Command(argv[0], argv[1:]...)
					var stdout, stderr strings.Builder
					cmd.Stdout, cmd.Stderr = &stdout, &stderr
					t0 := time.Now()
					err := cmd.Run()
					elapsed := time.Since(t0).Seconds()
					rc := 0
					if err != nil {
						rc = -1
						if ee, ok := err.(*exec.ExitError); ok {
							rc = ee.ExitCode()
						}
					}
					rec := map[string]any{"sweep": map[string]any{
						"round": ri + 1, "pair": pair[:], "host": h.name, "peer": pair[1-role],
						"role": map[int]string{0: "listen", 1: "peer"}[role], "rc": rc, "timed_out": rc == 124,
						"elapsed_s": elapsed, "stderr": truncate(stderr.String(), 2000)}}
					var doc any
					if strings.HasPrefix(stdout.String(), "{") {
						if err := json.Unmarshal([]byte(stdout.String()), &doc); err != nil {
							t.Errorf("%s round %d: verify's JSON: %v", h.name, ri+1, err)
						}
					}
					rec["verify"] = doc
					mu.Lock()
					records = append(records, rec)
					slowest = max(slowest, elapsed)
					mu.Unlock()

				})
			}
		}
		wg.Wait()
		b, _ := json.MarshalIndent(map[string]any{"rocectl_sweep_records": records}, "", "    ")
		write(t, filepath.Join(results, fmt.Sprintf("sweep.r%d.json", ri+1)), string(b))
		wall := time.Since(start).Seconds()
		t.Logf("round %d: %d pair(s) in parallel, %.2f s wall, slowest test %.2f s", ri+1, len(pairs), wall, slowest)
	}
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n-3] + "..."
}

// report runs rocectl report as report.yml does: text and JSON.
func report(t *testing.T, rocectl, results string, hosts []*labSweepHost) {
	t.Helper()
	var names []string
	for _, h := range hosts {
		names = append(names, h.name)
	}
	for _, f := range []struct{ format, ext string }{{"text", "txt"}, {"json", "json"}, {"html", "html"}} {
		out, err := exec.Command(rocectl, "report", "-o", f.format, "--expect", strings.Join(names, ","), results).Output()
		if err != nil {
			t.Fatalf("rocectl report -o %s: %v\n%s", f.format, err, out)
		}
		write(t, filepath.Join(results, "report."+f.ext), string(out))
	}
}

// sweepAnsible runs the real sweep.yml (embedded: the guest has no tree)
// with an inventory of the lab's hosts, connection local.
func sweepAnsible(t *testing.T, ap, dir, results, rocectl string, hosts []*labSweepHost) {
	t.Helper()
	play := filepath.Join(dir, "playbook")
	if err := os.CopyFS(play, playbookFS); err != nil {
		t.Fatal(err)
	}
	inv := "all:\n  children:\n    roce:\n      hosts:\n"
	for _, h := range hosts {
		inv += fmt.Sprintf("        %s:\n          ansible_connection: local\n          ansible_python_interpreter: \"{{ ansible_playbook_python }}\"\n"+
			"          rocectl_binary_path: %q\n          rocectl_sweep_profile: %q\n          rocectl_sweep_address: %q\n"+
			"          rocectl_sweep_port: %d\n          rocectl_global_args: [\"--state-dir\", %q]\n",
			h.name, h.bin, h.profile, h.ep.IP.String(), h.port, h.state)
	}
	write(t, filepath.Join(dir, "inventory.yml"), inv)
	vars, _ := json.Marshal(map[string]any{
		"rocectl_results_dir":         results,
		"rocectl_report_bin":          rocectl,
		"rocectl_binary_src":          rocectl,
		"rocectl_sweep_timeout":       labSweepTimeout,
		"rocectl_sweep_duration":      labSweepDuration,
		"rocectl_sweep_bytes":         strconv.Itoa(labSweepSize),
		"rocectl_sweep_connect_delay": 0,
	})
	write(t, filepath.Join(dir, "vars.json"), string(vars))
	// Ansible under TCG: about 3 minutes (test/lab/README.md); run with
	// LAB_GO_TIMEOUT=10m.
	ctx, cancel := context.WithTimeout(context.Background(), 9*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, ap, "-i", filepath.Join(dir, "inventory.yml"), "sweep.yml", "-e", "@"+filepath.Join(dir, "vars.json"), "-f", strconv.Itoa(len(hosts)))
	cmd.Dir = play
	// Ansible refuses to start without a UTF-8 locale (the layer has C.UTF-8).
	cmd.Env = append(ansibleEnv(t), "ANSIBLE_ROLES_PATH="+filepath.Join(play, "roles"), "LANG=C.UTF-8", "LC_ALL=C.UTF-8")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("ansible-playbook sweep.yml: %v\n%s", err, out)
	}
	// The playbook's own timing lines (debug msg "round N: ...").
	for _, l := range strings.Split(string(out), "\n") {
		if i := strings.Index(l, "round "); i >= 0 && strings.Contains(l, "playbook overhead") {
			t.Log(strings.TrimRight(l[i:], `"`))
		}
	}
}

func checkLabSweep(t *testing.T, results string, hosts []*labSweepHost) {
	t.Helper()
	by := map[string]*labSweepHost{}
	for _, h := range hosts {
		by[h.name] = h
	}
	files, _ := filepath.Glob(filepath.Join(results, "sweep.r*.json"))
	raw := sweepRecords(t, files)
	if len(files) != 3 || len(raw) != 12 {
		t.Fatalf("%d sweep records in %d files, want 12 (6 pairs, both ends) in 3 (one per round): %v", len(raw), len(files), files)
	}
	recs := map[string]*labSweepRecord{} // by "round host"
	pairs := map[[2]string]int{}         // unordered pair -> round
	for i, b := range raw {
		var r labSweepRecord
		if err := json.Unmarshal(b, &r); err != nil {
			t.Fatalf("record %d: %v", i, err)
		}
		s := r.Sweep
		k := fmt.Sprintf("%d %s", s.Round, s.Host)
		if recs[k] != nil {
			t.Errorf("%s is in two tests of round %d", s.Host, s.Round)
		}
		recs[k] = &r
		u := [2]string{s.Pair[0], s.Pair[1]}
		sort.Strings(u[:])
		pairs[u] = s.Round
	}
	if len(pairs) != 6 {
		t.Errorf("pairs tested: %v, want all 6 of 4 hosts", pairs)
	}
	for _, r := range recs {
		s := r.Sweep
		h, peer := by[s.Host], by[s.Peer]
		name := fmt.Sprintf("round %d %s (%s of %s)", s.Round, s.Host, s.Role, strings.Join(s.Pair, "--"))
		failed := s.Round > 1 && (s.Host == labFailHost || s.Peer == labFailHost)
		if failed {
			// Both ends see the dead path within seconds (retries
			// exceeded on one, the peer's report on the other), long
			// before the sweep's timeout, and say so.
			if s.RC == 0 || s.TimedOut || r.Verify == nil || len(r.Verify.Errors) == 0 {
				t.Errorf("%s: rc %d, timed out %v, verify %+v; want verify's errors\nstderr: %s", name, s.RC, s.TimedOut, r.Verify, s.Stderr)
			} else {
				t.Logf("%s: rc %d after %.1f s: %s", name, s.RC, s.ElapsedS, strings.Join(r.Verify.Errors, "; "))
			}
			continue
		}
		if s.RC != 0 || r.Verify == nil || !r.Verify.OK || len(r.Verify.Traffic) != 1 {
			t.Errorf("%s: rc %d, verify %+v; want ok with traffic\nstderr: %s", name, s.RC, r.Verify, s.Stderr)
			continue
		}
		tr := r.Verify.Traffic[0]
		t.Logf("%s: %.1f s, %.3f Gb/s, %d writes, %d sends", name, s.ElapsedS, tr.WriteGbps, tr.WriteMsgs, tr.SendMsgs)
		// Real verbs traffic between the two rxe devices, through their
		// ports: bandwidth, the bytes of the configured message size,
		// and rxe's own packet counters.
		if tr.Device != h.ep.RXE || tr.GID != "::ffff:"+h.ep.IP.String() || tr.PeerGID != "::ffff:"+peer.ep.IP.String() {
			t.Errorf("%s: traffic on %s %s -> %s, want %s ::ffff:%s -> ::ffff:%s", name, tr.Device, tr.GID, tr.PeerGID, h.ep.RXE, h.ep.IP, peer.ep.IP)
		}
		if tr.WriteGbps <= 0 || tr.WriteMsgs <= 0 || tr.WriteBytes != tr.WriteMsgs*labSweepSize || tr.SendMsgs <= 0 {
			t.Errorf("%s: %.4f Gb/s, %d writes of %d bytes, %d sends; want traffic in %d-byte writes", name, tr.WriteGbps, tr.WriteMsgs, tr.WriteBytes, tr.SendMsgs, labSweepSize)
		}
		if tr.CounterDeltas["sent_pkts"] <= 0 || tr.CounterDeltas["rcvd_pkts"] <= 0 {
			t.Errorf("%s: rxe counters %v, want sent_pkts and rcvd_pkts", name, tr.CounterDeltas)
		}
		// The pause counters of its port, zeros included; only h1's move.
		var rx3 uint64
		seen := 0
		for _, c := range tr.PauseDeltas {
			if c.Netdev != h.ep.Port.Ifname || !c.HasDuration {
				t.Errorf("%s: pause delta %+v, want %s's with a duration", name, c, h.ep.Port.Ifname)
			}
			if c.Priority == 3 {
				seen++
				if c.Direction == "rx" {
					rx3 = c.DurationUs
				}
			} else if c.Frames != 0 || c.DurationUs != 0 {
				t.Errorf("%s: priority %d paused: %+v", name, c.Priority, c)
			}
		}
		if seen != 2 {
			t.Errorf("%s: pause deltas %+v, want priority 3 rx and tx", name, tr.PauseDeltas)
		}
		if (s.Host == labPauseHost) != (rx3 > 0) {
			t.Errorf("%s: priority 3 rx pause %d µs; only %s pauses", name, rx3, labPauseHost)
		}
	}

	b, err := os.ReadFile(filepath.Join(results, "report.json"))
	if err != nil {
		t.Fatal(err)
	}
	var rep struct {
		Sweep struct {
			Hosts  []string `json:"hosts"`
			Rounds int      `json:"rounds"`
			Pairs  []struct {
				A, B, State    string
				Round          int
				Gbps           float64
				PauseOccupancy float64 `json:"pause_occupancy"`
				Why            []string
			} `json:"pairs"`
			Common []struct {
				Host  string `json:"host"`
				Pairs int    `json:"pairs"`
			} `json:"common"`
		} `json:"sweep"`
	}
	if err := json.Unmarshal(b, &rep); err != nil {
		t.Fatal(err)
	}
	sw := rep.Sweep
	if !slices.Equal(sw.Hosts, []string{"h1", "h2", "h3", "h4"}) || sw.Rounds != 3 || len(sw.Pairs) != 6 {
		t.Errorf("report: hosts %v, %d rounds, %d pairs; want h1-h4, 3, 6", sw.Hosts, sw.Rounds, len(sw.Pairs))
	}
	for _, p := range sw.Pairs {
		has := func(h string) bool { return p.A == h || p.B == h }
		if p.Round > 1 && has(labFailHost) {
			// "error": verify's errors (rxe's stall), no completion
			// errors; "failed" if an end saw those or timed out.
			if (p.State != "error" && p.State != "failed") || !strings.Contains(strings.Join(p.Why, "\n"), labFailHost+": ") {
				t.Errorf("report: %s--%s (round %d) %s %v; want error or failed, naming %s", p.A, p.B, p.Round, p.State, p.Why, labFailHost)
			}
			continue
		}
		// A lone pair may run twice as fast as two in parallel on the
		// guest's two CPUs, so a healthy pair may be "slow".
		if (p.State != "ok" && p.State != "slow") || p.Gbps <= 0 {
			t.Errorf("report: %s--%s (round %d) %s at %.4f Gb/s %v; want traffic", p.A, p.B, p.Round, p.State, p.Gbps, p.Why)
		}
		if has(labPauseHost) != (p.PauseOccupancy > 0) {
			t.Errorf("report: %s--%s pause occupancy %.3f; only %s pauses", p.A, p.B, p.PauseOccupancy, labPauseHost)
		}
	}
	// The culprit: in both failed pairs, so among the hosts common to the
	// bad pairs, and in more failed or error pairs than any other host.
	// Not "in the most bad pairs": bad counts "slow" too, and two pairs
	// share the guest's two emulated CPUs as the scheduler decides (one
	// CI run had h1--h4 at 0.097 Gb/s beside h2--h3 at 0.041), so a
	// healthy host's pairs may come out slow, and count for it, on a busy
	// build machine. Which pairs fail is the pulled cable's doing alone.
	failedPairs := map[string]int{}
	for _, p := range sw.Pairs {
		if p.State == "error" || p.State == "failed" {
			failedPairs[p.A]++
			failedPairs[p.B]++
		}
	}
	for h, n := range failedPairs {
		if h != labFailHost && n >= failedPairs[labFailHost] {
			t.Errorf("report: %s in %d failed or error pairs, %s in %d; want %s in the most", h, n, labFailHost, failedPairs[labFailHost], labFailHost)
		}
	}
	named := false
	for _, c := range sw.Common {
		named = named || (c.Host == labFailHost && c.Pairs >= 2)
	}
	if !named {
		t.Errorf("report: hosts common to the bad pairs %+v, want %s in at least 2", sw.Common, labFailHost)
	}
	text, err := os.ReadFile(filepath.Join(results, "report.txt"))
	if err != nil {
		t.Fatal(err)
	}
	_, common, _ := strings.Cut(string(text), "\nHosts common to the bad pairs: ")
	if common, _, _ = strings.Cut(common, "\n"); !strings.Contains(" "+common, " "+labFailHost+" (") {
		t.Errorf("report.txt does not name %s among the hosts common to the bad pairs:\n%s", labFailHost, text)
	}
	t.Logf("report.txt:\n%s", text)
}
