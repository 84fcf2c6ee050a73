package lldp_test

import (
	"errors"
	"fmt"
	"testing"

	"github.com/rocectl/rocectl/lldp"
)

// Malformed keeps at most MaxMalformedKinds kinds and one beyond for the
// rest, whatever comes: the count stays exact, ByKind names them.
func TestMalformedIsBounded(t *testing.T) {
	var m lldp.Malformed
	if m.ByKind() != "" {
		t.Errorf("empty ByKind %q", m.ByKind())
	}
	m.Add(&lldp.DecodeError{Reason: "short"})
	m.Add(fmt.Errorf("wrapped: %w", &lldp.DecodeError{TLV: "TTL", Reason: "bad"}))
	m.Add(errors.New("not a decode error"))
	if got := m.ByKind(); got != "; by kind: 1 frame, 1 TTL, 1 other" {
		t.Errorf("ByKind %q", got)
	}
	for i := range 10_000 {
		m.Add(&lldp.DecodeError{TLV: fmt.Sprint("T", i), Reason: "x"})
	}
	if m.Count != 10_003 || len(m.Kinds) != lldp.MaxMalformedKinds+1 || m.Kinds[lldp.MaxMalformedKinds].Kind != lldp.OtherKinds ||
		m.Kinds[lldp.MaxMalformedKinds].Count != 10_003-lldp.MaxMalformedKinds {
		t.Errorf("count %d, kinds %+v", m.Count, m.Kinds)
	}
}
