// Package doc owns every JSON document rocectl writes and reads: audit and
// apply (Plan), verify (Verify), peer (Peer), watch (Watch), nccl-env
// (NCCLEnv), topo (Topo), version (Version) and the fleet view of
// `rocectl report -o json` (the report package's Fleet carries
// SchemaVersion from here). The commands write through these types and
// `rocectl report` reads through the Decode functions, so that writer and
// reader cannot drift apart; docs/schema/*.json describe the same fields,
// and this package's tests check that each schema lists the fields its Go
// type has.
//
// The package imports the standard library only. Where a document holds
// a value another package owns and whose shape that package keeps (port
// inventory, an LLDP frame, the PCIe topology), the field is a
// json.RawMessage the writer fills at the edge (cli); everything the
// report reads is typed here.
package doc

import (
	"bytes"
	"encoding/json"
	"io"
)

// SchemaVersion is the version of every JSON document rocectl prints, in
// its schema_version field. It changes only when a field is removed or
// changes meaning; new fields do not change it. The JSON Schemas are
// docs/schema/*.json.
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

// Encode writes v as rocectl prints every document: indented by two
// spaces, one trailing newline.
func Encode(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// decode reads one document of type T. Fields it does not know are
// ignored: a newer rocectl may add fields without a new SchemaVersion.
func decode[T any](data []byte) (*T, error) {
	var v T
	if err := json.Unmarshal(bytes.TrimSpace(data), &v); err != nil {
		return nil, err
	}
	return &v, nil
}
