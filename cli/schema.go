package cli

import (
	"errors"

	"github.com/rocectl/rocectl/doc"
	"github.com/rocectl/rocectl/policy"
)

// SchemaVersion is the version of every JSON document rocectl prints;
// package doc owns it and the documents' types.
const SchemaVersion = doc.SchemaVersion

// diagnosticsOf converts policy's diagnostics; never nil, so that the
// field is an empty array rather than null.
func diagnosticsOf(ds policy.Diagnostics) []doc.Diagnostic {
	out := make([]doc.Diagnostic, 0, len(ds))
	for _, d := range ds {
		sev := "error"
		if d.Severity == policy.SevWarning {
			sev = "warning"
		}
		out = append(out, doc.Diagnostic{File: d.Pos.File, Line: d.Pos.Line, Column: d.Pos.Col, Key: d.Key,
			Message: d.Msg, Allowed: d.Allowed, Severity: sev})
	}
	return out
}

// errorDiagnostics is every diagnostic a refused profile carries (its
// warnings too), none for any other error.
func errorDiagnostics(err error) []doc.Diagnostic {
	var pe *policy.ProfileError
	if errors.As(err, &pe) {
		return diagnosticsOf(pe.Diags)
	}
	return []doc.Diagnostic{}
}
