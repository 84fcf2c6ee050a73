package report

import (
	"cmp"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/rocectl/rocectl/doc"
	"github.com/rocectl/rocectl/policy"
)

// The fleet view is folded as the documents are read: each document
// becomes, on the worker that decoded it, what it says about its host
// (hostDoc: the row's cells, its drift as counts per drift line, its
// errors); the folder keeps, per host, only the newest of each kind and a
// few bytes per document read (for the sources and the duplicates), and
// the drift lines as numbers into one table. Nothing of a document is
// held after it is folded. Every order in the result comes from sorting
// at the end (hosts by name, documents by their place in the walk), never
// from the order the workers finish in.

// maxNamed bounds the unreadable files and the duplicates a fleet view
// names; the rest are counted (ProblemsTotal, DuplicatesTotal).
const maxNamed = 50

// nCells is room for a cell per group and otherGroup.
const nCells = 16

// cell indexes: groups in apply order, then otherGroup.
var groupIndex = map[string]int{}

func init() {
	if len(groups)+1 > nCells {
		panic("report: more setting groups than nCells")
	}
	for i, g := range groups {
		groupIndex[g.name] = i
	}
	groupIndex[otherGroup] = len(groups)
}

func cellName(i int) string {
	if i >= len(groups) {
		return otherGroup
	}
	return groups[i].name
}

// rankState is cellRank backwards.
var rankState = [...]State{1: NotSupported, 2: Unknown, 3: Drift}

// seq is a document's place in the walk: its file's, then its place in
// the file. Ties between documents of the same time go to the later one,
// as they did when the documents were read one after the other.
type seq struct{ file, doc int }

func (a seq) less(b seq) bool {
	if a.file != b.file {
		return a.file < b.file
	}
	return a.doc < b.doc
}

// driftItem is one drift line a document adds to, and how often.
type driftItem struct {
	key driftKey
	n   int
}

// hostDoc is what one document says about its host.
type hostDoc struct {
	kind    Kind
	at      time.Time
	seq     seq
	profile string
	noMatch bool
	applied int
	cells   [nCells]uint8 // cellRank, 0: no entry
	drifted int
	items   []driftItem // on the worker; the folder turns them into refs
	refs    []driftRef
	errors  []string
	verify  State // a verify document's verdict
	peer    State // a peer document's verdict
	// gid and gidMode: an nccl-env document's NCCL_IB_GID_INDEX (Doc's
	// GIDIndex, GIDMode); ncclChain and ncclFirst: an audit/apply's
	// QoS chain problems about NCCL, how many and the first.
	gid, gidMode string
	ncclChain    int
	ncclFirst    string
}

type driftRef struct{ id, n uint32 }

func (h *hostDoc) set(g string, s State) {
	i := groupIndex[g]
	if r := uint8(cellRank[s]); r > h.cells[i] {
		h.cells[i] = r
	}
}

func (h *hostDoc) addDrift(from Kind, key, scope, have, want string) {
	g, name, ok := classify(key, scope)
	if !ok {
		g, name = otherGroup, key
	}
	if from == KindPeer {
		g, name = peerGroup(key)
	}
	if strings.HasSuffix(key, ".buffers.buffer_size") {
		// One unit per line, as the plan prints it.
		one := policy.SizesInOneUnit(have, want)
		have, want = one[0], one[1]
	}
	h.set(g, Drift)
	h.drifted++
	k := driftKey{group: g, setting: name, have: have, want: want, from: from}
	for i := range h.items {
		if h.items[i].key == k {
			h.items[i].n++
			return
		}
	}
	h.items = append(h.items, driftItem{key: k, n: 1})
}

// markUnknown marks the group of a setting that could not be read; false
// when key is no setting key.
func (h *hostDoc) markUnknown(key string) bool {
	g, _, ok := classify(key, "")
	if ok {
		h.set(g, Unknown)
	}
	return ok
}

// foldDoc is what d says about its host: as the document its row is read
// from (an audit or apply; a verify where the host has none), and as its
// verify or peer verdict.
func foldDoc(d *Doc, at seq) *hostDoc {
	h := &hostDoc{kind: d.Kind, at: d.GeneratedAt, seq: at, profile: d.Profile, noMatch: d.NoMatch}
	if d.Kind == KindNCCL {
		h.gid, h.gidMode = d.GIDIndex, d.GIDMode
		return h
	}
	if len(d.NCCLChain) > 0 {
		h.ncclChain, h.ncclFirst = len(d.NCCLChain), d.NCCLChain[0]
	}
	if d.Kind == KindPeer {
		h.peer = InSync
		for _, m := range d.Mismatches {
			h.addDrift(KindPeer, m.Key, "", m.Have, m.Want)
			h.peer = Drift
		}
		for _, c := range d.Changes {
			h.addDrift(KindPeer, c.Key, c.Scope, c.Before, c.After)
			h.peer = Drift
		}
		if h.peer == InSync && len(d.Unknowns) > 0 {
			h.peer = Unknown // a partner not heard is not a consistent one
		}
		if len(d.Errors) > 0 {
			h.peer = Failed
		}
		return h
	}
	// A successful apply made its changes: they are not drift.
	applied := d.Kind == KindApply && d.Applied && !d.RolledBack && len(d.Errors) == 0
	for _, c := range d.Changes {
		if applied {
			h.applied++
			continue
		}
		h.addDrift(d.Kind, c.Key, c.Scope, c.Before, c.After)
	}
	for _, u := range d.Unsupported {
		g, _, ok := classify(u.Key, u.Scope)
		if !ok {
			g = otherGroup
		}
		h.set(g, NotSupported)
	}
	// Unknown is neither in sync nor drift: the group's cell is "?", and
	// the host is not counted in sync.
	for _, u := range d.Unknown {
		g, _, ok := classify(u.Key, u.Scope)
		if !ok {
			g = otherGroup
		}
		h.set(g, Unknown)
	}
	if d.Kind == KindVerify {
		for _, m := range d.Mismatches {
			if m.Reason != "" {
				h.markUnknown(m.Key)
				continue
			}
			h.addDrift(KindVerify, m.Key, "", m.Have, m.Want)
		}
		h.verify = verifyState(d)
	}
	for _, e := range d.Errors {
		key, _, found := strings.Cut(e, ": ")
		if found && h.markUnknown(key) {
			continue
		}
		h.errors = append(h.errors, e)
	}
	for _, r := range d.Refused {
		if !h.markUnknown(r.Key) {
			h.errors = append(h.errors, r.Key+": "+r.Reason)
		}
	}
	return h
}

// docMeta is what the folder keeps of every document it read: enough to
// list the host's sources and to find duplicates.
type docMeta struct {
	kind   Kind
	at     int64 // UnixNano; 0 without a time
	seq    seq
	source string
}

type hostAcc struct {
	plan, verify, peer, nccl *hostDoc // the newest of each kind
	metas                    []docMeta
}

// newer: d replaces cur when it is not older, and later in the walk when
// of the same time.
func newer(cur, d *hostDoc) bool {
	if cur == nil || d.at.After(cur.at) {
		return true
	}
	return d.at.Equal(cur.at) && cur.seq.less(d.seq)
}

// Duplicate is a document that says the same as another one: the same
// host, kind and generated_at (a file copied, a result gathered twice).
// The fleet view reads one of them, the later one in the walk (Of).
type Duplicate struct {
	Path string `json:"path"`
	Host string `json:"host"`
	Kind Kind   `json:"kind"`
	Of   string `json:"of"`
}

type problemAt struct {
	seq seq
	p   Problem
}

// folder folds documents into the fleet view, one at a time; not safe
// for concurrent use (Stream's workers decode and fold each document,
// the folder only keeps the results).
type folder struct {
	opt      Options
	hosts    map[string]*hostAcc
	driftIDs map[driftKey]uint32
	drift    []driftKey
	strs     map[string]string // interned profile names
	sweep    []*Doc
	problems []problemAt
	nProblem int
}

func newFolder(opt Options) *folder {
	return &folder{opt: opt, hosts: map[string]*hostAcc{}, driftIDs: map[driftKey]uint32{}, strs: map[string]string{}}
}

func (f *folder) intern(s string) string {
	if v, ok := f.strs[s]; ok {
		return v
	}
	f.strs[s] = s
	return s
}

// add folds one document's hostDoc (foldDoc's).
func (f *folder) add(host, source string, h *hostDoc) {
	a := f.hosts[host]
	if a == nil {
		a = &hostAcc{}
		f.hosts[host] = a
	}
	var at int64
	if !h.at.IsZero() {
		at = h.at.UnixNano()
	}
	a.metas = append(a.metas, docMeta{kind: h.kind, at: at, seq: h.seq, source: source})
	h.profile = f.intern(h.profile)
	h.gid, h.gidMode = f.intern(h.gid), f.intern(h.gidMode)
	for _, it := range h.items {
		id, ok := f.driftIDs[it.key]
		if !ok {
			id = uint32(len(f.drift))
			f.driftIDs[it.key] = id
			f.drift = append(f.drift, it.key)
		}
		h.refs = append(h.refs, driftRef{id: id, n: uint32(it.n)})
	}
	h.items = nil
	switch h.kind {
	case KindAudit, KindApply:
		if newer(a.plan, h) {
			a.plan = h
		}
	case KindVerify:
		if newer(a.verify, h) {
			a.verify = h
		}
	case KindPeer:
		if newer(a.peer, h) {
			a.peer = h
		}
	case KindNCCL:
		if newer(a.nccl, h) {
			a.nccl = h
		}
	}
}

// problem records a file that could not be used; the fleet view names the
// first maxNamed in walk order and counts the rest, so only those are
// kept.
func (f *folder) problem(at seq, p Problem) {
	f.nProblem++
	f.problems = append(f.problems, problemAt{at, p})
	if len(f.problems) >= 2*maxNamed {
		f.trimProblems()
	}
}

func (f *folder) trimProblems() {
	sort.Slice(f.problems, func(i, j int) bool { return f.problems[i].seq.less(f.problems[j].seq) })
	if len(f.problems) > maxNamed {
		f.problems = f.problems[:maxNamed]
	}
}

// Build makes the fleet view of docs, read in their order (a document
// replaces one of its host and kind of the same time that comes before
// it).
func Build(docs []Doc, problems []Problem, opt Options) *Fleet {
	f := newFolder(opt)
	for i := range docs {
		d := &docs[i]
		if d.Kind == KindSweep {
			f.sweep = append(f.sweep, d)
			continue
		}
		f.add(d.Host, d.Source, foldDoc(d, seq{file: i}))
	}
	for i, p := range problems {
		f.problem(seq{file: i}, p)
	}
	return f.finish()
}

// finish makes the fleet view of what was folded.
func (f *folder) finish() *Fleet {
	opt := f.opt
	fl := &Fleet{SchemaVersion: doc.SchemaVersion, GeneratedAt: opt.Now.UTC(), Missing: []string{}, Drift: []*DriftLine{}}
	if opt.MaxAge > 0 {
		fl.MaxAge = opt.MaxAge.String()
	}
	f.trimProblems()
	fl.Problems = make([]Problem, len(f.problems))
	for i, p := range f.problems {
		fl.Problems[i] = p.p
	}
	if f.nProblem > len(fl.Problems) {
		fl.ProblemsTotal = f.nProblem
	}

	names := make([]string, 0, len(f.hosts))
	for h := range f.hosts {
		names = append(names, h)
	}
	sort.Strings(names)
	lines := make([]*DriftLine, len(f.drift))
	var seen [nCells]bool
	var dups []Duplicate
	fl.Hosts = make([]*HostView, 0, len(names)+len(opt.Expected))
	var nb ncclBuilder
	for _, host := range names {
		a := f.hosts[host]
		nb.add(host, a)
		h := &HostView{Host: host, Groups: map[string]State{}, Verify: NoData, Peer: NoData, Sources: make([]string, len(a.metas))}
		for i, m := range a.metas {
			h.Sources[i] = m.source
		}
		sort.Strings(h.Sources)
		dups = appendDuplicates(dups, host, a.metas)
		var cells [nCells]uint8
		take := func(d *hostDoc) {
			for i, r := range d.cells {
				cells[i] = max(cells[i], r)
			}
			h.Drifted += d.drifted
			for _, r := range d.refs {
				l := lines[r.id]
				if l == nil {
					k := f.drift[r.id]
					l = &DriftLine{Group: k.group, Setting: k.setting, Have: k.have, Want: k.want, From: k.from}
					lines[r.id] = l
				}
				l.Ports += int(r.n)
				l.Hosts = append(l.Hosts, host)
			}
		}
		d := a.plan
		if d == nil {
			d = a.verify // read the groups from verify when there is no audit
		}
		if d != nil {
			h.From, h.Profile, h.GeneratedAt = d.kind, d.profile, d.at
			h.noMatch = d.noMatch
			h.Applied = d.applied
			h.Errors = d.errors
			take(d)
		}
		if v := a.verify; v != nil {
			h.Verify = v.verify
		}
		if p := a.peer; p != nil {
			h.Peer = p.peer
			take(p)
		}
		for i, r := range cells {
			if r > 0 {
				h.Groups[cellName(i)] = rankState[r]
				seen[i] = true
			}
		}
		h.State = hostState(h, opt)
		fl.Hosts = append(fl.Hosts, h)
	}
	for _, e := range opt.Expected {
		if _, ok := f.hosts[e]; !ok {
			fl.Missing = append(fl.Missing, e)
			f.hosts[e] = nil
			fl.Hosts = append(fl.Hosts, &HostView{Host: e, State: Missing, Groups: map[string]State{}, Verify: NoData, Peer: NoData, Sources: []string{}})
		}
	}
	sort.Strings(fl.Missing)
	if len(fl.Missing) > 0 {
		sort.Slice(fl.Hosts, func(i, j int) bool { return fl.Hosts[i].Host < fl.Hosts[j].Host })
	}
	for _, h := range fl.Hosts {
		fl.Summary.count(h)
	}
	fl.Groups = []string{}
	for i, s := range seen {
		if s {
			fl.Groups = append(fl.Groups, cellName(i))
		}
	}
	for _, l := range lines {
		if l != nil {
			fl.Drift = append(fl.Drift, l)
		}
	}
	sortDrift(fl.Drift)
	slices.SortFunc(dups, func(a, b Duplicate) int { return cmp.Compare(a.Path, b.Path) })
	if len(dups) > maxNamed {
		fl.DuplicatesTotal = len(dups)
		dups = dups[:maxNamed]
	}
	fl.Duplicates = dups
	if len(f.sweep) > 0 {
		fl.Sweep = buildSweep(f.sweep)
	}
	nb.finish(fl)
	return fl
}

// appendDuplicates adds the documents of one host that have the kind and
// time of another: every one but the one read (the last in the walk).
func appendDuplicates(dups []Duplicate, host string, metas []docMeta) []Duplicate {
	if len(metas) < 2 {
		return dups
	}
	ms := slices.Clone(metas)
	slices.SortFunc(ms, func(a, b docMeta) int {
		if c := cmp.Compare(a.kind, b.kind); c != 0 {
			return c
		}
		if c := cmp.Compare(a.at, b.at); c != 0 {
			return c
		}
		if a.seq.less(b.seq) {
			return -1
		}
		return 1
	})
	for i := 0; i < len(ms); {
		j := i + 1
		for j < len(ms) && ms[j].kind == ms[i].kind && ms[j].at == ms[i].at {
			j++
		}
		for k := i; k < j-1; k++ {
			dups = append(dups, Duplicate{Path: ms[k].source, Host: host, Kind: ms[k].kind, Of: ms[j-1].source})
		}
		i = j
	}
	return dups
}

func (d Duplicate) String() string {
	return fmt.Sprintf("%s: the same %s of %s as %s", d.Path, d.Kind, d.Host, d.Of)
}
