package report

import (
	"bytes"
	"errors"
	"sync"
	"unicode/utf8"

	"github.com/rocectl/rocectl/doc"
)

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
// messages. Nothing the generic decode would refuse is taken: fastArray
// checks the structure as elements and members do, setString each string
// (encoding/json's unquoting for any escape or non-ASCII byte), setBool
// each literal exactly.

// field is where a member of an element goes: a string or a boolean of
// it; neither for a key the element type does not have.
type field struct {
	s *string
	b *bool
}

// fastArray decodes raw, a JSON array of objects, each member into the
// field fieldOf names, its strings interned by in. One pass over the
// bytes (list and scanMember, as members and elements scan): it runs over
// every change of every host of a fleet.
func fastArray[T any](raw []byte, in *interner, fieldOf func(t *T, key []byte) field) ([]T, bool) {
	if isNull(raw) {
		return nil, true
	}
	out := []T{} // [] decodes to an empty slice, not nil
	var zero T
	end, err := list(raw, skipSpace(raw, 0), '[', ']', func(i int) (int, error) {
		out = append(out, zero)
		t := &out[len(out)-1]
		return list(raw, i, '{', '}', func(i int) (int, error) {
			key, val, next, err := scanMember(raw, i)
			if err != nil {
				return next, err
			}
			switch f := fieldOf(t, key); {
			case f.s != nil && setString(f.s, val, in):
			case f.b != nil && setBool(f.b, val):
			default:
				return next, errDeclined
			}
			return next, nil
		})
	})
	if err != nil || trailing(raw, end) != nil {
		return nil, false
	}
	return out, true
}

// errDeclined stops fastArray at a member it leaves to encoding/json.
var errDeclined = errors.New("declined")

// setString sets *dst from a JSON string or null (which leaves it, as
// encoding/json does). Plain ASCII is taken as it is, through in; escapes
// and other bytes go through rawString (encoding/json's unquoting).
func setString(dst *string, val []byte, in *interner) bool {
	if isNull(val) {
		return true
	}
	if len(val) < 2 || val[0] != '"' {
		return false
	}
	body := val[1 : len(val)-1]
	for _, c := range body {
		if c == '\\' || c < 0x20 || c >= 0x80 {
			s, err := rawString(val, "")
			*dst = s
			return err == nil
		}
	}
	*dst = in.string(body)
	return true
}

// interner hands out one string for equal bytes. A fleet's documents
// repeat the same keys, port names, values and notes on every host: one
// copy each instead of an allocation per change per host, and the fold's
// aggregates share them. At most maxInterned strings are kept (then it
// starts again), one interner per worker at a time (interners); the zero
// value is ready.
type interner struct{ m map[string]string }

const maxInterned = 1 << 15

var interners = sync.Pool{New: func() any { return new(interner) }}

func (in *interner) string(b []byte) string {
	if s, ok := in.m[string(b)]; ok {
		return s
	}
	if in.m == nil {
		in.m = make(map[string]string, 1024)
	}
	if len(in.m) >= maxInterned {
		clear(in.m)
	}
	s := string(b)
	in.m[s] = s
	return s
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

func changeField(c *doc.Change, k []byte) field {
	switch string(k) {
	case "key":
		return field{s: &c.Key}
	case "scope":
		return field{s: &c.Scope}
	case "netdev":
		return field{s: &c.Netdev}
	case "before":
		return field{s: &c.Before}
	case "after":
		return field{s: &c.After}
	case "note":
		return field{s: &c.Note}
	case "before_absent":
		return field{b: &c.Absent}
	}
	return field{}
}

func unsupportedField(u *doc.Unsupported, k []byte) field {
	switch string(k) {
	case "key":
		return field{s: &u.Key}
	case "scope":
		return field{s: &u.Scope}
	case "reason":
		return field{s: &u.Reason}
	}
	return field{}
}

func unknownField(u *doc.Unknown, k []byte) field {
	switch string(k) {
	case "key":
		return field{s: &u.Key}
	case "scope":
		return field{s: &u.Scope}
	case "reason":
		return field{s: &u.Reason}
	case "want":
		return field{s: &u.Want}
	case "inferred":
		return field{s: &u.Inferred}
	case "note":
		return field{s: &u.Note}
	}
	return field{}
}

func chainField(c *doc.ChainProblem, k []byte) field {
	switch string(k) {
	case "side":
		return field{s: &c.Side}
	case "port":
		return field{s: &c.Port}
	case "switch":
		return field{s: &c.Switch}
	case "source":
		return field{s: &c.Source}
	case "key":
		return field{s: &c.Key}
	case "message":
		return field{s: &c.Message}
	}
	return field{}
}

// fastMembers are the members of a plan document fastArray may decode, in
// the order of shadowed's bits.
var fastMembers = [...]string{"changes", "unsupported", "unknown", "qos_chain"}

// shadowed says which of fastMembers (bit i for fastMembers[i]) a
// top-level member of r not named exactly so may reach all the same:
// encoding/json matches keys without regard to case, with Unicode folding
// ("ſ" is "s"), after unquoting escapes. The fast path reads only the
// member named exactly, so where another may write the field ("Changes",
// "change\u0073") it is left to encoding/json. An escaped or non-ASCII key
// is taken as a possible match for every one: rocectl writes neither.
func shadowed(r *shape) (bits uint8) {
	for _, m := range r.members {
		k := m.key
		for _, c := range k {
			if c == '\\' || c >= utf8.RuneSelf {
				return 1<<len(fastMembers) - 1
			}
		}
		for i, name := range fastMembers {
			if len(k) == len(name) && string(k) != name && bytes.EqualFold(k, []byte(name)) {
				bits |= 1 << i
			}
		}
	}
	return bits
}

// decodePlan decodes an audit or apply document whose shape r is:
// changes[], unsupported[], unknown[] and qos_chain[] by fastArray where they have
// rocectl's form, the rest (and any of them that has not) by
// encoding/json, without the members the fleet view never reads.
func decodePlan(data []byte, r *shape) (*doc.Plan, error) {
	in := interners.Get().(*interner)
	var (
		changes            []doc.Change
		unsupported        []doc.Unsupported
		unknown            []doc.Unknown
		chain              []doc.ChainProblem
		okC, okU, okK, okQ bool
	)
	sh := shadowed(r)
	if sh&1 == 0 {
		changes, okC = fastArray(r.changes, in, changeField)
	}
	if sh&2 == 0 {
		unsupported, okU = fastArray(r.unsupported, in, unsupportedField)
	}
	if sh&4 == 0 {
		unknown, okK = fastArray(r.unknown, in, unknownField)
	}
	if sh&8 == 0 {
		chain, okQ = fastArray(r.qosChain, in, chainField)
	}
	interners.Put(in)
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
		return nil, wholeError(err, data, doc.DecodePlan)
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
