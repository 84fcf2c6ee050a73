package apply

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"os"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/rocectl/rocectl/host"
	"github.com/rocectl/rocectl/nic/dcb"
	"github.com/rocectl/rocectl/policy"
	"github.com/rocectl/rocectl/port"
	"github.com/rocectl/rocectl/statedir"
)

const goldenV1 = "testdata/journal-v1-connectx-lossless.json"

// goldenRoot is the fixture root the golden v1 journal was written for.
func goldenRoot(t *testing.T, data []byte) string {
	t.Helper()
	var v struct{ Root string }
	if err := json.Unmarshal(data, &v); err != nil || v.Root == "" {
		t.Fatalf("golden journal: root %q, %v", v.Root, err)
	}
	return v.Root
}

// A v1 journal written by the rocectl before format v2 (a real apply of
// connectx-lossless on the factory host) is migrated by kind name and
// rolls the host back to exactly what it was.
func TestGoldenV1JournalMigratesAndRollsBack(t *testing.T) {
	data, err := os.ReadFile(goldenV1)
	if err != nil {
		t.Fatal(err)
	}
	r := newRig(t, "cx6dx-ofed-factory", "connectx-lossless.toml")
	before := r.state(t)
	if err := r.apply(t); err != nil {
		t.Fatal(err)
	}
	if r.sim.Config() == before.kernel {
		t.Fatal("the apply changed nothing")
	}
	// The golden journal was written for another copy of the fixture: the
	// root is the one thing to point at this one (v1 has no checksum).
	data = bytes.ReplaceAll(data, []byte(goldenRoot(t, data)), []byte(r.root))
	s := Store{Store: statedir.Store{Dir: t.TempDir()}}
	j, err := DecodeJournal(data)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(s.DoneDir(), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(s.DonePath(j.ID), data, 0o600); err != nil {
		t.Fatal(err)
	}
	j, err = s.Load(j.ID)
	if err != nil {
		t.Fatal(err)
	}
	if j.Version != 1 || len(j.Steps) != len(r.txnSteps(t)) || j.State != StateCommitted {
		t.Fatalf("migrated journal: version %d, %d steps (want %d), state %s", j.Version, len(j.Steps), len(r.txnSteps(t)), j.State)
	}
	// Kinds by name: the same steps the current code plans, kind for kind.
	for i, st := range r.txnSteps(t) {
		for k, c := range st.Changes {
			if got := j.Steps[i].Changes[k]; got.Kind != c.Kind || got.Key != c.Key {
				t.Fatalf("step %d change %d: %s %v, want %s %v", i, k, got.Key, got.Kind, c.Key, c.Kind)
			}
		}
	}
	if err := Rollback(r.h, j, Options{Store: s, Retries: 1}); err != nil {
		t.Fatal(err)
	}
	r.assertRestored(t, before, "after the v1 rollback")
	// Saved back in the current format.
	raw, err := os.ReadFile(s.DonePath(j.ID))
	if err != nil {
		t.Fatal(err)
	}
	// Saved back as version 2: the host has no RoCE LAG, so nothing needs
	// version 3, and a rocectl that knows only 2 can still read it.
	if j2, err := DecodeJournal(raw); err != nil || j2.Version != lagFreeVersion || j2.State != StateRolledBack {
		t.Fatalf("saved journal: %+v, %v; want version %d, rolled back", j2, err, lagFreeVersion)
	}
}

func (r *rig) txnSteps(t *testing.T) []host.Step {
	t.Helper()
	steps, err := host.Steps(r.plan)
	if err != nil {
		t.Fatal(err)
	}
	return steps
}

// reseal recomputes a v2 journal's checksum after edit changed its body:
// what a careless hand edit with the checksum fixed up would produce.
func reseal(t *testing.T, data []byte, edit func(body map[string]any)) []byte {
	t.Helper()
	var env envelope
	if err := json.Unmarshal(data, &env); err != nil {
		t.Fatal(err)
	}
	var body map[string]any
	if err := json.Unmarshal(env.Journal, &body); err != nil {
		t.Fatal(err)
	}
	edit(body)
	b, _ := json.Marshal(body)
	sum := sha256.Sum256(b)
	env.Journal, env.SHA256 = b, hex.EncodeToString(sum[:])
	out, _ := json.Marshal(env)
	return out
}

// Defect 3: a journal cut to valid JSON, or with an edited before-value,
// was acted on as if whole. Each is refused now, and so is a format or a
// kind this rocectl does not know.
func TestDamagedJournalsAreRefused(t *testing.T) {
	r := newRig(t, "cx6dx-ofed-factory", "connectx-lossless.toml")
	txn, err := Begin(r.h, r.d, r.plan, "test", r.opts)
	if err != nil {
		t.Fatal(err)
	}
	good, err := os.ReadFile(r.opts.Store.JournalPath(txn.J.ID))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := DecodeJournal(good); err != nil {
		t.Fatalf("the journal Begin wrote does not verify: %v", err)
	}
	n := len(txn.J.Steps)
	golden, err := os.ReadFile(goldenV1)
	if err != nil {
		t.Fatal(err)
	}
	cut := func(body map[string]any) { body["steps"] = body["steps"].([]any)[:n/2] }
	for name, tc := range map[string]struct {
		data []byte
		want error
	}{
		"empty file":   {nil, ErrJournalDamaged},
		"cut mid-file": {good[:len(good)/2], ErrJournalDamaged},
		"steps cut to valid JSON, checksum kept": {func() []byte {
			b := reseal(t, good, cut)
			var env, orig envelope
			_ = json.Unmarshal(b, &env)
			_ = json.Unmarshal(good, &orig)
			env.SHA256 = orig.SHA256
			out, _ := json.Marshal(env)
			return out
		}(), ErrJournalDamaged},
		"steps cut, checksum redone": {reseal(t, good, cut), ErrJournalDamaged},
		"before-value edited":        {bytes.Replace(good, []byte(`"before":"1500"`), []byte(`"before":"1280"`), 1), ErrJournalDamaged},
		"unknown version":            {bytes.Replace(good, []byte(`"version":2`), []byte(`"version":4`), 1), ErrJournalVersion},
		"no version":                 {bytes.Replace(good, []byte(`"version":2,`), nil, 1), ErrJournalDamaged},
		"unknown kind": {reseal(t, good, func(b map[string]any) {
			b["steps"].([]any)[0].(map[string]any)["changes"].([]any)[0].(map[string]any)["kind"] = "frobnicate"
		}), ErrJournalDamaged},
		"kind as a number": {reseal(t, good, func(b map[string]any) {
			b["steps"].([]any)[0].(map[string]any)["changes"].([]any)[0].(map[string]any)["kind"] = 0
		}), ErrJournalDamaged},
		"v1 cut to 20 steps": {func() []byte {
			var v map[string]any
			_ = json.Unmarshal(golden, &v)
			v["steps"] = v["steps"].([]any)[:20]
			out, _ := json.Marshal(v)
			return out
		}(), ErrJournalDamaged},
		"v1 unknown kind ordinal": {bytes.Replace(golden, []byte(`"Kind":0,`), []byte(`"Kind":99,`), 1), ErrJournalDamaged},
	} {
		t.Run(name, func(t *testing.T) {
			if bytes.Equal(tc.data, good) {
				t.Fatal("the edit changed nothing")
			}
			j, err := DecodeJournal(tc.data)
			if !errors.Is(err, tc.want) {
				t.Fatalf("DecodeJournal = %v, %v; want %v", j, err, tc.want)
			}
			// Through the store: refused with the way out.
			if err := os.WriteFile(r.opts.Store.JournalPath(txn.J.ID), tc.data, 0o600); err != nil {
				t.Fatal(err)
			}
			_, err = Recover(r.h, r.opts.Store, false, time.Now())
			var je *JournalError
			if !errors.As(err, &je) || !errors.Is(err, tc.want) || !strings.Contains(err.Error(), "rocectl rollback --abandon "+txn.J.ID) {
				t.Fatalf("Recover = %v; want a JournalError naming the way out", err)
			}
		})
	}
	// A hand pretty-printed journal still verifies.
	var pretty bytes.Buffer
	if err := json.Indent(&pretty, good, "", "  "); err != nil {
		t.Fatal(err)
	}
	if _, err := DecodeJournal(pretty.Bytes()); err != nil {
		t.Errorf("pretty-printed journal: %v", err)
	}
}

func FuzzDecodeJournal(f *testing.F) {
	golden, err := os.ReadFile(goldenV1)
	if err != nil {
		f.Fatal(err)
	}
	f.Add(golden)
	j, err := DecodeJournal(golden)
	if err != nil {
		f.Fatal(err)
	}
	v2, err := encodeJournal(j)
	if err != nil {
		f.Fatal(err)
	}
	f.Add(v2)
	lag, err := encodeJournal(lagJournal())
	if err != nil {
		f.Fatal(err)
	}
	f.Add(lag)
	for _, g := range goldenJournalFiles(f) {
		f.Add(g)
	}
	cc, err := encodeJournal(ccJournal())
	if err != nil {
		f.Fatal(err)
	}
	f.Add(cc)
	f.Add([]byte(`{"version":2}`))
	f.Add([]byte(`{"version":3}`))
	f.Add([]byte(`{"version":1,"id":"x","state":"applying","steps":[{"changes":[]}]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		j, err := DecodeJournal(data)
		if err != nil {
			if !errors.Is(err, ErrJournalDamaged) && !errors.Is(err, ErrJournalVersion) {
				t.Fatalf("error %v is neither damaged nor version", err)
			}
			return
		}
		// Decoded means verified: whole, every step with every field a
		// rollback uses (no port setting without its port), and the
		// same after a round trip.
		if err := j.check(); err != nil {
			t.Fatalf("decoded journal fails its check: %v", err)
		}
		for i, st := range j.Steps {
			if err := st.Validate(); err != nil {
				t.Fatalf("decoded journal's step %d is invalid: %v", i+1, err)
			}
		}
		out, err := encodeJournal(j)
		if err != nil {
			t.Fatalf("decoded journal does not encode: %v", err)
		}
		j2, err := DecodeJournal(out)
		if err != nil {
			t.Fatalf("re-encoded journal does not decode: %v", err)
		}
		j2.Version = j.Version
		if !reflect.DeepEqual(normalize(j), normalize(j2)) {
			t.Fatalf("round trip changed the journal:\n%+v\n%+v", j, j2)
		}
	})
}

// normalize makes nil and empty slices compare equal (JSON does not keep
// the difference).
func normalize(j *Journal) *Journal {
	c := *j
	b, _ := json.Marshal(c)
	var out Journal
	_ = json.Unmarshal(b, &out)
	return &out
}

// lagJournal is a journal with steps on the two slaves of a RoCE LAG bond:
// PFC on both, and the APP table with each slave's saved DSCP entries.
func lagJournal() *Journal {
	slave := func(nd string) *port.Port {
		return &port.Port{Netdev: nd, RDMADevice: "mlx5_bond_0", PortNum: 1, Driver: "mlx5_core", PCI: "0000:3b:00." + nd[len(nd)-3:len(nd)-2], RoCEv2GID: -1, Master: "bond0"}
	}
	s0, s1 := slave("ens1f0np0"), slave("ens1f1np1")
	ch := func(p *port.Port, name string, k policy.Kind, before, after string) policy.Change {
		return policy.Change{Setting: policy.Setting{Key: p.Netdev + "." + name, Scope: p.Netdev, Name: name, Kind: k, Value: after, From: name, Port: p}, Before: before}
	}
	return &Journal{Version: JournalVersion, ID: "20260101T000000Z-000001", Profile: "lag", ProfileHash: "h", Root: "/",
		Started: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC), State: StateCommitted, Done: 2, PID: 1,
		Steps: []host.Step{
			{Scope: "bond0", Group: "pfc", Changes: []policy.Change{ch(s0, "qos.pfc", policy.KindPFC, "[]", "[3]"), ch(s1, "qos.pfc", policy.KindPFC, "[]", "[3]")},
				Slaves: []host.SlaveState{{Netdev: "ens1f0np0"}, {Netdev: "ens1f1np1"}}},
			{Scope: "bond0", Group: "app", Changes: []policy.Change{ch(s0, "qos.trust", policy.KindTrust, "dscp", "dscp"), ch(s1, "qos.trust", policy.KindTrust, "pcp", "dscp")},
				Slaves: []host.SlaveState{
					{Netdev: "ens1f0np0", DSCPApps: &host.AppTable{Entries: []dcb.App{{Selector: dcb.SelDSCP, Priority: 3, Protocol: 46}}}},
					{Netdev: "ens1f1np1", DSCPApps: &host.AppTable{Entries: []dcb.App{}}}}},
		}}
}

// A journal with LAG steps is version 3 and decodes to what was encoded;
// version 2 has no place for a step's slaves, and a LAG step that does
// not cover its changes exactly is refused.
func TestLAGJournalVersion3(t *testing.T) {
	j := lagJournal()
	data, err := encodeJournal(j)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(data, []byte(`"version":3`)) || !bytes.Contains(data, []byte(`"slaves":[{"netdev":"ens1f0np0","dscp_apps":{"entries":[{"selector":5,"priority":3,"protocol":46}]}}`)) {
		t.Fatalf("encoded: %s", data)
	}
	got, err := DecodeJournal(data)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(normalize(got), normalize(j)) {
		t.Errorf("round trip:\n got %+v\nwant %+v", got.Steps, j.Steps)
	}
	step := func(i int) func(b map[string]any) map[string]any {
		return func(b map[string]any) map[string]any { return b["steps"].([]any)[i].(map[string]any) }
	}
	for name, edit := range map[string]func(b map[string]any){
		"slave listed twice": func(b map[string]any) {
			s := step(0)(b)
			s["slaves"] = append(s["slaves"].([]any), s["slaves"].([]any)[0])
		},
		"slave without a change": func(b map[string]any) {
			s := step(0)(b)
			s["changes"] = s["changes"].([]any)[:1]
		},
		"change on no slave": func(b map[string]any) {
			s := step(0)(b)
			s["slaves"] = s["slaves"].([]any)[:1]
		},
		"APP table outside the slaves": func(b map[string]any) {
			step(1)(b)["dscp_apps"] = map[string]any{"entries": []any{}}
		},
	} {
		t.Run(name, func(t *testing.T) {
			if _, err := DecodeJournal(reseal(t, data, edit)); !errors.Is(err, ErrJournalDamaged) {
				t.Errorf("DecodeJournal = %v, want damaged", err)
			}
		})
	}
	t.Run("as version 2", func(t *testing.T) {
		v2 := bytes.Replace(data, []byte(`"version":3`), []byte(`"version":2`), 1)
		if _, err := DecodeJournal(v2); !errors.Is(err, ErrJournalDamaged) || !strings.Contains(err.Error(), "not in format version 2") {
			t.Errorf("DecodeJournal = %v, want damaged: not in version 2", err)
		}
	})
}

// A bnxt_re congestion-control step keeps what its attributes held
// (host.CCSaved): version 3, decoded as encoded, and refused as damaged
// when an attribute's name is not one file name (undo writes each below
// the port's cc directory) or in a version 2 journal.
func TestCCJournalVersion3(t *testing.T) {
	j := ccJournal()
	data, err := encodeJournal(j)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(data, []byte(`"version":3`)) || !bytes.Contains(data, []byte(`"cc":{"attrs":[{"name":"roce_prio","value":"0x5"}`)) {
		t.Fatalf("encoded: %s", data)
	}
	got, err := DecodeJournal(data)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(normalize(got), normalize(j)) {
		t.Errorf("round trip:\n got %+v\nwant %+v", got.Steps, j.Steps)
	}
	for _, name := range []string{"../../../../etc/passwd", "", ".."} {
		bad := reseal(t, data, func(b map[string]any) {
			st := b["steps"].([]any)[0].(map[string]any)
			st["cc"].(map[string]any)["attrs"].([]any)[0].(map[string]any)["name"] = name
		})
		if _, err := DecodeJournal(bad); !errors.Is(err, ErrJournalDamaged) {
			t.Errorf("attribute %q: DecodeJournal = %v, want damaged", name, err)
		}
	}
	v2 := bytes.Replace(data, []byte(`"version":3`), []byte(`"version":2`), 1)
	if _, err := DecodeJournal(v2); !errors.Is(err, ErrJournalDamaged) {
		t.Errorf("as version 2: %v, want damaged", err)
	}
}

// ccJournal is a journal with one bnxt_re cc step and its saved
// attributes.
func ccJournal() *Journal {
	p := &port.Port{Netdev: "enp202s0f1np1", RDMADevice: "bnxt_re0", PortNum: 1, Driver: "bnxt_en", PCI: "0000:ca:00.1", RoCEv2GID: -1}
	c := policy.Change{Setting: policy.Setting{Key: "bnxt_re0.ecn.rp.enable.3", Scope: "bnxt_re0", Name: "ecn.rp.enable.3", Kind: policy.KindECNEnable, Arg: "rp/3", Value: "on", From: "ecn.rp_priorities", Port: p}, Before: "off"}
	j := &Journal{Version: JournalVersion, ID: "20260101T000000Z-000002", Profile: "cc", ProfileHash: "h", Root: "/",
		Started: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC), State: StateCommitted, Done: 1, PID: 1,
		Steps: []host.Step{{Scope: "enp202s0f1np1", Group: "cc", Changes: []policy.Change{c},
			CC: &host.CCSaved{Attrs: []host.CCAttr{{Name: "roce_prio", Value: "0x5"}, {Name: "ecn_enable", Value: "0"}}}}}}
	return j
}
