package report

import "github.com/rocectl/rocectl/doc"

// The arrays of flat objects that make most of a drifted host's audit
// (changes[]: 23 of a factory host's 36 KB; unsupported[]: 13 of a
// bnxt host's 18 KB) are decoded here without encoding/json, whose
// reflection was most of report's time over a fleet of such hosts.
// fastArray takes only the form rocectl writes: objects whose members
// are the exact keys of the element type, strings or null, booleans as
// literals. Anything else (another key, which encoding/json would match
// without regard to case; a value of another type; a string it cannot
// unquote; a structure error) gives ok false, and the caller leaves that
// array to encoding/json as before: the same values, the same error
// messages. Nothing the generic decode would refuse is taken: the
// structure is checked by elements and members, each string by
// rawString, each literal exactly.

// fastArray decodes raw, a JSON array of objects, setting each member
// with set (false: a key or value set does not take). One pass over the
// bytes, without a closure per element: it runs over every change of
// every host of a fleet.
func fastArray[T any](raw []byte, set func(t *T, key, val []byte) bool) ([]T, bool) {
	if isNull(raw) {
		return nil, true
	}
	b := raw
	i := skipSpace(b, 0)
	if i >= len(b) || b[i] != '[' {
		return nil, false
	}
	out := []T{} // [] decodes to an empty slice, not nil
	i = skipSpace(b, i+1)
	if i < len(b) && b[i] == ']' {
		return out, trailing(b, i+1) == nil
	}
	var zero T
	for {
		if i >= len(b) || b[i] != '{' {
			return nil, false
		}
		out = append(out, zero)
		t := &out[len(out)-1]
		i = skipSpace(b, i+1)
		if i < len(b) && b[i] == '}' {
			i++
		} else {
			for {
				if i >= len(b) || b[i] != '"' {
					return nil, false
				}
				j, err := skipString(b, i)
				if err != nil {
					return nil, false
				}
				key := b[i+1 : j-1]
				i = skipSpace(b, j)
				if i >= len(b) || b[i] != ':' {
					return nil, false
				}
				i = skipSpace(b, i+1)
				if j, err = skipValue(b, i); err != nil || !set(t, key, b[i:j]) {
					return nil, false
				}
				i = skipSpace(b, j)
				if i < len(b) && b[i] == ',' {
					i = skipSpace(b, i+1)
					continue
				}
				if i < len(b) && b[i] == '}' {
					i++
					break
				}
				return nil, false
			}
		}
		i = skipSpace(b, i)
		switch {
		case i < len(b) && b[i] == ',':
			i = skipSpace(b, i+1)
		case i < len(b) && b[i] == ']':
			return out, trailing(b, i+1) == nil
		default:
			return nil, false
		}
	}
}

// setString sets *dst from a JSON string or null (which leaves it, as
// encoding/json does).
func setString(dst *string, val []byte) bool {
	if isNull(val) {
		return true
	}
	if val[0] != '"' {
		return false
	}
	s, err := rawString(val, "")
	*dst = s
	return err == nil
}

// setBool sets *dst from the literal true or false; null leaves it.
func setBool(dst *bool, val []byte) bool {
	switch string(val) {
	case "true":
		*dst = true
	case "false":
		*dst = false
	case "null":
	default:
		return false
	}
	return true
}

func changeField(c *doc.Change, k, v []byte) bool {
	switch string(k) {
	case "key":
		return setString(&c.Key, v)
	case "scope":
		return setString(&c.Scope, v)
	case "netdev":
		return setString(&c.Netdev, v)
	case "before":
		return setString(&c.Before, v)
	case "after":
		return setString(&c.After, v)
	case "note":
		return setString(&c.Note, v)
	case "before_absent":
		return setBool(&c.Absent, v)
	}
	return false
}

func unsupportedField(u *doc.Unsupported, k, v []byte) bool {
	switch string(k) {
	case "key":
		return setString(&u.Key, v)
	case "scope":
		return setString(&u.Scope, v)
	case "reason":
		return setString(&u.Reason, v)
	}
	return false
}

func unknownField(u *doc.Unknown, k, v []byte) bool {
	switch string(k) {
	case "key":
		return setString(&u.Key, v)
	case "scope":
		return setString(&u.Scope, v)
	case "reason":
		return setString(&u.Reason, v)
	case "want":
		return setString(&u.Want, v)
	case "inferred":
		return setString(&u.Inferred, v)
	case "note":
		return setString(&u.Note, v)
	}
	return false
}

func chainField(c *doc.ChainProblem, k, v []byte) bool {
	switch string(k) {
	case "side":
		return setString(&c.Side, v)
	case "port":
		return setString(&c.Port, v)
	case "switch":
		return setString(&c.Switch, v)
	case "source":
		return setString(&c.Source, v)
	case "key":
		return setString(&c.Key, v)
	case "message":
		return setString(&c.Message, v)
	}
	return false
}

// decodePlan decodes an audit or apply document whose shape r is:
// changes[], unsupported[], unknown[] and qos_chain[] by fastArray where they have
// rocectl's form, the rest (and any of them that has not) by
// encoding/json, without the members the fleet view never reads.
func decodePlan(data []byte, r *shape) (*doc.Plan, error) {
	changes, okC := fastArray(r.changes, changeField)
	unsupported, okU := fastArray(r.unsupported, unsupportedField)
	unknown, okK := fastArray(r.unknown, unknownField)
	chain, okQ := fastArray(r.qosChain, chainField)
	skip := planUnread[:len(planUnread):len(planUnread)]
	for _, f := range []struct {
		ok  bool
		key string
	}{{okC, "changes"}, {okU, "unsupported"}, {okK, "unknown"}, {okQ, "qos_chain"}} {
		if f.ok {
			skip = append(skip, f.key)
		}
	}
	p, err := doc.DecodePlan(unread(data, r, skip))
	if err != nil {
		return nil, err
	}
	if okC {
		p.Changes = changes
	}
	if okU {
		p.Unsupported = unsupported
	}
	if okK {
		p.Unknown = unknown
	}
	if okQ {
		p.QoSChain = chain
	}
	return p, nil
}
