package policy

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// FuzzLoad feeds arbitrary bytes to the profile loader. Load must never
// panic; it either refuses the input with a *ProfileError that holds at least
// one error, each placed in a file, or returns a profile that Resolve and
// Diff handle without panicking, whose settings all have keys, and that is
// in sync with a host holding exactly its own values.
//
//	go test -run x -fuzz FuzzLoad -fuzztime 60s ./policy/
//
// Seeds: every shipped profile and every corpus file. Crashers found by the
// fuzzer are kept as regression seeds under testdata/fuzz/FuzzLoad/.
func FuzzLoad(f *testing.F) {
	for _, pattern := range []string{"../profiles/*.toml", "testdata/bad/*.toml", "testdata/bad/inc/*.toml", "testdata/warn/*.toml", "testdata/all-keys.toml"} {
		files, err := filepath.Glob(pattern)
		if err != nil {
			f.Fatal(err)
		}
		for _, file := range files {
			data, err := os.ReadFile(file)
			if err != nil {
				f.Fatal(err)
			}
			f.Add(data)
		}
	}
	// One file per fuzzing process, rewritten for every input: a fresh
	// directory per input costs more disk I/O than Load itself.
	path := filepath.Join(f.TempDir(), "fuzz.toml")
	f.Fuzz(func(t *testing.T, data []byte) {
		if err := os.WriteFile(path, data, 0o600); err != nil {
			t.Fatal(err)
		}
		p, err := Load(path, LoadOptions{})
		if err != nil {
			var pe *ProfileError
			if !errors.As(err, &pe) {
				t.Fatalf("Load returned %T, not *ProfileError: %v", err, err)
			}
			if p != nil {
				t.Fatal("Load returned a profile alongside an error")
			}
			if len(pe.Diags.Errors()) == 0 {
				t.Fatalf("a ProfileError without errors: %v", err)
			}
			for _, d := range pe.Diags {
				if d.Pos.File == "" && d.Key != "guard.poll" {
					// guard.poll is exempt while the known bug (see
					// knownBugs in bad_test.go) leaves that diagnostic
					// without a file when only detection_time is set.
					t.Fatalf("a diagnostic without a file: %q", d.String())
				}
			}
			_ = err.Error()
			return
		}
		if p == nil {
			t.Fatal("Load returned neither a profile nor an error")
		}
		for _, w := range p.Warnings {
			_ = w.String()
		}
		d := Resolve(p, testPorts)
		plan := Diff(d, NewObserved())
		all := d.All()
		if len(plan.Changes) != len(all) {
			t.Fatalf("against an empty host every one of %d settings is a change, got %d", len(all), len(plan.Changes))
		}
		// A host that holds exactly the desired values is in sync.
		o := NewObserved()
		for _, s := range all {
			if s.Key == "" || s.Scope == "" || s.Name == "" {
				t.Fatalf("setting without a key: %+v", s)
			}
			o.Values[s.Key] = s.Value
		}
		if plan := Diff(d, o); plan.Changed() || plan.InSync != len(all) {
			t.Fatalf("a host holding the desired values is not in sync: %d changes, %d in sync of %d", len(plan.Changes), plan.InSync, len(all))
		}
	})
}
