package cli

import (
	"strings"
	"testing"
)

// TestFlagValueCompletion runs cobra's hidden __complete command, which is
// what the generated bash/zsh/fish scripts call.
func TestFlagValueCompletion(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string // the candidates, then cobra's directive line
	}{
		{[]string{"audit", "-o", ""}, "text\njson\n:4\n"},
		{[]string{"apply", "--output", ""}, "text\njson\n:4\n"},
		{[]string{"verify", "-o", ""}, "text\njson\n:4\n"},
		{[]string{"version", "-o", ""}, "text\njson\n:4\n"},
		{[]string{"nccl-env", "--format", ""}, "env\nshell\njson\n:4\n"},
		{[]string{"--log-format", ""}, "text\njson\n:4\n"},
		// Profiles are .toml files (8: filter by extension).
		{[]string{"audit", "-p", ""}, "toml\n:8\n"},
		// capture -o is a directory (16: directories only), not a format.
		{[]string{"capture", "-o", ""}, ":16\n"},
	} {
		code, out, errs := run(t, nil, append([]string{"__complete"}, c.args...)...)
		if code != ExitOK || out != c.want {
			t.Errorf("__complete %s: exit %d, got %q, want %q\n%s", strings.Join(c.args, " "), code, out, c.want, errs)
		}
	}
}

// --soak has no default of its own (the profile's [guard] soak applies), so
// the help must not show one, and a negative value is refused rather than
// silently meaning "the profile's".
func TestSoakFlag(t *testing.T) {
	_, out, _ := run(t, nil, "apply", "--help")
	line := ""
	for l := range strings.Lines(out) {
		if strings.Contains(l, "--soak") {
			line = l
		}
	}
	if !strings.Contains(line, "[guard] soak") || strings.Contains(line, "(default") {
		t.Errorf("apply --help, --soak line: %q", line)
	}
	code, _, errs := run(t, nil, "apply", "--soak", "-1s", "--dry-run", "-p", repo("profiles/connectx-lossless.toml"), "--snapshot", repo("testdata/hosts/cx6dx-ofed-factory"))
	if code != ExitError || !strings.Contains(errs, "--soak must not be negative") {
		t.Errorf("apply --soak -1s: exit %d\n%s", code, errs)
	}
}
