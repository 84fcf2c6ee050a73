package policy

import (
	"fmt"
	"sort"
	"strings"
)

// Severity says whether a Diagnostic stops the profile from being used.
type Severity int

const (
	SevError Severity = iota
	SevWarning
)

// Pos is a place in a profile file. Line and Col are 1-based; a zero Line
// means "the file as a whole".
type Pos struct {
	File string
	Line int
	Col  int
}

func (p Pos) String() string {
	if p.Line == 0 {
		return p.File
	}
	return fmt.Sprintf("%s:%d:%d", p.File, p.Line, p.Col)
}

// Diagnostic is one problem found in a profile, shaped for the operator who
// has to fix it: where it is, which key, what is wrong, what is allowed, and
// the source line itself.
type Diagnostic struct {
	Pos      Pos
	Key      string // dotted key, e.g. "qos.pfc_priorities[1]"; empty for file-level problems
	Msg      string
	Allowed  string // what would be accepted; empty when it does not help
	Source   string // the offending line, verbatim
	Severity Severity
}

// String renders the diagnostic as
//
//	file:line:col: key: what is wrong (allowed: …)
//	   12 | pfc_priorities = [3, 9]
//	      |                      ^
func (d Diagnostic) String() string {
	var b strings.Builder
	b.WriteString(d.Pos.String())
	b.WriteString(": ")
	if d.Severity == SevWarning {
		b.WriteString("warning: ")
	}
	if d.Key != "" {
		b.WriteString(d.Key)
		b.WriteString(": ")
	}
	b.WriteString(d.Msg)
	if d.Allowed != "" {
		b.WriteString(" (allowed: ")
		b.WriteString(d.Allowed)
		b.WriteString(")")
	}
	if d.Source != "" && d.Pos.Line > 0 {
		num := fmt.Sprintf("%5d", d.Pos.Line)
		fmt.Fprintf(&b, "\n%s | %s", num, d.Source)
		col := d.Pos.Col
		if col < 1 {
			col = 1
		}
		// Columns count bytes; the caret needs one pad character per
		// character before it, keeping tabs so it lines up under
		// tab-indented sources.
		before := d.Source[:min(col-1, len(d.Source))]
		pad := make([]byte, 0, col)
		for _, r := range before {
			if r == '\t' {
				pad = append(pad, '\t')
			} else {
				pad = append(pad, ' ')
			}
		}
		fmt.Fprintf(&b, "\n%s | %s^", strings.Repeat(" ", len(num)), pad)
	}
	return b.String()
}

// Diagnostics is a sorted list of problems; as an error it reports them all.
type Diagnostics []Diagnostic

// Errors returns only the diagnostics that are errors.
func (ds Diagnostics) Errors() Diagnostics { return ds.only(SevError) }

// Warnings returns only the warnings.
func (ds Diagnostics) Warnings() Diagnostics { return ds.only(SevWarning) }

func (ds Diagnostics) only(sev Severity) Diagnostics {
	var out Diagnostics
	for _, d := range ds {
		if d.Severity == sev {
			out = append(out, d)
		}
	}
	return out
}

func (ds Diagnostics) sort() {
	sort.SliceStable(ds, func(i, j int) bool {
		a, b := ds[i].Pos, ds[j].Pos
		if a.File != b.File {
			return a.File < b.File
		}
		if a.Line != b.Line {
			return a.Line < b.Line
		}
		return a.Col < b.Col
	})
}

// ProfileError is returned when a profile has at least one error. It carries
// every diagnostic (warnings too) so that all problems are shown at once.
type ProfileError struct {
	Diags Diagnostics
}

func (e *ProfileError) Error() string {
	errs := e.Diags.Errors()
	var b strings.Builder
	for i, d := range e.Diags {
		if i > 0 {
			b.WriteString("\n")
		}
		b.WriteString(d.String())
	}
	fmt.Fprintf(&b, "\n%d error(s); nothing was changed", len(errs))
	return b.String()
}
