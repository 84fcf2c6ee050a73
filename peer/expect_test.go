package peer

import (
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/rocectl/rocectl/lldp"
	"github.com/rocectl/rocectl/policy"
)

// A profile's traffic classes reach the switch check: the data and CNP
// classes through the settings they derive (roce.default_tos, ecn.cnp_*),
// every other class as itself.
func TestExpectFromClasses(t *testing.T) {
	path := filepath.Join(t.TempDir(), "p.toml")
	text := "[classes.data]\ndscp = 26\npriority = 3\nlossless = true\n[classes.cnp]\ndscp = 48\npriority = 6\n[classes.control]\ndscp = 46\npriority = 5\n[classes.storage]\ndscp = 10\npriority = 1\n"
	if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	p, err := policy.Load(path, policy.LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	e := Expect(p)
	want := []lldp.DSCPUse{{DSCP: 26, Priority: 3, Role: "RoCE data"}, {DSCP: 48, Priority: 6, Role: "CNP"}, {DSCP: 46, Priority: 5, Role: "class control"}, {DSCP: 10, Priority: 1, Role: "class storage"}}
	if e.Trust != "dscp" || e.PFC == nil || *e.PFC != 1<<3 || !reflect.DeepEqual(e.DSCP, want) {
		t.Fatalf("Expect = %+v (PFC %v)", e, e.PFC)
	}
}
