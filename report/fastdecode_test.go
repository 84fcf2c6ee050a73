package report

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/rocectl/rocectl/doc"
)

// genericPlan is the decode decodePlan replaces: encoding/json over the
// whole document less planUnread; when that fails, encoding/json's error
// on the whole document (wholeError), written out here.
func genericPlan(data []byte) (*doc.Plan, error) {
	r, err := scanShape(data)
	if err != nil {
		return nil, err
	}
	p, err := doc.DecodePlan(unread(data, r, planUnread))
	if err != nil {
		if _, werr := doc.DecodePlan(data); werr != nil {
			err = werr
		}
	}
	return p, err
}

// fastPlan is decodePlan with the fast paths it took.
func fastPlan(t *testing.T, data []byte) (*doc.Plan, error) {
	t.Helper()
	r, err := scanShape(data)
	if err != nil {
		return nil, err
	}
	return decodePlan(data, r)
}

// TestFastDecodeMatchesEncodingJSON: every audit and apply document of
// the test corpora, the 8-port factory audit included, decodes to the
// same doc.Plan by fastArray as by encoding/json alone.
func TestFastDecodeMatchesEncodingJSON(t *testing.T) {
	var files []string
	for _, pat := range []string{"testdata/corpus/*.audit.json", "testdata/corpus/*.apply.json", "testdata/nccl/*.audit.json", "../cli/testdata/*.json"} {
		m, _ := filepath.Glob(pat)
		files = append(files, m...)
	}
	n := 0
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		r, err := scanShape(data)
		if err != nil || isNull(r.changes) && isNull(r.unsupported) {
			continue // not a plan document
		}
		n++
		want, werr := genericPlan(data)
		got, gerr := fastPlan(t, data)
		if (werr == nil) != (gerr == nil) || werr != nil && werr.Error() != gerr.Error() {
			t.Errorf("%s: error %v, encoding/json says %v", f, gerr, werr)
			continue
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%s: fast decode differs from encoding/json's", f)
		}
	}
	if n < 10 {
		t.Fatalf("only %d plan documents found", n)
	}
}

// TestFastDecodeEdgeCases: what rocectl never writes but a hand-edited or
// damaged file may hold gives encoding/json's values and its error text,
// whether fastArray takes it or leaves it.
func TestFastDecodeEdgeCases(t *testing.T) {
	wrap := func(changes string) []byte {
		return []byte(`{"profile":"p","changed":true,"changes":` + changes + `,"unsupported":[{"key":"a.b","scope":"a","reason":"no \"x\""}],"unknown":[{"key":"k","scope":"s","reason":"r","want":"3"}],"qos_chain":[{"side":"host","port":"e","key":"trust","message":"a \u2192 b"},{"side":"switch","switch":"sw1 Eth1/1","source":"lldp","key":"pfc","message":"m"}],"errors":[],"in_sync":0,"rolled_back":false,"host":"h","generated_at":"2026-12-04T00:00:00Z"}`)
	}
	for name, changes := range map[string]string{
		"plain":           `[{"key":"e.link.mtu","scope":"e","netdev":"e","before":"1500","after":"9000"}]`,
		"escapes":         `[{"key":"e.x","scope":"e","before":"a\"b\\c\u00e9","after":"\t","note":"1 \u2192 2"}]`,
		"utf8 and bad":    "[{\"key\":\"e.x\",\"scope\":\"e\",\"before\":\"→\",\"after\":\"\xff\"}]",
		"nulls":           `[{"key":null,"scope":"e","before":null,"after":"1","before_absent":null}]`,
		"absent true":     `[{"key":"k","scope":"e","before":"","after":"1","before_absent":true}]`,
		"empty":           `[]`,
		"null":            `null`,
		"other case key":  `[{"Key":"k","SCOPE":"e","before":"0","after":"1"}]`,
		"unknown member":  `[{"key":"k","scope":"e","before":"0","after":"1","extra":{"a":[1,2]}}]`,
		"number":          `[{"key":1,"scope":"e","before":"0","after":"1"}]`,
		"bool as string":  `[{"key":"k","scope":"e","before":"0","after":"1","before_absent":"yes"}]`,
		"object":          `{"key":"k"}`,
		"string":          `"x"`,
		"control char":    "[{\"key\":\"a\x01b\",\"scope\":\"e\",\"before\":\"0\",\"after\":\"1\"}]",
		"bad escape":      `[{"key":"a\qb","scope":"e","before":"0","after":"1"}]`,
		"missing colon":   `[{"key" "k"}]`,
		"trailing comma":  `[{"key":"k"},]`,
		"bad literal":     `[{"key":"k","before_absent":tru}]`,
		"element not obj": `[["k"]]`,
	} {
		t.Run(name, func(t *testing.T) {
			data := wrap(changes)
			want, werr := genericPlan(data)
			got, gerr := fastPlan(t, data)
			if (werr == nil) != (gerr == nil) || werr != nil && werr.Error() != gerr.Error() {
				t.Fatalf("error %v, encoding/json says %v", gerr, werr)
			}
			if !reflect.DeepEqual(got, want) {
				t.Errorf("fast %+v\nencoding/json %+v", got, want)
			}
		})
	}
	// The fast path is taken for rocectl's own form (a test that could
	// not tell would pass with fastArray never used).
	r, _ := scanShape(wrap(`[{"key":"k","scope":"e","before":"0","after":"1","before_absent":true}]`))
	if c, ok := fastArray(r.changes, new(interner), changeField); !ok || len(c) != 1 || !c[0].Absent || c[0].After != "1" {
		t.Errorf("fastArray on rocectl's form: %+v, %v", c, ok)
	}
	if q, ok := fastArray(r.qosChain, new(interner), chainField); !ok || len(q) != 2 || q[0].Message != "a → b" {
		t.Errorf("fastArray on qos_chain[]: %+v, %v", q, ok)
	}
	if _, ok := fastArray(r.unsupported, new(interner), unsupportedField); !ok {
		t.Error("fastArray refused unsupported[] with an escaped quote")
	}
	if _, ok := fastArray([]byte(`[{"Key":"k"}]`), new(interner), changeField); ok {
		t.Error("fastArray took a key of another case (encoding/json's rules decide those)")
	}
}

// TestFastDecodeShadowedMembers: a top-level member that encoding/json
// decodes into the same field under another spelling (case, Unicode
// folding, escapes) decides that field as encoding/json decides it: the
// fast path, which reads the exact name only, used to put the exact
// member's changes (or none) over them.
func TestFastDecodeShadowedMembers(t *testing.T) {
	const a, b = `[{"key":"a","scope":"e","before":"0","after":"1"}]`, `[{"key":"b","scope":"e","before":"0","after":"2"}]`
	for name, body := range map[string]string{
		"other case only":      `"Changes":` + b,
		"exact then other":     `"changes":` + a + `,"CHANGES":` + b,
		"other then exact":     `"CHANGES":` + b + `,"changes":` + a,
		"escaped":              `"changes":` + a + `,"change\u0073":` + b,
		"long s":               `"changes":` + a + `,"changeſ":` + b,
		"exact twice":          `"changes":` + a + `,"changes":` + b,
		"unknown other case":   `"Unknown":[{"key":"k","want":"3"}]`,
		"qos_chain other case": `"qos_chain":[],"QoS_Chain":[{"side":"host","message":"m"}]`,
	} {
		t.Run(name, func(t *testing.T) {
			data := []byte(`{"changed":true,` + body + `,"unsupported":[]}`)
			want, werr := genericPlan(data)
			got, gerr := fastPlan(t, data)
			if werr != nil || gerr != nil {
				t.Fatalf("errors: fast %v, encoding/json %v", gerr, werr)
			}
			if !reflect.DeepEqual(got, want) {
				t.Errorf("fast %+v\nencoding/json %+v", got, want)
			}
		})
	}
}

// TestFastDecodeKnowsEveryField: each json member of the element types
// has its case in the field function. A field added to package doc
// without one would not be lost (fastArray leaves such an array to
// encoding/json) but every document would take the slow decode again.
func TestFastDecodeKnowsEveryField(t *testing.T) {
	check := func(name string, typ reflect.Type, fieldOf func(key []byte) field) {
		for i := range typ.NumField() {
			f := typ.Field(i)
			tag, _, _ := strings.Cut(f.Tag.Get("json"), ",")
			if tag == "" || tag == "-" {
				continue
			}
			got := fieldOf([]byte(tag))
			switch {
			case f.Type.Kind() == reflect.Bool && got.b != nil && got.s == nil:
			case f.Type.Kind() == reflect.String && got.s != nil && got.b == nil:
			default:
				t.Errorf("%s: member %q (field %s, %s) has no case of its kind in its field function", name, tag, f.Name, f.Type)
			}
		}
	}
	check("changes[]", reflect.TypeFor[doc.Change](), func(k []byte) field { return changeField(new(doc.Change), k) })
	check("unsupported[]", reflect.TypeFor[doc.Unsupported](), func(k []byte) field { return unsupportedField(new(doc.Unsupported), k) })
	check("unknown[]", reflect.TypeFor[doc.Unknown](), func(k []byte) field { return unknownField(new(doc.Unknown), k) })
	check("qos_chain[]", reflect.TypeFor[doc.ChainProblem](), func(k []byte) field { return chainField(new(doc.ChainProblem), k) })
}

// FuzzFastDecode: whatever the document, decodePlan gives what
// encoding/json gives, value for value and error for error; the fast path
// only ever decides how fast.
func FuzzFastDecode(f *testing.F) {
	for _, pat := range []string{"testdata/corpus/*.audit.json", "testdata/corpus/*.apply.json"} {
		m, _ := filepath.Glob(pat)
		for _, p := range m {
			b, err := os.ReadFile(p)
			if err != nil {
				f.Fatal(err)
			}
			f.Add(b)
		}
	}
	for _, s := range []string{
		`{"changes":[{"key":"k","scope":"e","before":"0","after":"1","before_absent":true}],"unknown":[{"key":"k","want":"3"}]}`,
		`{"changes":[{"key":"a\u00e9\"","note":"\ud83d\ude00"}],"qos_chain":[{"side":"switch","message":"m"}]}`,
		`{"changes":[{"key":"k","key":"j"}],"unsupported":null}`,
		`{"changes":[{"KEY":"k"}],"unsupported":[{"reason":"\x"}]}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		r, err := scanShape(data)
		if err != nil {
			return // not an object: Parse reports it before any decode
		}
		want, werr := genericPlan(data)
		got, gerr := decodePlan(data, r)
		if (werr == nil) != (gerr == nil) || werr != nil && werr.Error() != gerr.Error() {
			t.Fatalf("%q: error %v, encoding/json says %v", data, gerr, werr)
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("%q: fast %+v\nencoding/json %+v", data, got, want)
		}
	})
}
