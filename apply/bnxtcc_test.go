package apply

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rocectl/rocectl/driver/bnxt"
	"github.com/rocectl/rocectl/nic/nictest/bnxtsim"
)

// bnxt_re's configfs cc group (Broadcom's configfs.c): the profile's
// per-priority ECN enable is its one ecn_enable and roce_prio, each
// attribute's store only stages a value, and apply_store sends them to
// the firmware together. A port's CC writes are one journalled step that
// ends with the apply; rollback writes back what each attribute held,
// roce_prio too (which the before-values of the enables do not say when
// ECN was off), and applies again.

const bnxtCCDir = "sys/kernel/config/bnxt_re/bnxt_re0/ports/1/cc"

const bnxtECNProfile = "[match]\ndrivers = [\"bnxt_en\"]\n[ecn]\nrp_priorities = [3]\nnp_priorities = [3]\ncnp_dscp = 48\ncnp_priority = 6\n"

func writeCC(t *testing.T, root string, files map[string]string) {
	t.Helper()
	for name, v := range files {
		if err := os.WriteFile(filepath.Join(root, bnxtCCDir, name), []byte(v), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func readCC(t *testing.T, root string, names ...string) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, n := range names {
		b, err := os.ReadFile(filepath.Join(root, bnxtCCDir, n))
		if err != nil {
			t.Fatal(err)
		}
		out[n] = string(b)
	}
	return out
}

var ccNames = []string{"ecn_enable", "roce_prio", "cnp_dscp", "cnp_prio", "apply"}

func TestBnxtCCIsOneStepEndingInApplyAndRollsBackWhole(t *testing.T) {
	for _, fromDisk := range []bool{false, true} {
		t.Run(map[bool]string{false: "in process", true: "from the journal on disk"}[fromDisk], func(t *testing.T) {
			testBnxtCCRoundTrip(t, fromDisk)
		})
	}
}

func testBnxtCCRoundTrip(t *testing.T, fromDisk bool) {
	r := driverRig(t, "bnxt-re-factory", bnxtECNProfile, nil)
	// ECN off, a RoCE priority of 5 left from before: no enable reads
	// on, and only the saved attributes can give roce_prio back.
	writeCC(t, r.root, map[string]string{"ecn_enable": "0x0\n", "roce_prio": "0x5\n", "apply": ""})
	d, pl := planOf(r.h, r.d)
	r.d, r.plan = d, pl
	if len(r.plan.Refused) != 0 {
		t.Fatalf("refused: %+v", r.plan.Refused)
	}
	before := readCC(t, r.root, ccNames...)

	txn, err := Begin(r.h, r.d, r.plan, "test", r.opts)
	if err != nil {
		t.Fatal(err)
	}
	var cc int
	for _, st := range txn.J.Steps {
		if st.Group != "cc" {
			continue
		}
		cc++
		if len(st.Changes) != 4 || st.CC == nil {
			t.Errorf("cc step: %d changes, saved %+v; want the port's 4 ECN changes and their attributes saved", len(st.Changes), st.CC)
		}
	}
	if cc != 1 {
		t.Fatalf("%d cc steps in %+v, want one", cc, txn.J.Steps)
	}
	if err := txn.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	got := readCC(t, r.root, ccNames...)
	want := map[string]string{"ecn_enable": "0x1\n", "roce_prio": "0x3\n", "cnp_dscp": "0x30\n", "cnp_prio": "0x6\n", "apply": "0x1\n"}
	for n, v := range want {
		if got[n] != v {
			t.Errorf("after apply %s = %q, want %q", n, got[n], v)
		}
	}
	// The apply marks the step's end: cleared, a rollback must write it again.
	writeCC(t, r.root, map[string]string{"apply": ""})
	if fromDisk {
		err = r.rollBackFromDisk(t)
	} else {
		err = txn.RollbackNow()
	}
	if err != nil {
		t.Fatalf("rollback: %v", err)
	}
	got = readCC(t, r.root, ccNames...)
	for _, n := range ccNames[:4] {
		if got[n] != before[n] {
			t.Errorf("after rollback %s = %q, want %q as before", n, got[n], before[n])
		}
	}
	if got["apply"] != "0x1\n" {
		t.Errorf("rollback did not apply the restored values: apply = %q", got["apply"])
	}
}

// bnxt_re has one enable for reaction and notification and one RoCE
// priority: a profile that asks for ECN reaction and notification on
// different priorities, or on two, is refused before any write.
func TestBnxtCCRefusesWhatOneEnableCannotHold(t *testing.T) {
	for _, ecn := range []string{
		"rp_priorities = [3]\nnp_priorities = [4]\n",
		"rp_priorities = [3, 4]\nnp_priorities = [3, 4]\n",
		"rp_priorities = [3]\n",
	} {
		r := driverRig(t, "bnxt-re-factory", "[match]\ndrivers = [\"bnxt_en\"]\n[ecn]\n"+ecn, nil)
		if len(r.plan.Refused) == 0 || !strings.Contains(r.plan.Refused[0].Error, "ecn_enable") {
			t.Errorf("%q: refused %+v, want the one-enable refusal", ecn, r.plan.Refused)
		}
	}
}

// The planner's ranges of bnxt_re's configfs stores (driver/bnxt
// CCValueProblem) against the simulator's model of them (bnxtsim.CC),
// written apart: a value the planner lets through must be stored as it
// is, and one it refuses must be refused or changed by the store.
func TestBnxtCCRangesAgreeWithTheSimulator(t *testing.T) {
	for _, attr := range []string{"cnp_dscp", "roce_dscp", "cnp_prio", "roce_prio", "cc_mode"} {
		for v := int64(0); v < 80; v++ {
			m := bnxtsim.NewCC(nil)
			err := m.Write(attr, fmt.Sprintf("0x%x", v))
			storedAsIs := err == nil && m.Read(attr) == bnxtsim.NewCCWith(attr, uint32(v)).Read(attr)
			if refused := bnxt.CCValueProblem(attr, v) != ""; refused == storedAsIs {
				t.Errorf("%s = %d: planner refuses %v, driver model stores it as is %v (err %v)", attr, v, refused, storedAsIs, err)
			}
		}
	}
}

// An apply the driver refuses (apply_store answers EINVAL when
// bnxt_qplib_modify_cc fails; here the attribute cannot be written at
// all) fails the step, naming the setting and the apply, and rollback
// writes back every attribute the step staged: nothing of it is left
// half-applied in the driver's cache.
func TestBnxtCCFailedApplyLeavesNothingStaged(t *testing.T) {
	r := driverRig(t, "bnxt-re-factory", bnxtECNProfile, nil)
	before := readCC(t, r.root, ccNames[:4]...)
	applyPath := filepath.Join(r.root, bnxtCCDir, "apply")
	if err := os.Remove(applyPath); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(applyPath, 0o755); err != nil { // a write to it fails
		t.Fatal(err)
	}
	err := r.apply(t)
	var ae *ApplyError
	if !errors.As(err, &ae) || !strings.Contains(ae.Err.Error(), "bnxt_re0.ecn.") || !strings.Contains(ae.Err.Error(), "/apply") {
		t.Fatalf("apply with a failing commit: %v, want the step's setting and the apply named", err)
	}
	if got := readCC(t, r.root, ccNames[:4]...); !maps.Equal(got, before) {
		t.Errorf("after the failed apply and its rollback: %v, want %v", got, before)
	}
}

// Mainline bnxt_re (debugfs.c) has no configfs group: its cc_config
// files under the PCI function's debugfs directory take the CNP's DSCP
// and priority (alt_vlan_dscp, alt_vlan_pcp) in decimal, each sent to
// the firmware at once (no apply), and it has no RoCE priority, so the
// per-priority enable is unsupported there, saying where it lives
// instead. Apply and rollback round-trip through it.
func TestBnxtMainlineDebugfsCCRoundTrip(t *testing.T) {
	r := driverRig(t, "bnxt-re-factory", bnxtECNProfile, nil)
	if err := os.RemoveAll(filepath.Join(r.root, "sys/kernel/config/bnxt_re")); err != nil {
		t.Fatal(err)
	}
	dbg := filepath.Join(r.root, "sys/kernel/debug/bnxt_re/0000:ca:00.1/cc_config")
	if err := os.MkdirAll(dbg, 0o755); err != nil {
		t.Fatal(err)
	}
	before := map[string]string{"enable_cc": "1\n", "alt_vlan_dscp": "46\n", "alt_vlan_pcp": "7\n", "tos_dscp": "26\n"}
	for n, v := range before {
		// debugfs.c creates them 0400 and root writes them all the same
		// (CAP_DAC_OVERRIDE); 0600 keeps the test to the owner's rights.
		if err := os.WriteFile(filepath.Join(dbg, n), []byte(v), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	r.h.Discover() // forget the configfs probe
	r.d, r.plan = planOf(r.h, r.d)
	var unsupported []string
	for _, u := range r.plan.Unsupported {
		unsupported = append(unsupported, u.Reason)
	}
	if len(r.plan.Unsupported) != 16 || !strings.Contains(unsupported[0], "no RoCE priority") {
		t.Errorf("unsupported: %q, want the 16 per-priority enables, saying debugfs has no RoCE priority", unsupported)
	}
	if len(r.plan.Changes) != 2 {
		t.Fatalf("changes %+v, want the CNP DSCP and priority", r.plan.Changes)
	}
	txn, err := Begin(r.h, r.d, r.plan, "test", r.opts)
	if err != nil {
		t.Fatal(err)
	}
	if err := txn.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	read := func(n string) string {
		b, err := os.ReadFile(filepath.Join(dbg, n))
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	if read("alt_vlan_dscp") != "48\n" || read("alt_vlan_pcp") != "6\n" {
		t.Errorf("after apply: alt_vlan_dscp %q alt_vlan_pcp %q", read("alt_vlan_dscp"), read("alt_vlan_pcp"))
	}
	if err := r.rollBackFromDisk(t); err != nil {
		t.Fatalf("rollback: %v", err)
	}
	for n, v := range before {
		if got := read(n); got != v {
			t.Errorf("after rollback %s = %q, want %q", n, got, v)
		}
	}
}

// roce_prio_store and cnp_prio_store test the value the driver holds,
// not the one written: while roce_prio holds more than 7 every write of
// it is EINVAL. The step says so before its first write, naming the
// setting, and nothing of it is written.
func TestBnxtCCHeldPriorityOutOfRangeWritesNothing(t *testing.T) {
	r := driverRig(t, "bnxt-re-factory", bnxtECNProfile, nil)
	writeCC(t, r.root, map[string]string{"roce_prio": "0x9\n"})
	r.d, r.plan = planOf(r.h, r.d)
	before := readCC(t, r.root, ccNames...)
	err := r.apply(t)
	if err == nil || !strings.Contains(err.Error(), "bnxt_re0.ecn.") || !strings.Contains(err.Error(), "roce_prio holds 9") {
		t.Fatalf("apply with roce_prio 9 held: %v", err)
	}
	if got := readCC(t, r.root, ccNames...); !maps.Equal(got, before) {
		t.Errorf("cc files after the refused step: %v, want %v", got, before)
	}
}

// [ecn] mode = "dcqcn-p" / "dcqcn-d" is bnxt_re's cc_mode (configfs.c
// cc_mode_store: 1 DCQCN-P, 0 DCQCN-D): written in the port's one cc step
// before its apply, and given back by rollback with the other saved
// attributes, through the vendor configfs and mainline debugfs alike; a
// mode cc_mode does not hold (dctcp) is refused before any write.
func TestBnxtCCModeRoundTrip(t *testing.T) {
	for _, tc := range []struct {
		name, mode, before, after string
		debugfs                   bool
	}{
		{"configfs dcqcn-p", "dcqcn-p", "0\n", "0x1\n", false},
		{"configfs dcqcn-d", "dcqcn-d", "0x1\n", "0x0\n", false},
		{"debugfs dcqcn-p", "dcqcn-p", "0\n", "1\n", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := driverRig(t, "bnxt-re-factory", strings.Replace(bnxtECNProfile, "[ecn]\n", "[ecn]\nmode = \""+tc.mode+"\"\n", 1), nil)
			dir := filepath.Join(r.root, bnxtCCDir)
			if tc.debugfs {
				if err := os.RemoveAll(filepath.Join(r.root, "sys/kernel/config/bnxt_re")); err != nil {
					t.Fatal(err)
				}
				dir = filepath.Join(r.root, "sys/kernel/debug/bnxt_re/0000:ca:00.1/cc_config")
				if err := os.MkdirAll(dir, 0o755); err != nil {
					t.Fatal(err)
				}
				for n, v := range map[string]string{"enable_cc": "1\n", "alt_vlan_dscp": "46\n", "alt_vlan_pcp": "7\n"} {
					if err := os.WriteFile(filepath.Join(dir, n), []byte(v), 0o600); err != nil {
						t.Fatal(err)
					}
				}
				r.h.Discover()
			}
			if err := os.WriteFile(filepath.Join(dir, "cc_mode"), []byte(tc.before), 0o600); err != nil {
				t.Fatal(err)
			}
			r.d, r.plan = planOf(r.h, r.d)
			if len(r.plan.Refused) != 0 {
				t.Fatalf("refused: %+v", r.plan.Refused)
			}
			txn, err := Begin(r.h, r.d, r.plan, "test", r.opts)
			if err != nil {
				t.Fatal(err)
			}
			found := false
			for _, st := range txn.J.Steps {
				for _, c := range st.Changes {
					if strings.HasSuffix(c.Key, ".ecn.rp.cc_mode") {
						found = true
						if !tc.debugfs && st.Group != "cc" {
							t.Errorf("cc_mode in step group %q, want the port's cc step with its apply", st.Group)
						}
					}
				}
			}
			if !found {
				t.Fatalf("no cc_mode change in %+v", txn.J.Steps)
			}
			if err := txn.Run(context.Background()); err != nil {
				t.Fatal(err)
			}
			read := func() string {
				b, err := os.ReadFile(filepath.Join(dir, "cc_mode"))
				if err != nil {
					t.Fatal(err)
				}
				return string(b)
			}
			if got := read(); got != tc.after {
				t.Errorf("cc_mode after apply %q, want %q", got, tc.after)
			}
			if err := r.rollBackFromDisk(t); err != nil {
				t.Fatalf("rollback: %v", err)
			}
			if got := read(); got != tc.before {
				t.Errorf("cc_mode after rollback %q, want %q as before", got, tc.before)
			}
		})
	}
	r := driverRig(t, "bnxt-re-factory", strings.Replace(bnxtECNProfile, "[ecn]\n", "[ecn]\nmode = \"dctcp\"\n", 1), nil)
	if len(r.plan.Refused) != 1 || !strings.Contains(r.plan.Refused[0].Error, `cannot run congestion-control mode "dctcp" here; it can: dcqcn, dcqcn-d, dcqcn-p, off`) {
		t.Fatalf("dctcp on bnxt_re: refused %+v", r.plan.Refused)
	}
}
