package lldp

import (
	"errors"
	"fmt"
	"strings"
)

// MaxMalformedKinds is how many kinds of malformed frame a Malformed
// tells apart; frames of further kinds are counted under OtherKinds.
const MaxMalformedKinds = 8

// OtherKinds names the kind that counts the frames of every kind past
// the first MaxMalformedKinds.
const OtherKinds = "other kinds"

// Malformed is a bounded summary of the malformed frames a listener
// heard: the exact count, a count per kind (the TLV that was wrong, or
// "frame" for the Ethernet header and the LLDPDU as a whole) with the
// first error of each, and the last error. It holds at most
// MaxMalformedKinds+1 kinds and two errors each, however many frames
// arrive, so a port flooded with bad frames costs no memory per frame.
type Malformed struct {
	Count int
	Kinds []MalformedKind
	Last  error
}

// MalformedKind is one kind of malformed frame: how many, and the first.
type MalformedKind struct {
	Kind  string
	Count int
	First error
}

// Add counts one malformed frame; err is its Received.Err.
func (m *Malformed) Add(err error) {
	m.Count++
	m.Last = err
	kind := kindOf(err)
	for i := range m.Kinds {
		if m.Kinds[i].Kind == kind {
			m.Kinds[i].Count++
			return
		}
	}
	if len(m.Kinds) >= MaxMalformedKinds {
		last := &m.Kinds[len(m.Kinds)-1]
		if last.Kind != OtherKinds {
			m.Kinds = append(m.Kinds, MalformedKind{Kind: OtherKinds, First: err})
			last = &m.Kinds[len(m.Kinds)-1]
		}
		last.Count++
		return
	}
	m.Kinds = append(m.Kinds, MalformedKind{Kind: kind, Count: 1, First: err})
}

// kindOf is the TLV a decoding error names, "frame" when it names none,
// "other" for an error that is not a *DecodeError.
func kindOf(err error) string {
	var de *DecodeError
	switch {
	case !errors.As(err, &de):
		return "other"
	case de.TLV == "":
		return "frame"
	}
	return de.TLV
}

// ByKind is "; by kind: 3 Chassis ID, 1 frame" when the frames were of
// more than one kind, else "": what follows the count and the last error
// in a message.
func (m *Malformed) ByKind() string {
	if m == nil || len(m.Kinds) < 2 {
		return ""
	}
	parts := make([]string, len(m.Kinds))
	for i, k := range m.Kinds {
		parts[i] = fmt.Sprintf("%d %s", k.Count, k.Kind)
	}
	return "; by kind: " + strings.Join(parts, ", ")
}
