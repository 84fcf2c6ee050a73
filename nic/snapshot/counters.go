package snapshot

import (
	"bytes"
	"encoding/json"
	"math"
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
	return c.add(counterText{b: bytes.Clone(b)}) // b belongs to the decoder
}

// counterText is one "stats" value as cut out of kernel.json; checked
// when scanCounters has already taken it.
type counterText struct {
	b       []byte
	checked bool
}

// add checks one occurrence and keeps it (the text is not copied).
func (c *rawCounters) add(t counterText) error {
	b := t.b
	if string(b) == "null" { // as for a map: no data
		*c = nil
		return nil
	}
	if !t.checked && !scanCounters(b, nil) {
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
	end, ok := counterObject(b, skipSpace(b, 0), m)
	return ok && skipSpace(b, end) == len(b)
}

// counterObject is scanCounters for the object starting at b[i]; it
// returns the offset after the object.
func counterObject(b []byte, i int, m map[string]uint64) (int, bool) {
	if i >= len(b) || b[i] != '{' {
		return 0, false
	}
	i = skipSpace(b, i+1)
	if i < len(b) && b[i] == '}' {
		return i + 1, true
	}
	for {
		if i == len(b) || b[i] != '"' {
			return 0, false
		}
		j := i + 1
		for j < len(b) && b[j] != '"' {
			if c := b[j]; c < 0x20 || c > 0x7e || c == '\\' {
				return 0, false
			}
			j++
		}
		if j == len(b) {
			return 0, false
		}
		name := b[i+1 : j]
		i = skipSpace(b, j+1)
		if i == len(b) || b[i] != ':' {
			return 0, false
		}
		i = skipSpace(b, i+1)
		k := i
		for k < len(b) && b[k] >= '0' && b[k] <= '9' {
			k++
		}
		if k == i || k-i > 1 && b[i] == '0' { // not JSON; encoding/json says so
			return 0, false
		}
		// strconv.ParseUint's answer, without its generality: a
		// 64-port host has 11,000 counters.
		var v uint64
		for _, c := range b[i:k] {
			d := uint64(c - '0')
			if v > (math.MaxUint64-d)/10 {
				return 0, false // does not fit: encoding/json says so
			}
			v = v*10 + d
		}
		if m != nil {
			m[string(name)] = v
		}
		i = skipSpace(b, k)
		switch {
		case i == len(b):
			return 0, false
		case b[i] == '}':
			return i + 1, true
		case b[i] != ',':
			return 0, false
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
