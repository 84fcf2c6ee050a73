package report

import (
	"encoding/json"
	"errors"
)

// The scanner below finds the members of a document's top-level object
// (and the elements of one array) without decoding them: it only tells
// where each value begins and ends. The report tells the kind of a
// document from which keys it has (detect), then decodes the document once
// with package doc's Decode function for that kind. Before, the document
// was decoded into a map of raw values, then into a probe struct, then
// into its doc type: three decodes of every byte (issue 39).
//
// The scan checks the structure (strings, brackets, commas, colons), not
// the grammar of numbers and literals: the decode that follows does, and
// a file the scan rejects is checked by encoding/json for its message.

var errScan = errors.New("malformed JSON")

func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }

func skipSpace(b []byte, i int) int {
	for i < len(b) && isSpace(b[i]) {
		i++
	}
	return i
}

// skipString returns the index after the string that starts at b[i] ('"').
func skipString(b []byte, i int) (int, error) {
	for i++; i < len(b); i++ {
		switch b[i] {
		case '\\':
			i++
		case '"':
			return i + 1, nil
		}
	}
	return i, errScan
}

// skipValue returns the index after the value that starts at b[i].
func skipValue(b []byte, i int) (int, error) {
	if i >= len(b) {
		return i, errScan
	}
	switch b[i] {
	case '"':
		return skipString(b, i)
	case '{', '[':
		depth := 0
		for i < len(b) {
			switch b[i] {
			case '"':
				j, err := skipString(b, i)
				if err != nil {
					return j, err
				}
				i = j
				continue
			case '{', '[':
				depth++
			case '}', ']':
				depth--
				if depth == 0 {
					return i + 1, nil
				}
			}
			i++
		}
		return i, errScan
	case '}', ']', ',', ':':
		return i, errScan
	}
	start := i
	for i < len(b) && !isSpace(b[i]) && b[i] != ',' && b[i] != '}' && b[i] != ']' {
		i++
	}
	if i == start {
		return i, errScan
	}
	return i, nil
}

// list scans the object or array (opening '{' or '[') that starts at b[i]:
// item scans each member or element, from its first byte, and returns
// the index after it; list checks the brackets and the commas between
// and returns the index after the closing bracket. members, elements and
// fastArray are each this loop with their own item.
func list(b []byte, i int, opening, closing byte, item func(i int) (int, error)) (int, error) {
	if i >= len(b) || b[i] != opening {
		return i, errScan
	}
	i = skipSpace(b, i+1)
	if i < len(b) && b[i] == closing {
		return i + 1, nil
	}
	for {
		j, err := item(i)
		if err != nil {
			return j, err
		}
		i = skipSpace(b, j)
		if i >= len(b) {
			return i, errScan
		}
		switch b[i] {
		case ',':
			i = skipSpace(b, i+1)
		case closing:
			return i + 1, nil
		default:
			return i, errScan
		}
	}
}

// scanMember scans the member `"key": value` that starts at b[i]: its key
// (raw, without its quotes), its raw value, and the index after it.
func scanMember(b []byte, i int) (key, val []byte, next int, err error) {
	if i >= len(b) || b[i] != '"' {
		return nil, nil, i, errScan
	}
	j, err := skipString(b, i)
	if err != nil {
		return nil, nil, j, err
	}
	key = b[i+1 : j-1]
	i = skipSpace(b, j)
	if i >= len(b) || b[i] != ':' {
		return nil, nil, i, errScan
	}
	i = skipSpace(b, i+1)
	if j, err = skipValue(b, i); err != nil {
		return nil, nil, j, err
	}
	return key, b[i:j], j, nil
}

// members calls fn with each key (raw, without its quotes) and raw value
// of the object that is b.
func members(b []byte, fn func(key, val []byte)) error {
	end, err := list(b, skipSpace(b, 0), '{', '}', func(i int) (int, error) {
		key, val, next, err := scanMember(b, i)
		if err == nil {
			fn(key, val)
		}
		return next, err
	})
	if err != nil {
		return err
	}
	return trailing(b, end)
}

// elements calls fn with each raw element of the array that is b.
func elements(b []byte, fn func(val []byte)) error {
	end, err := list(b, skipSpace(b, 0), '[', ']', func(i int) (int, error) {
		j, err := skipValue(b, i)
		if err == nil {
			fn(b[i:j])
		}
		return j, err
	})
	if err != nil {
		return err
	}
	return trailing(b, end)
}

func trailing(b []byte, i int) error {
	if skipSpace(b, i) != len(b) {
		return errScan
	}
	return nil
}

// scanError is the error of a document the scan rejected: encoding/json's
// own (with its offset), so that the message is the one the decode of the
// document would give.
func scanError(b []byte) error {
	var v any
	if err := json.Unmarshal(b, &v); err != nil {
		return err
	}
	return errScan
}

// isNull: the member is absent or null (what a pointer or slice field
// decodes to nil from).
func isNull(v []byte) bool { return len(v) == 0 || string(v) == "null" }

// rawString is a raw value that is a JSON string, unquoted; "" for an
// absent or null one. Only plain ASCII is taken as it is: escapes, and
// bytes that are not UTF-8 (which encoding/json turns into U+FFFD), go
// through encoding/json so that the text is the one a decode gives.
func rawString(v []byte, what string) (string, error) {
	if isNull(v) {
		return "", nil
	}
	if len(v) >= 2 && v[0] == '"' {
		plain := true
		for _, c := range v[1 : len(v)-1] {
			if c == '\\' || c < 0x20 || c >= 0x80 {
				plain = false
				break
			}
		}
		if plain {
			return string(v[1 : len(v)-1]), nil
		}
	}
	var s string
	if err := json.Unmarshal(v, &s); err != nil {
		return "", errors.New(what + ": " + err.Error())
	}
	return s, nil
}
