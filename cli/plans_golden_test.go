package cli

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// unstable matches what differs between two runs of the same plan: the
// time of the run, and the profile's hash, which covers the profile's
// path (the checkout's location).
var unstable = regexp.MustCompile(`("generated_at": |"profile_hash": )"[^"]*"`)

// TestGoldenPlans pins the plan rocectl makes for every shipped profile on
// every shipped host, as text and as JSON, with the exit code: a change
// of how plans are built (the driver layer, the plan package) must leave
// every one of them byte for byte as it was, unless the change means to
// change a plan, and then the diff of testdata/plans shows what it
// changed. Refresh with -update after checking that diff.
func TestGoldenPlans(t *testing.T) {
	// The shipped profiles, and a few that only the golden plans use:
	// no shipped profile matches a bnxt port.
	profiles, err := filepath.Glob(repo("profiles/*.toml"))
	if err != nil || len(profiles) < 5 {
		t.Fatalf("profiles: %v %v", profiles, err)
	}
	extra, err := filepath.Glob(filepath.Join("testdata", "plans", "profiles", "*.toml"))
	if err != nil || len(extra) < 2 {
		t.Fatalf("golden-only profiles: %v %v", extra, err)
	}
	for _, p := range extra {
		abs, err := filepath.Abs(p)
		if err != nil {
			t.Fatal(err)
		}
		profiles = append(profiles, abs)
	}
	hosts, err := os.ReadDir(repo("testdata/hosts"))
	if err != nil || len(hosts) < 6 {
		t.Fatalf("hosts: %v", err)
	}
	root := repo("")
	for _, prof := range profiles {
		pname := strings.TrimSuffix(filepath.Base(prof), ".toml")
		for _, h := range hosts {
			t.Run(h.Name()+"/"+pname, func(t *testing.T) {
				for _, format := range []string{"text", "json"} {
					code, out, errs := run(t, nil, "audit", "-o", format, "-p", prof, "--snapshot", filepath.Join(root, "testdata/hosts", h.Name()))
					got := "exit " + string(rune('0'+code)) + "\n" + strings.ReplaceAll(out+errs, root, "$REPO")
					got = unstable.ReplaceAllString(got, `$1"…"`)
					ext := map[string]string{"text": ".txt", "json": ".json"}[format]
					golden(t, filepath.Join("plans", h.Name(), pname+ext), got)
				}
			})
		}
	}
}
