package nic

import "errors"

// ErrNotCaptured is the answer of a snapshot to a read of something it
// does not hold because nobody captured it (a snapshot imported from a
// few pasted dumps), as opposed to something the kernel refused at
// capture time (an errno such as EOPNOTSUPP). Callers report such a
// setting as unknown, never as supported or unsupported.
var ErrNotCaptured = errors.New("not in the snapshot")

// NotCapturedError is ErrNotCaptured for an answer a snapshot holds only
// in part: the object's other members are known, Parts (e.g. "apps" of
// a DCB state) are not. errors.Is(err, ErrNotCaptured) holds.
type NotCapturedError struct {
	Op    string   // the read, e.g. "dcb"
	Name  string   // netdev or device
	Parts []string // members not captured; empty: none of it
	// Inferred is what other data in the snapshot implies about the
	// value, with where from ("in use (from a.txt:37 → b.txt:37)"): shown
	// as an inference, never taken as the value. Note is a weaker
	// observation ("was used at some time (from a.txt:37)"). Both may be
	// empty.
	Inferred string
	Note     string
}

func (e *NotCapturedError) Error() string {
	if len(e.Parts) == 0 {
		return e.Op + " " + e.Name + ": " + ErrNotCaptured.Error()
	}
	return e.Op + " " + e.Name + " (" + joinComma(e.Parts) + "): " + ErrNotCaptured.Error()
}

func (e *NotCapturedError) Is(target error) bool { return target == ErrNotCaptured }

// Missing reports whether part is among the members not captured.
func (e *NotCapturedError) Missing(part string) bool {
	for _, p := range e.Parts {
		if p == part {
			return true
		}
	}
	return false
}

func joinComma(ss []string) string {
	out := ""
	for i, s := range ss {
		if i > 0 {
			out += ", "
		}
		out += s
	}
	return out
}
