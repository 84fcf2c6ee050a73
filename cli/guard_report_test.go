package cli

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/rocectl/rocectl/internal/testkit/fixturehost"
	"github.com/rocectl/rocectl/nic/nictest"
)

// countersGone is the Sim with one port whose driver has no pause counters
// at all (a veth, a Soft-RoCE netdev, a driver rocectl does not know).
type countersGone struct {
	*nictest.Sim
	port string
}

func (k countersGone) Stats(name string) (map[string]uint64, error) {
	if name == k.port {
		return map[string]uint64{"rx_bytes": 1, "tx_bytes": 1}, nil
	}
	return k.Sim.Stats(name)
}

// A guard that watches nothing on a port says so: in the plan before the
// apply, after the soak, in text and in JSON.
func TestApplySaysWhichPortsTheGuardCannotWatch(t *testing.T) {
	const want = "no pause counters on ens1f1np1"
	t.Run("text", func(t *testing.T) {
		root, sim := fixturehost.Copy(t, "cx6dx-ofed-factory")
		code, out, errs := run(t, countersGone{sim, "ens1f1np1"}, "--root", root, "--state-dir", t.TempDir(),
			"apply", "--soak", "300ms", "-p", repo("profiles/connectx-lossless.toml"))
		if code != ExitOK {
			t.Fatalf("exit %d\n%s%s", code, out, errs)
		}
		plan, soak, ok := strings.Cut(out, "Applied ")
		if !ok || !strings.Contains(plan, "  guard: not watched: "+want+"\n") || strings.Contains(plan, "not watched: no pause counters on ens1f0np0") {
			t.Errorf("plan should name ens1f1np1 alone as not watched:\n%s", plan)
		}
		if !strings.Contains(soak, "no pause storm on the watched ports") || !strings.Contains(soak, "  not watched: "+want+"\n") {
			t.Errorf("soak report:\n%s", soak)
		}
	})
	t.Run("json", func(t *testing.T) {
		root, sim := fixturehost.Copy(t, "cx6dx-ofed-factory")
		code, out, errs := run(t, countersGone{sim, "ens1f1np1"}, "--root", root, "--state-dir", t.TempDir(),
			"apply", "-o", "json", "--soak", "300ms", "-p", repo("profiles/connectx-lossless.toml"))
		if code != ExitOK {
			t.Fatalf("exit %d\n%s%s", code, out, errs)
		}
		type counter struct {
			Priority int    `json:"priority"`
			Duration string `json:"duration_counter"`
		}
		var rep struct {
			NotWatched []string `json:"not_watched"`
			Guard      struct {
				Ports map[string]struct {
					Watched  bool      `json:"watched"`
					Counters []counter `json:"counters"`
				} `json:"ports"`
			} `json:"guard"`
		}
		if err := json.Unmarshal([]byte(out), &rep); err != nil {
			t.Fatalf("%v\n%s", err, out)
		}
		if !slices.Equal(rep.NotWatched, []string{want}) {
			t.Errorf("not_watched = %q", rep.NotWatched)
		}
		p0, p1 := rep.Guard.Ports["ens1f0np0"], rep.Guard.Ports["ens1f1np1"]
		if !p0.Watched || p1.Watched || len(p1.Counters) != 0 {
			t.Errorf("guard.ports = %+v", rep.Guard.Ports)
		}
		// The recipe turns PFC on for priority 3: mlx5 creates its counters.
		if !slices.Contains(p0.Counters, counter{3, "rx_prio3_pause_duration"}) {
			t.Errorf("ens1f0np0 counters = %+v", p0.Counters)
		}
		// The soak's result in the document, valid under its schema: per
		// port the storm state, pause attribution and "throttled with no
		// drops"; per RDMA port the hardware counters' movement.
		doc := validDoc(t, compileSchema(t, "report"), out)
		guard := doc["guard"].(map[string]any)
		ports := guard["ports"].(map[string]any)
		g0, g1 := ports["ens1f0np0"].(map[string]any), ports["ens1f1np1"].(map[string]any)
		if st := g0["storm"].(map[string]any); st["state"] != "operational" || st["reading"] != "ok" {
			t.Errorf("ens1f0np0 storm state %v", st)
		}
		if st := g1["storm"].(map[string]any); st["state"] != "unknown" || st["reading"] != "vanished" {
			t.Errorf("ens1f1np1 (no pause counters) storm state %v", st)
		}
		if g0["throttled_no_drops"] != "no" || g0["discards_known"] != true || g1["throttled_no_drops"] != "unknown" {
			t.Errorf("throttled_no_drops %v/%v (discards known %v)", g0["throttled_no_drops"], g1["throttled_no_drops"], g0["discards_known"])
		}
		if pause, _ := g0["pause"].([]any); len(pause) == 0 {
			t.Errorf("ens1f0np0 has no pause attribution: %v", g0)
		}
		rdma, _ := guard["rdma"].(map[string]any)
		if r0, _ := rdma["ens1f0np0"].(map[string]any); r0["out_of_sequence"] != 0.0 || r0["roce_adp_retrans"] != 0.0 {
			t.Errorf("rdma movement over the soak: %v", rdma)
		}
	})
}
