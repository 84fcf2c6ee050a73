package cli

import (
	"io"
	"strings"
	"testing"

	"github.com/spf13/cobra"
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
		{[]string{"nccl-env", "-o", ""}, "env\nshell\njson\n:4\n"},
		{[]string{"report", "-o", ""}, "text\nmarkdown\nhtml\njson\n:4\n"},
		{[]string{"watch", "-o", ""}, "text\njson\n:4\n"},
		{[]string{"peer", "-o", ""}, "text\njson\n:4\n"},
		{[]string{"topo", "-o", ""}, "text\njson\n:4\n"},
		{[]string{"--log-format", ""}, "text\njson\n:4\n"},
		// Profiles are .toml files (8: filter by extension).
		{[]string{"audit", "-p", ""}, "toml\n:8\n"},
		// capture -o is a directory (16: directories only), not a format.
		{[]string{"capture", "-o", ""}, ":16\n"},
		{[]string{"import", "-o", ""}, ":16\n"},
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

// Every command's -o completes: an output format offers the values its
// help names, an output directory offers directories. A new command with
// -o and no completion fails here.
func TestEveryOutputFlagCompletes(t *testing.T) {
	root := NewRootCommand(NewEnv(io.Discard, io.Discard))
	var walk func(c *cobra.Command)
	n := 0
	walk = func(c *cobra.Command) {
		for _, sub := range c.Commands() {
			walk(sub)
		}
		f := c.LocalFlags().Lookup("output")
		if f == nil || f.Shorthand != "o" {
			return
		}
		n++
		args := append(strings.Fields(c.CommandPath())[1:], "-o", "")
		code, out, errs := run(t, nil, append([]string{"__complete"}, args...)...)
		lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
		cands, directive := lines[:len(lines)-1], lines[len(lines)-1]
		switch {
		case code != ExitOK:
			t.Errorf("__complete %s: exit %d\n%s", strings.Join(args, " "), code, errs)
		case strings.Contains(f.Usage, "directory"):
			if out != ":16\n" {
				t.Errorf("%s -o (%s): completes %q, want directories (:16)", c.CommandPath(), f.Usage, out)
			}
		case len(cands) == 0 || directive != ":4":
			t.Errorf("%s -o (%s): completes %q, want its formats", c.CommandPath(), f.Usage, out)
		default:
			for _, v := range cands {
				if !strings.Contains(f.Usage, v) {
					t.Errorf("%s -o completes %q, which its help (%q) does not name", c.CommandPath(), v, f.Usage)
				}
			}
		}
	}
	walk(root)
	if n < 10 {
		t.Errorf("only %d commands with -o found: the walk is broken", n)
	}
}
