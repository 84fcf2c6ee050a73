package cli

import (
	"bytes"
	"context"
	"log/slog"
	"slices"
	"testing"

	"github.com/rocectl/rocectl/apply"
	"github.com/rocectl/rocectl/internal/testkit/fixturehost"
	"github.com/rocectl/rocectl/nic"
)

// TestApplyPhasesInOrder: an apply that commits ends each phase once, in
// the order bench/cmd/applybench prints them (its table comes from this
// hook: a phase skipped or repeated would misplace the time). A dry run
// ends only the phases before the writes.
func TestApplyPhasesInOrder(t *testing.T) {
	root, sim := fixturehost.Copy(t, "cx6dx-ofed-factory")
	state := t.TempDir()
	apply1 := func(extra ...string) []string {
		var got []string
		var out bytes.Buffer
		env := NewEnv(&out, &out)
		env.NewKernel = func(*slog.Logger) (nic.Kernel, func() error, error) { return sim, func() error { return nil }, nil }
		env.Phase = func(name string) { got = append(got, name) }
		cmd := NewRootCommand(env)
		cmd.SetArgs(append([]string{"--root", root, "--state-dir", state, "apply", "--soak", "0", "-p", repo("profiles/connectx-lossless.toml")}, extra...))
		if err := cmd.ExecuteContext(context.Background()); err != nil {
			t.Fatalf("apply %v: %v\n%s", extra, err, out.String())
		}
		return got
	}
	before := []string{PhaseOpen, PhaseProfile, PhasePlan}
	if got := apply1("--dry-run"); !slices.Equal(got, before) {
		t.Errorf("dry run phases %q, want %q", got, before)
	}
	want := append(before, PhaseRender, apply.PhaseTrafficLock, apply.PhaseBegin, apply.PhaseSteps, apply.PhaseVerify, apply.PhaseCommit)
	if got := apply1(); !slices.Equal(got, want) {
		t.Errorf("apply phases\n %q\nwant\n %q", got, want)
	}
}
