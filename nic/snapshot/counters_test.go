package snapshot

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"syscall"
	"testing"
)

// openKernel writes a snapshot whose kernel.json is kernel and opens it.
func openKernel(t *testing.T, kernel string) (*Snapshot, error) {
	t.Helper()
	dir := t.TempDir()
	meta, err := json.Marshal(Meta{Format: Format})
	if err != nil {
		t.Fatal(err)
	}
	for name, b := range map[string][]byte{MetaFile: meta, KernelFile: []byte(kernel)} {
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return Open(dir)
}

// TestCountersAsEncodingJSON: a link's counters, decoded when asked for,
// are what encoding/json makes of them as a map[string]uint64, and what it
// rejects fails Open, naming kernel.json. fast says which inputs the
// scanner takes itself, so that both paths are known to be exercised.
func TestCountersAsEncodingJSON(t *testing.T) {
	for _, tc := range []struct {
		stats string
		fast  bool
	}{
		{`{"rx_bytes": 5, "tx_prio3_pause": 18446744073709551615}`, true},
		{"{\n\t\"a\" :0 ,\r\n \"b\":1 }", true},
		{`{}`, true},
		{`{"[0]: rx_ucast_packets": 7, "a": 1, "a": 2}`, true}, // bnxt names; the last duplicate wins
		{`{"esc\"aped": 1, "tab\tbed": 2}`, false},
		{`{"größe": 3}`, false},
		{`{"a": null}`, false},
		{`{"a": 1.5}`, false},
		{`{"a": 1e3}`, false},
		{`{"a": -1}`, false},
		{`{"a": "1"}`, false},
		{`{"a": 18446744073709551616}`, false},
		{`[1]`, false},
		{`null`, false},
	} {
		if got := scanCounters([]byte(tc.stats), nil); got != tc.fast {
			t.Errorf("%s: scanned %v, want %v", tc.stats, got, tc.fast)
		}
		var want map[string]uint64
		wantErr := json.Unmarshal([]byte(tc.stats), &want)
		s, err := openKernel(t, `{"links":{"e":{"link":{"index":1,"mtu":1500,"min_mtu":68,"max_mtu":9000,"operstate":"up","admin_up":true,"mac":""},"stats":`+tc.stats+`}}}`)
		if wantErr != nil {
			if err == nil || !strings.Contains(err.Error(), KernelFile) {
				t.Errorf("%s: Open: %v, want an error naming %s (encoding/json: %v)", tc.stats, err, KernelFile, wantErr)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s: Open: %v", tc.stats, err)
			continue
		}
		got, err := s.Kernel().Stats("e")
		if want == nil { // null: no data
			if !errors.Is(err, syscall.EOPNOTSUPP) {
				t.Errorf("%s: Stats: %v %v, want EOPNOTSUPP", tc.stats, got, err)
			}
		} else if err != nil || !reflect.DeepEqual(got, want) {
			t.Errorf("%s: Stats: %v %v, want %v", tc.stats, got, err, want)
		}
		if st := s.State().Links["e"]; !reflect.DeepEqual(st.Stats, want) || st.Link == nil || st.Link.MTU != 1500 {
			t.Errorf("%s: State: %+v, want stats %v", tc.stats, st, want)
		}
	}
}

// TestCountersReplay: Stats hands out a fresh map each call, a recorded
// errno still wins over recorded counters, and a link with counters only
// (no other member) opens.
func TestCountersReplay(t *testing.T) {
	s, err := openKernel(t, `{"links":{"a":{"stats":{"x":1}},"b":{"stats":{"x":1},"errors":{"stats":"EBUSY"}},"c":{}}}`)
	if err != nil {
		t.Fatal(err)
	}
	k := s.Kernel()
	m, err := k.Stats("a")
	if err != nil || m["x"] != 1 {
		t.Fatalf("a: %v %v", m, err)
	}
	m["x"] = 99
	if again, _ := k.Stats("a"); again["x"] != 1 {
		t.Error("Stats returns shared state")
	}
	if _, err := k.Stats("b"); !errors.Is(err, syscall.EBUSY) {
		t.Errorf("b: %v, want the recorded EBUSY", err)
	}
	if _, err := k.Stats("c"); !errors.Is(err, syscall.EOPNOTSUPP) {
		t.Errorf("c: %v, want EOPNOTSUPP", err)
	}
	if _, err := k.Stats("d"); !errors.Is(err, syscall.ENODEV) {
		t.Errorf("d: %v, want ENODEV", err)
	}
	if _, err := k.Link("a"); !errors.Is(err, syscall.EOPNOTSUPP) {
		t.Errorf("a link: %v, want EOPNOTSUPP", err)
	}
}
