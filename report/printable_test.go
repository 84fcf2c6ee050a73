package report

import (
	"bytes"
	"context"
	"encoding/xml"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
	"unicode/utf8"
)

// hostileNames are host names a document can carry (its "host" field is
// whatever the host said): a row split, a heading, Markdown links and
// code, terminal escapes (set the title, clear the screen), a Unicode
// line separator, a bidi override, and bytes that are not UTF-8.
var hostileNames = []string{
	"gpu-1\n| evil | in sync | ok |",
	"# Injected heading",
	"\x1b]0;pwned\x07\x1b[2J",
	"a`b|c*d_e[x](http://evil)",
	"line\u2028sep\u202eevil",
	"bad\xffutf8\x9b",
	"<script>&amp;",
}

// hostileFleet is a fleet whose every string from a document is hostile.
func hostileFleet(t *testing.T) *Fleet { return hostileFleetOf(t, 1) }

// hostileFleetOf is hostileFleet with each hostile host copies times (the
// copies' names suffixed with their number): past pageSize hosts,
// Markdown and HTML page the host tables, with the first and last host's
// names in each page's summary.
func hostileFleetOf(t *testing.T, copies int) *Fleet {
	t.Helper()
	dir := t.TempDir()
	for k := range copies * len(hostileNames) {
		i, h := k%len(hostileNames), hostileNames[k%len(hostileNames)]
		if k >= len(hostileNames) {
			h += fmt.Sprint(k / len(hostileNames))
		}
		body := `{"schema_version": 1, "command": "audit", "host": ` + jsonString(h) + `, "profile": ` + jsonString(h) + `,
			"changed": true, "unsupported": [], "errors": [` + jsonString("x: "+h+"\n2nd "+h) + `], "in_sync": 1, "ports": [], "rolled_back": false, "diagnostics": [], "unknown": [],
			"changes": [{"key": "ens1.qos.pfc", "scope": "ens1", "netdev": "ens1", "before": ` + jsonString("`|"+h) + `, "after": "3"}],
			"qos_chain": [{"side": "host", "key": "/etc/nccl.conf NCCL_IB_TC", "message": ` + jsonString(h+"\n# "+h) + `}]}`
		if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("h%c%03d.audit.json", 'a'+i, k)), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		// Its nccl-env document: the NCCL sections name the host, the
		// profile (the first hostile name, for every host) and the
		// message of the chain problem above.
		body = `{"schema_version": 1, "command": "nccl-env", "host": ` + jsonString(h) + `, "profile": ` + jsonString(hostileNames[0]) + `,
			"complete": true, "variables": {"NCCL_IB_GID_INDEX": "` + fmt.Sprint(3+2*(k%2)) + `"}, "order": ["NCCL_IB_GID_INDEX"],
			"gid_index": {"mode": "pinned", "index": ` + fmt.Sprint(3+2*(k%2)) + `, "reason": ` + jsonString(h) + `}, "errors": [], "diagnostics": []}`
		if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("h%c%03d.nccl-env.json", 'a'+i, k)), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	docs, problems, err := Load(context.Background(), []string{dir})
	if err != nil || len(problems) != 0 {
		t.Fatalf("load: %v %v", err, problems)
	}
	return Build(docs, problems, Options{Now: time.Now(), Expected: []string{"missing\n# host"}})
}

func jsonString(s string) string {
	var b bytes.Buffer
	b.WriteByte('"')
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '"' || c == '\\':
			b.WriteString(`\` + string(c))
		case c < 0x20:
			b.WriteString(`\u00`)
			b.WriteString(strings.ToLower(string("0123456789ABCDEF"[c>>4])) + string("0123456789abcdef"[c&15]))
		default:
			b.WriteByte(c)
		}
	}
	b.WriteByte('"')
	return b.String()
}

// noControls fails on any control character but the newline, any C1
// control, any Unicode line separator or bidi override, and any byte that
// is not UTF-8.
func noControls(t *testing.T, format, out string) {
	t.Helper()
	if !utf8.ValidString(out) {
		t.Errorf("%s: not UTF-8", format)
	}
	for _, r := range out {
		if (r < 0x20 && r != '\n') || (r >= 0x7f && r < 0xa0) || r == '\u2028' || r == '\u202e' {
			t.Errorf("%s: raw %U in the output", format, r)
		}
	}
}

// Hostile host names, profiles, errors and values print literally, in
// every format (issue 34, item 5).
func TestHostileNamesAreEscaped(t *testing.T) {
	t.Run("small", func(t *testing.T) { checkHostileEscaped(t, hostileFleet(t), len(hostileNames)) })
	t.Run("paged", func(t *testing.T) {
		copies := pageSize/len(hostileNames) + 2
		f := hostileFleetOf(t, copies)
		if pages := f.hostPages(); f.Summary.Error != copies*len(hostileNames) || len(pages) != 3 || !strings.Contains(pages[0].title(true), "…") {
			t.Fatalf("want the hostile hosts in two pages of errors: %+v", f.Summary)
		}
		checkHostileEscaped(t, f, copies*len(hostileNames))
	})
}

func checkHostileEscaped(t *testing.T, f *Fleet, errorRows int) {
	if f.NCCLGID == nil || f.NCCLGID.Hosts != errorRows || f.NCCLGID.Differ == 0 || f.NCCLChain == nil || f.NCCLChain.Hosts != errorRows {
		t.Fatalf("the NCCL sections are not there to escape: %+v %+v", f.NCCLGID, f.NCCLChain)
	}
	render := func(format string) string {
		var b strings.Builder
		if err := Render(&b, f, format); err != nil {
			t.Fatal(err)
		}
		return b.String()
	}

	text := render("text")
	noControls(t, "text", text)
	rows := 0
	for _, l := range strings.Split(text, "\n") {
		if strings.Contains(l, "  error  ") && strings.HasSuffix(strings.TrimSpace(l), "-") {
			rows++
		}
	}
	if rows != errorRows || !strings.Contains(text, `\x1b]0;pwned\a\x1b[2J`) {
		t.Errorf("text: %d host rows, want %d, each name escaped:\n%s", rows, errorRows, text)
	}

	md := render("markdown")
	noControls(t, "markdown", md)
	var table []string
	for _, l := range strings.Split(md, "\n") {
		if strings.HasPrefix(l, "#") && !strings.HasPrefix(l, "# rocectl fleet report") && !strings.HasPrefix(l, "## ") {
			t.Errorf("markdown: a heading from a document: %q", l)
		}
		if strings.HasPrefix(l, "|") {
			table = append(table, l)
		} else if len(table) > 0 {
			// A table ends at the first line that is not a row: every
			// row of it has the header's number of cells.
			cells := mdCells(table[0])
			for _, r := range table[1:] {
				if n := mdCells(r); n != cells {
					t.Errorf("markdown: row with %d cells, the header has %d: %q", n, cells, r)
				}
			}
			table = nil
		}
	}
	for _, l := range strings.Split(md, "\n") {
		if strings.HasPrefix(l, "| pfc |") {
			continue // the values are code spans: literal
		}
		for _, bad := range []string{"[x](http", "<script"} {
			if strings.Contains(l, bad) {
				t.Errorf("markdown holds %q unescaped: %q", bad, l)
			}
		}
	}

	page := render("html")
	noControls(t, "html", page)
	dec := xml.NewDecoder(strings.NewReader(page))
	dec.Strict, dec.AutoClose, dec.Entity = true, nil, xml.HTMLEntity
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("html is not well-formed: %v", err)
		}
		if se, ok := tok.(xml.StartElement); ok && se.Name.Local == "script" {
			t.Errorf("html: a <script> element from a document")
		}
	}
}

// mdCells counts a GitHub table row's cells: its unescaped pipes less one.
func mdCells(row string) int {
	n := 0
	for i := 0; i < len(row); i++ {
		switch row[i] {
		case '\\':
			i++
		case '|':
			n++
		}
	}
	return n - 1
}

func TestPrintable(t *testing.T) {
	for in, want := range map[string]string{
		"rack-a-01":        "rack-a-01",
		"gpu ü 1":          "gpu ü 1",
		"a\nb":             `a\nb`,
		"\x1b[2J\x07":      `\x1b[2J\a`,
		"\u2028\u202e":     `\u2028\u202e`,
		"x\xffy":           `x\xffy`,
		"\u0085\u009b":     `\u0085\u009b`,
		"tab\there\x7fdel": `tab\there\x7fdel`,
	} {
		if got := printable(in); got != want {
			t.Errorf("printable(%q) = %q, want %q", in, got, want)
		}
	}
}
