package policy

import (
	"fmt"

	"github.com/rocectl/rocectl/port"
)

// Observed is what the host holds for the keys of a Desired, formatted with
// the same canonical functions. A key missing from Values has no value on the
// host (e.g. no APP entry, no NCCL line); a key in Unsupported cannot be read
// or set on this port, with the reason.
type Observed struct {
	Values      map[string]string
	Unsupported map[string]string
	// Notes are things an operator must know about a change that will be
	// made, e.g. "takes effect after devlink dev reload".
	Notes map[string]string
	// Errors are keys whose read failed for another reason (EPERM, ...).
	Errors map[string]string
	// Unknown are keys whose value the source does not hold (a snapshot
	// imported from text dumps that did not contain it), with what is
	// missing: neither a value nor a claim about support.
	Unknown map[string]string
	// Inferred holds, for unknown keys, what other data implies about the
	// value ("in use (from a.txt:37 → b.txt:37)"): shown as an inference,
	// never compared as a value.
	Inferred map[string]string
	// Pending holds, for keys whose value (Values) is the next-boot one
	// (firmware NVConfig), the current value when it differs: the value
	// in Values takes effect only at the next firmware reset or reboot.
	Pending map[string]string
}

// NewObserved returns an empty Observed.
func NewObserved() *Observed {
	return &Observed{Values: map[string]string{}, Unsupported: map[string]string{}, Errors: map[string]string{}, Notes: map[string]string{}, Unknown: map[string]string{}, Inferred: map[string]string{}, Pending: map[string]string{}}
}

// Pending is a setting whose next-boot value already holds the profile's
// while its current value does not (firmware NVConfig): neither drift
// (nothing is left to write) nor in sync (the host does not run with it
// yet). It takes effect at the next firmware reset or reboot, which
// rocectl never does by itself; Note says which.
type Pending struct {
	Key     string     `json:"key"`
	Scope   string     `json:"scope"`
	Want    string     `json:"want"`
	Current string     `json:"current"`
	Note    string     `json:"note,omitempty"`
	Port    *port.Port `json:"-"`
}

// Change is one planned change.
type Change struct {
	Setting
	Before string // canonical value on the host; "" when absent
	Absent bool   // the host has no value at all for this key
	Note   string // what the operator must know, e.g. "needs devlink reload"
}

// Unsupported is a setting the port (or host) cannot take, with why.
type Unsupported struct {
	Key    string     `json:"key"`
	Scope  string     `json:"scope"`
	Reason string     `json:"reason"`
	Port   *port.Port `json:"-"`
}

// Unknown is a setting whose value the source does not hold: a snapshot
// that did not capture it. It is neither in sync, nor drift, nor
// unsupported.
type Unknown struct {
	Key    string `json:"key"`
	Scope  string `json:"scope"`
	Reason string `json:"reason"`
	Want   string `json:"want"`
	// Inferred is what the source's other data implies about the value,
	// with where from; Note a weaker observation. Neither is a value:
	// the setting stays unknown (and fails --require-known).
	Inferred string     `json:"inferred,omitempty"`
	Note     string     `json:"note,omitempty"`
	Port     *port.Port `json:"-"`
}

// UnknownReason is how an unknown value is shown.
const UnknownReason = "not in the snapshot"

// PlanError is a setting whose state could not be read.
type PlanError struct {
	Key   string     `json:"key"`
	Error string     `json:"error"`
	Want  string     `json:"-"` // the value the setting should hold
	Port  *port.Port `json:"-"`
}

// Warning is what the operator must know about a port that no change
// carries and that does not stop an apply: a driver mode under which what
// the profile sets may be overwritten later.
type Warning struct {
	Key     string     `json:"key"` // the setting that would remove the cause
	Message string     `json:"message"`
	Port    *port.Port `json:"-"`
}

// Plan is the ordered list of changes that would bring the host to the
// profile, plus what cannot be done here.
type Plan struct {
	Changes     []Change
	Unsupported []Unsupported
	Errors      []PlanError
	// Unknown are settings whose value the source does not hold.
	Unknown []Unknown
	// Refused are changes the planner will not make on this host, with
	// why: the driver would refuse them, or they need a setting the
	// profile does not give. A plan with refusals is not applied at all.
	Refused []PlanError
	// Warnings do not stop an apply (Warning).
	Warnings []Warning
	// Unchecked are changes whose driver checks could not run, with why
	// (the state they check could not be read, or was not captured): a
	// warning says so per port, and apply writes them only with
	// --skip-unreadable.
	Unchecked []PlanError
	// Pending are settings whose next-boot value holds the profile's and
	// whose current value does not yet (Pending): not counted in InSync.
	Pending []Pending
	// InSync counts the settings that already hold their desired value.
	InSync int
}

// Changed reports whether applying the plan would change anything.
func (p *Plan) Changed() bool { return len(p.Changes) > 0 }

// Diff compares desired with observed. Only keys the profile sets are
// compared; the order of Changes is the apply order. It is the one
// comparison of desired and observed values: audit's plan, verification
// after apply and the transaction's read-back of each step all use it.
func Diff(d *Desired, o *Observed) *Plan {
	// d.All() in place, without copying every setting first.
	n := len(d.Host)
	for _, p := range d.Ports {
		n += len(p.Settings)
	}
	plan := &Plan{Changes: make([]Change, 0, n)}
	for _, p := range d.Ports {
		plan.diff(p.Settings, o)
	}
	plan.diff(d.Host, o)
	plan.Unsupported = append(plan.Unsupported, d.Unresolved...)
	plan.Unknown = append(plan.Unknown, d.Unknown...)
	return plan
}

// NoValue as a setting's Value means the host should hold no value for it
// at all (the undo of a value the host did not have: no NCCL line, no
// forced traffic class). Canonical values are never empty: the profile
// decoder refuses empty strings.
const NoValue = ""

// showValue is how a value is displayed: an absent one as "(none)".
func showValue(v string) string {
	if v == NoValue {
		return "(none)"
	}
	return v
}

// DiffSettings compares settings with what was observed, as Diff does.
func DiffSettings(ss []Setting, o *Observed) *Plan {
	// Room for every setting to change: a factory host's plan changes
	// most of them, and growing a 64-port plan's thousands of changes
	// step by step cost more than the comparisons.
	plan := &Plan{Changes: make([]Change, 0, len(ss))}
	plan.diff(ss, o)
	return plan
}

// diff adds the comparison of ss with o to p.
func (p *Plan) diff(ss []Setting, o *Observed) {
	for _, s := range ss {
		if reason, ok := o.Unsupported[s.Key]; ok {
			p.Unsupported = append(p.Unsupported, Unsupported{Key: s.Key, Scope: s.Scope, Reason: reason, Port: s.Port})
			continue
		}
		if why, ok := o.Unknown[s.Key]; ok {
			p.Unknown = append(p.Unknown, Unknown{Key: s.Key, Scope: s.Scope, Reason: why, Want: s.Value,
				Inferred: o.Inferred[s.Key], Note: o.Notes[s.Key], Port: s.Port})
			continue
		}
		if e, ok := o.Errors[s.Key]; ok {
			p.Errors = append(p.Errors, PlanError{Key: s.Key, Error: e, Want: s.Value, Port: s.Port})
			continue
		}
		before, present := o.Values[s.Key]
		if present == (s.Value != NoValue) && (!present || before == s.Value) {
			if cur, ok := o.Pending[s.Key]; ok {
				p.Pending = append(p.Pending, Pending{Key: s.Key, Scope: s.Scope, Want: s.Value, Current: cur, Note: o.Notes[s.Key], Port: s.Port})
				continue
			}
			p.InSync++
			continue
		}
		p.Changes = append(p.Changes, Change{Setting: s, Before: before, Absent: !present, Note: o.Notes[s.Key]})
	}
}

// Mismatch is a setting that does not hold the value it should, or could
// not be read (Reason): the one mismatch type that verification and the
// transaction's read-back report.
type Mismatch struct {
	Key    string `json:"key"`
	Want   string `json:"want"`
	Have   string `json:"have"`
	Reason string `json:"reason,omitempty"` // for unreadable settings
}

func (m *Mismatch) Error() string {
	if m.Reason != "" {
		return fmt.Sprintf("verify: %s: want %s, cannot read: %s", m.Key, m.Want, m.Reason)
	}
	return fmt.Sprintf("verify: %s: want %s, have %s", m.Key, m.Want, m.Have)
}

// String is Error, for printing lists of mismatches.
func (m Mismatch) String() string { return m.Error() }

// Mismatches lists what a plan over values that should already hold
// found different or unreadable, in plan order (changes, then errors).
// Unsupported settings are not mismatches: audit and apply report them.
func (p *Plan) Mismatches() []Mismatch {
	var out []Mismatch
	for _, c := range p.Changes {
		have := c.Before
		if c.Absent {
			have = NoValue
		}
		out = append(out, Mismatch{Key: c.Key, Want: showValue(c.Value), Have: showValue(have)})
	}
	for _, e := range p.Errors {
		out = append(out, Mismatch{Key: e.Key, Want: showValue(e.Want), Reason: e.Error})
	}
	return out
}
