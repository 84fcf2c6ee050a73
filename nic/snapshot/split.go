package snapshot

import (
	"bytes"
	"encoding/json"
	"strings"
	"unicode/utf8"
)

// splitCounters prepares kernel.json for encoding/json, which scans every
// byte twice at ~100 MB/s on the bench machine. In one pass it cuts the
// "stats" member out of every link (58 % of a 64-port kernel.json) and
// drops the white space of the indented file (64 % of what is left), so
// the decoder reads ~15 % of the file. It returns that text and the cut
// values by link name, in order; Open decodes the text strictly and checks
// each value with rawCounters.add. Member names are matched as
// encoding/json matches them (case-insensitively). ok is false for text it
// does not walk as expected, a top-level, link or link member name with
// an escape in it, or a link name that is not plain (plainName): Open then
// decodes the whole file, which reports what is wrong. Errors of the decoder name no offsets, so their text is the same
// either way.
func splitCounters(b []byte) (rest []byte, stats map[string][]counterText, ok bool) {
	s := splitter{b: b, out: make([]byte, 0, len(b)/4), stats: map[string][]counterText{}}
	end, ok := s.object(skipSpace(b, 0), s.topMember)
	if !ok {
		return nil, nil, false
	}
	return append(s.out, b[skipSpace(b, end):]...), s.stats, true // trailing data: the decoder's to report
}

type splitter struct {
	b     []byte
	out   []byte
	stats map[string][]counterText
}

// memberFunc handles the value at b[v] of the member called name: it
// copies it to out or not (drop: the object writes no name for it) and
// returns the offset after it.
type memberFunc func(name []byte, v int) (end int, drop, ok bool)

// object copies the object at b[i] to out without white space, letting
// member handle each value, and returns the offset after it.
func (s *splitter) object(i int, member memberFunc) (int, bool) {
	b := s.b
	if i >= len(b) || b[i] != '{' {
		return 0, false
	}
	s.out = append(s.out, '{')
	i = skipSpace(b, i+1)
	if i < len(b) && b[i] == '}' {
		s.out = append(s.out, '}')
		return i + 1, true
	}
	written := false
	for {
		if i >= len(b) || b[i] != '"' {
			return 0, false
		}
		ne, ok := stringEnd(b, i)
		if !ok {
			return 0, false
		}
		name := b[i+1 : ne-1]
		if bytes.IndexByte(name, '\\') >= 0 {
			return 0, false
		}
		c := skipSpace(b, ne)
		if c >= len(b) || b[c] != ':' {
			return 0, false
		}
		mark := len(s.out)
		if written {
			s.out = append(s.out, ',')
		}
		s.out = append(append(s.out, b[i:ne]...), ':')
		end, drop, ok := member(name, skipSpace(b, c+1))
		if !ok {
			return 0, false
		}
		if drop {
			s.out = s.out[:mark]
		} else {
			written = true
		}
		i = skipSpace(b, end)
		switch {
		case i >= len(b):
			return 0, false
		case b[i] == '}':
			s.out = append(s.out, '}')
			return i + 1, true
		case b[i] != ',':
			return 0, false
		}
		i = skipSpace(b, i+1)
	}
}

func (s *splitter) topMember(name []byte, v int) (int, bool, bool) {
	if bytes.EqualFold(name, []byte("links")) && v < len(s.b) && s.b[v] == '{' {
		end, ok := s.object(v, s.link)
		return end, false, ok
	}
	end, ok := s.value(v, true)
	return end, false, ok
}

// link handles one member of "links". A repeated name replaces the earlier
// link, as in a map, counters included. A name that is not plain fails
// the split.
func (s *splitter) link(name []byte, v int) (int, bool, bool) {
	if !plainName(name) {
		// The decoder's key would not be these bytes, and the counters
		// would be filed under a name no link has.
		return 0, false, false
	}
	link := string(name)
	delete(s.stats, link)
	if v >= len(s.b) || s.b[v] != '{' {
		end, ok := s.value(v, true) // null or not an object: the decoder's to report
		return end, false, ok
	}
	end, ok := s.object(v, func(name []byte, v int) (int, bool, bool) {
		if !bytes.EqualFold(name, []byte("stats")) {
			end, ok := s.value(v, true)
			return end, false, ok
		}
		// Counters are checked here, as they are skipped; what the
		// scanner does not take is skipped and left to add.
		end, checked := counterObject(s.b, v, nil)
		ok := checked
		if !checked {
			end, ok = s.value(v, false)
		}
		if ok {
			s.stats[link] = append(s.stats[link], counterText{s.b[v:end], checked})
		}
		return end, true, ok
	})
	return end, false, ok
}

// plainName says whether a member name reads the same to encoding/json
// as its bytes: no escapes, no control characters (a syntax error), valid
// UTF-8 (the decoder would replace the rest).
func plainName(name []byte) bool {
	for _, c := range name {
		if c < 0x20 || c == '\\' {
			return false
		}
	}
	return utf8.Valid(name)
}

// value returns the offset after the value at b[i], copying it to out
// without white space when emit is set. It checks only what it needs to
// find the end (quotes, nesting); the decoder or rawCounters.add checks
// the rest.
func (s *splitter) value(i int, emit bool) (int, bool) {
	b := s.b
	depth := 0
	for j := i; j < len(b); {
		switch c := b[j]; c {
		case '"':
			e, ok := stringEnd(b, j)
			if !ok {
				return 0, false
			}
			if emit {
				s.out = append(s.out, b[j:e]...)
			}
			j = e
		case ' ', '\t', '\r', '\n':
			if depth == 0 { // callers skip white space before a value
				return 0, false
			}
			// Dropped, except between two scalars ("10 24"), which it
			// keeps apart: joined, they would read as one value.
			k := skipSpace(b, j)
			if emit && len(s.out) > 0 && k < len(b) && !special(s.out[len(s.out)-1]) && !isStructural(s.out[len(s.out)-1]) && !special(b[k]) && !isStructural(b[k]) {
				s.out = append(s.out, ' ')
			}
			j = k
		case '{', '[':
			depth++
			if emit {
				s.out = append(s.out, c)
			}
			j++
		case '}', ']':
			if depth == 0 {
				return 0, false
			}
			depth--
			if emit {
				s.out = append(s.out, c)
			}
			j++
		default:
			// A scalar, or inside a container a run of number, literal,
			// comma and colon bytes.
			k := j + 1
			for k < len(b) && !(special(b[k]) || depth == 0 && isDelim(b[k])) {
				k++
			}
			if emit {
				s.out = append(s.out, b[j:k]...)
			}
			j = k
		}
		if depth == 0 {
			return j, true
		}
	}
	return 0, false
}

// special says whether c ends a run of plain bytes in value.
func special(c byte) bool {
	switch c {
	case '"', '{', '}', '[', ']', ' ', '\t', '\r', '\n':
		return true
	}
	return false
}

// isDelim says whether c ends a scalar outside any container.
// isStructural says whether c is a comma or colon: a scalar's neighbour
// that needs no white space to end it.
func isStructural(c byte) bool { return c == ',' || c == ':' }

func isDelim(c byte) bool {
	switch c {
	case ',', '}', ']', ' ', '\t', '\r', '\n':
		return true
	}
	return false
}

// stringEnd returns the offset after the string starting at b[i] == '"'.
func stringEnd(b []byte, i int) (int, bool) {
	for j := i + 1; ; {
		k := bytes.IndexByte(b[j:], '"')
		if k < 0 {
			return 0, false
		}
		q := j + k
		n := 0 // backslashes before the quote: an odd number escapes it
		for q-1-n > i && b[q-1-n] == '\\' {
			n++
		}
		if n%2 == 0 {
			return q + 1, true
		}
		j = q + 1
	}
}

// linkSpan is one link of kernel.json as splitLinks finds it: its name
// and where its object lies.
type linkSpan struct {
	name       string
	start, end int
}

// splitLinks is the serial first step of Open's parallel read of
// kernel.json: it copies the top level without white space and with an
// empty "links" object, and finds where each link's object lies, by a
// scan that follows only quotes and nesting (objectEnd: about a third of
// what splitting the links costs). Splitting (splitLink) and decoding
// each link is then independent of the others. ok is false for anything
// but one "links" member whose members are all objects with plain names
// (plainName): the caller then reads the whole file as splitCounters
// does, which also reports what is wrong. Errors are found by the
// decoding, never here.
func splitLinks(b []byte) (top []byte, links []linkSpan, ok bool) {
	s := splitter{b: b, out: make([]byte, 0, 4096)}
	seen := false
	end, ok := s.object(skipSpace(b, 0), func(name []byte, v int) (int, bool, bool) {
		if !bytes.EqualFold(name, []byte("links")) {
			end, ok := s.value(v, true)
			return end, false, ok
		}
		// A second "links" merges into the first, or (null) clears it:
		// the whole file's decoder knows how.
		if seen || v >= len(b) || b[v] != '{' {
			return 0, false, false
		}
		seen = true
		end, ok := s.object(v, func(name []byte, v int) (int, bool, bool) {
			if v >= len(b) || b[v] != '{' || !plainName(name) {
				return 0, false, false
			}
			end, ok := objectEnd(b, v)
			links = append(links, linkSpan{string(name), v, end})
			return end, true, ok
		})
		return end, false, ok
	})
	if !ok {
		return nil, nil, false
	}
	return append(s.out, b[skipSpace(b, end):]...), links, true
}

// splitLink is splitCounters for the one link l: it appends the link's
// object to out without white space and without its counters, which it
// returns apart, in order. ok is false when the object does not end
// where splitLinks found it would.
func splitLink(b []byte, l linkSpan, out []byte) (text []byte, stats []counterText, ok bool) {
	s := splitter{b: b, out: out, stats: map[string][]counterText{}}
	end, _, ok := s.link([]byte(l.name), l.start)
	if !ok || end != l.end {
		return nil, nil, false
	}
	return s.out, s.stats[l.name], true
}

// objectEnd returns the offset after the object or array at b[i],
// following only quotes and nesting, a byte at a time through a table:
// it finds where a link ends at about twice the speed of splitter.value,
// and splitLink checks what it found.
func objectEnd(b []byte, i int) (int, bool) {
	depth := 0
	for j := i; j < len(b); {
		for j < len(b) && !structural[b[j]] {
			j++
		}
		if j == len(b) {
			break
		}
		switch b[j] {
		case '"':
			e, ok := stringEnd(b, j)
			if !ok {
				return 0, false
			}
			j = e
			continue
		case '{', '[':
			depth++
		default:
			depth--
		}
		j++
		if depth == 0 {
			return j, true
		}
	}
	return 0, false
}

// structural marks the bytes objectEnd stops at.
var structural = [256]bool{'"': true, '{': true, '}': true, '[': true, ']': true}

// cutMember is splitCounters for snapshot.json: it cuts every top-level
// member called name (matched as encoding/json matches it) out of the
// object in b, and drops white space. The Meta of a 64-port host is 169 KB,
// nearly all of it the unreadable list, which stringList reads ~10× faster
// than encoding/json.
func cutMember(b []byte, name string) (rest []byte, values [][]byte, ok bool) {
	s := splitter{b: b, out: make([]byte, 0, 1024)}
	end, ok := s.object(skipSpace(b, 0), func(n []byte, v int) (int, bool, bool) {
		drop := bytes.EqualFold(n, []byte(name))
		end, ok := s.value(v, !drop)
		if ok && drop {
			values = append(values, b[v:end])
		}
		return end, drop, ok
	})
	if !ok {
		return nil, nil, false
	}
	return append(s.out, b[skipSpace(b, end):]...), values, true
}

// stringList decodes a JSON array of strings as encoding/json does into a
// []string (null is nil). Arrays of plain strings (printable ASCII, no
// escapes) it reads itself, into one string the elements share; anything
// else goes to encoding/json.
func stringList(b []byte) ([]string, error) {
	if string(b) == "null" {
		return nil, nil
	}
	if list, ok := plainStrings(string(b)); ok {
		return list, nil
	}
	var list []string
	err := json.Unmarshal(b, &list)
	return list, err
}

// plainStrings reads an array of plain strings; s is the array's text as
// one string, which the elements share.
func plainStrings(s string) ([]string, bool) {
	i := skipSpaceString(s, 0)
	if i == len(s) || s[i] != '[' {
		return nil, false
	}
	list := make([]string, 0, strings.Count(s, ","))
	i = skipSpaceString(s, i+1)
	if i < len(s) && s[i] == ']' {
		return list, skipSpaceString(s, i+1) == len(s)
	}
	for {
		if i == len(s) || s[i] != '"' {
			return nil, false
		}
		j := i + 1
		for j < len(s) && s[j] != '"' {
			if c := s[j]; c < 0x20 || c > 0x7e || c == '\\' {
				return nil, false
			}
			j++
		}
		if j == len(s) {
			return nil, false
		}
		list = append(list, s[i+1:j])
		i = skipSpaceString(s, j+1)
		switch {
		case i == len(s):
			return nil, false
		case s[i] == ']':
			return list, skipSpaceString(s, i+1) == len(s)
		case s[i] != ',':
			return nil, false
		}
		i = skipSpaceString(s, i+1)
	}
}

func skipSpaceString(s string, i int) int {
	for i < len(s) && (s[i] == ' ' || s[i] == '\n' || s[i] == '\t' || s[i] == '\r') {
		i++
	}
	return i
}
