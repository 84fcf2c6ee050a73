package cli

import (
	"errors"

	"github.com/rocectl/rocectl/policy"
)

// SchemaVersion is the version of every JSON document rocectl prints
// (audit, apply, verify, nccl-env, topo), in its schema_version field. It
// changes only when a field is removed or changes meaning; new fields do
// not change it. The JSON Schemas are docs/schema/*.json.
const SchemaVersion = 1

// Diagnostic is one profile problem in a JSON document, structured where
// the text output draws the source line and a caret: where it is, which
// key, what is wrong, and what would be accepted.
type Diagnostic struct {
	File string `json:"file"`
	// Line and Column are 1-based; Line 0 means the file as a whole.
	Line     int    `json:"line"`
	Column   int    `json:"column"`
	Key      string `json:"key"` // dotted key, "" for a problem of the file
	Message  string `json:"message"`
	Allowed  string `json:"allowed,omitempty"`
	Severity string `json:"severity"` // "error" or "warning"
}

// diagnosticsOf converts policy's diagnostics; never nil, so that the
// field is an empty array rather than null.
func diagnosticsOf(ds policy.Diagnostics) []Diagnostic {
	out := make([]Diagnostic, 0, len(ds))
	for _, d := range ds {
		sev := "error"
		if d.Severity == policy.SevWarning {
			sev = "warning"
		}
		out = append(out, Diagnostic{File: d.Pos.File, Line: d.Pos.Line, Column: d.Pos.Col, Key: d.Key,
			Message: d.Msg, Allowed: d.Allowed, Severity: sev})
	}
	return out
}

// errorDiagnostics is every diagnostic a refused profile carries (its
// warnings too), none for any other error.
func errorDiagnostics(err error) []Diagnostic {
	var pe *policy.ProfileError
	if errors.As(err, &pe) {
		return diagnosticsOf(pe.Diags)
	}
	return []Diagnostic{}
}
