package cli

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/rocectl/rocectl/doc"
	"github.com/rocectl/rocectl/internal/testkit/fixturehost"
	"github.com/rocectl/rocectl/policy"
	"github.com/rocectl/rocectl/verify"
)

// compileSchema compiles docs/schema/<name>.json as a draft 2020-12
// schema, with "format" asserted (date-time).
func compileSchema(t *testing.T, name string) *jsonschema.Schema {
	t.Helper()
	path := repo(filepath.Join("docs/schema", name+".json"))
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	doc, err := jsonschema.UnmarshalJSON(f)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	c.AssertFormat()
	if err := c.AddResource(path, doc); err != nil {
		t.Fatal(err)
	}
	s, err := c.Compile(path)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return s
}

// validDoc checks that out is one JSON document valid under the schema,
// and returns it decoded.
func validDoc(t *testing.T, s *jsonschema.Schema, out string) map[string]any {
	t.Helper()
	doc, err := jsonschema.UnmarshalJSON(strings.NewReader(out))
	if err != nil {
		t.Fatalf("not JSON: %v\n%s", err, out)
	}
	if err := s.Validate(doc); err != nil {
		t.Fatalf("the document does not match %s:\n%v\n%s", s.Location, err, out)
	}
	var m map[string]any
	if err := json.Unmarshal([]byte(out), &m); err != nil {
		t.Fatal(err)
	}
	return m
}

func shippedHosts(t *testing.T) []string {
	hosts, _ := filepath.Glob(repo("testdata/hosts/*"))
	if len(hosts) < 4 {
		t.Fatalf("shipped hosts: %v", hosts)
	}
	return hosts
}

// badProfile has a range error and a cross-field error, in two files.
func badProfile(t *testing.T) string {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "base.toml"), []byte("[qos]\npfc_priorities = [3, 9]\n"), 0o600)
	p := filepath.Join(dir, "bad.toml")
	os.WriteFile(p, []byte("include = [\"base.toml\"]\n[ecn]\ncnp_priority = 3\n"), 0o600)
	return p
}

// The JSON documents of audit, apply, verify, nccl-env and topo, as the
// commands print them on the shipped hosts, match docs/schema/*.json:
// every field is documented there (additionalProperties is false), and
// what the schema requires is always there.
func TestJSONDocumentsMatchTheirSchemas(t *testing.T) {
	report, verifyS, ncclS, topoS := compileSchema(t, "report"), compileSchema(t, "verify"), compileSchema(t, "nccl-env"), compileSchema(t, "topo")
	profiles, _ := filepath.Glob(repo("profiles/*.toml"))
	for _, h := range shippedHosts(t) {
		for _, p := range profiles {
			name := filepath.Base(h) + "/" + filepath.Base(p)
			t.Run("audit/"+name, func(t *testing.T) {
				_, out, _ := run(t, nil, "audit", "-o", "json", "-p", p, "--snapshot", h)
				validDoc(t, report, out)
			})
			t.Run("nccl-env/"+name, func(t *testing.T) {
				_, out, _ := run(t, nil, "nccl-env", "-o", "json", "-p", p, "--snapshot", h)
				validDoc(t, ncclS, out)
			})
		}
		t.Run("apply-dry-run/"+filepath.Base(h), func(t *testing.T) {
			_, out, _ := run(t, nil, "apply", "--dry-run", "-o", "json", "-p", repo("profiles/connectx-lossless.toml"), "--snapshot", h)
			validDoc(t, report, out)
		})
		t.Run("verify/"+filepath.Base(h), func(t *testing.T) {
			_, out, _ := run(t, nil, "verify", "-o", "json", "-p", repo("profiles/connectx-lossless.toml"), "--snapshot", h)
			validDoc(t, verifyS, out)
		})
		t.Run("topo/"+filepath.Base(h), func(t *testing.T) {
			_, out, _ := run(t, nil, "topo", "-o", "json", "--snapshot", h)
			validDoc(t, topoS, out)
		})
	}
	// Two-host traffic needs verbs and a peer, which these tests have not:
	// the document of a two-host run, encoded as verify encodes it, with
	// the pause deltas of the end's port (verify's TestTwoHostRecordsPauseDeltas
	// records them from real counter samples).
	t.Run("verify/two-host", func(t *testing.T) {
		d := verifyResult{Profile: "connectx-lossless", OK: true, Mismatches: []verify.Mismatch{}, Unknown: []policy.Unknown{},
			Errors: []string{}, Diagnostics: []doc.Diagnostic{}, Traffic: []*verify.LoopbackResult{{
				Device: "mlx5_0", Port: 1, GIDIndex: 3, GID: "::ffff:192.168.77.1", PeerGID: "::ffff:192.168.77.2", PathMTU: 4096,
				TrafficClass: 106, WriteGbps: 92.5, WriteMsgs: 1000, WriteBytes: 65536000, LatP50: 4100, LatP99: 9800, SendMsgs: 1000,
				CounterDeltas: map[string]int64{"np_cnp_sent": 12},
				PauseDeltas: []verify.PauseDelta{
					{Netdev: "ens1f0np0", PauseCounter: verify.PauseCounter{Priority: 3, Direction: "rx", Frames: 40, FramesName: "rx_prio3_pause",
						DurationUs: 1500, DurationName: "rx_prio3_pause_duration", HasDuration: true}},
					{Netdev: "ens1f0np0", PauseCounter: verify.PauseCounter{Priority: verify.GlobalPause, Direction: "tx", FramesName: "tx_pause_ctrl_phy"}},
				},
				PauseWindow: 3 * time.Second}}}
		var buf bytes.Buffer
		if err := writeJSON(&buf, d.document()); err != nil {
			t.Fatal(err)
		}
		validDoc(t, verifyS, buf.String())
	})
	t.Run("topo/hgx", func(t *testing.T) {
		dirs, _ := filepath.Glob(repo("nic/testdata/pci/*hgx*"))
		if len(dirs) == 0 {
			t.Fatal("no HGX PCI fixture")
		}
		code, out, _ := run(t, nil, "--root", dirs[0], "topo", "-o", "json")
		doc := validDoc(t, topoS, out)
		if code != ExitOK || len(doc["gpus"].([]any)) == 0 || len(doc["affinity"].([]any)) == 0 {
			t.Errorf("exit %d, %d GPUs", code, len(doc["gpus"].([]any)))
		}
	})
	// A real apply (simulated kernel) with a soak: journal_id, applied,
	// the guard's report.
	t.Run("apply", func(t *testing.T) {
		root, sim := fixturehost.Copy(t, "cx6dx-ofed-factory")
		code, out, errs := run(t, sim, "--root", root, "--state-dir", t.TempDir(), "apply", "-o", "json", "--soak", "300ms", "-p", repo("profiles/connectx-lossless.toml"))
		if code != ExitOK {
			t.Fatalf("exit %d\n%s%s", code, out, errs)
		}
		doc := validDoc(t, report, out)
		if doc["journal_id"] == "" || doc["applied"] != true || doc["guard"] == nil {
			t.Errorf("journal_id %v, applied %v, guard %v", doc["journal_id"], doc["applied"], doc["guard"])
		}
	})
	// A refused profile: every document carries the diagnostics.
	bad := badProfile(t)
	snap := repo("testdata/hosts/cx6dx-ofed-factory")
	for _, c := range []struct {
		s    *jsonschema.Schema
		args []string
	}{
		{report, []string{"audit", "-o", "json", "-p", bad, "--snapshot", snap}},
		{report, []string{"apply", "--dry-run", "-o", "json", "-p", bad, "--snapshot", snap}},
		{verifyS, []string{"verify", "-o", "json", "-p", bad, "--snapshot", snap}},
		{ncclS, []string{"nccl-env", "-o", "json", "-p", bad, "--snapshot", snap}},
	} {
		t.Run("refused/"+c.args[0], func(t *testing.T) {
			code, out, _ := run(t, nil, c.args...)
			doc := validDoc(t, c.s, out)
			if code != ExitError || len(doc["errors"].([]any)) == 0 || len(doc["diagnostics"].([]any)) != 2 {
				t.Errorf("exit %d, errors %v, diagnostics %v", code, doc["errors"], doc["diagnostics"])
			}
		})
	}
}

// Structured errors: each diagnostic of a refused profile carries its
// file, line, column, key, message and severity, where the text output
// draws a caret.
func TestJSONDiagnosticsAreStructured(t *testing.T) {
	bad := badProfile(t)
	code, out, errs := run(t, nil, "audit", "-o", "json", "-p", bad, "--snapshot", repo("testdata/hosts/cx6dx-ofed-factory"))
	var rep doc.Plan
	if err := json.Unmarshal([]byte(out), &rep); err != nil || code != ExitError {
		t.Fatalf("exit %d %v\n%s%s", code, err, out, errs)
	}
	// Sorted by file, then position.
	want := []doc.Diagnostic{
		{File: bad, Line: 3, Column: 16, Key: "ecn.cnp_priority", Message: "CNP priority 3 is also a PFC data priority", Allowed: "a priority not in qos.pfc_priorities [3]", Severity: "error"},
		{File: filepath.Join(filepath.Dir(bad), "base.toml"), Line: 2, Column: 22, Key: "qos.pfc_priorities[1]", Message: "9 is out of range", Allowed: "0..7", Severity: "error"},
	}
	if len(rep.Diagnostics) != len(want) {
		t.Fatalf("diagnostics %+v", rep.Diagnostics)
	}
	for i := range want {
		if rep.Diagnostics[i] != want[i] {
			t.Errorf("diagnostic %d:\n got %+v\nwant %+v", i, rep.Diagnostics[i], want[i])
		}
	}
	// The text form is unchanged: the rendered diagnostics, caret included.
	if len(rep.Errors) != 1 || !strings.Contains(rep.Errors[0], "    2 | pfc_priorities = [3, 9]\n      |                      ^") {
		t.Errorf("errors %q", rep.Errors)
	}
	// A loaded profile's warnings are diagnostics with severity warning.
	warn := filepath.Join(t.TempDir(), "warn.toml")
	os.WriteFile(warn, []byte("[qos]\ntrust = \"dscp\"\npfc_priorities = [3]\n[roce]\ndefault_tos = 0\n"), 0o600)
	_, out, _ = run(t, nil, "audit", "-o", "json", "-p", warn, "--snapshot", repo("testdata/hosts/cx6dx-ofed-factory"))
	rep = doc.Plan{}
	if err := json.Unmarshal([]byte(out), &rep); err != nil || len(rep.Diagnostics) == 0 {
		t.Fatalf("%v\n%s", err, out)
	}
	if d := rep.Diagnostics[0]; d.Severity != "warning" || d.Key != "roce.default_tos" || d.Line != 5 || d.File != warn {
		t.Errorf("warning diagnostic %+v", d)
	}
}
