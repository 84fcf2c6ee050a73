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

// splitCounters cuts the "stats" member out of every link of kernel.json,
// so that encoding/json, which scans each byte twice at ~100 MB/s here,
// never sees the larger part of the file. It returns the rest of the text
// and the cut values by link name; Open decodes the rest strictly and
// checks each value with rawCounters.UnmarshalJSON. It matches member
// names as encoding/json does (case-insensitively) and reports ok false
// for any text it does not walk as expected, or any name with an escape in
// it: Open then decodes the whole text, which reports what is wrong.
func splitCounters(b []byte) (rest []byte, stats map[string][][]byte, ok bool) {
	var cuts [][2]int
	stats = map[string][][]byte{}
	i := skipSpace(b, 0)
	if i == len(b) || b[i] != '{' {
		return nil, nil, false
	}
	top, _, ok := members(b, i, nil)
	if !ok {
		return nil, nil, false
	}
	var ms []member
	for _, t := range top {
		if t.escaped {
			return nil, nil, false
		}
		if !bytes.EqualFold(t.name, []byte("links")) || b[t.val] != '{' {
			continue
		}
		links, _, ok := members(b, t.val, nil)
		if !ok {
			return nil, nil, false
		}
		for _, l := range links {
			if l.escaped {
				return nil, nil, false
			}
			delete(stats, string(l.name)) // a repeated name: the last one counts, as in a map
			if b[l.val] != '{' {
				continue // null or not an object: the decoder's to report
			}
			if ms, _, ok = members(b, l.val, ms[:0]); !ok {
				return nil, nil, false
			}
			c, vs, ok := cutMembers(ms, "stats")
			if !ok {
				return nil, nil, false
			}
			cuts = append(cuts, c...)
			for _, v := range vs {
				stats[string(l.name)] = append(stats[string(l.name)], b[v.val:v.end])
			}
		}
	}
	removed := 0
	for _, c := range cuts {
		removed += c[1] - c[0]
	}
	rest = make([]byte, 0, len(b)-removed)
	pos := 0
	for _, c := range cuts {
		rest = append(rest, b[pos:c[0]]...)
		pos = c[1]
	}
	return append(rest, b[pos:]...), stats, true
}

// member is one name/value pair of a JSON object: start is the offset of
// its name's opening quote, [val, end) its value.
type member struct {
	name     []byte // as written, without the quotes
	escaped  bool   // name has a backslash escape
	start    int
	val, end int
}

// cutMembers returns the spans of text to remove so that the object of ms
// loses every member named name, commas included, and those members in
// order. ok is false when a name has an escape.
func cutMembers(ms []member, name string) (cuts [][2]int, cut []member, ok bool) {
	for k := 0; k < len(ms); k++ {
		if ms[k].escaped {
			return nil, nil, false
		}
		if !bytes.EqualFold(ms[k].name, []byte(name)) {
			continue
		}
		l := k // run of matching members k..l
		for l+1 < len(ms) && !ms[l+1].escaped && bytes.EqualFold(ms[l+1].name, []byte(name)) {
			l++
		}
		switch {
		case l+1 < len(ms): // up to the next member's name: the run's commas go
			cuts = append(cuts, [2]int{ms[k].start, ms[l+1].start})
		case k > 0: // the run ends the object: from the previous value's end
			cuts = append(cuts, [2]int{ms[k-1].end, ms[l].end})
		default: // the whole object's content
			cuts = append(cuts, [2]int{ms[k].start, ms[l].end})
		}
		cut = append(cut, ms[k:l+1]...)
		k = l
	}
	return cuts, cut, true
}

// members lists the members of the object starting at b[i] == '{',
// appending to ms, and returns the offset after its closing brace.
func members(b []byte, i int, ms []member) ([]member, int, bool) {
	i = skipSpace(b, i+1)
	if i < len(b) && b[i] == '}' {
		return ms, i + 1, true
	}
	for {
		if i == len(b) || b[i] != '"' {
			return nil, 0, false
		}
		m := member{start: i}
		j, esc, ok := skipString(b, i)
		if !ok {
			return nil, 0, false
		}
		m.name, m.escaped = b[i+1:j-1], esc
		i = skipSpace(b, j)
		if i == len(b) || b[i] != ':' {
			return nil, 0, false
		}
		m.val = skipSpace(b, i+1)
		if m.end, ok = skipValue(b, m.val); !ok {
			return nil, 0, false
		}
		ms = append(ms, m)
		i = skipSpace(b, m.end)
		switch {
		case i == len(b):
			return nil, 0, false
		case b[i] == '}':
			return ms, i + 1, true
		case b[i] != ',':
			return nil, 0, false
		}
		i = skipSpace(b, i+1)
	}
}

// skipString returns the offset after the string starting at b[i] == '"'
// and whether it has an escape.
func skipString(b []byte, i int) (end int, escaped, ok bool) {
	for j := i + 1; j < len(b); j++ {
		switch b[j] {
		case '\\':
			escaped = true
			j++
		case '"':
			return j + 1, escaped, true
		}
	}
	return 0, false, false
}

// skipValue returns the offset after the value starting at b[i]. It checks
// only what it needs to find the end (quotes, nesting); the decoder or
// rawCounters checks the rest.
func skipValue(b []byte, i int) (int, bool) {
	if i == len(b) {
		return 0, false
	}
	switch b[i] {
	case '"':
		end, _, ok := skipString(b, i)
		return end, ok
	case '{', '[':
		depth := 0
		for j := i; j < len(b); j++ {
			switch b[j] {
			case '"':
				end, _, ok := skipString(b, j)
				if !ok {
					return 0, false
				}
				j = end - 1
			case '{', '[':
				depth++
			case '}', ']':
				if depth--; depth == 0 {
					return j + 1, true
				}
			}
		}
		return 0, false
	}
	j := i // a number, true, false or null: up to the next delimiter
	for j < len(b) && !isDelim(b[j]) {
		j++
	}
	return j, j > i
}

func isDelim(c byte) bool {
	switch c {
	case ',', '}', ']', ' ', '\t', '\r', '\n':
		return true
	}
	return false
}
