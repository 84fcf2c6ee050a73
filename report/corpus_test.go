package report

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rocectl/rocectl/lldp"
	"github.com/rocectl/rocectl/peer"
)

// The corpus under testdata/corpus is what the real rocectl printed for
// the shipped snapshot hosts (testdata/hosts), renamed into racks, with
// drift injected through the profile (rack B's cable length), one stale
// document, one failed audit, a host in Ansible's fact cache format, a
// peer document and the records of a four-host rack sweep.
// `go test ./report -run TestCorpus -regen` writes it again.
var regen = flag.Bool("regen", false, "regenerate testdata/corpus with the real rocectl")

const repo = ".."

func TestCorpus(t *testing.T) {
	if !*regen {
		t.Skip("run with -regen to rebuild testdata/corpus from the real rocectl")
	}
	tmp := t.TempDir()
	bin := filepath.Join(tmp, "rocectl")
	build := exec.Command("go", "build", "-o", bin, "./cmd/rocectl")
	build.Dir = repo
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build: %v\n%s", err, out)
	}
	lossless := filepath.Join(repo, "profiles/connectx-lossless.toml")
	good, err := os.ReadFile(lossless)
	if err != nil {
		t.Fatal(err)
	}
	// Rack B's profile says 30 m cables; the hosts are set for 7 m.
	rackB := filepath.Join(tmp, "rack-b.toml")
	if err := os.WriteFile(rackB, []byte(strings.Replace(string(good), "cable_length_m = 7", "cable_length_m = 30", 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join("testdata", "corpus")
	os.RemoveAll(out)
	if err := os.MkdirAll(filepath.Join(out, "facts"), 0o755); err != nil {
		t.Fatal(err)
	}
	run := func(args ...string) map[string]any {
		cmd := exec.Command(bin, args...)
		b, err := cmd.Output()
		var ee *exec.ExitError
		if err != nil && !(errors.As(err, &ee) && ee.ExitCode() <= 2) {
			t.Fatalf("rocectl %v: %v", args, err)
		}
		var m map[string]any
		if err := json.Unmarshal(b, &m); err != nil {
			t.Fatalf("rocectl %v: %v\n%s", args, err, b)
		}
		return m
	}
	save := func(name string, m map[string]any) {
		b, _ := json.MarshalIndent(m, "", "  ")
		if err := os.WriteFile(filepath.Join(out, name), append(b, '\n'), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	host := func(h string) string { return filepath.Join(repo, "testdata/hosts", h) }
	audit := func(name, snap, profile, at string) map[string]any {
		m := run("audit", "-p", profile, "--snapshot", host(snap), "-o", "json")
		m["host"], m["generated_at"] = name, at
		return m
	}
	const now = "2026-01-02T03:00:00Z"
	for i := 1; i <= 4; i++ {
		n := fmt.Sprintf("rack-a-%02d", i)
		save(n+".audit.json", audit(n, "cx6dx-ofed-lossless", lossless, now))
	}
	save("rack-a-05.audit.json", audit("rack-a-05", "cx6dx-ofed-lossless", lossless, "2025-12-20T00:00:00Z"))
	v := run("verify", "-p", lossless, "--snapshot", host("cx6dx-ofed-lossless"), "-o", "json")
	save("rack-a-01.verify.json", v) // no host field: named by its file
	for i := 1; i <= 3; i++ {
		n := fmt.Sprintf("rack-b-%02d", i)
		save(n+".audit.json", audit(n, "cx6dx-ofed-lossless", rackB, now))
	}
	// The peer document is the agent's own type, as `rocectl peer -o json`
	// and the agent's peer.json write it (a snapshot has no switch to
	// hear): the switch enables PFC on 3 and 4 where the profile says 3,
	// and the second port heard nothing.
	at, _ := time.Parse(time.RFC3339, now)
	heard := at.Add(-10 * time.Second)
	peer, err := json.Marshal(peer.Report{SchemaVersion: 1, Profile: "connectx-lossless", Host: "rack-b-01", CheckedAt: at,
		Ports: []peer.Result{
			{Netdev: "ens1f0np0", Driver: "mlx5_core", Verdict: peer.Mismatch, Source: peer.SourceLLDP, HeardAt: &heard, DCBX: "ieee",
				Mismatches: []lldp.Mismatch{{Key: "pfc", Switch: "3,4", Profile: "3"}}},
			{Netdev: "ens1f1np1", Driver: "mlx5_core", Verdict: peer.Unknown, Reason: "no LLDP frame within 35s: the switch may not send LLDP on this port"},
		}})
	if err != nil {
		t.Fatal(err)
	}
	var peerDoc map[string]any
	if err := json.Unmarshal(peer, &peerDoc); err != nil {
		t.Fatal(err)
	}
	save("rack-b-01.peer.json", peerDoc)
	for i := 1; i <= 2; i++ {
		n := fmt.Sprintf("rack-c-%02d", i)
		save(n+".audit.json", audit(n, "cx6dx-ofed-factory", lossless, now))
	}
	failed := run("audit", "-p", "no-such-profile.toml", "--snapshot", host("cx6dx-ofed-factory"), "-o", "json")
	failed["host"], failed["generated_at"] = "rack-c-03", now
	save("rack-c-03.audit.json", failed)
	save("rack-d-01.audit.json", audit("rack-d-01", "bnxt-re-factory", filepath.Join(repo, "profiles/lossy-ecn-only.toml"), now))
	save("rack-d-02.audit.json", audit("rack-d-02", "cx7-upstream-factory", lossless, now))
	// Ansible's jsonfile fact cache: a file named after the host, the
	// role's facts in it, the document without a host field.
	fact := audit("", "cx6dx-ofed-lossless", lossless, now)
	delete(fact, "host")
	b, _ := json.MarshalIndent(map[string]any{"ansible_check_mode": true, "rocectl_audit_doc": fact}, "", "  ")
	if err := os.WriteFile(filepath.Join(out, "facts", "rack-d-03"), append(b, '\n'), 0o644); err != nil {
		t.Fatal(err)
	}
	// A sweep over rack A: rack-a-03's links are slow and pause; the
	// rack-a-04 <-> rack-a-02 test timed out on rack-a-04.
	hosts := []string{"rack-a-01", "rack-a-02", "rack-a-03", "rack-a-04"}
	rounds := [][][2]int{{{0, 3}, {1, 2}}, {{0, 2}, {3, 1}}, {{0, 1}, {2, 3}}}
	for r, pairs := range rounds {
		for _, p := range pairs {
			a, b := hosts[p[0]], hosts[p[1]]
			for _, end := range []struct{ host, peer, role string }{{a, b, "listen"}, {b, a, "peer"}} {
				gbps, pause := 92.5+float64(r), int64(20000)
				if a == "rack-a-03" || b == "rack-a-03" {
					gbps, pause = 31.2, 1800000
				}
				// verify's pause_deltas: priority 3 paused this end for pause µs of the 3 s window.
				pauseDeltas := []any{
					map[string]any{"netdev": "ens1f0np0", "priority": 3, "direction": "rx", "frames": 120, "frames_counter": "rx_prio3_pause",
						"duration_us": pause, "duration_counter": "rx_prio3_pause_duration", "has_duration": true},
					map[string]any{"netdev": "ens1f0np0", "priority": 3, "direction": "tx", "frames": 0, "frames_counter": "tx_prio3_pause",
						"duration_counter": "tx_prio3_pause_duration", "has_duration": true},
				}
				rec := map[string]any{"sweep": map[string]any{"round": r + 1, "pair": []string{a, b}, "host": end.host, "peer": end.peer,
					"role": end.role, "rc": 0, "timed_out": false, "elapsed_s": 3.4},
					"verify": map[string]any{"profile": "connectx-lossless", "ok": true, "mismatches": []any{}, "errors": []any{},
						"traffic": []any{map[string]any{"write_gbps": gbps, "lat_p50": 4100, "lat_p99": 9800, "counter_deltas": map[string]int64{"np_cnp_sent": 12},
							"pause_deltas": pauseDeltas, "pause_window": int64(3e9)}}}}
				if a == "rack-a-04" && b == "rack-a-02" && end.host == "rack-a-04" {
					rec["sweep"].(map[string]any)["timed_out"] = true
					rec["sweep"].(map[string]any)["rc"] = -1
					rec["sweep"].(map[string]any)["elapsed_s"] = 30.0
					rec["verify"] = nil
				}
				save(fmt.Sprintf("sweep.r%d.%s--%s.%s.json", r+1, a, b, end.host), rec)
			}
		}
	}
}
