package snapshot

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"testing"
)

// linkTexts are the links of a kernel.json as decodeLinks hands them to
// fastLink: each link's object, as the file holds it.
func linkTexts(t testing.TB, b []byte) [][]byte {
	t.Helper()
	_, spans, ok := splitLinks(b)
	if !ok {
		t.Fatal("splitLinks failed")
	}
	var out [][]byte
	for _, sp := range spans {
		out = append(out, b[sp.start:sp.end])
	}
	return out
}

// sameAsSerial fails when Open's parallel read of kernel.json b (fastLink,
// and encoding/json for what it declines) differs from the serial read,
// which is encoding/json alone: the same state, counters and error.
func sameAsSerial(t *testing.T, b []byte) {
	t.Helper()
	pks, pstats, perr := parseKernel("kernel.json", b, true)
	sks, sstats, serr := parseKernel("kernel.json", b, false)
	if (perr == nil) != (serr == nil) || (perr != nil && perr.Error() != serr.Error()) {
		t.Fatalf("errors differ on\n%s\nparallel: %v\nserial:   %v", b, perr, serr)
	}
	if !reflect.DeepEqual(pks, sks) || !reflect.DeepEqual(pstats, sstats) {
		t.Fatalf("the parallel read differs from the serial one on\n%s", b)
	}
}

// inFile is a kernel.json holding one link, p0, of the given text.
func inFile(link []byte) []byte {
	return append(append([]byte(`{"links":{"p0":`), link...), "}}"...)
}

func TestFastLinkHasAPlan(t *testing.T) {
	if linkPlan() == nil {
		t.Fatal("no plan for LinkState: a type in it is one fastLink cannot decode, and every link goes to encoding/json")
	}
	if topPlan() == nil {
		t.Fatal("no plan for KernelState: kernel.json's top level goes to encoding/json")
	}
}

// Every link of every fixture host (the 64-port bench host is the
// cx6dx-ofed-factory link, renamed) takes the fast path, since capture
// writes the plain form, and the files read as the serial read reads them.
func TestFastLinkOnFixtureHosts(t *testing.T) {
	files, _ := filepath.Glob("../../testdata/hosts/*/" + KernelFile)
	if len(files) < 6 {
		t.Fatalf("found %d kernel.json files", len(files))
	}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, text := range linkTexts(t, b) {
			if _, _, ok := fastLink(text); !ok {
				t.Errorf("%s: fastLink declined a captured link:\n%s", f, text)
			}
		}
		if top, _, _ := splitLinks(b); !fastTop(top, &kernelFile{KernelState: &KernelState{}}) {
			t.Errorf("%s: fastTop declined the captured top level:\n%s", f, top)
		}
		sameAsSerial(t, b)
	}
}

// What fastLink declines, encoding/json decides: each of these reads
// differently from the plain form, or is an error. Either way the file
// reads as the serial read reads it.
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
		`{"pause":{"rx":truefalse}}`,                      // nor this, though it starts one
		`{"pause":{"rx":true0}}`,                          // nor this
		`{"unknown":1}`,                                   // not a field
		`{"Stats":{"rx_bytes":1}}`,                        // the counters, named otherwise
		`{"stats":{"rx_bytes":1},"stats":{"tx_bytes":2}}`, // twice: they merge
		`{"stats":{"rx_bytes":-1}}`,                       // a counter counterObject does not take
		`{"stats":null}`,                                  // no counters
		`{"link":{"index":4}`,                             // truncated
		`null`,                                            // a link of null
		`[]`,                                              // not an object
	} {
		if _, _, ok := fastLink([]byte(text)); ok {
			t.Errorf("fastLink took %s", text)
		}
		sameAsSerial(t, inFile([]byte(text)))
	}
}

// What fastLink takes beyond the captured form: white space, empty
// objects and lists, the extremes of each integer type, counters.
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
		`{"link":{"index":4},"stats":{"rx_bytes":1,"tx_pause_ctrl_phy":18446744073709551615},"pause":{"rx":true}}`,
		`{"stats":{}}`,
	} {
		if _, _, ok := fastLink([]byte(text)); !ok {
			t.Errorf("fastLink declined %s", text)
		}
		sameAsSerial(t, inFile([]byte(text)))
	}
}

// FuzzFastLink: a kernel.json of one link reads the same through fastLink
// (or encoding/json where it declines) as through encoding/json alone.
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
	f.Add([]byte(`{"link":{"index":4,"mtu":9000,"operstate":"up","admin_up":true},"stats":{"a":1}}`))
	f.Fuzz(func(t *testing.T, link []byte) {
		sameAsSerial(t, inFile(link))
	})
}

// The top level (all of kernel.json but the links) through fastTop: what
// it takes and what it declines read as the serial read reads them.
func TestFastTop(t *testing.T) {
	param := func(typ, value string) string {
		return `{"pci/0000:01:00.0":[{"name":"p","generic":false,"type":"` + typ + `","values":[{"cmode":1,"value":` + value + `}]}]}`
	}
	rdma := `{"links":[{"device":"mlx5_0","dev_index":1,"port":1,"state":"ACTIVE","physical_state":"LINK_UP","netdev":"p0"}]}`
	for _, c := range []struct {
		top  string
		fast bool
	}{
		{`"devlink":` + param("bool", "true"), true},
		{`"devlink":` + param("u32", "4294967295"), true},
		{`"devlink":` + param("u8", "-1"), true}, // a float64 to encoding/json too; Validate refuses it
		{`"devlink":` + param("string", `"eth"`), true},
		{`"devlink":{},"errors":{"devlink":"EOPNOTSUPP"},"not_captured":[],"rdma":` + rdma, true},
		{`"devlink":` + param("u32", "true0"), false}, // no literal, and no number after it
		{`"devlink":` + param("string", `true"eth"`), false},
		{`"devlink":` + param("u8", "true-1"), false},
		{`"devlink":` + param("u32", "1.5"), false},
		{`"devlink":` + param("u32", "1e3"), false},
		{`"devlink":` + param("u32", "null"), false},
		{`"devlink":` + param("u32", "{}"), false},
		{`"devlink":` + param("u32", "[1]"), false},
		{`"devlink":` + param("string", `"\u0065th"`), false},
		{`"devlink":{},"devlink":{}`, false},
		{`"Devlink":{}`, false},
		{`"rdma":null`, false},
		{`"unknown":1`, false},
	} {
		file := []byte(`{"links":{"p0":{"link":{"index":4,"mtu":1500,"operstate":"up","admin_up":true}}},` + c.top + `}`)
		top, _, ok := splitLinks(file)
		if !ok {
			t.Fatalf("splitLinks: %s", file)
		}
		ks := KernelState{}
		if got := fastTop(top, &kernelFile{KernelState: &ks}); got != c.fast {
			t.Errorf("fastTop %v on %s, want %v", got, top, c.fast)
		}
		sameAsSerial(t, file)
	}
}

// FuzzFastTop: a kernel.json whose top level, beside one link, is the
// input reads the same through fastTop as through encoding/json alone.
func FuzzFastTop(f *testing.F) {
	f.Add([]byte(`"devlink":{"pci/0000:01:00.0":[{"name":"p","generic":true,"type":"bool","values":[{"cmode":1,"value":true}]}]}`))
	f.Add([]byte(`"devlink":{"pci/0000:01:00.0":[{"name":"p","generic":false,"type":"u32","values":[{"cmode":0,"value":7}]}]},"errors":{"devlink":"EPERM"}`))
	f.Add([]byte(`"not_captured":["devlink"],"rdma":{"links":[{"device":"mlx5_0","dev_index":1,"port":1,"state":"ACTIVE","physical_state":"LINK_UP"}]}`))
	f.Fuzz(func(t *testing.T, top []byte) {
		sameAsSerial(t, append(append([]byte(`{"links":{"p0":{}},`), top...), '}'))
	})
}

// White space between two scalars keeps them two: the splitter that
// compacts a link's text for encoding/json used to join "10 24" into 1024,
// and the serial read took what encoding/json refuses on the file itself.
func TestWhiteSpaceKeepsScalarsApart(t *testing.T) {
	for _, link := range []string{
		`{"rings":{"rx":10 24}}`,
		`{"dcb":{"ets":{"prio_tc":[0,1 2,3,4,5,6,7]}}}`,
		`{"pause":{"rx":true false}}`,
		`{"driver":{"driver":"mlx5" "x"}}`,
		`{"stats":{"rx_bytes":1 2}}`,
	} {
		file := inFile([]byte(link))
		if json.Valid(file) {
			t.Fatalf("%s is valid JSON: the case tests nothing", file)
		}
		for _, byLink := range []bool{true, false} {
			if _, _, err := parseKernel("kernel.json", file, byLink); err == nil {
				t.Errorf("%s read (byLink %v)", file, byLink)
			}
		}
		sameAsSerial(t, file)
	}
	// And white space that separates nothing still goes.
	sameAsSerial(t, inFile([]byte(`{"rings": { "rx" : 1024 , "tx" : 512 } , "dcb" : { "ets" : { "prio_tc" : [ 0 , 1 , 2 , 3 , 4 , 5 , 6 , 7 ] } } }`)))
}

// A directory without snapshot.json is no snapshot, and Open reads none
// of what else it holds (a wrong --snapshot may name a directory of big
// files): its allocations stay far below the 64 MiB kernel.json here.
func TestOpenReadsNothingWithoutMeta(t *testing.T) {
	dir := t.TempDir()
	f, err := os.Create(filepath.Join(dir, KernelFile))
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Truncate(64 << 20); err != nil { // sparse
		t.Fatal(err)
	}
	f.Close()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	_, err = Open(dir)
	runtime.ReadMemStats(&after)
	if !errors.Is(err, ErrNotSnapshot) {
		t.Fatalf("got %v", err)
	}
	if n := after.TotalAlloc - before.TotalAlloc; n > 1<<20 {
		t.Errorf("Open allocated %d bytes for a directory without %s", n, MetaFile)
	}
}
