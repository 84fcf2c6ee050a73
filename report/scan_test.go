package report

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
)

// The scan agrees with encoding/json: a valid object's members are the
// keys and values encoding/json decodes (its raw values, byte for byte),
// and what the scan rejects encoding/json rejects too. Parse never panics.
func FuzzMembers(f *testing.F) {
	files, _ := filepath.Glob(filepath.Join("testdata", "corpus", "*.json"))
	for _, p := range files {
		b, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	for _, s := range []string{`{}`, ` { "a" : [1, {"b": "\"}"}], "c": null } `, `{"a": "\u00e9\\"}`, `{"a": 1,}`, `{"a" 1}`, `{"a": [}`, `{"a": 1} x`, `[1]`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		Parse("fuzz.json", data) // must not panic
		got := map[string]json.RawMessage{}
		err := members(data, func(k, v []byte) {
			var key string
			if json.Unmarshal(append(append([]byte{'"'}, k...), '"'), &key) == nil {
				got[key] = json.RawMessage(bytes.Clone(v))
			}
		})
		var want map[string]json.RawMessage
		werr := json.Unmarshal(data, &want)
		if werr == nil && want != nil && bytes.HasPrefix(bytes.TrimSpace(data), []byte("{")) {
			if err != nil {
				t.Fatalf("valid object %q: scan error %v", data, err)
			}
			for k, v := range want {
				if !bytes.Equal(got[k], v) {
					t.Fatalf("%q: member %q = %q, encoding/json %q", data, k, got[k], v)
				}
			}
		}
	})
}
