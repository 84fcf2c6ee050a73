package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// rocectl report in a real terminal, over documents whose host names
// carry terminal escapes and newlines (a document's "host" is whatever
// the host said): the names print escaped, so the terminal's title is
// not set, its screen not cleared, and no fake row appears (issue 34,
// item 5). tmux is the terminal: it interprets what rocectl prints as a
// person's terminal would, and says what its title is.
func TestReportOfHostileNamesInTerminal(t *testing.T) {
	dir := t.TempDir()
	docs := map[string]string{
		// OSC 2 (set the title), then ED 2 (clear the screen).
		"a.audit.json": `"\u001b]2;pwned\u0007\u001b[2Jgpu-9"`,
		// A newline and a second, fake row.
		"b.audit.json": `"gpu-10\nfake-host  in sync         ok"`,
	}
	for name, host := range docs {
		body := `{"schema_version": 1, "host": ` + host + `, "profile": "p", "changed": false, "changes": [], "unsupported": [],
			"errors": [], "unknown": [], "in_sync": 3, "matched_ports": 1, "ports": [], "rolled_back": false, "diagnostics": []}`
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	p := newTmuxPane(t, 130, 30)
	title := p.format("#{pane_title}")
	for _, c := range []struct{ format, osc, newline string }{
		{"text", `\x1b]2;pwned\a\x1b[2Jgpu-9`, `gpu-10\nfake-host`},
		// Markdown escapes the backslash and the brackets too.
		{"markdown", `\\x1b\]2;pwned\\a\\x1b\[2Jgpu-9`, `gpu-10\\nfake-host`},
	} {
		format := c.format
		t.Run(format, func(t *testing.T) {
			p.t = t
			mark := "before-" + format
			p.shell("clear; echo " + mark)
			screen := p.shell(bin + " report -o " + format + " " + dir)
			if !hasLine(screen, mark) {
				t.Errorf("the screen was cleared: %q is gone:\n%s", mark, screen)
			}
			if got := p.format("#{pane_title}"); got != title {
				t.Errorf("the terminal's title is %q, was %q", got, title)
			}
			if !strings.Contains(screen, c.osc) || !strings.Contains(screen, c.newline) {
				t.Errorf("the names do not show escaped:\n%s", screen)
			}
			for _, l := range strings.Split(screen, "\n") {
				if strings.HasPrefix(l, "fake-host") || strings.HasPrefix(l, "| fake-host") {
					t.Errorf("a row from a host name: %q\n%s", l, screen)
				}
			}
		})
	}
}
