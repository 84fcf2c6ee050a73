package snapshot

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"testing"
)

// referenceLink decodes a link's text as Open did before fastLink, and
// does for whatever fastLink declines: encoding/json, strictly.
func referenceLink(b []byte) (*linkFile, error) {
	var lf *linkFile
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&lf); err != nil {
		return nil, err
	}
	if dec.More() {
		return nil, errTrailing
	}
	return lf, nil
}

var errTrailing = os.ErrInvalid

// checkFastLink fails when fastLink takes text encoding/json refuses or
// reads differently. It returns whether fastLink took it.
func checkFastLink(t *testing.T, b []byte) bool {
	t.Helper()
	fast, ok := fastLink(b)
	if !ok {
		return false
	}
	ref, err := referenceLink(b)
	if err != nil {
		t.Fatalf("fastLink took what encoding/json refuses (%v):\n%s", err, b)
	}
	if !reflect.DeepEqual(fast, ref) {
		t.Fatalf("fastLink and encoding/json differ on\n%s\nfast: %+v\njson: %+v", b, fast.LinkState, ref.LinkState)
	}
	return true
}

// linkTexts are the links of a kernel.json as decodeLinks hands them to
// fastLink: split, compact, counters cut.
func linkTexts(t testing.TB, b []byte) [][]byte {
	t.Helper()
	_, spans, ok := splitLinks(b)
	if !ok {
		t.Fatal("splitLinks failed")
	}
	var out [][]byte
	for _, sp := range spans {
		text, _, ok := splitLink(b, sp, nil)
		if !ok {
			t.Fatalf("splitLink %s failed", sp.name)
		}
		out = append(out, text)
	}
	return out
}

// Every link of every fixture host (the 64-port bench host is the
// cx6dx-ofed-factory link, renamed) decodes through fastLink (the form
// capture writes is the plain one), to exactly what encoding/json makes of
// it.
func TestFastLinkAsEncodingJSON(t *testing.T) {
	if linkPlan() == nil {
		t.Fatal("no plan for LinkState: a type in it is one fastLink cannot decode, and every link goes to encoding/json")
	}
	files, _ := filepath.Glob("../../testdata/hosts/*/" + KernelFile)
	if len(files) < 6 {
		t.Fatalf("found %d kernel.json files", len(files))
	}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		texts := linkTexts(t, b)
		for _, text := range texts {
			if !checkFastLink(t, text) {
				t.Errorf("%s: fastLink declined a captured link:\n%s", f, text)
			}
		}
		// And Open reads the file as the serial read does, which is all
		// encoding/json.
		fast, _, err := parseKernel(f, b, true)
		if err != nil {
			t.Fatal(err)
		}
		serial, _, err := parseKernel(f, b, false)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(fast, serial) {
			t.Errorf("%s: the parallel read with fastLink differs from the serial read", f)
		}
	}
}

// What fastLink declines, encoding/json decides: each of these reads
// differently from the plain form, or is an error.
func TestFastLinkDeclines(t *testing.T) {
	for _, text := range []string{
		`{"link":{"Index":4}}`,                            // encoding/json matches names case-insensitively
		`{"link":{"index":4,"index":5}}`,                  // a repeated member
		`{"link":{"index":4},"link":{"mtu":9000}}`,        // merges into the first
		`{"priv_flags":{"a":true,"a":false}}`,             // a repeated key
		`{"link":null}`,                                   // null
		`{"link":{"mac":null}}`,                           // null leaves a value as it was
		`{"driver":{"driver":"ml\u0078"}}`,                // an escape
		`{"driver":{"driver":"caf` + "\xc3\xa9" + `"}}`,   // not ASCII
		`{"link":{"mtu":9000.0}}`,                         // a fraction
		`{"link":{"mtu":9e3}}`,                            // an exponent
		`{"link":{"mtu":09000}}`,                          // a leading zero
		`{"link":{"mtu":-}}`,                              // no digits
		`{"rings":{"rx":-1}}`,                             // negative, unsigned
		`{"rings":{"rx":4294967296}}`,                     // out of uint32
		`{"link":{"index":9223372036854775808}}`,          // out of int
		`{"link":{"index":18446744073709551616}}`,         // out of uint64
		`{"dcb":{"ets":{"prio_tc":[0,1,2,3,4,5,6]}}}`,     // short: encoding/json zeroes the rest
		`{"dcb":{"ets":{"prio_tc":[0,1,2,3,4,5,6,7,8]}}}`, // long: it drops the rest
		`{"dcb":{"app_trust":"BQE="}}`,                    // []byte is base64
		`{"dcb":{"ets":{"willing":true}}}`,                // a bool for a number
		`{"pause":{"rx":1}}`,                              // a number for a bool
		`{"pause":{"rx":truex}}`,                          // not a literal
		`{"unknown":1}`,                                   // not a field
		`{"stats":{"rx_bytes":1}}`,                        // linkFile's own (cut by the splitter)
		`{"link":{"index":4}} {}`,                         // trailing data
		`{"link":{"index":4}`,                             // truncated
		`null`,                                            // a link of null
		`[]`,                                              // not an object
	} {
		if _, ok := fastLink([]byte(text)); ok {
			t.Errorf("fastLink took %s", text)
		}
	}
}

// What fastLink takes beyond the captured form: white space, empty
// objects and lists, the extremes of each integer type.
func TestFastLinkTakes(t *testing.T) {
	for _, text := range []string{
		`{}`, // no member: encoding/json leaves the embedded LinkState nil
		` { "link" : { "index" : -9223372036854775808 , "mtu" : 0 } } `,
		`{"link":{"index":9223372036854775807}}`,
		`{"dcb":{"pfc":{"requests":[18446744073709551615,0,0,0,0,0,0,0]}}}`,
		`{"priv_flags":{},"errors":{},"not_captured":[],"dcb":{"apps":[]}}`,
		`{"dcb":{"apps":[{"selector":5,"priority":3,"protocol":26},{"selector":5,"priority":0,"protocol":0}]}}`,
		`{"inferred":{"pause":{"value":"in use","from":["a.txt:37"]}},"pfc_prevention_tout":65535}`,
		`{"dcb":{"peer":{"app":{"entries":[]}},"cee_peer":{"pg":{"pg_bw":[1,2,3,4,5,6,7,8],"prio_pg":[0,0,0,0,0,0,0,0]}}}}`,
	} {
		if !checkFastLink(t, []byte(text)) {
			t.Errorf("fastLink declined %s", text)
		}
	}
}

// FuzzFastLink: whatever fastLink takes, encoding/json reads the same.
func FuzzFastLink(f *testing.F) {
	files, _ := filepath.Glob("../../testdata/hosts/*/" + KernelFile)
	for _, file := range files {
		b, err := os.ReadFile(file)
		if err != nil {
			f.Fatal(err)
		}
		for _, text := range linkTexts(f, b) {
			f.Add(text)
		}
	}
	f.Add([]byte(`{"link":{"index":4,"mtu":9000,"operstate":"up","admin_up":true}}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		checkFastLink(t, b)
	})
}
