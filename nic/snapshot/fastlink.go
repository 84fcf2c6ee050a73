package snapshot

import (
	"encoding"
	"encoding/json"
	"reflect"
	"strconv"
	"strings"
	"sync"
)

// A link's state, and kernel.json's top level, decoded without
// encoding/json when their text is in the plain form capture writes.
// encoding/json scans every value twice and sets each through reflection
// with a check per kind: ~50 µs per link on the bench machine, 3.3 ms of
// CPU for a 64-port kernel.json, the largest part of a snapshot audit.
// fastLink and fastTop read the same text in one pass with a decoding plan
// per type, made once: about four times faster per link.
//
// encoding/json stays the reference. They take only text whose meaning
// leaves no choice, and report ok false for anything else, which the
// caller then decodes with encoding/json as before, its errors included:
// a member name that is not exactly a field's tag (encoding/json matches
// case-insensitively), a repeated member (it merges), null (it leaves a
// value as it was), a string with an escape or a byte that is not
// printable ASCII (it unescapes and replaces invalid UTF-8), a number with
// a fraction, exponent or leading zero or out of the field's range, an
// array of another length than a Go array (it pads or drops), a []byte
// (base64 to it). fastlink_test.go holds Open's reads through them to the
// serial read, which is encoding/json's (sameAsSerial, FuzzFastLink,
// FuzzFastTop).

// fastLink decodes b, one link object as kernel.json holds it, into a
// linkFile as encoding/json decodes the splitter's text of it, and returns
// its counters as the splitter cuts them (splitLink); ok is false when it
// declines (above), or when the counters are not in the form
// counterObject checks.
func fastLink(b []byte) (lf *linkFile, stats []counterText, ok bool) {
	plan := linkPlan()
	if plan == nil {
		return nil, nil, false
	}
	ls := reflect.New(linkStateType).Elem()
	seen, ok := document(b, plan, ls, "stats", func(p *parser) bool {
		// The counters stay text, checked here, as the splitter checks
		// and keeps them (counters.go).
		end, checked := counterObject(b, p.i, nil)
		if !checked || stats != nil {
			return false
		}
		stats = []counterText{{b[p.i:end], true}}
		p.i = end
		return true
	})
	if !ok {
		return nil, nil, false
	}
	lf = &linkFile{}
	if seen != 0 { // encoding/json allocates the embedded struct for its first member
		lf.LinkState = ls.Addr().Interface().(*LinkState)
	}
	return lf, stats, true
}

// document decodes b, one object and nothing after it, into v by sp; the
// member called own, which the plan leaves to v's container (linkFile's
// Stats, kernelFile's Links), goes to ownValue instead. It returns the bits
// of the fields it set (member).
func document(b []byte, sp *structPlan, v reflect.Value, own string, ownValue func(p *parser) bool) (seen uint64, ok bool) {
	p := parser{b: b, i: skipSpace(b, 0)}
	ok = p.object(func(name []byte) bool {
		if string(name) == own {
			return ownValue(&p)
		}
		return p.member(sp, v, name, &seen)
	})
	return seen, ok && skipSpace(b, p.i) == len(b)
}

// members decodes the object at p.i into v, a struct planned by sp.
func (p *parser) members(sp *structPlan, v reflect.Value) bool {
	var seen uint64
	return p.object(func(name []byte) bool { return p.member(sp, v, name, &seen) })
}

// member decodes the value at p.i into v's field called name; seen has a
// bit for each field set before. A member twice declines: encoding/json
// decodes it again into what the first made.
func (p *parser) member(sp *structPlan, v reflect.Value, name []byte, seen *uint64) bool {
	for i := range sp.fields {
		f := &sp.fields[i]
		if f.name == string(name) {
			if *seen&(1<<i) != 0 {
				return false
			}
			*seen |= 1 << i
			return f.dec(p, v.Field(f.index))
		}
	}
	return false
}

// fastTop decodes the top level of kernel.json as splitLinks leaves it
// ("links" an empty object) into kf, as encoding/json does, and reports
// whether it did: it declines what fastLink declines, and then leaves kf
// as it was for encoding/json.
func fastTop(b []byte, kf *kernelFile) bool {
	plan := topPlan()
	if plan == nil {
		return false
	}
	// A copy to decode into: a half-decoded KernelState would be
	// decoded into again, and merged, by encoding/json.
	ks := reflect.New(kernelStateType).Elem()
	links := false
	if _, ok := document(b, plan, ks, "links", func(p *parser) bool {
		if links || !p.literal("{}") {
			return false
		}
		links = true
		return true
	}); !ok {
		return false
	}
	*kf.KernelState = ks.Interface().(KernelState)
	if links { // kernelFile's own Links: encoding/json makes the map
		kf.Links = map[string]*linkFile{}
	}
	return true
}

var kernelStateType = reflect.TypeFor[KernelState]()

// topPlan is KernelState's plan without "links", which kernelFile's own
// Links shadows.
var topPlan = sync.OnceValue(func() *structPlan { return planWithout(kernelStateType, "links") })

var linkStateType = reflect.TypeFor[LinkState]()

// linkPlan is LinkState's plan without "stats": linkFile's own Stats
// shadows it, and fastLink keeps the counters as text.
var linkPlan = sync.OnceValue(func() *structPlan { return planWithout(linkStateType, "stats") })

// planWithout is the plan of the struct t without the field of the given
// JSON name; nil when a type in it is one the plans cannot decode.
func planWithout(t reflect.Type, name string) *structPlan {
	var pl planner
	sp := pl.structOf(t)
	if sp == nil || pl.unsupported {
		return nil
	}
	fields := sp.fields[:0:0]
	for _, f := range sp.fields {
		if f.name != name {
			fields = append(fields, f)
		}
	}
	return &structPlan{fields: fields}
}

// decodeFunc decodes the value at p.i into v and leaves p.i after it.
type decodeFunc func(p *parser, v reflect.Value) bool

type fieldPlan struct {
	name  string // the JSON member name, exactly
	index int
	dec   decodeFunc
}

type structPlan struct{ fields []fieldPlan }

func (sp *structPlan) has(name string) bool {
	for _, f := range sp.fields {
		if f.name == name {
			return true
		}
	}
	return false
}

// planner makes the plans of a type graph; a type it cannot decode as
// encoding/json does marks the whole graph unsupported.
type planner struct {
	structs     map[reflect.Type]*structPlan
	unsupported bool
}

var (
	jsonUnmarshaler = reflect.TypeFor[json.Unmarshaler]()
	textUnmarshaler = reflect.TypeFor[encoding.TextUnmarshaler]()
)

func (pl *planner) of(t reflect.Type) decodeFunc {
	if reflect.PointerTo(t).Implements(jsonUnmarshaler) || reflect.PointerTo(t).Implements(textUnmarshaler) {
		pl.unsupported = true // the type decodes itself
		return nil
	}
	switch t.Kind() {
	case reflect.Bool:
		return decodeBool
	case reflect.String:
		return decodeString
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return decodeInt
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return decodeUint
	case reflect.Pointer:
		elem := pl.of(t.Elem())
		return func(p *parser, v reflect.Value) bool {
			n := reflect.New(t.Elem())
			if !elem(p, n.Elem()) {
				return false
			}
			v.Set(n)
			return true
		}
	case reflect.Array:
		elem := pl.of(t.Elem())
		return func(p *parser, v reflect.Value) bool {
			n := 0
			ok := p.array(func() bool {
				if n == v.Len() {
					return false // encoding/json drops the rest
				}
				n++
				return elem(p, v.Index(n-1))
			})
			return ok && n == v.Len() // encoding/json zeroes what is missing
		}
	case reflect.Slice:
		if t.Elem().Kind() == reflect.Uint8 {
			return declineDecode // []byte is base64 text to encoding/json
		}
		elem := pl.of(t.Elem())
		return func(p *parser, v reflect.Value) bool {
			s := reflect.MakeSlice(t, 0, 0) // [] is an empty slice, not nil
			ok := p.array(func() bool {
				s = reflect.Append(s, reflect.Zero(t.Elem()))
				return elem(p, s.Index(s.Len()-1))
			})
			if ok {
				v.Set(s)
			}
			return ok
		}
	case reflect.Map:
		if t.Key().Kind() != reflect.String || t.Key() != reflect.TypeFor[string]() {
			pl.unsupported = true
			return nil
		}
		elem := pl.of(t.Elem())
		return func(p *parser, v reflect.Value) bool {
			m := reflect.MakeMap(t)
			ok := p.object(func(name []byte) bool {
				k := reflect.ValueOf(string(name))
				if m.MapIndex(k).IsValid() {
					return false // a repeated key: encoding/json merges into it
				}
				e := reflect.New(t.Elem()).Elem()
				if !elem(p, e) {
					return false
				}
				m.SetMapIndex(k, e)
				return true
			})
			if ok {
				v.Set(m)
			}
			return ok
		}
	case reflect.Interface:
		if t.NumMethod() == 0 {
			return decodeAny
		}
	case reflect.Struct:
		sp := pl.structOf(t)
		if sp == nil {
			return nil
		}
		return func(p *parser, v reflect.Value) bool { return p.members(sp, v) }
	}
	pl.unsupported = true
	return nil
}

// structOf plans a struct's fields as encoding/json names them: the tag's
// name, or the Go name; unexported and "-" fields are not decoded. An
// embedded field, a tag option encoding/json decodes by (",string") or
// more than 64 fields is unsupported.
func (pl *planner) structOf(t reflect.Type) *structPlan {
	if sp, ok := pl.structs[t]; ok {
		return sp
	}
	if pl.structs == nil {
		pl.structs = map[reflect.Type]*structPlan{}
	}
	sp := &structPlan{}
	pl.structs[t] = sp // before the fields: a type may refer to itself
	if t.NumField() > 64 {
		pl.unsupported = true
		return nil
	}
	for i := range t.NumField() {
		f := t.Field(i)
		tag := f.Tag.Get("json")
		name, opts, _ := strings.Cut(tag, ",")
		switch {
		case f.Anonymous || strings.Contains(","+opts+",", ",string,"):
			pl.unsupported = true
			return nil
		case !f.IsExported() || tag == "-":
			continue
		case name == "":
			name = f.Name
		}
		if sp.has(name) {
			pl.unsupported = true // two fields of one name: encoding/json's rules
			return nil
		}
		sp.fields = append(sp.fields, fieldPlan{name: name, index: i, dec: pl.of(f.Type)})
	}
	return sp
}

func declineDecode(*parser, reflect.Value) bool { return false }

func decodeBool(p *parser, v reflect.Value) bool {
	switch {
	case p.literal("true"):
		v.SetBool(true)
	case p.literal("false"):
		v.SetBool(false)
	default:
		return false
	}
	return true
}

// decodeAny decodes into an empty interface what encoding/json decodes
// there as a bool, a string or a float64 (strconv.ParseFloat of the
// number's text, as it does); objects, arrays and null decline.
func decodeAny(p *parser, v reflect.Value) bool {
	switch {
	case p.literal("true"):
		v.Set(reflect.ValueOf(true))
	case p.literal("false"):
		v.Set(reflect.ValueOf(false))
	case p.i < len(p.b) && p.b[p.i] == '"':
		s, ok := p.plainString()
		if !ok {
			return false
		}
		v.Set(reflect.ValueOf(string(s)))
	default:
		start := p.i
		if _, _, ok := p.integer(); !ok {
			return false
		}
		f, err := strconv.ParseFloat(string(p.b[start:p.i]), 64)
		if err != nil {
			return false
		}
		v.Set(reflect.ValueOf(f))
	}
	return true
}

func decodeString(p *parser, v reflect.Value) bool {
	s, ok := p.plainString()
	if ok {
		v.SetString(string(s))
	}
	return ok
}

func decodeInt(p *parser, v reflect.Value) bool {
	neg, u, ok := p.integer()
	if !ok || u > 1<<63 || (!neg && u == 1<<63) {
		return false
	}
	n := int64(u)
	if neg {
		n = -n
	}
	if v.OverflowInt(n) {
		return false
	}
	v.SetInt(n)
	return true
}

func decodeUint(p *parser, v reflect.Value) bool {
	neg, u, ok := p.integer()
	if !ok || neg || v.OverflowUint(u) {
		return false
	}
	v.SetUint(u)
	return true
}

// parser walks JSON text; every method leaves i after what it read.
type parser struct {
	b []byte
	i int
}

func (p *parser) literal(s string) bool {
	if len(p.b)-p.i < len(s) || string(p.b[p.i:p.i+len(s)]) != s {
		return false
	}
	p.i += len(s)
	if !p.delimited() { // "truefalse": no literal, and nothing read
		p.i -= len(s)
		return false
	}
	return true
}

// delimited says whether what was just read ends there, as a JSON value
// must: "truex" or "12a" is not a value.
func (p *parser) delimited() bool {
	j := skipSpace(p.b, p.i)
	return j == len(p.b) || p.b[j] == ',' || p.b[j] == '}' || p.b[j] == ']'
}

// plainString reads a string of printable ASCII without escapes.
func (p *parser) plainString() ([]byte, bool) {
	b := p.b
	if p.i >= len(b) || b[p.i] != '"' {
		return nil, false
	}
	for j := p.i + 1; j < len(b); j++ {
		switch c := b[j]; {
		case c == '"':
			s := b[p.i+1 : j]
			p.i = j + 1
			return s, true
		case c < 0x20 || c >= 0x7f || c == '\\':
			return nil, false
		}
	}
	return nil, false
}

// integer reads -?(0|[1-9][0-9]*) and nothing more (no fraction or
// exponent), up to 2^64-1.
func (p *parser) integer() (neg bool, u uint64, ok bool) {
	b, j := p.b, p.i
	if j < len(b) && b[j] == '-' {
		neg = true
		j++
	}
	start := j
	for ; j < len(b) && b[j] >= '0' && b[j] <= '9'; j++ {
		d := uint64(b[j] - '0')
		if u > (1<<64-1-d)/10 {
			return false, 0, false
		}
		u = u*10 + d
	}
	switch {
	case j == start, b[start] == '0' && j-start > 1:
		return false, 0, false
	}
	p.i = j
	return neg, u, p.delimited()
}

// object reads {"name":value,...}, calling member with p.i at each value.
func (p *parser) object(member func(name []byte) bool) bool {
	b := p.b
	if p.i >= len(b) || b[p.i] != '{' {
		return false
	}
	p.i = skipSpace(b, p.i+1)
	if p.i < len(b) && b[p.i] == '}' {
		p.i++
		return true
	}
	for {
		name, ok := p.plainString()
		if !ok {
			return false
		}
		p.i = skipSpace(b, p.i)
		if p.i >= len(b) || b[p.i] != ':' {
			return false
		}
		p.i = skipSpace(b, p.i+1)
		if !member(name) {
			return false
		}
		p.i = skipSpace(b, p.i)
		switch {
		case p.i >= len(b):
			return false
		case b[p.i] == '}':
			p.i++
			return true
		case b[p.i] != ',':
			return false
		}
		p.i = skipSpace(b, p.i+1)
	}
}

// array reads [value,...], calling elem with p.i at each value.
func (p *parser) array(elem func() bool) bool {
	b := p.b
	if p.i >= len(b) || b[p.i] != '[' {
		return false
	}
	p.i = skipSpace(b, p.i+1)
	if p.i < len(b) && b[p.i] == ']' {
		p.i++
		return true
	}
	for {
		if !elem() {
			return false
		}
		p.i = skipSpace(b, p.i)
		switch {
		case p.i >= len(b):
			return false
		case b[p.i] == ']':
			p.i++
			return true
		case b[p.i] != ',':
			return false
		}
		p.i = skipSpace(b, p.i+1)
	}
}
