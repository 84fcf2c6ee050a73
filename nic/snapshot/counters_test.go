package snapshot

import (
	"bytes"
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

// decodeWhole is how Open read kernel.json before counters were split
// off: the whole file into a KernelState.
func decodeWhole(t *testing.T, kernel []byte) (*KernelState, error) {
	t.Helper()
	var ks KernelState
	if err := decodeJSON(KernelFile, kernel, &ks); err != nil {
		return nil, err
	}
	if ks.Links == nil {
		ks.Links = map[string]*LinkState{}
	}
	return &ks, ks.Validate()
}

// TestSplitCountersFixtures: on every fixture host the counters are cut
// off (not left to the slow path) and Open's state is what decoding the
// whole file gives.
func TestSplitCountersFixtures(t *testing.T) {
	dirs, err := filepath.Glob("../../testdata/hosts/*/" + KernelFile)
	if err != nil || len(dirs) < 3 {
		t.Fatalf("fixture hosts: %v %v", dirs, err)
	}
	for _, path := range dirs {
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		want, err := decodeWhole(t, b)
		if err != nil {
			t.Fatal(err)
		}
		rest, cut, ok := splitCounters(b)
		withStats := 0
		for _, ls := range want.Links {
			if ls.Stats != nil {
				withStats++
			}
		}
		var compact bytes.Buffer
		if err := json.Compact(&compact, rest); err != nil || !bytes.Equal(compact.Bytes(), rest) {
			t.Errorf("%s: the rest is not compact JSON (%v)", path, err)
		}
		if !ok || len(cut) != withStats || withStats == 0 || bytes.Contains(rest, []byte(`"stats"`)) {
			t.Errorf("%s: split ok=%v, %d of %d counter sets cut", path, ok, len(cut), withStats)
		}
		s, err := Open(filepath.Dir(path))
		if err != nil {
			t.Fatal(err)
		}
		if got := s.State(); !reflect.DeepEqual(got, want) {
			t.Errorf("%s: Open's state differs from the whole file's", path)
		}
	}
}

// kernelLink is a link member with data, for the shapes below.
const kernelLink = `"link":{"index":1,"mtu":1500,"min_mtu":68,"max_mtu":9000,"operstate":"up","admin_up":true,"mac":""}`

// kernelShapes are kernel.json texts whose counters stand where they may,
// however spelt, with the mistakes around them Open must report; split
// says whether splitCounters's fast path takes the text.
var kernelShapes = map[string]struct {
	kernel string
	split  bool
}{
	"first":             {`{"links":{"e":{"stats":{"a":1},` + kernelLink + `}}}`, true},
	"last":              {`{"links":{"e":{` + kernelLink + `, "stats" : {"a":1} }}}`, true},
	"only":              {`{"links":{"e":{"stats":{"a":1}}}}`, true},
	"middle":            {`{"links":{"e":{"pause":{"autoneg":false,"rx":true,"tx":true},"stats":{"a":1},` + kernelLink + `}}}`, true},
	"twice, merged":     {`{"links":{"e":{` + kernelLink + `,"stats":{"a":1},"stats":{"b":2}}}}`, true},
	"twice apart":       {`{"links":{"e":{"stats":{"a":1},` + kernelLink + `,"stats":{"b":2}}}}`, true},
	"capitalised":       {`{"links":{"e":{"Stats":{"a":1},` + kernelLink + `}}}`, true},
	"escaped name":      {`{"links":{"e":{"st\u0061ts":{"a":1},` + kernelLink + `}}}`, false},
	"null counters":     {`{"links":{"e":{` + kernelLink + `,"stats":null}}}`, true},
	"repeated link":     {`{"links":{"e":{"stats":{"a":1}},"e":{` + kernelLink + `}}}`, true},
	"two links members": {`{"links":{"e":{"stats":{"a":1}}},"links":{"f":{"stats":{"b":2}}}}`, true},
	"string with brace": {`{"links":{"e":{"stats":{"}\"{":1},"errors":{"link":"EIO"}}}}`, true},
	"null after":        {`{"links":{"e":{"stats":{"a":1},"stats":null,"Stats":{"b":2}}}}`, true},
	"nested in errors":  {`{"links":{"e":{"errors":{"stats":"EBUSY"},"stats":{"a":1}}}}`, true},
	"bad counter":       {`{"links":{"e":{"stats":{"a":-1}}}}`, true},
	"leading zero":      {`{"links":{"e":{"stats":{"a":01}}}}`, true},
	"trailing comma":    {`{"links":{"e":{"stats":{"a":1,}}}}`, true},
	"bad rest":          {`{"links":{"e":{"stats":{"a":1},"mtu":1}}}`, true},
	"trailing data":     {`{"links":{"e":{"stats":{"a":1}}}} {}`, true},
	"truncated":         {`{"links":{"e":{"stats":{"a":1}`, false},
	"null link":         {`{"links":{"e":null,"f":{"stats":{"a":1}}}}`, true},
	"not an object":     {`[]`, false},
	"scalars around":    {`{"errors":{"devlink":"EOPNOTSUPP"},"links":{"e":{"pfc_prevention_tout":8000,"stats":{"a":1},"priv_flags":{"x":true,"y":false}},"f":null}}`, true},
	"spaces in strings": {`{"links":{"e f":{"driver":{"driver":"m x","version":" 1 ","firmware":"a\" b","bus_info":""},"stats":{"a":1}}}}`, true},
	"unclosed string":   {`{"links":{"e":{"stats":{"a":1}},"x`, false},
	// Read link by link (decodeLinks), or not, with a mistake in the
	// second link, past the first, or at the top level.
	"two links":            {`{"links":{"e":{"stats":{"a":1},` + kernelLink + `},"f":{"stats":{"b":2}}},"errors":{"devlink":"EIO"}}`, true},
	"unknown field later":  {`{"links":{"e":{` + kernelLink + `},"f":{"mtu":1}}}`, true},
	"wrong type later":     {`{"links":{"e":{` + kernelLink + `},"f":{"link":{"mtu":"big"}}}}`, true},
	"two wrong types":      {`{"links":{"e":{"link":{"mtu":"big"}},"f":{"link":{"index":"one"}}}}`, true},
	"type then unknown":    {`{"links":{"e":{"link":{"mtu":"big"}},"f":{"x":1}}}`, true},
	"unknown at the top":   {`{"links":{"e":{` + kernelLink + `}},"x":1}`, true},
	"top type, link error": {`{"errors":[],"links":{"e":{"x":1}}}`, true},
	"bad counter later":    {`{"links":{"e":{"stats":{"a":1}},"f":{"stats":{"a":"1"}}}}`, true},
	"invalid UTF-8 name":   {"{\"links\":{\"e\xff\":{\"stats\":{\"a\":1}}}}", false},
	"control in a name":    {"{\"links\":{\"e\x01\":{}}}", false},
	"links then null":      {`{"links":{"e":{"stats":{"a":1}}},"Links":null}`, true},
	"empty links":          {`{"links":{}}`, true},
	"no links":             {`{"errors":{"devlink":"EIO"}}`, true},
	"empty link":           {`{"links":{"e":{}}}`, true},
	"unbalanced link":      {`{"links":{"e":{"link":{"mtu":1]},"f":{}}}`, true},
	"link not an object":   {`{"links":{"e":[],"f":{}}}`, true},
	"invalid link":         {`{"links":{"e":{"errors":{"link":"EIO"},"link":null}}}`, true},
}

// TestSplitCountersShapes: wherever "stats" stands in a link, however it
// is spelt, Open reads what decoding the whole file reads, and rejects
// what it rejects.
func TestSplitCountersShapes(t *testing.T) {
	for name, tc := range kernelShapes {
		if _, _, ok := splitCounters([]byte(tc.kernel)); ok != tc.split {
			t.Errorf("%s: split %v, want %v", name, ok, tc.split)
		}
		want, wantErr := decodeWhole(t, []byte(tc.kernel))
		s, err := openKernel(t, tc.kernel)
		if (err == nil) != (wantErr == nil) {
			t.Errorf("%s: Open: %v, whole file: %v", name, err, wantErr)
			continue
		}
		if err != nil {
			if !strings.Contains(err.Error(), KernelFile) {
				t.Errorf("%s: %v does not name %s", name, err, KernelFile)
			}
			continue
		}
		if got := s.State(); !reflect.DeepEqual(got, want) {
			t.Errorf("%s: state %+v, whole file %+v", name, got.Links, want.Links)
		}
	}
}

// TestKernelByLinkAsSerial: Open's link-by-link read of kernel.json
// (decodeLinks, in parallel) gives the state, or the very error, of the
// serial read, on every fixture host and every shape, and it is the read
// the fixtures and a well-formed file get.
func TestKernelByLinkAsSerial(t *testing.T) {
	docs := map[string][]byte{}
	for name, tc := range kernelShapes {
		docs[name] = []byte(tc.kernel)
	}
	fixtures, err := filepath.Glob("../../testdata/hosts/*/" + KernelFile)
	if err != nil || len(fixtures) < 3 {
		t.Fatalf("fixture hosts: %v %v", fixtures, err)
	}
	for _, f := range fixtures {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		docs[f] = b
	}
	for _, name := range append(fixtures, "two links", "empty link", "repeated link") {
		var ks KernelState
		if _, ok := decodeLinks(KernelFile, docs[name], &kernelFile{KernelState: &ks}); !ok {
			t.Errorf("%s: not read link by link", name)
		}
	}
	errText := func(err error) string {
		if err == nil {
			return ""
		}
		return err.Error()
	}
	for name, b := range docs {
		got, gotStats, err := parseKernel(KernelFile, b, true)
		want, wantStats, wantErr := parseKernel(KernelFile, b, false)
		if errText(err) != errText(wantErr) {
			t.Errorf("%s: link by link: %v; serially: %v", name, err, wantErr)
			continue
		}
		if err == nil && (!reflect.DeepEqual(got, want) || !reflect.DeepEqual(gotStats, wantStats)) {
			t.Errorf("%s: link by link %+v %v; serially %+v %v", name, got.Links, gotStats, want.Links, wantStats)
		}
	}
}

// TestReadMetaAsEncodingJSON: snapshot.json with its unreadable list read
// apart gives the Meta, or the failure, that decoding it whole gives.
func TestReadMetaAsEncodingJSON(t *testing.T) {
	fixtures, err := filepath.Glob("../../testdata/hosts/*/" + MetaFile)
	if err != nil || len(fixtures) < 3 {
		t.Fatalf("fixture hosts: %v %v", fixtures, err)
	}
	docs := map[string]string{}
	for _, f := range fixtures {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		docs[f] = string(b)
	}
	const head = `{"format":"rocectl-snapshot/1","captured_at":"","hostname":"h","kernel":"","rocectl_version":"","source":""`
	for name, doc := range map[string]string{
		"absent":        head + `}`,
		"empty":         head + `, "unreadable": [ ]}`,
		"null":          head + `,"unreadable":null}`,
		"plain":         head + `,"unreadable":["/sys/a: EINVAL", "/sys/b: EIO"]}`,
		"escaped":       head + `,"unreadable":["/sys/\"a\": EINVAL","\u00e9"]}`,
		"non-ASCII":     head + `,"unreadable":["/sys/é: EIO"]}`,
		"repeated":      head + `,"unreadable":["a"],"Unreadable":["b","c"]}`,
		"not a string":  head + `,"unreadable":["a",1]}`,
		"not a list":    head + `,"unreadable":"a"}`,
		"unknown field": head + `,"unreadable":[],"x":1}`,
		"trailing data": head + `,"unreadable":[]} []`,
		"first member":  `{"unreadable":["a"],` + head[1:] + `}`,
	} {
		docs[name] = doc
	}
	for name, doc := range docs {
		var want Meta
		wantErr := decodeJSON(MetaFile, []byte(doc), &want)
		got, err := parseMeta(MetaFile, []byte(doc))
		switch {
		case (err == nil) != (wantErr == nil):
			t.Errorf("%s: %v, whole file: %v", name, err, wantErr)
		case err != nil && !strings.Contains(err.Error(), MetaFile):
			t.Errorf("%s: %v does not name %s", name, err, MetaFile)
		case err == nil && !reflect.DeepEqual(got, want):
			t.Errorf("%s: %+v, whole file %+v", name, got, want)
		}
	}
	if _, ok := plainStrings(docs["plain"][len(head)+len(`,"unreadable":`) : len(docs["plain"])-1]); !ok {
		t.Error("a list of plain strings is left to encoding/json")
	}
}
