// Package report is the fleet view over many hosts' JSON documents: the
// -o json output of rocectl audit, apply, verify, peer and nccl-env (the
// NCCL sections, nccl.go), gathered from
// files, directories, Ansible's fact cache or the role's fetched results,
// and the records of a rack sweep (verify --listen/--peer between host
// pairs). Stream reads them and makes a Fleet (hosts × setting groups,
// drift grouped by "same drift on N hosts", hosts that did not report,
// unreadable and duplicate documents, the sweep's pair matrix) in one pass
// over the files: a bounded pool of workers decodes each document once and
// folds it into what it says about its host, and the documents are never
// held (fold.go), so that 100,000 hosts fit in a few hundred MB. Load and
// Build do the same in two steps for tests and callers that hold the
// documents. Render prints a Fleet as text, Markdown, one self-contained
// HTML file, or JSON for dashboards.
//
// The package reads documents, never a host: it reads them through package
// doc's types and Decode functions, the ones the commands write with, and
// imports policy only for the setting kinds' order, as DESIGN.md §2 says.
package report

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/rocectl/rocectl/doc"
	"github.com/rocectl/rocectl/internal/lib/input"
)

// Kind is what command wrote a document.
type Kind string

const (
	KindAudit  Kind = "audit"
	KindApply  Kind = "apply"
	KindVerify Kind = "verify"
	KindPeer   Kind = "peer"
	KindSweep  Kind = "sweep" // one end of one pair test of a rack sweep
	// KindNCCL is nccl-env's document: how the host's
	// NCCL_IB_GID_INDEX resolves (issue 37).
	KindNCCL Kind = "nccl-env"
)

// The parts of the documents the fleet view reads are package doc's
// types, the ones the commands write.
type (
	// Change is one entry of an audit/apply document's changes[].
	Change = doc.Change
	// Unsupported is one entry of unsupported[].
	Unsupported = doc.Unsupported
	// UnknownSetting is one entry of unknown[].
	UnknownSetting = doc.Unknown
	// Mismatch is one entry of a verify (or peer) document's mismatches[].
	Mismatch = doc.Mismatch
	// Traffic is one entry of verify's traffic[].
	Traffic = doc.Traffic
	// PauseDelta is one traffic[].pause_deltas entry: the change of one
	// priority's (or global) pause counters.
	PauseDelta = doc.PauseDelta
)

// SweepEnd is what the sweep playbook records about one end of one test.
type SweepEnd struct {
	Round    int      `json:"round"`
	Pair     []string `json:"pair"` // [listener, connector]
	Host     string   `json:"host"`
	Peer     string   `json:"peer"`
	Role     string   `json:"role"` // "listen" or "peer"
	RC       int      `json:"rc"`
	TimedOut bool     `json:"timed_out"`
	ElapsedS float64  `json:"elapsed_s"`
	Stderr   string   `json:"stderr,omitempty"`
}

// Doc is one document, whichever command wrote it: the fields of all
// kinds, each kind filling its own.
type Doc struct {
	Kind        Kind      `json:"kind"`
	Host        string    `json:"host"`
	Source      string    `json:"source"` // the file it came from
	GeneratedAt time.Time `json:"generated_at"`

	Profile string `json:"profile,omitempty"`
	// NoMatch: an audit or apply whose profile matched no port on the
	// host (matched_ports 0, or, in a document older than that field,
	// nothing compared at all): the host is not in sync, it was not
	// checked.
	NoMatch     bool          `json:"no_match,omitempty"`
	Changed     bool          `json:"changed,omitempty"`
	Applied     bool          `json:"applied,omitempty"`
	RolledBack  bool          `json:"rolled_back,omitempty"`
	Changes     []Change      `json:"changes,omitempty"`
	Unsupported []Unsupported `json:"unsupported,omitempty"`
	// Unknown are an audit's, apply's or verify's unknown[]: settings
	// whose value the source did not hold (key, scope, why).
	Unknown []UnknownSetting `json:"unknown,omitempty"`
	// Errors are the document's errors[]; "KEY: message" where a setting
	// could not be read.
	Errors     []string   `json:"errors,omitempty"`
	Refused    []Mismatch `json:"refused,omitempty"` // key + error as Reason
	OK         *bool      `json:"ok,omitempty"`
	Mismatches []Mismatch `json:"mismatches,omitempty"`
	Traffic    []Traffic  `json:"traffic,omitempty"`
	Sweep      *SweepEnd  `json:"sweep,omitempty"`
	// Unknowns are a peer document's ports whose partner was neither
	// heard nor reported, each "netdev: the likely reason".
	Unknowns []string `json:"unknowns,omitempty"`
	// GIDIndex is what an nccl-env document's NCCL_IB_GID_INDEX resolves
	// to ("3", "-1", "select (-1)", "refused", "unknown"), GIDMode how it
	// was decided (gid_index.mode, or "profile" for an index the profile
	// states); both empty when the document sets none.
	GIDIndex string `json:"gid_index,omitempty"`
	GIDMode  string `json:"gid_mode,omitempty"`
	// NCCLChain are an audit's or apply's qos_chain problems about NCCL
	// (NCCL_IB_TC, NCCL_IB_FIFO_TC, NCCL_IB_SL against the profile's
	// classes), each "key: message".
	NCCLChain []string `json:"nccl_chain,omitempty"`
}

// shape is the raw top-level members of a document that tell the kinds
// apart (detect), and the few a kind's doc type lacks (host and
// generated_at of a verify document, a sweep record's parts); the
// document itself is decoded once, by package doc's Decode function for
// its kind.
type shape struct {
	command, host, generatedAt, checkedAt   []byte
	changed, applied, journalID, rolledBack []byte
	inSync, changes, ok, mismatches         []byte
	unsupported, unknown, qosChain          []byte
	sweep, verify, ports                    []byte
	variables, complete                     []byte
	facts                                   [len(factOrder)][]byte
	sweepRecords                            []byte
	// members are every top-level member in order, as scanned: unread
	// cuts the document from them without scanning it again.
	members []member
}

// member is one top-level member of a document: its key (without the
// quotes) and its raw value.
type member struct{ key, val []byte }

func scanShape(data []byte) (*shape, error) {
	var s shape
	err := members(data, func(k, v []byte) {
		s.members = append(s.members, member{k, v})
		switch string(k) {
		case "command":
			s.command = v
		case "host":
			s.host = v
		case "generated_at":
			s.generatedAt = v
		case "checked_at":
			s.checkedAt = v
		case "changed":
			s.changed = v
		case "applied":
			s.applied = v
		case "journal_id":
			s.journalID = v
		case "rolled_back":
			s.rolledBack = v
		case "in_sync":
			s.inSync = v
		case "changes":
			s.changes = v
		case "unsupported":
			s.unsupported = v
		case "unknown":
			s.unknown = v
		case "qos_chain":
			s.qosChain = v
		case "ok":
			s.ok = v
		case "mismatches":
			s.mismatches = v
		case "sweep":
			s.sweep = v
		case "verify":
			s.verify = v
		case "ports":
			s.ports = v
		case "variables":
			s.variables = v
		case "complete":
			s.complete = v
		case sweepRecordsKey:
			s.sweepRecords = v
		default:
			for i, f := range factOrder {
				if string(k) == f.key {
					s.facts[i] = v
				}
			}
		}
	})
	if err != nil {
		return nil, scanError(data)
	}
	return &s, nil
}

// ErrNotDocument marks a JSON file that is none of the documents report
// reads (an unrelated file in a results directory).
var ErrNotDocument = errors.New("not a rocectl document")

// factKeys are the facts the role sets (cacheable) from each command's
// document: Ansible's jsonfile fact cache holds one file per host with
// them, named by the inventory hostname.
// factOrder is in the order of the kinds: a fact file's documents come
// out in it.
var factOrder = [...]struct {
	key  string
	kind Kind
}{
	{"rocectl_apply_doc", KindApply},
	{"rocectl_audit_doc", KindAudit},
	{"rocectl_peer_doc", KindPeer},
	{"rocectl_verify_doc", KindVerify},
}

// sweepRecordsKey holds a list of rack sweep records: the playbook writes
// one file per round with every end's record in it (sweep_round.yml).
// A file with one record alone, as earlier playbooks wrote, is read too.
const sweepRecordsKey = "rocectl_sweep_records"

// Parse reads the document(s) in one file's bytes. name is the file's
// path: a document without a host is named after the file (hostFromFile).
// A fact cache file yields one document per rocectl fact in it, a sweep
// round's file one per record. Each document is decoded once.
func Parse(name string, data []byte) ([]Doc, error) {
	data = bytes.TrimSpace(data)
	if len(data) == 0 || data[0] != '{' {
		return nil, fmt.Errorf("%s: %w", name, ErrNotDocument)
	}
	top, err := scanShape(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	if !isNull(top.sweepRecords) {
		var recs [][]byte
		if err := elements(top.sweepRecords, func(v []byte) { recs = append(recs, v) }); err != nil {
			return nil, fmt.Errorf("%s: %s: %w", name, sweepRecordsKey, scanError(top.sweepRecords))
		}
		docs := make([]Doc, 0, len(recs))
		for i, rec := range recs {
			d, err := parseOne(name, rec, KindSweep, nil)
			if err != nil {
				return nil, fmt.Errorf("%s: %s[%d]: %w", name, sweepRecordsKey, i, err)
			}
			docs = append(docs, d)
		}
		return docs, nil
	}
	var docs []Doc
	for i, f := range factOrder {
		if v := top.facts[i]; !isNull(v) { // a fact set to null is no document
			d, err := parseOne(name, v, f.kind, nil)
			if err != nil {
				return nil, fmt.Errorf("%s: %s: %w", name, f.key, err)
			}
			docs = append(docs, d)
		}
	}
	if len(docs) > 0 {
		return docs, nil
	}
	d, err := parseOne(name, data, "", top)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	return []Doc{d}, nil
}

// parseOne decodes one document; r is its shape when the caller has
// scanned it already.
func parseOne(name string, data []byte, kind Kind, r *shape) (Doc, error) {
	if r == nil {
		var err error
		if r, err = scanShape(data); err != nil {
			return Doc{}, err
		}
	}
	if kind == "" {
		var err error
		if kind, err = detect(r); err != nil {
			return Doc{}, err
		}
		if kind == "" {
			return Doc{}, ErrNotDocument
		}
	}
	host, err := rawString(r.host, "host")
	if err != nil {
		return Doc{}, err
	}
	generatedAt, err := rawString(r.generatedAt, "generated_at")
	if err != nil {
		return Doc{}, err
	}
	d := Doc{Kind: kind, Host: host, Source: name}
	switch kind {
	case KindAudit, KindApply:
		p, err := decodePlan(data, r)
		if err != nil {
			return Doc{}, err
		}
		d.addPlan(p)
	case KindVerify:
		v, err := doc.DecodeVerify(unread(data, r, verifyUnread))
		if err != nil {
			return Doc{}, wholeError(err, data, doc.DecodeVerify)
		}
		d.addVerify(v, okOf(r.ok, v))
		d.Unknown = v.Unknown
	case KindPeer:
		p, err := doc.DecodePeer(data)
		if err != nil {
			return Doc{}, err
		}
		d.Profile = p.Profile
		d.addPeerPorts(p.Ports)
		if generatedAt == "" {
			if generatedAt, err = rawString(r.checkedAt, "checked_at"); err != nil {
				return Doc{}, err
			}
		}
	case KindNCCL:
		n, err := doc.DecodeNCCLEnv(unread(data, r, ncclUnread))
		if err != nil {
			return Doc{}, wholeError(err, data, doc.DecodeNCCLEnv)
		}
		d.Profile = n.Profile
		d.GIDIndex, d.GIDMode = gidValue(n)
	case KindSweep:
		// The verify document of this end, as the playbook recorded it
		// (absent when the command timed out or printed no JSON).
		if !isNull(r.sweep) {
			d.Sweep = new(SweepEnd)
			if err := json.Unmarshal(r.sweep, d.Sweep); err != nil {
				return Doc{}, err
			}
		}
		if !isNull(r.verify) {
			vr, err := scanShape(r.verify)
			if err != nil {
				return Doc{}, fmt.Errorf("verify: %w", err)
			}
			v, err := doc.DecodeVerify(r.verify)
			if err != nil {
				return Doc{}, fmt.Errorf("verify: %w", err)
			}
			d.addVerify(v, okOf(vr.ok, v))
		}
		if d.Host == "" && d.Sweep != nil {
			d.Host = d.Sweep.Host
		}
	}
	if generatedAt != "" {
		t, err := time.Parse(time.RFC3339, generatedAt)
		if err != nil {
			return Doc{}, fmt.Errorf("generated_at: %w", err)
		}
		d.GeneratedAt = t
	}
	if d.Host == "" {
		d.Host = hostFromFile(name)
	}
	return d, nil
}

// planUnread and verifyUnread are the members of an audit/apply and a
// verify document the fleet view never reads: the port inventory (half of
// an in-sync host's document), the disruptions, the profile's
// diagnostics, the guard's soak. unread leaves them out before the
// document is decoded, so that they are only scanned, never decoded or
// copied. The scan checks their structure (a truncated inventory is still
// an error), not the grammar of every number in them.
var (
	planUnread   = []string{"ports", "disruptions", "diagnostics", "guard", "warnings", "restored", "unchanged", "not_watched"}
	verifyUnread = []string{"diagnostics"}
	ncclUnread   = []string{"diagnostics", "warnings", "notes"}
)

// wholeError is what to report of a document whose shortened form
// (unread) failed to decode with err: encoding/json's message on the
// document as it is. The shortened form joins the members it keeps without
// the bytes between them, so a message that names the character after a
// bad literal ("invalid character ',' in literal true") could name one the
// file does not have there. Only a failed decode pays for the second one;
// err stays when the whole document decodes (a duplicated member).
func wholeError[T any](err error, data []byte, decode func([]byte) (T, error)) error {
	if _, werr := decode(data); werr != nil {
		return werr
	}
	return err
}

// unread is data, an object whose top-level members r holds (scanShape),
// without its members named in skip; data itself when it has none of
// them. It joins r's spans: the document is not scanned again.
func unread(data []byte, r *shape, skip []string) []byte {
	drop := func(k []byte) bool {
		for _, s := range skip {
			if string(k) == s {
				return true
			}
		}
		return false
	}
	found, n := false, 2 // {}
	for _, m := range r.members {
		if drop(m.key) {
			found = true
		} else {
			n += len(m.key) + len(m.val) + 4 // "key":val,
		}
	}
	if !found {
		return data
	}
	out := make([]byte, 0, n)
	out = append(out, '{')
	for _, m := range r.members {
		if drop(m.key) {
			continue
		}
		if len(out) > 1 {
			out = append(out, ',')
		}
		out = append(out, '"')
		out = append(out, m.key...)
		out = append(out, '"', ':')
		out = append(out, m.val...)
	}
	return append(out, '}')
}

// okOf is a verify document's "ok", nil where it has none.
func okOf(raw []byte, v *doc.Verify) *bool {
	if isNull(raw) {
		return nil
	}
	ok := v.OK
	return &ok
}

// addPlan takes what the fleet view shows from an audit or apply document.
func (d *Doc) addPlan(p *doc.Plan) {
	d.Profile, d.Changed, d.Applied, d.RolledBack = p.Profile, p.Changed, p.Applied, p.RolledBack
	d.Changes, d.Unsupported, d.Unknown, d.Errors = p.Changes, p.Unsupported, p.Unknown, p.Errors
	for _, c := range p.QoSChain {
		if aboutNCCL(c) {
			d.NCCLChain = append(d.NCCLChain, c.Key+": "+c.Message)
		}
	}
	for _, rf := range p.Refused {
		d.Refused = append(d.Refused, Mismatch{Key: rf.Key, Reason: rf.Error})
	}
	if p.MatchedPorts != nil {
		d.NoMatch = *p.MatchedPorts == 0 && len(p.Unknown) == 0 && len(p.Errors) == 0
	} else {
		d.NoMatch = p.InSync == 0 && len(p.Changes) == 0 && len(p.Unsupported) == 0 &&
			len(p.Unknown) == 0 && len(p.Errors) == 0 && len(p.Refused) == 0
	}
}

// addVerify takes what the fleet view shows from a verify document; ok
// is its "ok", nil where the document lacks one.
func (d *Doc) addVerify(v *doc.Verify, ok *bool) {
	d.OK, d.Mismatches, d.Errors, d.Profile = ok, v.Mismatches, v.Errors, v.Profile
	d.Traffic = nil
	for _, t := range v.Traffic {
		if t != nil {
			d.Traffic = append(d.Traffic, *t)
		}
	}
}

// detect tells the command from the document's shape (or its "command"
// field, where a newer rocectl writes one).
func detect(r *shape) (Kind, error) {
	command, err := rawString(r.command, "command")
	if err != nil {
		return "", err
	}
	switch Kind(command) {
	case KindAudit, KindApply, KindVerify, KindPeer, KindNCCL:
		return Kind(command), nil
	}
	checkedAt, err := rawString(r.checkedAt, "checked_at")
	if err != nil {
		return "", err
	}
	switch {
	case !isNull(r.sweep):
		return KindSweep, nil
	case checkedAt != "" && len(r.ports) > 0 && r.ports[0] == '[':
		return KindPeer, nil
	case !isNull(r.changes) && (!isNull(r.inSync) || !isNull(r.changed)):
		journalID, err := rawString(r.journalID, "journal_id")
		if err != nil {
			return "", err
		}
		if string(r.applied) == "true" || journalID != "" || string(r.rolledBack) == "true" {
			return KindApply, nil
		}
		return KindAudit, nil
	case !isNull(r.ok) && !isNull(r.mismatches):
		return KindVerify, nil
	case !isNull(r.variables) && !isNull(r.complete):
		return KindNCCL, nil
	}
	return "", nil
}

// hostFromFile names a document without a host after its file: the base
// name less ".json" and a trailing command name, so that the role's
// "gpu-001.example.net.audit.json" and the fact cache's
// "gpu-001.example.net" are both gpu-001.example.net.
func hostFromFile(name string) string {
	b := strings.TrimSuffix(filepath.Base(name), ".json")
	for _, k := range []Kind{KindAudit, KindApply, KindVerify, KindPeer, KindNCCL} {
		b = strings.TrimSuffix(b, "."+string(k))
	}
	return b
}

// Problem is a file Load could not use, and why.
type Problem struct {
	Path string `json:"path"`
	Err  string `json:"error"`
}

// DocLimit bounds one file Load reads: an audit document of a 64-port
// host is a few hundred KiB, an Ansible fact cache file a few MiB.
var DocLimit = input.Limit{Max: 16 << 20, What: "a report document"}

// Load reads every document in paths: files, and directories walked for
// *.json files and for extension-less files (Ansible's jsonfile fact
// cache names its files after the hosts). A file that is not a rocectl
// document is skipped without a problem when it was found by walking a
// directory, and is a problem when named on the command line. Every file
// is read through input.ReadFile: one that is not a regular file (a FIFO,
// a symlink to /dev/zero) or is larger than DocLimit is a problem, never
// read. When ctx is done (SIGINT) Load stops and returns its cause.
func Load(ctx context.Context, paths []string) ([]Doc, []Problem, error) {
	var docs []Doc
	var problems []Problem
	err := walk(ctx, paths, func(p string, named bool) error {
		ds, prob := readDocs(ctx, p, named)
		if ctx.Err() != nil {
			return context.Cause(ctx)
		}
		if prob != nil {
			problems = append(problems, *prob)
		}
		docs = append(docs, ds...)
		return nil
	})
	if err != nil {
		return nil, nil, err
	}
	return docs, problems, nil
}

// readDocs reads and parses one file; a problem when it cannot be used.
// A file that is not a rocectl document is a problem only when named.
func readDocs(ctx context.Context, p string, named bool) ([]Doc, *Problem) {
	data, err := input.ReadFile(ctx, p, DocLimit)
	if ctx.Err() != nil {
		return nil, nil // the caller returns the cause
	}
	if err != nil {
		return nil, &Problem{Path: p, Err: err.Error()}
	}
	ds, err := Parse(p, data)
	if err != nil {
		if !named && errors.Is(err, ErrNotDocument) {
			return nil, nil
		}
		return nil, &Problem{Path: p, Err: err.Error()}
	}
	return ds, nil
}

// walk calls fn with every file Load reads, in order: each path as given,
// a directory's files in lexical order (filepath.WalkDir's); named says
// the file was given by name. It stops at fn's first error, and when ctx
// is done.
func walk(ctx context.Context, paths []string, fn func(p string, named bool) error) error {
	for _, root := range paths {
		st, err := os.Stat(root)
		if err != nil {
			return err
		}
		if !st.IsDir() {
			if err := fn(root, true); err != nil {
				return err
			}
			continue
		}
		err = filepath.WalkDir(root, func(p string, de fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if ctx.Err() != nil {
				return context.Cause(ctx)
			}
			if de.IsDir() || strings.HasPrefix(de.Name(), ".") {
				return nil
			}
			if ext := filepath.Ext(de.Name()); ext == ".json" || ext == "" {
				return fn(p, false)
			}
			return nil
		})
		if err != nil {
			return err
		}
	}
	if ctx.Err() != nil {
		return context.Cause(ctx)
	}
	return nil
}

// addPeerPorts turns a peer document's verdicts into the document's
// mismatches (one per thing the switch and the profile disagree on, keyed
// "<netdev>.peer.<what>") and errors; a port whose partner was not heard
// is Unknowns, never "consistent".
func (d *Doc) addPeerPorts(ports []doc.PeerResult) {
	for _, p := range ports {
		switch p.Verdict {
		case "mismatch":
			for _, m := range p.Mismatches {
				d.Mismatches = append(d.Mismatches, Mismatch{Key: p.Netdev + ".peer." + m.Key, Want: m.Profile, Have: m.Switch, Reason: "switch (" + peerSource(p.Source) + ")"})
			}
		case "error":
			d.Errors = append(d.Errors, p.Netdev+": "+p.Reason)
		case "unknown":
			d.Unknowns = append(d.Unknowns, p.Netdev+": "+p.Reason)
		}
	}
}

func peerSource(s string) string {
	if s == "dcbnl" {
		return "the driver's DCBX"
	}
	return "LLDP"
}
