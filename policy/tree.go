package policy

import (
	"errors"
	"fmt"
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
			msg := de.Error()
			return nil, src, &Diagnostic{Pos: Pos{name, row, col}, Msg: "invalid TOML: " + msg, Source: src.line(row)}
		}
		return nil, src, &Diagnostic{Pos: Pos{File: name}, Msg: "invalid TOML: " + err.Error()}
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
			it := e.Key()
			var kpos Pos
			for it.Next() {
				k := it.Node()
				kpos = pos(k.Raw)
				name := string(k.Data)
				n := t.get(name)
				if n == nil || n.kind != kTable {
					n = &node{kind: kTable, tbl: newTable(), keyPos: kpos, valPos: kpos, src: src}
					t.set(name, n)
				}
				t = n.tbl
			}
			if e.Kind == unstable.ArrayTable {
				// No profile section is an array of tables; keep a marker
				// so decode reports it where it was written.
				t.set("[[...]]", &node{kind: kArray, keyPos: kpos, valPos: kpos, src: src})
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
		n.kind = kInt
		i, err := strconv.ParseInt(strings.TrimPrefix(string(v.Data), "+"), 0, 64)
		if err != nil { // pass 1 already rejected out-of-range integers
			i = math.MaxInt64
		}
		n.i = i
	case unstable.Float:
		n.kind = kFloat
		s := strings.ReplaceAll(string(v.Data), "_", "")
		f, _ := strconv.ParseFloat(s, 64)
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
			col++
		}
		i += size
	}
	return true, 0, 0
}

func describe(n *node) string {
	switch n.kind {
	case kString:
		return strconv.Quote(n.str)
	case kInt:
		return strconv.FormatInt(n.i, 10)
	case kFloat:
		return strconv.FormatFloat(n.f, 'g', -1, 64)
	case kBool:
		return strconv.FormatBool(n.b)
	default:
		return fmt.Sprintf("a %s", n.kind)
	}
}
