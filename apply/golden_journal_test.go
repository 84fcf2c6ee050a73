package apply

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/rocectl/rocectl/policy"
)

var updateJournals = flag.Bool("update-journals", false, "rewrite testdata/journal-v*.json from today's encoder")

// goldenJournals are journals of every format version rocectl has
// shipped. v1 was written by the rocectl of that time; v2 and v3 by the
// encoder when they were recorded (a fat-tree apply on the factory
// ConnectX-6 Dx, every kind of step a non-LAG host writes; a RoCE LAG
// journal). A change to the planner, the driver layer or the kinds must
// decode each of them to the same steps and kinds (journals name kinds,
// never number them), and encode v2 and v3 byte for byte as recorded:
// the format on disk does not move with the code.
func TestGoldenJournalsOfEveryVersionDecode(t *testing.T) {
	r := newRig(t, "cx6dx-ofed-factory", "fat-tree-32gpu-100g.toml")
	v2 := &Journal{Version: lagFreeVersion, ID: "20261203T000000Z-000001", Profile: "fat-tree-32gpu-100g", ProfileHash: "0123456789abcdef",
		Root: "/", Started: time.Date(2026, 12, 3, 0, 0, 0, 0, time.UTC), State: StateCommitted, PID: 1, Steps: r.txnSteps(t)}
	v2.Done = len(v2.Steps)
	for _, tc := range []struct {
		file string
		j    *Journal
	}{
		{"testdata/journal-v2-fat-tree-cx6dx.json", v2},
		{"testdata/journal-v3-lag.json", lagJournal()},
	} {
		t.Run(filepath.Base(tc.file), func(t *testing.T) {
			enc, err := encodeJournal(tc.j)
			if err != nil {
				t.Fatal(err)
			}
			if *updateJournals {
				if err := os.WriteFile(tc.file, enc, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			golden, err := os.ReadFile(tc.file)
			if err != nil {
				t.Fatalf("%v (record it with -update-journals)", err)
			}
			if !bytes.Equal(enc, golden) {
				t.Errorf("the encoder no longer writes %s byte for byte: the journal format changed", tc.file)
			}
			got, err := DecodeJournal(golden)
			if err != nil {
				t.Fatal(err)
			}
			if got.Version != tc.j.Version || len(got.Steps) != len(tc.j.Steps) {
				t.Fatalf("decoded version %d, %d steps; want %d, %d", got.Version, len(got.Steps), tc.j.Version, len(tc.j.Steps))
			}
			kinds := map[policy.Kind]bool{}
			for i, st := range tc.j.Steps {
				for k, c := range st.Changes {
					g := got.Steps[i].Changes[k]
					if g.Kind != c.Kind || g.Key != c.Key || g.Before != c.Before || g.Value != c.Value {
						t.Fatalf("step %d change %d: %s %v %q->%q, want %s %v %q->%q", i, k, g.Key, g.Kind, g.Before, g.Value, c.Key, c.Kind, c.Before, c.Value)
					}
					kinds[c.Kind] = true
				}
			}
			if tc.j.Version == lagFreeVersion && len(kinds) < 12 {
				t.Errorf("the v2 golden journal covers only %d kinds", len(kinds))
			}
		})
	}
	// v1 has its own test, which rolls a host back from it:
	// TestGoldenV1JournalMigratesAndRollsBack.
}
