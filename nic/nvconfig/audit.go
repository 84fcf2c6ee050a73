package nvconfig

import (
	"errors"
	"fmt"
)

// State is how one firmware setting stands against the profile. The
// current and next-boot values are judged separately: a host whose next
// boot already holds the profile's value is pending, not drifted.
type State string

const (
	InSync  State = "in sync" // current and next boot both hold the wanted value
	Pending State = "pending" // next boot holds it, current does not: takes effect at the next firmware reset or reboot
	Drift   State = "drift"   // next boot does not hold it: the value would survive a reboot
	Unknown State = "unknown" // the firmware does not list the setting, or the query could not say
)

// Want is one parameter the profile asks for (policy.FirmwareParam's shape).
type Want struct {
	Name  string
	Value uint64
}

// Verdict is one setting's audit: the wanted value, the two states
// compared separately, and the error behind Unknown.
type Verdict struct {
	Name    string
	Want    uint64
	Current Value
	Next    Value
	State   State
	// CurrentKnown is false without -e (no current column): State is then
	// judged on the next-boot value alone and can be InSync only as far as
	// the next boot goes.
	CurrentKnown bool
	Err          error
}

// Audit compares a query with the wanted values, one verdict per want, in
// order. A nil query (tool missing, not a ConnectX, ...) makes every
// verdict Unknown with why.
func Audit(q *Query, qerr error, wants []Want) []Verdict {
	out := make([]Verdict, 0, len(wants))
	for _, w := range wants {
		v := Verdict{Name: w.Name, Want: w.Value, State: Unknown}
		if q == nil {
			v.Err = qerr
			if v.Err == nil {
				v.Err = errors.New("no query")
			}
			out = append(out, v)
			continue
		}
		s, err := q.Get(w.Name)
		if err != nil {
			v.Err = err
			out = append(out, v)
			continue
		}
		v.Current, v.Next, v.CurrentKnown = s.Current, s.Next, s.Shown[Current]
		switch {
		case !s.Next.HasNum:
			v.Err = fmt.Errorf("%s: next-boot value %q is not a number", w.Name, s.Next.Raw)
		case s.Next.Num != w.Value:
			v.State = Drift
		case !v.CurrentKnown:
			v.State = InSync // as far as the next boot goes; see CurrentKnown
		case !s.Current.HasNum:
			v.Err = fmt.Errorf("%s: current value %q is not a number", w.Name, s.Current.Raw)
		case s.Current.Num != w.Value:
			v.State = Pending
		default:
			v.State = InSync
		}
		out = append(out, v)
	}
	return out
}
