package peer

import (
	"errors"
	"fmt"
	"strings"
	"testing"
)

// A port that hears a flood of malformed LLDP frames keeps their count,
// the first and the last error, nothing per frame: a million bad frames
// took peer from 9 MB to 147 MB when every error was kept (issue 34,
// item 6). Adding one allocates nothing, and the count is exact.
func TestMalformedFramesAreBounded(t *testing.T) {
	var m malformed
	errs := make([]error, 1000)
	for i := range errs {
		errs[i] = fmt.Errorf("frame %d: TLV 8 longer than the frame", i)
	}
	if allocs := testing.AllocsPerRun(100_000, func() { m.add(errs[m.n%len(errs)]) }); allocs != 0 {
		t.Errorf("%v allocations a malformed frame, want none", allocs)
	}
	m.add(errors.New("frame last: bad chassis ID"))
	got := m.String()
	want := fmt.Sprintf("heard %d malformed LLDP frame(s) and no valid one; first: frame 0: TLV 8 longer than the frame; last: frame last: bad chassis ID", m.n)
	if m.n < 100_000 || got != want {
		t.Errorf("%d frames:\n got %q\nwant %q", m.n, got, want)
	}
	var one malformed
	one.add(errors.New("truncated TLV"))
	if s := one.String(); s != "heard 1 malformed LLDP frame(s) and no valid one: truncated TLV" || strings.Contains(s, "first") {
		t.Errorf("one frame: %q", s)
	}
}
