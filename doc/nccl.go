package doc

import "encoding/json"

// NCCLEnv is the JSON document of nccl-env (docs/schema/nccl-env.json).
// Variables is empty unless every variable was derived: a partial list is
// never a result.
type NCCLEnv struct {
	SchemaVersion int               `json:"schema_version"`
	Profile       string            `json:"profile"`
	ProfileHash   string            `json:"profile_hash"`
	Complete      bool              `json:"complete"`
	Variables     map[string]string `json:"variables"`
	// Order is the variables' names in the order they are printed and
	// written.
	Order []string `json:"order"`
	// GIDIndex says how IB_GID_INDEX = "auto" was decided; absent when
	// the profile does not ask for it.
	GIDIndex *GIDChoice `json:"gid_index,omitempty"`
	Errors   []string   `json:"errors"`
	// Diagnostics: the profile's problems, structured.
	Diagnostics []Diagnostic `json:"diagnostics"`
	Message     string       `json:"message,omitempty"`
	Written     string       `json:"written,omitempty"`
	// Warnings: variables that decide more than may be meant (an IB_TC
	// in the file overriding communicators' traffic class, NCCL 2.26).
	Warnings []string `json:"warnings,omitempty"`
	// Notes: what to know though nothing fails (several GIDs NCCL could
	// select, a RoCE LAG's merged device).
	Notes []string `json:"notes,omitempty"`
	// Host and GeneratedAt name the document in a fleet view (rocectl
	// report), as an audit document's do: the hostname (a snapshot's
	// recorded one) and when it was made, RFC 3339 UTC.
	Host        string `json:"host"`
	GeneratedAt string `json:"generated_at"`
}

// GIDChoice is how NCCL_IB_GID_INDEX = "auto" was decided.
type GIDChoice struct {
	// Mode is "pinned", "dynamic", "refused", "unknown" or "select".
	Mode   string `json:"mode"`
	Index  *int   `json:"index,omitempty"` // the pinned index
	Reason string `json:"reason"`
}

// DecodeNCCLEnv reads an nccl-env document.
func DecodeNCCLEnv(data []byte) (*NCCLEnv, error) { return decode[NCCLEnv](data) }

// Topo is the JSON document of topo (docs/schema/topo.json): the
// topology's fields inline, absent when it could not be read.
type Topo struct {
	SchemaVersion int `json:"schema_version"`
	*Topology
	Errors []string `json:"errors"`
}

// Topology is the nccl package's Topology as the writer encoded it: its
// arrays are the nccl and nic packages' types (docs/schema/topo.json).
type Topology struct {
	GPUs     json.RawMessage `json:"gpus"`
	NICs     json.RawMessage `json:"nics"`
	Pairs    json.RawMessage `json:"pairs"`
	Degraded json.RawMessage `json:"degraded"`
	Affinity json.RawMessage `json:"affinity"`
	HCAOrder string          `json:"hca_order"`
}

// DecodeTopo reads a topo document.
func DecodeTopo(data []byte) (*Topo, error) { return decode[Topo](data) }

// Version is `rocectl version -o json`.
type Version struct {
	SchemaVersion int    `json:"schema_version"`
	Version       string `json:"version"`
	Revision      string `json:"revision,omitempty"`
	// Modified: built from a checkout with uncommitted changes.
	Modified   bool   `json:"modified,omitempty"`
	CommitTime string `json:"commit_time,omitempty"`
	BuildDate  string `json:"build_date,omitempty"`
	GoVersion  string `json:"go_version"`
	Platform   string `json:"platform"`
	// Verbs: built with cgo and -tags verbs, so verify --loopback and the
	// two-host test can run verbs traffic.
	Verbs bool `json:"verbs"`
}

// DecodeVersion reads a version document.
func DecodeVersion(data []byte) (*Version, error) { return decode[Version](data) }
