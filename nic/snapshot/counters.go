package snapshot

import (
	"bytes"
	"encoding/json"
	"strconv"
)

// Open keeps each link's ethtool counters ("stats" in kernel.json) as
// checked JSON text and builds the map only when Stats or State asks for it.
// The counters are most of kernel.json (a ConnectX port has ~180 of them),
// and the commands that open snapshots (audit, plan, diff) never read one:
// decoding them into maps was 40 % of `rocectl audit --snapshot` on a
// 64-port host.

// rawCounters is one link's "stats" object, as it stands in kernel.json;
// nil when the link has none. UnmarshalJSON accepts exactly what
// encoding/json accepts for a map[string]uint64, so a bad counter still
// fails Open, naming kernel.json, and decode cannot fail later.
type rawCounters []byte

func (c *rawCounters) UnmarshalJSON(b []byte) error {
	if string(b) == "null" { // as for a map: no data
		*c = nil
		return nil
	}
	if !scanCounters(b, nil) {
		// The fast scanner takes plain names and integer values only;
		// whatever else (escapes, non-ASCII names, null values, floats,
		// negatives) encoding/json accepts or rejects as it always has.
		var m map[string]uint64
		if err := json.Unmarshal(b, &m); err != nil {
			return err
		}
	}
	*c = bytes.Clone(b) // b belongs to the decoder
	return nil
}

// decode builds the counter map.
func (c rawCounters) decode() map[string]uint64 {
	if c == nil {
		return nil
	}
	m := make(map[string]uint64, bytes.Count(c, []byte{':'}))
	if !scanCounters(c, m) {
		clear(m)
		_ = json.Unmarshal(c, &m) // checked by UnmarshalJSON: cannot fail
	}
	return m
}

// scanCounters parses a JSON object whose names are printable ASCII without
// escapes and whose values are integers that fit a uint64, adding each pair
// to m when m is not nil. It reports false for anything else, including
// valid JSON it leaves to encoding/json. The decoder hands UnmarshalJSON
// only syntactically valid JSON, so this needs no error messages.
func scanCounters(b []byte, m map[string]uint64) bool {
	i := skipSpace(b, 0)
	if i == len(b) || b[i] != '{' {
		return false
	}
	i = skipSpace(b, i+1)
	if i < len(b) && b[i] == '}' {
		return skipSpace(b, i+1) == len(b)
	}
	for {
		if i == len(b) || b[i] != '"' {
			return false
		}
		j := i + 1
		for j < len(b) && b[j] != '"' {
			if c := b[j]; c < 0x20 || c > 0x7e || c == '\\' {
				return false
			}
			j++
		}
		if j == len(b) {
			return false
		}
		name := b[i+1 : j]
		i = skipSpace(b, j+1)
		if i == len(b) || b[i] != ':' {
			return false
		}
		i = skipSpace(b, i+1)
		k := i
		for k < len(b) && b[k] >= '0' && b[k] <= '9' {
			k++
		}
		v, err := strconv.ParseUint(string(b[i:k]), 10, 64)
		if err != nil {
			return false
		}
		if m != nil {
			m[string(name)] = v
		}
		i = skipSpace(b, k)
		switch {
		case i == len(b):
			return false
		case b[i] == '}':
			return skipSpace(b, i+1) == len(b)
		case b[i] != ',':
			return false
		}
		i = skipSpace(b, i+1)
	}
}

// skipSpace returns the index of the first byte at or after i that is not
// JSON white space.
func skipSpace(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\n' || b[i] == '\t' || b[i] == '\r') {
		i++
	}
	return i
}
