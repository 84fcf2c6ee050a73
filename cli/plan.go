package cli

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/rocectl/rocectl/apply"
	"github.com/rocectl/rocectl/doc"
	"github.com/rocectl/rocectl/host"
	"github.com/rocectl/rocectl/plan"
	"github.com/rocectl/rocectl/policy"
	"github.com/rocectl/rocectl/port"
	"github.com/rocectl/rocectl/verify"
)

// makePlan loads the profile (printing its warnings), discovers the host
// and diffs them, ending apply's PhaseProfile and PhasePlan (Env.Phase). withGID asks for each port's RoCE v2 GID index even when
// the profile itself does not need it (verbs traffic asked for on the
// command line).
func (env *Env) makePlan(profilePath string, h *host.Host, withGID bool) (*apply.Prepared, error) {
	p, err := env.LoadProfile(profilePath)
	if err != nil {
		return nil, err
	}
	env.phase(PhaseProfile)
	pl := apply.Prepare(h, p, withGID)
	env.phase(PhasePlan)
	return pl, nil
}

// openAndPlan is Host, then makePlan, with the profile loaded while the
// host is opened: a profile's parse and checks take about as long as
// reading a 64-port snapshot's smaller files, and the one waited for the
// other. Its errors are theirs in that order, the host's first, and the
// profile's warnings are printed only once the host is open, as before.
func (env *Env) openAndPlan(ctx context.Context, profilePath string, withGID bool) (pl *apply.Prepared, done func(), err error) {
	type loaded struct {
		p   *policy.Profile
		err error
	}
	lc := make(chan loaded, 1)
	go func() {
		p, err := policy.Load(profilePath, env.ProfileOptions())
		lc <- loaded{p, err}
	}()
	h, done, err := env.Host(ctx)
	l := <-lc
	switch {
	case err != nil:
		return nil, nil, err
	case l.err != nil:
		done()
		return nil, nil, l.err
	}
	env.printWarnings(l.p)
	return apply.Prepare(h, l.p, withGID), done, nil
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// renderPlanText prints a plan the way operators know from Terraform: one
// header per port, "~ key = before -> after", a summary line.
func renderPlanText(out io.Writer, pl *apply.Prepared, verb string) {
	// One write(2) for the whole plan, not one per line: a 64-port plan
	// has over a thousand lines.
	w := bufio.NewWriter(out)
	defer w.Flush()
	if msg := pl.NoPortsMessage(); msg != "" && len(pl.Plan.Changes) == 0 {
		fmt.Fprintln(w, msg)
		return
	}
	type section struct {
		header      string
		changes     []*policy.Change // into pl.Plan.Changes: a 64-port plan has ~1500
		unsupported []policy.Unsupported
		errors      []policy.PlanError
		refused     []policy.PlanError
		unknown     []policy.Unknown
		pending     []policy.Pending
		warnings    []policy.Warning
	}
	disruptions := plan.Disruptions(pl.Plan)
	var order []string
	sections := map[string]*section{}
	get := func(p *port.Port) *section {
		id := policy.HostScope
		if p != nil {
			id = p.Netdev
			// A RoCE LAG's slaves are shown in their bond's section:
			// one line per setting for all of them.
			if _, ok := sections[p.Master]; ok && p.Master != "" {
				id = p.Master
			}
		}
		s, ok := sections[id]
		if !ok {
			// The header is built once per section, not per change: a
			// 64-port plan has about 1500 changes.
			s = &section{header: "host"}
			if p != nil {
				s.header = portHeader(p)
			}
			sections[id] = s
			order = append(order, id)
		}
		return s
	}
	slavesOf := map[string][]string{} // a bond's slaves, for its disruptions
	for _, dp := range pl.Desired.Ports {
		get(&dp.Port)
		for _, m := range dp.Port.Slaves() {
			slavesOf[dp.Port.Netdev] = append(slavesOf[dp.Port.Netdev], m.Netdev)
		}
	}
	for i := range pl.Plan.Changes {
		c := &pl.Plan.Changes[i]
		s := get(c.Port)
		s.changes = append(s.changes, c)
	}
	for _, u := range pl.Plan.Unsupported {
		s := get(u.Port)
		s.unsupported = append(s.unsupported, u)
	}
	for _, e := range pl.Plan.Errors {
		s := get(e.Port)
		s.errors = append(s.errors, e)
	}
	for _, e := range pl.Plan.Refused {
		s := get(e.Port)
		s.refused = append(s.refused, e)
	}
	for _, u := range pl.Plan.Unknown {
		s := get(u.Port)
		s.unknown = append(s.unknown, u)
	}
	for _, wn := range pl.Plan.Warnings {
		s := get(wn.Port)
		s.warnings = append(s.warnings, wn)
	}
	for _, p := range pl.Plan.Pending {
		s := get(p.Port)
		s.pending = append(s.pending, p)
	}
	for _, id := range order {
		s := sections[id]
		if len(s.changes)+len(s.unsupported)+len(s.errors)+len(s.refused)+len(s.unknown)+len(s.warnings)+len(s.pending) == 0 {
			fmt.Fprintf(w, "  %s: in sync\n", s.header)
			continue
		}
		mark := "~"
		if len(s.changes) == 0 {
			mark = " "
		}
		fmt.Fprintf(w, "%s %s\n", mark, s.header)
		for _, d := range sectionDisruptions(disruptions, id, slavesOf[id]) {
			fmt.Fprintf(w, "    ! disrupts: %s\n", d)
		}
		for _, wn := range mergeSlaveWarnings(s.warnings) {
			fmt.Fprintf(w, "    ! warning: %s: %s\n", wn.Key, wn.Message)
		}
		for _, l := range mergeSlaveChanges(s.changes) {
			renderChangeLine(w, l)
		}
		renderUnsupported(w, s.unsupported)
		for _, e := range s.errors {
			fmt.Fprintf(w, "    x %s: cannot read: %s\n", e.Key, e.Error)
		}
		for _, e := range s.refused {
			fmt.Fprintf(w, "    x %s: refused: %s\n", e.Key, strings.ReplaceAll(e.Error, "\n", "\n        "))
		}
		for _, p := range s.pending {
			// Written for the next boot already: nothing to do but
			// the reset rocectl never does by itself.
			fmt.Fprintf(w, "    > %s = %s -> %s: pending (%s)\n", p.Key, p.Current, p.Want, pendingAction(p))
		}
		for _, u := range s.unknown {
			if u.Inferred != "" {
				// Still unknown (counted so, and an error under
				// --require-known), but the data says more than that.
				fmt.Fprintf(w, "    ? %s = inferred: %s, profile wants %s\n", u.Key, u.Inferred, showWant(u.Want))
			} else {
				fmt.Fprintf(w, "    ? %s = unknown (%s), profile wants %s\n", u.Key, u.Reason, showWant(u.Want))
			}
			if u.Note != "" {
				fmt.Fprintf(w, "        note: %s\n", u.Note)
			}
		}
		fmt.Fprintln(w)
	}
	if !pl.Plan.Changed() {
		fmt.Fprint(w, noChangesHeadline(pl.Plan))
		if n := len(pl.Plan.Pending); n > 0 {
			fmt.Fprintf(w, " %d firmware setting(s) pending: in effect after the next firmware reset or reboot, listed above.", n)
		}
		if n := len(pl.Plan.Unsupported); n > 0 {
			fmt.Fprintf(w, " (%d setting(s) unsupported here, listed above)", n)
		}
		fmt.Fprintln(w)
		return
	}
	fmt.Fprintf(w, "Plan: %d to %s, %d in sync, %d unsupported, %d unreadable", len(pl.Plan.Changes), verb, pl.Plan.InSync, len(pl.Plan.Unsupported), len(pl.Plan.Errors))
	if n := len(pl.Plan.Unknown); n > 0 {
		fmt.Fprintf(w, ", %d unknown (not in the snapshot%s)", n, inferredCount(pl.Plan.Unknown))
	}
	if n := len(pl.Plan.Refused); n > 0 {
		fmt.Fprintf(w, ", %d refused (nothing will be applied)", n)
	}
	if n := len(pl.Plan.Pending); n > 0 {
		fmt.Fprintf(w, ", %d pending (firmware, next reset)", n)
	}
	fmt.Fprintln(w, ".")
}

// noChangesHeadline is the last line of a plan without changes. It
// says what was compared: "Host matches profile" only when every setting
// was; with unknown settings, how many were compared and how many not,
// so that an audit of a snapshot that captured 3 of 29 settings does not
// read as a host in sync (exit 0 must not hide what could not be
// compared; --require-known makes it an error).
func noChangesHeadline(p *policy.Plan) string {
	n := len(p.Unknown)
	why := fmt.Sprintf("not captured or not readable%s", inferredCount(p.Unknown))
	switch {
	case n == 0 && len(p.Pending) > 0:
		return "No changes to write: the host matches the profile once its firmware's next-boot values take effect."
	case n == 0:
		return "No changes. Host matches profile."
	case p.InSync == 0:
		return fmt.Sprintf("Nothing compared: the profile's %d setting(s) are unknown (%s), listed above with why. No drift found, none ruled out.", n, why)
	}
	return fmt.Sprintf("No drift in the %d setting(s) compared; %d unknown (%s), listed above with why.", p.InSync, n, why)
}

// inferredCount says how many unknown settings have an inference:
// "; 1 of them inferred", or "" when none has.
func inferredCount(us []policy.Unknown) string {
	n := 0
	for _, u := range us {
		if u.Inferred != "" {
			n++
		}
	}
	if n == 0 {
		return ""
	}
	return fmt.Sprintf("; %d of them inferred", n)
}

// newReport is the JSON document of audit and apply (doc.Plan): the
// contract Ansible's changed_when / failed_when read.
func newReport(pl *apply.Prepared) *doc.Plan {
	r := &doc.Plan{SchemaVersion: SchemaVersion, Changes: []doc.Change{}, Unsupported: []doc.Unsupported{}, Errors: []string{}, Unknown: []doc.Unknown{},
		Diagnostics: []doc.Diagnostic{}, Ports: portsJSON(nil)}
	if pl == nil {
		return r
	}
	r.Profile, r.ProfileHash = pl.Profile.Name, pl.Profile.Hash
	r.Changed = pl.Plan.Changed()
	r.InSync = pl.Plan.InSync
	matched := len(pl.Desired.Ports)
	r.MatchedPorts = &matched
	r.Ports = portsJSON(pl.Inventory.Ports)
	for _, c := range pl.Plan.Changes {
		rc := doc.Change{Key: c.Key, Scope: c.Scope, Before: c.Before, After: c.Value, Absent: c.Absent, Note: c.Note}
		if c.Port != nil {
			rc.Netdev = c.Port.Netdev
		}
		r.Changes = append(r.Changes, rc)
	}
	for _, u := range pl.Plan.Unsupported {
		r.Unsupported = append(r.Unsupported, doc.Unsupported{Key: u.Key, Scope: u.Scope, Reason: u.Reason})
	}
	for _, e := range pl.Plan.Errors {
		r.Errors = append(r.Errors, e.Key+": "+e.Error)
	}
	for _, e := range pl.Plan.Refused {
		r.Refused = append(r.Refused, doc.Refused{Key: e.Key, Error: e.Error})
	}
	r.Unknown = unknownDocs(r.Unknown, pl.Plan.Unknown)
	r.Pending = pendingDocs(pl.Plan.Pending)
	if d := plan.Disruptions(pl.Plan); len(d) > 0 {
		r.Disruptions = d
	}
	for _, w := range pl.Profile.Warnings {
		r.Warnings = append(r.Warnings, w.String())
	}
	for _, w := range pl.Plan.Warnings {
		r.Warnings = append(r.Warnings, w.Key+": "+w.Message)
	}
	r.Diagnostics = diagnosticsOf(pl.Profile.Warnings)
	r.Message = pl.NoPortsMessage()
	r.Host, r.GeneratedAt = hostName(pl.Host.FS.Root()), time.Now().UTC().Format(time.RFC3339)
	return r
}

// showWant is a desired value as shown: "(none)" for no value.
func showWant(v string) string {
	if v == policy.NoValue {
		return "(none)"
	}
	return v
}

func writeJSON(w io.Writer, v any) error { return doc.Encode(w, v) }

// portsJSON is the port inventory as a plan document carries it: an
// array, never null.
func portsJSON(ps []port.Port) json.RawMessage {
	if ps == nil {
		ps = []port.Port{}
	}
	return mustJSON(ps)
}

// mustJSON encodes a value of this module's own plain types (strings,
// numbers, slices, structs of them), which always encodes, for a
// json.RawMessage field of a document.
func mustJSON(v any) json.RawMessage {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return b
}

// pendingDocs lists policy's pending settings as a document does.
func pendingDocs(ps []policy.Pending) []doc.Pending {
	var out []doc.Pending
	for _, p := range ps {
		out = append(out, doc.Pending{Key: p.Key, Scope: p.Scope, Want: p.Want, Current: p.Current, Action: pendingAction(p)})
	}
	return out
}

// pendingAction is what makes a pending setting take effect.
func pendingAction(p policy.Pending) string {
	if p.Port != nil && p.Port.PCI != "" {
		return host.PendingAction(p.Port.PCI)
	}
	return "takes effect at the next firmware reset or reboot"
}

// unknownDocs appends policy's unknown settings as a document lists them.
func unknownDocs(out []doc.Unknown, us []policy.Unknown) []doc.Unknown {
	for _, u := range us {
		out = append(out, doc.Unknown{Key: u.Key, Scope: u.Scope, Reason: u.Reason, Want: u.Want, Inferred: u.Inferred, Note: u.Note})
	}
	return out
}

// renderUnsupported lists unsupported settings, one line per reason: a
// port without per-priority ECN would otherwise print the same reason
// sixteen times.
func renderUnsupported(w io.Writer, us []policy.Unsupported) {
	var reasons []string
	keys := map[string][]string{}
	for _, u := range us {
		if _, ok := keys[u.Reason]; !ok {
			reasons = append(reasons, u.Reason)
		}
		keys[u.Reason] = append(keys[u.Reason], u.Key)
	}
	for _, r := range reasons {
		ks := keys[r]
		if len(ks) == 1 {
			fmt.Fprintf(w, "    ! %s: unsupported: %s\n", ks[0], r)
			continue
		}
		fmt.Fprintf(w, "    ! %d settings unsupported: %s\n        %s\n", len(ks), r, strings.Join(ks, " "))
	}
}

// guardNotWatched says, per matched port, why the pause-storm guard would
// watch nothing there, judged from the port's counters now (mlx5 creates
// its pause duration counters only with PFC or global pause on;
// verify.CoverageOf knows). A port whose counters cannot be read is left
// to the soak, which reports the read error.
func guardNotWatched(pl *apply.Prepared) []string {
	limit := pl.Profile.Guard.MaxPauseFramesPerSecond > 0
	var out []string
	for _, src := range apply.CounterSources(pl) {
		st, err := src.Read()
		if err != nil {
			continue
		}
		if ok, why := verify.CoverageOf(st).Watched(src.Port, limit); !ok {
			out = append(out, why)
		}
	}
	return out
}

// renderNotWatched prints one line per port the guard cannot watch.
func renderNotWatched(w io.Writer, notWatched []string) {
	for _, why := range notWatched {
		fmt.Fprintf(w, "  guard: not watched: %s\n", why)
	}
}

// portHeader names a port's section of the plan, with its place in the
// topology: a RoCE LAG as "mlx5_bond_0 (bond0: ens1f0np0 + ens1f1np1,
// 802.3ad) port 1, mlx5_core", a slave with its bond, a VF with its PF.
func portHeader(p *port.Port) string {
	switch {
	case len(p.Slaves()) > 0:
		names := make([]string, len(p.Slaves()))
		for i, m := range p.Slaves() {
			names[i] = m.Netdev
		}
		topo := p.Netdev + ": " + strings.Join(names, " + ")
		if p.BondMode() != "" {
			topo += ", " + p.BondMode()
		}
		return fmt.Sprintf("%s (%s) port %d, %s", p.RDMADevice, topo, p.PortNum, orDash(p.Driver))
	case p.Master != "":
		return fmt.Sprintf("%s (slave of %s, %s port %d, %s)", p.Netdev, p.Master, p.RDMADevice, p.PortNum, orDash(p.Driver))
	case p.RDMADevice == "":
		return fmt.Sprintf("%s (no RDMA device known, %s)", p.Netdev, orDash(p.Driver))
	case p.Role == port.RoleVF:
		return fmt.Sprintf("%s (%s port %d, VF of %s, %s)", p.Netdev, p.RDMADevice, p.PortNum, orDash(p.PF), orDash(p.Driver))
	}
	return fmt.Sprintf("%s (%s port %d, %s)", p.Netdev, p.RDMADevice, p.PortNum, orDash(p.Driver))
}

// mergeSlaveChanges makes one line of the changes of one setting on the
// slaves of a RoCE LAG (one journal step writes them all: host.Steps);
// any other change is a line of its own. Lines keep the plan's order.
func mergeSlaveChanges(cs []*policy.Change) [][]*policy.Change {
	lines := make([][]*policy.Change, 0, len(cs))
	at := map[string]int{}
	for i, c := range cs {
		// A line starts as the change where it is, not a copy; capped at
		// one, so that adding a slave's change copies it rather than
		// writing into cs.
		if c.Port == nil || c.Port.Master == "" {
			lines = append(lines, cs[i:i+1:i+1])
			continue
		}
		id := c.Port.Master + "\x00" + c.Name + "\x00" + c.Value
		if j, ok := at[id]; ok {
			lines[j] = append(lines[j], c)
			continue
		}
		at[id] = len(lines)
		lines = append(lines, cs[i:i+1:i+1])
	}
	return lines
}

// slaveKey names a setting on several slaves as a shell brace expansion
// of their keys, {ens1f0np0,ens1f1np1}.qos.pfc, so that each slave's own
// key (what JSON output, errors and the journal use) is still findable.
func slaveKey(netdevs []string, name string) string {
	if len(netdevs) == 1 {
		return netdevs[0] + "." + name
	}
	return "{" + strings.Join(netdevs, ",") + "}." + name
}

// renderChangeLine prints one change, or one setting's change on several
// slaves: "~ {a,b}.qos.pfc = [] -> [3]", with each slave's before-value
// when they differ ("a: [4], b: [] -> [3]").
func renderChangeLine(w io.Writer, l []*policy.Change) {
	c := l[0]
	key := c.Key
	sameBefore, allAbsent := true, true
	if len(l) > 1 {
		nds := make([]string, len(l))
		for i, x := range l {
			nds[i] = x.Port.Netdev
			sameBefore = sameBefore && x.Before == c.Before && x.Absent == c.Absent
			allAbsent = allAbsent && x.Absent
		}
		key = slaveKey(nds, c.Name)
	} else {
		allAbsent = c.Absent
	}
	// Plain writes, not Fprintf: a 64-port plan is 2,400 of these lines,
	// and formatting them was most of the time spent printing it.
	value := c.Value
	befores := make([]string, len(l))
	for i, x := range l {
		befores[i] = displayBefore(x)
	}
	if c.Kind == policy.KindBufferSize {
		// One unit per line: the NIC reports bytes, a profile says KiB.
		one := policy.SizesInOneUnit(append(befores, value)...)
		befores, value = one[:len(l)], one[len(l)]
	}
	switch {
	case allAbsent:
		writeStrings(w, "    + ", key, " = ", value, "\n")
	case sameBefore:
		writeStrings(w, "    ~ ", key, " = ", befores[0], " -> ", value, "\n")
	default:
		for i, x := range l {
			befores[i] = x.Port.Netdev + ": " + befores[i]
		}
		writeStrings(w, "    ~ ", key, " = ", strings.Join(befores, ", "), " -> ", value, "\n")
	}
	for i, x := range l {
		// Each note once, in the order the slaves give them.
		if x.Note != "" && !slices.ContainsFunc(l[:i], func(y *policy.Change) bool { return y.Note == x.Note }) {
			writeStrings(w, "        note: ", x.Note, "\n")
		}
	}
}

// writeStrings writes ss to w one after the other.
func writeStrings(w io.Writer, ss ...string) {
	for _, s := range ss {
		io.WriteString(w, s)
	}
}

func displayBefore(c *policy.Change) string {
	if c.Absent {
		return "(none)"
	}
	return c.Before
}

// mergeSlaveWarnings makes one warning of those that say the same about
// the same setting on each slave of a bond.
func mergeSlaveWarnings(ws []policy.Warning) []policy.Warning {
	var out []policy.Warning
	var nds [][]string
	at := map[string]int{}
	for _, wn := range ws {
		p := wn.Port
		name, ok := "", false
		if p != nil && p.Master != "" {
			name, ok = strings.CutPrefix(wn.Key, p.Netdev+".")
		}
		if !ok {
			out, nds = append(out, wn), append(nds, nil)
			continue
		}
		id := p.Master + "\x00" + name + "\x00" + wn.Message
		if i, seen := at[id]; seen {
			nds[i] = append(nds[i], p.Netdev)
			out[i].Key = slaveKey(nds[i], name)
			continue
		}
		at[id] = len(out)
		out, nds = append(out, wn), append(nds, []string{p.Netdev})
	}
	return out
}

// sectionDisruptions lists what applying disturbs on a section's netdev
// and, for a bond, on its slaves: one line for what all slaves share,
// named by the slaves it concerns.
func sectionDisruptions(d map[string][]string, id string, slaves []string) []string {
	out := slices.Clone(d[id])
	var whats []string
	on := map[string][]string{}
	for _, nd := range slaves {
		for _, what := range d[nd] {
			if _, ok := on[what]; !ok {
				whats = append(whats, what)
			}
			on[what] = append(on[what], nd)
		}
	}
	for _, what := range whats {
		out = append(out, strings.Join(on[what], " + ")+": "+what)
	}
	return out
}
