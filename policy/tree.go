package policy

import (
	"errors"
	"math"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/pelletier/go-toml/v2"
	"github.com/pelletier/go-toml/v2/unstable"
)

// The profile loader does not decode TOML straight into structs: go-toml's
// decoder stops at the first type error, and operators need every problem at
// once, each with its position. So a file is parsed into this small tree of
// positioned values (using go-toml's own parser), include files are merged key
// by key at the tree level, and decode.go walks the merged tree against the
// schema.

type nodeKind int

const (
	kTable nodeKind = iota
	kArray
	kString
	kInt
	kFloat
	kBool
	kDateTime
)

func (k nodeKind) String() string {
	switch k {
	case kTable:
		return "table"
	case kArray:
		return "array"
	case kString:
		return "string"
	case kInt:
		return "integer"
	case kFloat:
		return "float"
	case kBool:
		return "boolean"
	default:
		return "date/time"
	}
}

type node struct {
	kind   nodeKind
	keyPos Pos // where the key was written
	valPos Pos // where the value starts
	src    *source

	str string
	raw string // numbers as written, for messages ("9000.0")
	aot bool   // an array of tables ([[x]]), which no profile section is
	i   int64
	f   float64
	b   bool
	arr []*node
	tbl *table
}

type table struct {
	keys []string // document order
	m    map[string]*node
}

func newTable() *table { return &table{m: map[string]*node{}} }

func (t *table) get(k string) *node { return t.m[k] }

func (t *table) set(k string, n *node) {
	if _, ok := t.m[k]; !ok {
		t.keys = append(t.keys, k)
	}
	t.m[k] = n
}

// source is one profile file's text, kept to quote offending lines.
type source struct {
	name  string
	lines []string
}

func (s *source) line(n int) string {
	if s == nil || n < 1 || n > len(s.lines) {
		return ""
	}
	return strings.TrimRight(s.lines[n-1], "\r")
}

// parseTree parses one TOML document. Syntax errors (including duplicate
// keys, which go-toml's decoder detects) come back as a single diagnostic: a
// parser cannot reliably continue past them.
func parseTree(name string, data []byte) (*table, *source, *Diagnostic) {
	src := &source{name: name, lines: strings.Split(string(data), "\n")}

	// Pass 1: the full decoder, for syntax and duplicate-key errors with
	// their positions.
	var scratch map[string]any
	if err := toml.Unmarshal(data, &scratch); err != nil {
		var de *toml.DecodeError
		if errors.As(err, &de) {
			row, col := de.Position()
			msg := strings.TrimPrefix(de.Error(), "toml: ")
			return nil, src, &Diagnostic{Pos: Pos{name, row, col}, Msg: "invalid TOML: " + msg, Source: src.line(row)}
		}
		return nil, src, &Diagnostic{Pos: Pos{File: name}, Msg: "invalid TOML: " + strings.TrimPrefix(err.Error(), "toml: ")}
	}

	// Pass 2: the AST, for positions.
	root := newTable()
	cur := root
	var p unstable.Parser
	p.Reset(data)
	pos := func(r unstable.Range) Pos {
		sh := p.Shape(r)
		return Pos{File: name, Line: sh.Start.Line, Col: sh.Start.Column}
	}
	for p.NextExpression() {
		e := p.Expression()
		switch e.Kind {
		case unstable.Table, unstable.ArrayTable:
			t := root
			var parts []string
			var kpos Pos
			it := e.Key()
			for it.Next() {
				k := it.Node()
				kpos = pos(k.Raw)
				parts = append(parts, string(k.Data))
			}
			for i, name := range parts {
				if i == len(parts)-1 && e.Kind == unstable.ArrayTable {
					// No profile section is an array of tables: keep a
					// marker where it was written, for decode to report,
					// and drop the keys under it.
					t.set(name, &node{kind: kArray, aot: true, keyPos: kpos, valPos: kpos, src: src})
					t = newTable()
					break
				}
				n := t.get(name)
				if n == nil || n.kind != kTable {
					n = &node{kind: kTable, tbl: newTable(), keyPos: kpos, valPos: kpos, src: src}
					t.set(name, n)
				}
				t = n.tbl
			}
			cur = t
		case unstable.KeyValue:
			addKeyValue(cur, e, pos, src)
		}
	}
	if err := p.Error(); err != nil {
		return nil, src, &Diagnostic{Pos: Pos{File: name}, Msg: "invalid TOML: " + err.Error()}
	}
	return root, src, nil
}

func addKeyValue(t *table, e *unstable.Node, pos func(unstable.Range) Pos, src *source) {
	var parts []string
	var kpos Pos
	it := e.Key()
	first := true
	for it.Next() {
		k := it.Node()
		if first {
			kpos = pos(k.Raw)
			first = false
		}
		parts = append(parts, string(k.Data))
	}
	for _, p := range parts[:len(parts)-1] {
		n := t.get(p)
		if n == nil || n.kind != kTable {
			n = &node{kind: kTable, tbl: newTable(), keyPos: kpos, valPos: kpos, src: src}
			t.set(p, n)
		}
		t = n.tbl
	}
	v := valueNode(e.Value(), kpos, pos, src)
	v.keyPos = kpos
	t.set(parts[len(parts)-1], v)
}

func valueNode(v *unstable.Node, kpos Pos, pos func(unstable.Range) Pos, src *source) *node {
	n := &node{keyPos: kpos, valPos: kpos, src: src}
	if v.Raw.Length > 0 || v.Raw.Offset > 0 {
		n.valPos = pos(v.Raw)
	}
	switch v.Kind {
	case unstable.String:
		n.kind, n.str = kString, string(v.Data)
	case unstable.Bool:
		n.kind, n.b = kBool, string(v.Data) == "true"
	case unstable.Integer:
		n.kind, n.raw = kInt, string(v.Data)
		i, err := strconv.ParseInt(strings.TrimPrefix(string(v.Data), "+"), 0, 64)
		if err != nil { // pass 1 already rejected out-of-range integers
			i = math.MaxInt64
		}
		n.i = i
	case unstable.Float:
		n.kind, n.raw = kFloat, string(v.Data)
		s := strings.ReplaceAll(string(v.Data), "_", "")
		f, err := strconv.ParseFloat(s, 64)
		if err != nil {
			// TOML's signed NaNs (-nan, +nan) are not Go syntax; anything
			// unparsable becomes NaN, which every range check rejects.
			f = math.NaN()
		}
		n.f = f
	case unstable.Array:
		n.kind = kArray
		c := v.Children()
		first := true
		for c.Next() {
			el := valueNode(c.Node(), kpos, pos, src)
			if first {
				n.valPos = el.valPos
				first = false
			}
			n.arr = append(n.arr, el)
		}
	case unstable.InlineTable:
		n.kind, n.tbl = kTable, newTable()
		c := v.Children()
		for c.Next() {
			addKeyValue(n.tbl, c.Node(), pos, src)
		}
	default:
		n.kind = kDateTime
		n.str = string(v.Data)
	}
	return n
}

// merge overlays src onto dst key by key: tables merge recursively, anything
// else is replaced. This is what `include` means.
func merge(dst, src *table) {
	for _, k := range src.keys {
		sv := src.m[k]
		dv := dst.get(k)
		if dv != nil && dv.kind == kTable && sv.kind == kTable {
			merge(dv.tbl, sv.tbl)
			continue
		}
		dst.set(k, sv)
	}
}

// isText reports whether data looks like a text file: valid UTF-8 and no NUL
// bytes. It returns the 1-based line and column of the first bad byte.
func isText(data []byte) (ok bool, line, col int) {
	line, col = 1, 1
	for i := 0; i < len(data); {
		c := data[i]
		if c == 0 {
			return false, line, col
		}
		r, size := utf8.DecodeRune(data[i:])
		if r == utf8.RuneError && size == 1 {
			return false, line, col
		}
		if r == '\n' {
			line, col = line+1, 1
		} else {
			col += size // columns count bytes, as go-toml's do
		}
		i += size
	}
	return true, 0, 0
}

// describe names a value in a message: the value itself for scalars (as
// written, so 9000.0 stays a float), its kind for containers.
func describe(n *node) string {
	switch {
	case n.kind == kString:
		return strconv.Quote(n.str)
	case n.kind == kInt || n.kind == kFloat:
		return n.raw
	case n.kind == kBool:
		return strconv.FormatBool(n.b)
	case n.aot:
		return "an array of tables ([[...]])"
	}
	return article(n.kind.String())
}

// article puts "a" or "an" before a noun.
func article(noun string) string {
	if strings.ContainsRune("aeiou", rune(noun[0])) {
		return "an " + noun
	}
	return "a " + noun
}
