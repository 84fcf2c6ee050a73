package apply

import (
	"errors"
	"maps"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/rocectl/rocectl/driver/ice"
	"github.com/rocectl/rocectl/host"
	"github.com/rocectl/rocectl/internal/testkit/fixturehost"
	"github.com/rocectl/rocectl/nccl"
	"github.com/rocectl/rocectl/nic"
	"github.com/rocectl/rocectl/nic/nictest/icesim"
	"github.com/rocectl/rocectl/policy"
	"github.com/rocectl/rocectl/statedir"
)

// Intel's out-of-tree irdma: [ecn] mode is its configfs's algorithm
// switches for the device (configfs.c roce_*_enable_store), each a
// journalled setting written as 0/1 and rolled back like every other.

const irdmaDir = "sys/kernel/config/irdma/irdma0"

var irdmaSwitches = []string{"roce_dcqcn_enable", "roce_dctcp_enable", "roce_timely_enable"}

func irdmaFiles(t *testing.T, root string) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, n := range irdmaSwitches {
		b, err := os.ReadFile(filepath.Join(root, irdmaDir, n))
		if err != nil {
			t.Fatal(err)
		}
		out[n] = strings.TrimSpace(string(b))
	}
	return out
}

// irdmaRig is driverRig on the ice host with its irdma switches set to
// start (name -> "0"/"1") before the plan is made, and [ecn] mode = mode.
func irdmaRig(t *testing.T, mode string, start map[string]string) *rig {
	t.Helper()
	root, sim := fixturehost.Copy(t, "ice-e810-factory")
	for n, v := range start {
		if err := os.WriteFile(filepath.Join(root, irdmaDir, n), []byte(v+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	path := filepath.Join(t.TempDir(), "p.toml")
	if err := os.WriteFile(path, []byte("[match]\ndrivers = [\"ice\"]\n[ecn]\nmode = \""+mode+"\"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	p, err := policy.Load(path, policy.LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	h := &host.Host{FS: nic.NewFS(root, false), K: sim}
	d := policy.Resolve(p, h.Ports(h.Discover(), true))
	nccl.Resolve(d)
	d, pl := planOf(h, d)
	return &rig{root: root, sim: sim, h: h, d: d, plan: pl, opts: Options{Store: Store{Store: statedir.Store{Dir: t.TempDir()}}, Retries: 1}}
}

// Each mode sets its switch on and the others off, from a device that
// ran another algorithm; rollback from disk puts back what the files
// held.
func TestIrdmaCCModeRoundTrip(t *testing.T) {
	for _, tc := range []struct {
		mode  string
		start map[string]string
		want  map[string]string
	}{
		{"dcqcn", nil, map[string]string{"roce_dcqcn_enable": "1", "roce_dctcp_enable": "0", "roce_timely_enable": "0"}},
		{"dctcp", map[string]string{"roce_dcqcn_enable": "1"}, map[string]string{"roce_dcqcn_enable": "0", "roce_dctcp_enable": "1", "roce_timely_enable": "0"}},
		{"timely", map[string]string{"roce_dcqcn_enable": "1", "roce_dctcp_enable": "1"}, map[string]string{"roce_dcqcn_enable": "0", "roce_dctcp_enable": "0", "roce_timely_enable": "1"}},
		{"off", map[string]string{"roce_timely_enable": "1"}, map[string]string{"roce_dcqcn_enable": "0", "roce_dctcp_enable": "0", "roce_timely_enable": "0"}},
	} {
		t.Run(tc.mode, func(t *testing.T) {
			r := irdmaRig(t, tc.mode, tc.start)
			if len(r.plan.Refused) != 0 || len(r.plan.Changes) == 0 {
				t.Fatalf("plan: changes %+v refused %+v", r.plan.Changes, r.plan.Refused)
			}
			before := irdmaFiles(t, r.root)
			if err := r.apply(t); err != nil {
				t.Fatal(err)
			}
			if got := irdmaFiles(t, r.root); !maps.Equal(got, tc.want) {
				t.Errorf("after apply %v, want %v", got, tc.want)
			}
			if err := r.rollBackFromDisk(t); err != nil {
				t.Fatal(err)
			}
			if got := irdmaFiles(t, r.root); !maps.Equal(got, before) {
				t.Errorf("after rollback %v, want %v", got, before)
			}
		})
	}
}

// A switch file that is missing refuses the mode at plan time, naming it:
// writing the others alone would leave the device on another algorithm.
func TestIrdmaMissingSwitchRefusesTheMode(t *testing.T) {
	r := irdmaRig(t, "timely", map[string]string{"roce_dcqcn_enable": "1"})
	if err := os.Remove(filepath.Join(r.root, irdmaDir, "roce_timely_enable")); err != nil {
		t.Fatal(err)
	}
	_, pl := planOf(r.h, r.d)
	if len(pl.Refused) != 1 || !strings.Contains(pl.Refused[0].Error, "roce_timely_enable") || len(pl.Changes) != 0 {
		t.Fatalf("changes %+v refused %+v", pl.Changes, pl.Refused)
	}
}

// A switch that fails on write (here it cannot be written at all: a
// directory stands in its place, as a read-only attribute would refuse)
// fails the apply naming it, and the switches written before it are put
// back: nothing is half-applied.
func TestIrdmaFailedWriteLeavesNothingHalfApplied(t *testing.T) {
	r := irdmaRig(t, "timely", map[string]string{"roce_dcqcn_enable": "1"})
	if len(r.plan.Changes) != 2 || !strings.HasSuffix(r.plan.Changes[0].Key, "roce_dcqcn_enable") || !strings.HasSuffix(r.plan.Changes[1].Key, "roce_timely_enable") {
		t.Fatalf("want dcqcn off written before timely on: %+v", r.plan.Changes)
	}
	before := irdmaFiles(t, r.root)
	timely := filepath.Join(r.root, irdmaDir, "roce_timely_enable")
	if err := os.Remove(timely); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(timely, 0o755); err != nil {
		t.Fatal(err)
	}
	err := r.apply(t)
	var ae *ApplyError
	if !errors.As(err, &ae) || !strings.Contains(ae.Err.Error(), "roce_timely_enable") {
		t.Fatalf("apply: %v, want the failing switch named", err)
	}
	if b, _ := os.ReadFile(filepath.Join(r.root, irdmaDir, "roce_dcqcn_enable")); strings.TrimSpace(string(b)) != before["roce_dcqcn_enable"] {
		t.Errorf("roce_dcqcn_enable %q after the failed apply, want %q put back", b, before["roce_dcqcn_enable"])
	}
}

// A value irdma's store refuses (kstrtobool: EINVAL) is an error before
// anything is written; the planner's check agrees with the driver model
// on every value.
func TestIrdmaOutOfRangeValueWritesNothing(t *testing.T) {
	for v := int64(-2); v < 5; v++ {
		m := icesim.NewIrdma()
		taken := m.Write("roce_dcqcn_enable", strconv.FormatInt(v, 10)) == nil
		if refused := ice.IrdmaValueProblem("roce_dcqcn_enable", v) != ""; refused == taken {
			t.Errorf("%d: planner refuses %v, driver takes it %v", v, refused, taken)
		}
	}
	r := irdmaRig(t, "dctcp", nil)
	before := irdmaFiles(t, r.root)
	for i := range r.plan.Changes {
		r.plan.Changes[i].Value = "2"
	}
	err := r.apply(t)
	if err == nil || !strings.Contains(err.Error(), "takes 0 or 1") {
		t.Fatalf("apply of 2: %v", err)
	}
	if got := irdmaFiles(t, r.root); !maps.Equal(got, before) {
		t.Errorf("after the refused write %v, want %v", got, before)
	}
}
