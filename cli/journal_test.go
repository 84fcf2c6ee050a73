package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/rocectl/rocectl/apply"
	"github.com/rocectl/rocectl/doc"
	"github.com/rocectl/rocectl/internal/testkit/fixturehost"
	"github.com/rocectl/rocectl/statedir"
)

// Defect 9: an expired, uncommitted confirm window whose watcher died was
// invisible to audit ("No changes. Host matches profile.") until the next
// change reverted it. Audit now says so, in text and JSON; apply reverts it.
func TestAuditReportsAnExpiredConfirmWindow(t *testing.T) {
	root, sim := fixturehost.Copy(t, "cx6dx-ofed-factory")
	state := t.TempDir()
	prof := repo("profiles/connectx-lossless.toml")
	g := []string{"--root", root, "--state-dir", state}
	if code, out, errs := run(t, sim, append(g, "apply", "--soak", "0", "-p", prof)...); code != ExitOK {
		t.Fatalf("apply: exit %d\n%s%s", code, out, errs)
	}
	// The apply as a --confirm apply whose watcher was killed leaves it.
	store := apply.Store{Store: statedir.Store{Dir: state}}
	j, err := store.LastCommitted()
	if err != nil || j == nil {
		t.Fatal(j, err)
	}
	deadline := time.Now().Add(-time.Minute).UTC().Truncate(time.Second)
	j.State, j.Deadline = apply.StateConfirmPending, &deadline
	if err := store.Save(j); err != nil {
		t.Fatal(err)
	}
	want := "apply " + j.ID + "'s confirm window expired at " + deadline.Format(time.RFC3339)

	code, out, errs := run(t, sim, append(g, "audit", "-p", prof)...)
	if code != ExitOK || !strings.Contains(out, "No changes") || !strings.Contains(out, want) || !strings.Contains(out, "will be reverted by the next apply") {
		t.Fatalf("audit: exit %d\n%s%s", code, out, errs)
	}
	code, out, _ = run(t, sim, append(g, "audit", "-o", "json", "-p", prof)...)
	var rep doc.Plan
	if err := json.Unmarshal([]byte(out), &rep); err != nil || code != ExitOK {
		t.Fatalf("audit -o json: exit %d, %v\n%s", code, err, out)
	}
	if !slices.ContainsFunc(rep.Warnings, func(w string) bool { return strings.HasPrefix(w, want) }) {
		t.Errorf("warnings %q do not report the expired window", rep.Warnings)
	}
	// The next apply reverts it first, then finds the host factory-fresh.
	code, out, errs = run(t, sim, append(g, "apply", "--soak", "0", "-p", prof)...)
	if code != ExitOK || !strings.Contains(errs, "was not committed before its deadline") || !strings.Contains(out, "Applied 46 change(s)") {
		t.Fatalf("apply after expiry: exit %d\n%s%s", code, out, errs)
	}
}

// A damaged open journal blocks apply, with the way out in the message;
// `rollback --abandon ID` takes it, and the host is unblocked.
func TestRollbackAbandonUnblocks(t *testing.T) {
	root, sim := fixturehost.Copy(t, "cx6dx-ofed-factory")
	state := t.TempDir()
	prof := repo("profiles/connectx-lossless.toml")
	g := []string{"--root", root, "--state-dir", state}
	if code, out, errs := run(t, sim, append(g, "apply", "--soak", "0", "-p", prof)...); code != ExitOK {
		t.Fatalf("apply: exit %d\n%s%s", code, out, errs)
	}
	store := apply.Store{Store: statedir.Store{Dir: state}}
	j, err := store.LastCommitted()
	if err != nil || j == nil {
		t.Fatal(j, err)
	}
	j.State = apply.StateApplying // as a crash mid-apply leaves it
	if err := store.Save(j); err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(state, "journal", j.ID+".json")
	data, _ := os.ReadFile(p)
	if err := os.WriteFile(p, []byte(strings.Replace(string(data), `"before":"1500"`, `"before":"1280"`, 1)), 0o600); err != nil {
		t.Fatal(err)
	}
	code, out, errs := run(t, sim, append(g, "apply", "--soak", "0", "-p", prof)...)
	if code != ExitError || !strings.Contains(errs, "rocectl rollback --abandon "+j.ID) {
		t.Fatalf("apply with a damaged journal: exit %d\n%s%s", code, out, errs)
	}
	code, out, errs = run(t, sim, append(g, "rollback", "--abandon", j.ID)...)
	if code != ExitOK || !strings.Contains(out, "cannot be read") || !strings.Contains(out, filepath.Join(state, "journal", "abandoned", j.ID+".json")) {
		t.Fatalf("rollback --abandon: exit %d\n%s%s", code, out, errs)
	}
	code, out, errs = run(t, sim, append(g, "apply", "--soak", "0", "-p", prof)...)
	if code != ExitOK || !strings.Contains(out, "No changes") {
		t.Fatalf("apply after abandon: exit %d\n%s%s", code, out, errs)
	}
}

// `commit` after a missed deadline says what happened, from the journal
// and the lock: nothing reverted it yet (and how to), it is held by
// another rocectl now, it was reverted after the deadline, or an operator
// rolled it back before the deadline. None says "it is being reverted"
// when nothing is.
func TestCommitSaysWhatHappenedToTheWindow(t *testing.T) {
	root, sim := fixturehost.Copy(t, "cx6dx-ofed-factory")
	state := t.TempDir()
	prof := repo("profiles/connectx-lossless.toml")
	g := []string{"--root", root, "--state-dir", state}
	store := apply.Store{Store: statedir.Store{Dir: state}}
	// pending makes a fresh apply a --confirm one with the given deadline.
	pending := func(deadline time.Time) *apply.Journal {
		t.Helper()
		if code, out, errs := run(t, sim, append(g, "apply", "--soak", "0", "-p", prof)...); code != ExitOK {
			t.Fatalf("apply: exit %d\n%s%s", code, out, errs)
		}
		j, err := store.LastCommitted()
		if err != nil || j == nil {
			t.Fatal(j, err)
		}
		j.State, j.Deadline = apply.StateConfirmPending, &deadline
		if err := store.Save(j); err != nil {
			t.Fatal(err)
		}
		return j
	}
	commit := func(args ...string) string {
		t.Helper()
		code, out, errs := run(t, sim, append(append(g, "commit"), args...)...)
		if code == ExitOK {
			t.Fatalf("commit %v: exit 0\n%s", args, out)
		}
		return errs
	}
	past := time.Now().Add(-time.Minute).UTC().Truncate(time.Second)
	j := pending(past)

	// The deadline passed, the lock is free: nothing is reverting it.
	for _, args := range [][]string{nil, {j.ID}} {
		errs := commit(args...)
		want := "apply " + j.ID + "'s confirm deadline passed at " + past.Format(time.RFC3339) + " and nothing has reverted it yet: run `rocectl rollback " + j.ID + "`"
		if !strings.Contains(errs, want) || strings.Contains(errs, "being reverted") {
			t.Errorf("commit %v past the deadline, nothing reverting:\n%s\nwant %q", args, errs, want)
		}
	}
	// Another rocectl holds the lock: it may be the revert at work.
	lock, err := store.Acquire("rollback")
	if err != nil {
		t.Fatal(err)
	}
	errs := commit()
	lock.Release()
	if !strings.Contains(errs, "confirm deadline passed at "+past.Format(time.RFC3339)+" and it is not reverted yet; another rocectl is changing this host: pid") {
		t.Errorf("commit with the lock held:\n%s", errs)
	}
	// The deadline's revert ran: reverted after the deadline, and when.
	if code, out, errs := run(t, sim, append(g, "rollback", "--if-pending", j.ID)...); code != ExitOK {
		t.Fatalf("rollback --if-pending: exit %d\n%s%s", code, out, errs)
	}
	for _, args := range [][]string{nil, {j.ID}} {
		errs := commit(args...)
		if !strings.Contains(errs, "apply "+j.ID+" was not committed by its confirm deadline ("+past.Format(time.RFC3339)+") and was reverted at ") {
			t.Errorf("commit %v after the revert:\n%s", args, errs)
		}
	}

	// An operator's rollback before the deadline is not a missed deadline.
	future := time.Now().Add(time.Hour).UTC().Truncate(time.Second)
	j = pending(future)
	if code, out, errs := run(t, sim, append(g, "rollback", j.ID)...); code != ExitOK {
		t.Fatalf("rollback: exit %d\n%s%s", code, out, errs)
	}
	for _, args := range [][]string{nil, {j.ID}} {
		errs := commit(args...)
		if !strings.Contains(errs, "apply "+j.ID+" was rolled back at ") || !strings.Contains(errs, ", before its confirm deadline ("+future.Format(time.RFC3339)+"): by `rocectl rollback`") ||
			strings.Contains(errs, "missed") {
			t.Errorf("commit %v after an operator's rollback:\n%s", args, errs)
		}
	}
}
