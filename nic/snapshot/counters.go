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

// rawCounters is one link's "stats" member, as it stands in kernel.json;
// nil when the link has none. A link that names "stats" more than once has
// one part per occurrence, merged as encoding/json merges them into one
// map (a null one empties it). Each part is checked as it is added, and
// accepted exactly when encoding/json accepts it for a map[string]uint64,
// so a bad counter still fails Open, naming kernel.json, and decode cannot
// fail later.
type rawCounters [][]byte

func (c *rawCounters) UnmarshalJSON(b []byte) error {
	return c.add(bytes.Clone(b)) // b belongs to the decoder
}

// add checks one occurrence and keeps it (b is not copied).
func (c *rawCounters) add(b []byte) error {
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
	*c = append(*c, b)
	return nil
}

// decode builds the counter map.
func (c rawCounters) decode() map[string]uint64 {
	if c == nil {
		return nil
	}
	m := make(map[string]uint64, bytes.Count(c[len(c)-1], []byte{':'}))
	for _, b := range c {
		if !scanCounters(b, m) {
			// Checked by add: cannot fail. The pairs scanCounters
			// added before it gave up are added again, the same.
			_ = json.Unmarshal(b, &m)
		}
	}
	return m
}

// scanCounters parses a JSON object whose names are printable ASCII without
// escapes and whose values are integers that fit a uint64, adding each pair
// to m when m is not nil. It reports false for anything else, including
// valid JSON it leaves to encoding/json. What it accepts is valid JSON:
// splitCounters hands it text no decoder has checked.
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
		if k-i > 1 && b[i] == '0' { // not JSON; encoding/json says so
			return false
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
