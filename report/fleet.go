package report

import (
	"sort"
	"strings"
	"time"

	"github.com/rocectl/rocectl/policy"
)

// State is a host's state, or the state of one setting group on a host.
type State string

const (
	InSync       State = "in sync"
	Drift        State = "drift"
	NotSupported State = "unsupported"
	Unknown      State = "unknown"  // a setting could not be read, or its source did not hold it
	Stale        State = "stale"    // the newest document is older than Options.MaxAge
	Failed       State = "error"    // the command itself failed (errors[] without a setting)
	Missing      State = "missing"  // expected, but no document
	NoMatch      State = "no match" // the profile matched no port: nothing was compared
	NoData       State = "-"        // no document of that kind
)

// Options steer Build.
type Options struct {
	// Now is the time staleness is measured from.
	Now time.Time
	// MaxAge marks a host whose newest audit/apply document is older than
	// this stale (0: never).
	MaxAge time.Duration
	// Expected are the hosts that should have reported; those without a
	// document are listed as missing.
	Expected []string
}

// group is a column of the fleet view: settings of related kinds.
type group struct {
	name     string
	kind     policy.Kind // the first kind in it: the column order is the apply order
	exact    []string    // setting names (key less scope)
	prefixes []string    // or names under these
}

// groups are the setting groups, in policy's apply order of their kinds.
var groups = []group{
	{name: "link", kind: policy.KindMTU, prefixes: []string{"link."}},
	{name: "global pause", kind: policy.KindGlobalPause, exact: []string{"qos.global_pause"}},
	{name: "dcbx", kind: policy.KindDCBX, exact: []string{"qos.dcbx"}},
	{name: "trust/dscp", kind: policy.KindTrust, exact: []string{"qos.trust", "qos.dscp2prio"}},
	{name: "ets", kind: policy.KindETSPrioTC, prefixes: []string{"qos.ets."}},
	{name: "pfc", kind: policy.KindPFC, exact: []string{"qos.pfc"}},
	{name: "cable length", kind: policy.KindCableLength, exact: []string{"qos.cable_length_m"}},
	{name: "buffers", kind: policy.KindPrioBuffer, prefixes: []string{"buffers."}},
	{name: "storm prevention", kind: policy.KindStormPrevention, exact: []string{"qos.pfc_storm_prevention"}},
	{name: "ecn", kind: policy.KindECNEnable, prefixes: []string{"ecn."}},
	{name: "roce", kind: policy.KindRoCEMode, prefixes: []string{"roce."}},
	{name: "devlink", kind: policy.KindDevlink, prefixes: []string{"devlink."}},
	{name: "firmware", kind: policy.KindFirmware, prefixes: []string{"firmware."}},
	{name: "nccl", kind: policy.KindNCCL, prefixes: []string{"nccl."}},
}

const otherGroup = "other"

func init() {
	// The table is written in apply order; keep it so if kinds move.
	sort.SliceStable(groups, func(i, j int) bool { return groups[i].kind < groups[j].kind })
}

func (g *group) has(name string) bool {
	for _, e := range g.exact {
		if name == e {
			return true
		}
	}
	for _, p := range g.prefixes {
		if strings.HasPrefix(name, p) {
			return true
		}
	}
	return false
}

// classify splits a setting key into its group and its name less the
// scope ("ens1f0np0.qos.pfc" → "pfc", "qos.pfc"). scope may be empty (an
// errors[] entry carries only the key): then the name starts at the first
// dot after which a group's name begins, which also copes with a netdev
// named "eth0.100".
func classify(key, scope string) (grp, name string, ok bool) {
	if scope != "" && strings.HasPrefix(key, scope+".") {
		name = key[len(scope)+1:]
		for i := range groups {
			if groups[i].has(name) {
				return groups[i].name, name, true
			}
		}
		return otherGroup, name, true
	}
	for i := 0; i < len(key); i++ {
		if key[i] != '.' {
			continue
		}
		name = key[i+1:]
		for j := range groups {
			if groups[j].has(name) {
				return groups[j].name, name, true
			}
		}
	}
	return "", "", false
}

// Fleet is the fleet view, and the document of `rocectl report -o json`
// (docs/schema/fleet.json).
type Fleet struct {
	// SchemaVersion is doc.SchemaVersion, as in every document rocectl
	// prints.
	SchemaVersion int       `json:"schema_version"`
	GeneratedAt   time.Time `json:"generated_at"`
	MaxAge        string    `json:"max_age,omitempty"`
	// Groups are the setting groups seen in any document, in apply order:
	// the columns of the host matrix.
	Groups  []string    `json:"groups"`
	Hosts   []*HostView `json:"hosts"`
	Summary Summary     `json:"summary"`
	// Drift is every drifted value, grouped: one line per setting and
	// value pair, with the hosts that share it, most hosts first.
	Drift   []*DriftLine `json:"drift"`
	Missing []string     `json:"missing"`
	// Problems are the files that could not be used, the first maxNamed
	// in walk order; ProblemsTotal counts them all when there were more.
	Problems      []Problem `json:"problems"`
	ProblemsTotal int       `json:"problems_total,omitempty"`
	// Duplicates are documents that say what another one says (same host,
	// kind and generated_at), by path, the first maxNamed;
	// DuplicatesTotal counts them all when there were more.
	Duplicates      []Duplicate `json:"duplicates,omitempty"`
	DuplicatesTotal int         `json:"duplicates_total,omitempty"`
	Sweep           *Sweep      `json:"sweep,omitempty"`
	// NCCLGID is the "NCCL GID index" section, absent when no nccl-env
	// document sets the index; NCCLChain the "NCCL against the NIC
	// classes" section, absent when no audit/apply found NCCL's classes
	// disagreeing with the profile (nccl.go).
	NCCLGID   *NCCLGIDView   `json:"nccl_gid_index,omitempty"`
	NCCLChain *NCCLChainView `json:"nccl_chain,omitempty"`
}

// Summary counts hosts per state.
type Summary struct {
	Hosts       int `json:"hosts"`
	InSync      int `json:"in_sync"`
	Drift       int `json:"drift"`
	Unknown     int `json:"unknown"`
	Stale       int `json:"stale"`
	Error       int `json:"error"`
	Missing     int `json:"missing"`
	NoMatch     int `json:"no_match"`
	Unsupported int `json:"with_unsupported"`
}

// HostView is one host's row.
type HostView struct {
	Host        string    `json:"host"`
	State       State     `json:"state"`
	Profile     string    `json:"profile,omitempty"`
	GeneratedAt time.Time `json:"generated_at,omitzero"`
	From        Kind      `json:"from,omitempty"` // the document the row is read from
	// Groups maps a group to its state on this host; a group without an
	// entry had no change, unsupported or unreadable setting: in sync.
	Groups  map[string]State `json:"groups"`
	Verify  State            `json:"verify"`
	Peer    State            `json:"peer"`
	Drifted int              `json:"drifted"`
	Applied int              `json:"applied,omitempty"` // changes an apply made
	Errors  []string         `json:"errors,omitempty"`
	Sources []string         `json:"sources"`
	noMatch bool             // the newest audit/apply matched no port
}

// Cell is the state of group g on the host (in sync when not listed).
func (h *HostView) Cell(g string) State {
	if h.State == Missing {
		return Missing
	}
	if h.State == NoMatch {
		return NoData // nothing was compared: no word on any group
	}
	if h.From == "" {
		return NoData
	}
	if s, ok := h.Groups[g]; ok {
		return s
	}
	if h.State == Failed {
		return NoData // the command failed: no word on this group
	}
	return InSync
}

// DriftLine is one drifted value shared by Hosts.
type DriftLine struct {
	Group   string   `json:"group"`
	Setting string   `json:"setting"` // key less scope: "qos.cable_length_m"
	Have    string   `json:"have"`
	Want    string   `json:"want"`
	From    Kind     `json:"from"` // audit/apply changes, verify or peer mismatches
	Ports   int      `json:"ports"`
	Hosts   []string `json:"hosts"`
}

// cellRank orders a group's states when a host has several settings in
// it: the worst one shows.
var cellRank = map[State]int{NotSupported: 1, Unknown: 2, Drift: 3}

// peerGroup places a peer document's mismatch ("<netdev>.peer.<what>",
// <what> as lldp's check names it) in the group of the host setting it
// is about, named "switch: <what>" so that the line says who differs.
func peerGroup(key string) (grp, name string) {
	_, what, ok := strings.Cut(key, ".peer.")
	if !ok {
		return otherGroup, key
	}
	grp = otherGroup
	switch {
	case what == "pfc":
		grp = "pfc"
	case what == "willing":
		grp = "dcbx"
	case what == "trust" || strings.HasPrefix(what, "dscp "):
		grp = "trust/dscp"
	case strings.HasPrefix(what, "ets "):
		grp = "ets"
	}
	return grp, "switch: " + what
}

func verifyState(v *Doc) State {
	switch {
	case len(v.Errors) > 0:
		return Failed
	case len(v.Mismatches) > 0:
		return Drift
	case len(v.Unknown) > 0:
		return Unknown // not checked: neither held nor failed
	case v.OK != nil && !*v.OK:
		return Failed
	}
	return InSync
}

func hostState(h *HostView, opt Options) State {
	switch {
	case h.From == "" && h.Peer == NoData:
		return NoData
	case len(h.Errors) > 0:
		return Failed
	case opt.MaxAge > 0 && !h.GeneratedAt.IsZero() && opt.Now.Sub(h.GeneratedAt) > opt.MaxAge:
		return Stale
	case h.Drifted > 0:
		return Drift
	case h.noMatch:
		return NoMatch
	}
	for _, s := range h.Groups {
		if s == Unknown {
			return Unknown
		}
	}
	return InSync
}

func (s *Summary) count(h *HostView) {
	s.Hosts++
	switch h.State {
	case InSync:
		s.InSync++
	case Drift:
		s.Drift++
	case Unknown:
		s.Unknown++
	case Stale:
		s.Stale++
	case Failed:
		s.Error++
	case Missing:
		s.Missing++
	case NoMatch:
		s.NoMatch++
	}
	for _, st := range h.Groups {
		if st == NotSupported {
			s.Unsupported++
			break
		}
	}
}

type driftKey struct {
	group, setting, have, want string
	from                       Kind
}

// sortDrift orders the drift lines: most hosts first, then by group (in
// apply order), setting, source and values.
func sortDrift(out []*DriftLine) {
	order := map[string]int{}
	for i, g := range groups {
		order[g.name] = i
	}
	order[otherGroup] = len(groups)
	sort.Slice(out, func(i, j int) bool {
		a, b := out[i], out[j]
		switch {
		case len(a.Hosts) != len(b.Hosts):
			return len(a.Hosts) > len(b.Hosts)
		case a.Group != b.Group:
			return order[a.Group] < order[b.Group]
		case a.Setting != b.Setting:
			return a.Setting < b.Setting
		case a.From != b.From:
			return a.From < b.From
		case a.Have != b.Have:
			return a.Have < b.Have
		}
		return a.Want < b.Want
	})
}
