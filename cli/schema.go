package cli

// SchemaVersion is the version of every JSON document rocectl prints
// (audit, apply, verify, nccl-env, topo), in its schema_version field. It
// changes only when a field is removed or changes meaning; new fields do
// not change it. The JSON Schemas are docs/schema/*.json.
const SchemaVersion = 1
