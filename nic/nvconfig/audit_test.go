package nvconfig

import (
	"errors"
	"testing"
)

func TestAudit(t *testing.T) {
	q, err := Parse([]byte(roceTable))
	if err != nil {
		t.Fatal(err)
	}
	got := Audit(q, nil, []Want{
		{"ROCE_CC_PRIO_MASK_P1", 8},   // next 8, current 255: pending
		{"ROCE_CC_PRIO_MASK_P1", 255}, // next 8: drift, though current matches
		{"CNP_DSCP_P1", 48},           // in sync
		{"ATS_ENABLED", 1},            // in sync (current and next True(1))
		{"ADVANCED_PCI_SETTINGS", 0},  // current N/A
		{"CNP_DSCP_P2", 48},           // not listed: unknown
	})
	want := []State{Pending, Drift, InSync, InSync, Unknown, Unknown}
	for i, v := range got {
		if v.State != want[i] {
			t.Errorf("%d %s want %d: %s (%v), want %s", i, v.Name, v.Want, v.State, v.Err, want[i])
		}
	}
	if !errors.Is(got[5].Err, ErrUnknownParam) {
		t.Errorf("unlisted: %v", got[5].Err)
	}
	// Without -e only the next boot can be judged.
	q2, err := Parse(readDump(t, "cx7-mlxconfig-no-e-table.txt"))
	if err != nil {
		t.Fatal(err)
	}
	v := Audit(q2, nil, []Want{{"ROCE_NEXT_PROTOCOL", 254}, {"PF_BAR2_SIZE", 1}})
	if v[0].State != InSync || v[0].CurrentKnown || v[1].State != Drift {
		t.Errorf("no -e: %+v", v)
	}
	// No query: every want unknown, with the reason.
	v = Audit(nil, ErrToolMissing, []Want{{"CNP_DSCP_P1", 48}})
	if v[0].State != Unknown || !errors.Is(v[0].Err, ErrToolMissing) {
		t.Errorf("no tool: %+v", v)
	}
}
