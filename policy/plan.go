package policy

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
}

// NewObserved returns an empty Observed.
func NewObserved() *Observed {
	return &Observed{Values: map[string]string{}, Unsupported: map[string]string{}, Errors: map[string]string{}, Notes: map[string]string{}}
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
	Key    string `json:"key"`
	Scope  string `json:"scope"`
	Reason string `json:"reason"`
	Port   *Port  `json:"-"`
}

// PlanError is a setting whose state could not be read.
type PlanError struct {
	Key   string `json:"key"`
	Error string `json:"error"`
	Port  *Port  `json:"-"`
}

// Plan is the ordered list of changes that would bring the host to the
// profile, plus what cannot be done here.
type Plan struct {
	Changes     []Change
	Unsupported []Unsupported
	Errors      []PlanError
	// InSync counts the settings that already hold their desired value.
	InSync int
}

// Changed reports whether applying the plan would change anything.
func (p *Plan) Changed() bool { return len(p.Changes) > 0 }

// Diff compares desired with observed. Only keys the profile sets are
// compared; the order of Changes is the apply order.
func Diff(d *Desired, o *Observed) *Plan {
	plan := &Plan{}
	for _, s := range d.All() {
		if reason, ok := o.Unsupported[s.Key]; ok {
			plan.Unsupported = append(plan.Unsupported, Unsupported{Key: s.Key, Scope: s.Scope, Reason: reason, Port: s.Port})
			continue
		}
		if e, ok := o.Errors[s.Key]; ok {
			plan.Errors = append(plan.Errors, PlanError{Key: s.Key, Error: e, Port: s.Port})
			continue
		}
		before, present := o.Values[s.Key]
		if present && before == s.Value {
			plan.InSync++
			continue
		}
		plan.Changes = append(plan.Changes, Change{Setting: s, Before: before, Absent: !present, Note: o.Notes[s.Key]})
	}
	plan.Unsupported = append(plan.Unsupported, d.Unresolved...)
	return plan
}
