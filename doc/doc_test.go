package doc

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"
)

func ptr[T any](v T) *T { return &v }

// samples are one filled-in value of each document, with the decoder
// that reads it back.
var samples = []struct {
	name   string
	schema string // docs/schema/<schema>.json; "" where there is none yet
	doc    any
	decode func([]byte) (any, error)
}{
	{"plan", "report", &Plan{SchemaVersion: SchemaVersion, Profile: "connectx-lossless", ProfileHash: "sha256:ab", Changed: true,
		Changes:     []Change{{Key: "ens1f0np0.qos.pfc_priorities", Scope: "ens1f0np0", Netdev: "ens1f0np0", Before: "none", After: "3", Absent: true, Note: "n"}},
		Unsupported: []Unsupported{{Key: "k", Scope: "s", Reason: "r"}}, Errors: []string{"e"}, Refused: []Refused{{Key: "k", Error: "no"}},
		Unknown:     []Unknown{{Key: "k", Scope: "s", Reason: "r", Want: "w", Inferred: "i", Note: "n"}},
		Pending:     []Pending{{Key: "k", Scope: "s", Want: "w", Current: "c", Action: "a"}},
		Disruptions: map[string][]string{"ens1f0np0": {"link toggle"}}, InSync: 4, MatchedPorts: ptr(1), Ports: json.RawMessage(`[{"netdev":"ens1f0np0"}]`),
		Applied: true, RolledBack: true, Restored: []string{"a"}, Unchanged: []string{"b"}, JournalID: "j1", Confirm: "2026-01-02T03:04:05Z",
		Message: "m", Warnings: []string{"w"}, QoSChain: []ChainProblem{{Side: "switch", Port: "ens1f0np0", Switch: "sw1 (aa:bb) port swp1", Source: "lldp", Key: "pfc", Message: "m"}}, Diagnostics: []Diagnostic{{File: "p.toml", Line: 1, Column: 2, Key: "k", Message: "m", Allowed: "a", Severity: "error"}},
		NotWatched: []string{"veth0"}, Guard: &Guard{Polls: 3, WorstOccupied: 0.5, WorstWhere: "priority 3 (rx)", Discards: map[string]uint64{"x": 1},
			ReadErrors: map[string]string{"y": "z"}, NotWatched: []string{"veth0"}, Ports: map[string]*GuardPort{"ens1f0np0": {Watched: true, WorstOccupancy: 0.5,
				WorstWhere: "w", Counters: []PauseCounter{{Priority: 3, Direction: "rx", Frames: 9, FramesName: "rx_prio3_pause", DurationUs: 7, DurationName: "d", HasDuration: true}}}}},
		Host: "gpu-001", GeneratedAt: "2026-01-02T03:04:05Z"},
		func(b []byte) (any, error) { return DecodePlan(b) }},
	{"verify", "verify", &Verify{SchemaVersion: SchemaVersion, Profile: "p", ProfileHash: "h", OK: false, MatchedPorts: ptr(1), Message: "m",
		Mismatches: []Mismatch{{Key: "k", Want: "w", Have: "h", Reason: "r"}}, Unknown: []Unknown{{Key: "k", Scope: "s", Reason: "r", Want: "w"}},
		Traffic: []*Traffic{{Device: "mlx5_0", Port: 1, GIDIndex: 3, GID: "::ffff:192.168.77.1", PeerGID: "::ffff:192.168.77.2", PathMTU: 4096,
			TrafficClass: 106, WriteGbps: 92.5, WriteMsgs: 10, WriteBytes: 640, LatP50: 4100, LatP99: 9800, SendMsgs: 10,
			CounterDeltas: map[string]int64{"np_cnp_sent": 12}, PauseDeltas: []PauseDelta{{Netdev: "ens1f0np0", PauseCounter: PauseCounter{Priority: -1, Direction: "tx", Frames: 1}}},
			PauseWindow: 3 * time.Second, Errors: []CompletionError{{Op: "write", Status: 12, VendorErr: 0x81, QPN: 0x11, WRID: 7}}}},
		Errors: []string{"e"}, Diagnostics: []Diagnostic{}},
		func(b []byte) (any, error) { return DecodeVerify(b) }},
	{"peer", "peer", &Peer{SchemaVersion: SchemaVersion, Profile: "p", Host: "h", Message: "m", CheckedAt: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC),
		Ports: []PeerResult{{Netdev: "ens1f0np0", Driver: "mlx5_core", Verdict: "mismatch", Reason: "r", FirmwareLLDP: "on", Source: "lldp",
			HeardAt: ptr(time.Date(2026, 1, 2, 3, 4, 0, 0, time.UTC)), DCBX: "ieee", Mismatches: []PeerMismatch{{Key: "pfc", Switch: "4", Profile: "3"}},
			Unchecked: []string{"willing"}, Frame: json.RawMessage(`{"system_name":"leaf-a12"}`), DriverPeer: json.RawMessage(`{"ieee":{}}`)}}},
		func(b []byte) (any, error) { return DecodePeer(b) }},
	{"nccl-env", "nccl-env", &NCCLEnv{SchemaVersion: SchemaVersion, Profile: "p", ProfileHash: "h", Complete: true,
		Variables: map[string]string{"NCCL_IB_TC": "106"}, Order: []string{"NCCL_IB_TC"}, GIDIndex: &GIDChoice{Mode: "pinned", Index: ptr(3), Reason: "r"},
		Errors: []string{}, Diagnostics: []Diagnostic{}, Message: "m", Written: "/etc/nccl.conf", Warnings: []string{"w"}, Notes: []string{"n"},
		Host: "gpu-001", GeneratedAt: "2026-01-02T03:04:05Z"},
		func(b []byte) (any, error) { return DecodeNCCLEnv(b) }},
	{"topo", "topo", &Topo{SchemaVersion: SchemaVersion, Topology: &Topology{GPUs: json.RawMessage(`[]`), NICs: json.RawMessage(`[]`),
		Pairs: json.RawMessage(`[]`), Degraded: json.RawMessage(`[]`), Affinity: json.RawMessage(`[]`), HCAOrder: "=mlx5_0"}, Errors: []string{}},
		func(b []byte) (any, error) { return DecodeTopo(b) }},
	{"topo/unread", "topo", &Topo{SchemaVersion: SchemaVersion, Errors: []string{"no /sys/bus/pci"}},
		func(b []byte) (any, error) { return DecodeTopo(b) }},
	{"watch", "", &Watch{SchemaVersion: SchemaVersion, Time: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC), IntervalS: 1,
		Ports: []WatchPort{{Netdev: "ens1f0np0", Bond: "bond0", Slaves: []string{"a"}, RDMADevice: "mlx5_0", Port: 1, Link: "up", Error: "e",
			Priorities:  []WatchPrio{{Priority: 3, RX: &WatchPause{PausePct: ptr(1.5), FramesPerS: ptr(2.0), Frames: 9}, TX: &WatchPause{}, RXDiscardsPerS: ptr(0.0), RXBufferDiscardsPerS: ptr(1.0)}},
			GlobalPause: &WatchPausePair{RX: &WatchPause{Frames: 1}}, CNPSentPerS: ptr(1.0), CNPHandledPerS: ptr(2.0), ECNMarkedPerS: ptr(3.0),
			RXDiscardsPerS: ptr(4.0), TXDiscardsPerS: ptr(5.0), StormWarningEvents: ptr(uint64(1)), StormErrorEvents: ptr(uint64(2)), StormEventsNew: ptr(uint64(3))}}},
		func(b []byte) (any, error) { return DecodeWatch(b) }},
	{"version", "", &Version{SchemaVersion: SchemaVersion, Version: "v1.2.0", Revision: "0123", Modified: true, CommitTime: "t", BuildDate: "d",
		GoVersion: "go1.24", Platform: "linux/amd64", Verbs: true},
		func(b []byte) (any, error) { return DecodeVersion(b) }},
}

// Each document survives encode → decode → encode unchanged, and decodes
// to the value it was made from: a field the writer sets, the reader
// gets.
func TestRoundTrip(t *testing.T) {
	for _, s := range samples {
		t.Run(s.name, func(t *testing.T) {
			var buf bytes.Buffer
			if err := Encode(&buf, s.doc); err != nil {
				t.Fatal(err)
			}
			got, err := s.decode(buf.Bytes())
			if err != nil {
				t.Fatalf("decode: %v\n%s", err, buf.String())
			}
			var again bytes.Buffer
			if err := Encode(&again, got); err != nil {
				t.Fatal(err)
			}
			if again.String() != buf.String() {
				t.Errorf("re-encoded differs:\n%s\nwant\n%s", again.String(), buf.String())
			}
			// Raw parts keep the indentation they were read with:
			// compare what decodes from the compact form.
			var compact bytes.Buffer
			if err := json.Compact(&compact, buf.Bytes()); err != nil {
				t.Fatal(err)
			}
			if got, err = s.decode(compact.Bytes()); err != nil || !reflect.DeepEqual(got, s.doc) {
				t.Errorf("decoded %+v\nwant %+v", got, s.doc)
			}
			// Every field of the sample is set, so that a field the
			// encoder drops (a wrong tag, an omitempty) shows.
			for _, f := range jsonFields(reflect.TypeOf(s.doc).Elem()) {
				if s.name == "topo/unread" {
					break
				}
				if !strings.Contains(buf.String(), `"`+f+`":`) {
					t.Errorf("the sample's JSON lacks %q:\n%s", f, buf.String())
				}
			}
		})
	}
}

// jsonFields are a struct type's JSON field names in order, embedded
// structs' fields inline.
func jsonFields(t reflect.Type) []string {
	var out []string
	for i := range t.NumField() {
		f := t.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if name == "-" || !f.IsExported() {
			continue
		}
		if f.Anonymous && name == "" {
			ft := f.Type
			if ft.Kind() == reflect.Pointer {
				ft = ft.Elem()
			}
			out = append(out, jsonFields(ft)...)
			continue
		}
		if name == "" {
			name = f.Name
		}
		out = append(out, name)
	}
	return out
}

// Each JSON Schema in docs/schema lists exactly the top-level fields of
// its Go type, and marks required exactly the fields the type always
// writes (no omitempty), so that neither can change without the other.
func TestSchemasListTheFields(t *testing.T) {
	seen := map[string]bool{}
	for _, s := range samples {
		if s.schema == "" || seen[s.schema] {
			continue
		}
		seen[s.schema] = true
		t.Run(s.schema, func(t *testing.T) {
			b, err := os.ReadFile(filepath.Join("..", "docs", "schema", s.schema+".json"))
			if err != nil {
				t.Fatal(err)
			}
			var sch struct {
				Properties map[string]json.RawMessage `json:"properties"`
				Required   []string                   `json:"required"`
			}
			if err := json.Unmarshal(b, &sch); err != nil {
				t.Fatal(err)
			}
			typ := reflect.TypeOf(s.doc).Elem()
			fields := jsonFields(typ)
			for _, f := range fields {
				if _, ok := sch.Properties[f]; !ok {
					t.Errorf("%s.json lacks %q, a field of doc.%s", s.schema, f, typ.Name())
				}
			}
			for p := range sch.Properties {
				if !slices.Contains(fields, p) {
					t.Errorf("%s.json has %q, which doc.%s does not", s.schema, p, typ.Name())
				}
			}
			for _, r := range sch.Required {
				if !slices.Contains(fields, r) {
					t.Errorf("%s.json requires %q, which doc.%s does not have", s.schema, r, typ.Name())
				}
			}
		})
	}
	// Every schema file belongs to a document here, or to the fleet view
	// (report.Fleet, checked in package report).
	files, _ := filepath.Glob(filepath.Join("..", "docs", "schema", "*.json"))
	for _, f := range files {
		name := strings.TrimSuffix(filepath.Base(f), ".json")
		if !seen[name] && name != "fleet" {
			t.Errorf("docs/schema/%s.json describes no document of package doc", name)
		}
	}
}
