package report

import (
	"bufio"
	"encoding/json"
	"fmt"
	"html"
	"io"
	"sort"
	"strings"
	"time"
)

// Formats Render accepts.
var Formats = []string{"text", "markdown", "html", "json"}

// maxListed bounds the hosts named on one drift line in text, Markdown and
// HTML (JSON lists them all).
const maxListed = 8

// Render writes f in one of Formats.
func Render(w io.Writer, f *Fleet, format string) error {
	bw := bufio.NewWriterSize(w, 64<<10)
	switch format {
	case "text":
		renderText(bw, f)
	case "markdown":
		renderMarkdown(bw, f)
	case "html":
		renderHTML(bw, f)
	case "json":
		if err := renderJSON(bw, f); err != nil {
			return err
		}
	default:
		return fmt.Errorf("-o must be one of %s, not %q", strings.Join(Formats, ", "), format)
	}
	return bw.Flush()
}

// renderJSON writes f as json.Encoder with a two-space indent writes it,
// byte for byte, but one host and one drift line at a time: the encoder
// builds the whole document in memory and then indents it into a second
// buffer, two copies of a 40 MB document at 100,000 hosts (issue 39).
// TestJSONIsTheEncoders checks the two agree.
func renderJSON(w *bufio.Writer, f *Fleet) error {
	first := true
	field := func(name string, v any) error {
		if first {
			w.WriteString("{\n")
			first = false
		} else {
			w.WriteString(",\n")
		}
		fmt.Fprintf(w, "  %q: ", name)
		b, err := json.MarshalIndent(v, "  ", "  ")
		if err != nil {
			return err
		}
		w.Write(b)
		return nil
	}
	array := func(name string, n int, elem func(i int) any) error {
		w.WriteString(",\n")
		fmt.Fprintf(w, "  %q: [", name)
		for i := range n {
			if i > 0 {
				w.WriteString(",")
			}
			w.WriteString("\n    ")
			b, err := json.MarshalIndent(elem(i), "    ", "  ")
			if err != nil {
				return err
			}
			w.Write(b)
		}
		if n > 0 {
			w.WriteString("\n  ")
		}
		w.WriteString("]")
		return nil
	}
	steps := []func() error{
		func() error { return field("schema_version", f.SchemaVersion) },
		func() error { return field("generated_at", f.GeneratedAt) },
		func() error {
			if f.MaxAge == "" {
				return nil
			}
			return field("max_age", f.MaxAge)
		},
		func() error { return field("groups", f.Groups) },
		func() error {
			if f.Hosts == nil {
				return field("hosts", f.Hosts)
			}
			return array("hosts", len(f.Hosts), func(i int) any { return f.Hosts[i] })
		},
		func() error { return field("summary", f.Summary) },
		func() error {
			if f.Drift == nil {
				return field("drift", f.Drift)
			}
			return array("drift", len(f.Drift), func(i int) any { return f.Drift[i] })
		},
		func() error { return field("missing", f.Missing) },
		func() error { return field("problems", f.Problems) },
		func() error {
			if f.ProblemsTotal == 0 {
				return nil
			}
			return field("problems_total", f.ProblemsTotal)
		},
		func() error {
			if len(f.Duplicates) == 0 {
				return nil
			}
			return field("duplicates", f.Duplicates)
		},
		func() error {
			if f.DuplicatesTotal == 0 {
				return nil
			}
			return field("duplicates_total", f.DuplicatesTotal)
		},
		func() error {
			if f.Sweep == nil {
				return nil
			}
			return field("sweep", f.Sweep)
		},
		func() error {
			if f.NCCLGID == nil {
				return nil
			}
			return field("nccl_gid_index", f.NCCLGID)
		},
		func() error {
			if f.NCCLChain == nil {
				return nil
			}
			return field("nccl_chain", f.NCCLChain)
		},
	}
	for _, step := range steps {
		if err := step(); err != nil {
			return err
		}
	}
	w.WriteString("\n}\n")
	return nil
}

// What Markdown and HTML show of a large fleet (issue 39: readable at
// 100,000 hosts); -o json and text have everything.
const (
	// pageSize: host rows in one table; a fleet of more hosts has its
	// rows split by state and in pages, each collapsed with its count.
	pageSize = 500
	// maxDriftShown: drift lines in the open table; the rest, each on as
	// few hosts or fewer, follow collapsed (HTML) or are counted.
	maxDriftShown = 100
	// maxErrorsShown: host errors listed; the rest are counted.
	maxErrorsShown = 100
	// maxMissingShown: hosts that did not report named; the rest counted.
	maxMissingShown = 200
)

// settingRow is one group's line of the summary by setting: how many
// hosts have it in each state.
type settingRow struct {
	group                           string
	drift, unsup, unknown, ok, none int
}

func (f *Fleet) bySetting() []settingRow {
	rows := make([]settingRow, len(f.Groups))
	for i, g := range f.Groups {
		rows[i].group = g
	}
	for _, h := range f.Hosts {
		for i, g := range f.Groups {
			switch h.Cell(g) {
			case Drift:
				rows[i].drift++
			case NotSupported:
				rows[i].unsup++
			case Unknown:
				rows[i].unknown++
			case InSync:
				rows[i].ok++
			default:
				rows[i].none++
			}
		}
	}
	return rows
}

// driftPattern is the hosts that drift in the same setting groups (and
// no other): a rack left at factory settings is one pattern, a wrong
// cable length another.
type driftPattern struct {
	groups []string
	hosts  int
	some   []string // the first maxListed hosts, by name
}

// maxPatterns bounds the drift patterns listed; the rest are counted.
const maxPatterns = 20

func (f *Fleet) driftPatterns() []*driftPattern {
	by := map[string]*driftPattern{}
	var out []*driftPattern
	for _, h := range f.Hosts {
		if h.State != Drift {
			continue
		}
		var gs []string
		for _, g := range f.Groups {
			if h.Groups[g] == Drift {
				gs = append(gs, g)
			}
		}
		if h.Peer == Drift {
			gs = append(gs, "(switch)")
		}
		k := strings.Join(gs, "\x00")
		p := by[k]
		if p == nil {
			p = &driftPattern{groups: gs}
			by[k] = p
			out = append(out, p)
		}
		p.hosts++
		if len(p.some) < maxListed {
			p.some = append(p.some, h.Host)
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].hosts > out[j].hosts })
	return out
}

func (p *driftPattern) where() string {
	s := listHosts(p.some)
	if p.hosts > len(p.some) {
		s += fmt.Sprintf(" … and %d more", p.hosts-len(p.some))
	}
	return s
}

func countClass(n int, class string) string {
	if n > 0 {
		return class
	}
	return "s-none"
}

// pageStates is the order of the host sections of a large fleet: what
// needs a look first.
var pageStates = []State{Failed, Drift, Unknown, Stale, NoMatch, Missing, NoData, InSync}

// hostPage is up to pageSize hosts of one state.
type hostPage struct {
	state    State
	from, of int // the first host's place in the state (0-based), the state's hosts
	hosts    []*HostView
}

// title is the page's summary line, with its first and last host's
// names when names (HTML; Markdown's <summary> is HTML, where its
// escapes would show).
func (p hostPage) title(names bool) string {
	if p.of <= pageSize {
		return fmt.Sprintf("%s: %s", p.state, plural(p.of, "host", "hosts"))
	}
	s := fmt.Sprintf("%s: hosts %d–%d of %d", p.state, p.from+1, p.from+len(p.hosts), p.of)
	if names {
		s += fmt.Sprintf(" (%s … %s)", printable(p.hosts[0].Host), printable(p.hosts[len(p.hosts)-1].Host))
	}
	return s
}

// hostPages splits the hosts by state (in pageStates' order, by name
// within one) and into pages.
func (f *Fleet) hostPages() []hostPage {
	by := map[State][]*HostView{}
	for _, h := range f.Hosts {
		by[h.State] = append(by[h.State], h)
	}
	var pages []hostPage
	for _, st := range pageStates {
		hs := by[st]
		for i := 0; i < len(hs); i += pageSize {
			pages = append(pages, hostPage{state: st, from: i, of: len(hs), hosts: hs[i:min(i+pageSize, len(hs))]})
		}
	}
	return pages
}

// joinSome joins the first maxMissingShown names, each printable, and
// says how many more there are.
func joinSome(names []string, sep string) string {
	s := printableJoin(names[:min(len(names), maxMissingShown)], sep)
	if more := len(names) - maxMissingShown; more > 0 {
		s += fmt.Sprintf("%s… and %d more", sep, more)
	}
	return s
}

// short is the text matrix's cell.
func short(s State) string {
	switch s {
	case InSync:
		return "ok"
	case Drift:
		return "DRIFT"
	case NotSupported:
		return "unsup"
	case Unknown:
		return "?"
	case Missing:
		return "missing"
	}
	return string(s)
}

// listHosts names hosts on one line, at most maxListed of them, each
// printable.
func listHosts(hs []string) string {
	n := min(len(hs), maxListed)
	names := make([]string, n)
	for i, h := range hs[:n] {
		names[i] = printable(h)
	}
	s := strings.Join(names, " ")
	if len(hs) > maxListed {
		s += fmt.Sprintf(" … and %d more", len(hs)-maxListed)
	}
	return s
}

func plural(n int, one, many string) string {
	if n == 1 {
		return fmt.Sprintf("%d %s", n, one)
	}
	return fmt.Sprintf("%d %s", n, many)
}

func (f *Fleet) headline() string {
	s := f.Summary
	var parts []string
	add := func(n int, what string) {
		if n > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", n, what))
		}
	}
	add(s.InSync, "in sync")
	add(s.Drift, "drift")
	add(s.Unknown, "unknown")
	add(s.Stale, "stale")
	add(s.Error, "error")
	add(s.Missing, "did not report")
	add(s.NoMatch, "matched no port")
	line := plural(s.Hosts, "host", "hosts")
	if len(parts) > 0 {
		line += ": " + strings.Join(parts, ", ")
	}
	if s.Unsupported > 0 {
		line += fmt.Sprintf("; %d with unsupported settings", s.Unsupported)
	}
	return line
}

// problemCount is how many files could not be used, named or not.
func (f *Fleet) problemCount() int { return max(f.ProblemsTotal, len(f.Problems)) }

// duplicateCount is how many duplicates there were, named or not.
func (f *Fleet) duplicateCount() int { return max(f.DuplicatesTotal, len(f.Duplicates)) }

func (f *Fleet) stamp() string {
	s := "generated " + f.GeneratedAt.Format(time.RFC3339)
	if f.MaxAge != "" {
		s += ", stale after " + f.MaxAge
	}
	return s
}

func (l *DriftLine) text() string {
	return fmt.Sprintf("%s = %s, want %s", printable(l.Setting), printable(orEmpty(l.Have)), printable(orEmpty(l.Want)))
}

func orEmpty(s string) string {
	if s == "" {
		return `""`
	}
	return s
}

func (l *DriftLine) where() string {
	return fmt.Sprintf("%s (%s, %s)", plural(len(l.Hosts), "host", "hosts"), plural(l.Ports, "setting", "settings"), l.From)
}

func pad(s string, n int) string {
	if w := len([]rune(s)); w < n {
		return s + strings.Repeat(" ", n-w)
	}
	return s
}

func renderText(w *bufio.Writer, f *Fleet) {
	fmt.Fprintf(w, "rocectl fleet report (%s)\n%s\n\n", f.stamp(), f.headline())
	hw := len("HOST")
	for _, h := range f.Hosts {
		hw = max(hw, len([]rune(printable(h.Host))))
	}
	fmt.Fprintf(w, "%s  %-14s", pad("HOST", hw), "STATE")
	for _, c := range f.Groups {
		fmt.Fprintf(w, "  %s", pad(c, max(len(c), 5)))
	}
	fmt.Fprintln(w, "  verify  peer")
	for _, h := range f.Hosts {
		if h.State == Missing {
			fmt.Fprintf(w, "%s  %s\n", pad(printable(h.Host), hw), h.State)
			continue
		}
		fmt.Fprintf(w, "%s  %-14s", pad(printable(h.Host), hw), h.State)
		for _, g := range f.Groups {
			fmt.Fprintf(w, "  %s", pad(short(h.Cell(g)), max(len(g), 5)))
		}
		fmt.Fprintf(w, "  %s  %s\n", pad(short(h.Verify), 6), short(h.Peer))
	}
	fmt.Fprintln(w, "\n(ok: in sync, DRIFT: differs from the profile, unsup: unsupported here, ?: could not be read, -: no document, or nothing compared)")

	if len(f.Drift) > 0 {
		fmt.Fprintf(w, "\nDrift, same value on N hosts (%s):\n", plural(len(f.Drift), "line", "lines"))
		for _, l := range f.Drift {
			fmt.Fprintf(w, "  [%s] %s\n      on %s: %s\n", l.Group, l.text(), l.where(), listHosts(l.Hosts))
		}
	}
	renderNCCLText(w, f)
	var errs []*HostView
	for _, h := range f.Hosts {
		if len(h.Errors) > 0 {
			errs = append(errs, h)
		}
	}
	if len(errs) > 0 {
		fmt.Fprintln(w, "\nErrors:")
		for _, h := range errs {
			for _, e := range h.Errors {
				fmt.Fprintf(w, "  %s: %s\n", printable(h.Host), strings.ReplaceAll(printableLines(e), "\n", "\n    "))
			}
		}
	}
	if len(f.Missing) > 0 {
		fmt.Fprintf(w, "\nDid not report (%d): %s\n", len(f.Missing), printableJoin(f.Missing, " "))
	}
	if len(f.Problems) > 0 {
		fmt.Fprintln(w, "\nUnreadable files:")
		for _, p := range f.Problems {
			fmt.Fprintf(w, "  %s\n", printable(p.Err))
		}
		if more := f.problemCount() - len(f.Problems); more > 0 {
			fmt.Fprintf(w, "  … and %d more (%d files could not be read)\n", more, f.problemCount())
		}
	}
	if len(f.Duplicates) > 0 {
		fmt.Fprintf(w, "\nDuplicate documents (%d), each the same host, kind and time as a later one, which is read:\n", f.duplicateCount())
		for _, d := range f.Duplicates {
			fmt.Fprintf(w, "  %s\n", printable(d.String()))
		}
		if more := f.duplicateCount() - len(f.Duplicates); more > 0 {
			fmt.Fprintf(w, "  … and %d more\n", more)
		}
	}
	if s := f.Sweep; s != nil {
		renderSweepText(w, s)
	}
}

func gbpsCell(p *Pair) string {
	switch {
	case p == nil:
		return "."
	case p.State == PairFailed:
		return "FAIL"
	case p.State == PairError:
		return "ERR"
	case p.State == PairNoTraffic:
		return "n/t"
	}
	return fmt.Sprintf("%.1f", p.Gbps)
}

func pauseCell(p *Pair) string {
	switch {
	case p == nil:
		return "."
	case p.State == PairFailed || p.State == PairError || p.State == PairNoTraffic:
		return gbpsCell(p)
	}
	return fmt.Sprintf("%.0f%%", 100*p.PauseOccupancy)
}

func (s *Sweep) headline() string {
	return fmt.Sprintf("Rack sweep: %s, %s in %s", plural(len(s.Hosts), "host", "hosts"), plural(len(s.Pairs), "pair", "pairs"), plural(s.Rounds, "round", "rounds"))
}

func (p *Pair) line() string {
	s := fmt.Sprintf("%s <-> %s (round %d): %s", printable(p.A), printable(p.B), p.Round, printable(p.State))
	if p.State == PairOK || p.State == PairSlow {
		s += fmt.Sprintf(", %.1f Gb/s, p99 %v, pause %.0f%%, %d CNP", p.Gbps, p.LatP99, 100*p.PauseOccupancy, p.CNP)
	}
	if len(p.Why) > 0 {
		s += "; " + printableJoin(p.Why, "; ")
	}
	return s
}

func renderSweepText(w *bufio.Writer, s *Sweep) {
	fmt.Fprintf(w, "\n%s\n", s.headline())
	hw := 4
	for _, h := range s.Hosts {
		hw = max(hw, len([]rune(printable(h))))
	}
	matrix := func(title string, cell func(*Pair) string) {
		fmt.Fprintf(w, "\n%s\n%s", title, pad("", hw))
		for i := range s.Hosts {
			fmt.Fprintf(w, "  %6s", fmt.Sprintf("#%d", i+1))
		}
		fmt.Fprintln(w)
		for i, a := range s.Hosts {
			fmt.Fprintf(w, "%s", pad(printable(a), hw))
			for _, b := range s.Hosts {
				c := "-"
				if a != b {
					c = cell(s.Cell(a, b))
				}
				fmt.Fprintf(w, "  %6s", c)
			}
			fmt.Fprintf(w, "  #%d\n", i+1)
		}
	}
	matrix("Bandwidth, Gb/s (FAIL: test failed, ERR: verify error, n/t: no verbs traffic, .: not tested):", gbpsCell)
	matrix("Pause occupancy, worst priority of either end:", pauseCell)
	if len(s.Worst) > 0 {
		fmt.Fprintln(w, "\nWorst pairs:")
		for _, p := range s.Worst {
			fmt.Fprintf(w, "  %s\n", p.line())
		}
	} else {
		fmt.Fprintln(w, "\nNo failed or slow pair.")
	}
	if len(s.Common) > 0 {
		var parts []string
		for _, c := range s.Common {
			parts = append(parts, fmt.Sprintf("%s (%d pairs)", printable(c.Host), c.Pairs))
		}
		fmt.Fprintf(w, "Hosts common to the bad pairs: %s\n", strings.Join(parts, ", "))
	}
}

// mdMeta are the characters that mean something in Markdown (GitHub's
// included: tables, links, headings, emphasis, code, HTML and entities),
// each as its escaped form.
var mdMeta = strings.NewReplacer(`\`, `\\`, "`", "\\`", "|", `\|`, "*", `\*`, "_", `\_`, "[", `\[`, "]", `\]`,
	"#", `\#`, "~", `\~`, "<", "&lt;", ">", "&gt;", "&", "&amp;")

// mdEscape makes text from a document literal in Markdown: printable
// first (a newline can neither end a table row nor start a heading), then
// every Markdown character escaped.
func mdEscape(s string) string {
	return mdMeta.Replace(printable(s))
}

// mdLines is a multi-line text (an error) in Markdown: each line
// escaped, the lines joined by a line break within the same list item.
func mdLines(s string) string {
	lines := strings.Split(s, "\n")
	for i, l := range lines {
		lines[i] = mdEscape(l)
	}
	return strings.Join(lines, "<br>")
}

// mdCode is s as a Markdown code span: printable, its pipes escaped (a
// GitHub table cell ends at any unescaped pipe, code or not), fenced with
// one backtick more than its longest run of them, padded when it starts
// or ends with one (CommonMark's rule).
func mdCode(s string) string {
	s = strings.ReplaceAll(printable(s), "|", `\|`)
	run, longest := 0, 0
	for _, r := range s {
		if r == '`' {
			run++
			longest = max(longest, run)
		} else {
			run = 0
		}
	}
	fence := strings.Repeat("`", longest+1)
	if strings.HasPrefix(s, "`") || strings.HasSuffix(s, "`") {
		s = " " + s + " "
	}
	return fence + s + fence
}

func renderMarkdown(w *bufio.Writer, f *Fleet) {
	fmt.Fprintf(w, "# rocectl fleet report\n\n%s. %s.\n", f.stamp(), f.headline())
	if len(f.Groups) > 0 {
		fmt.Fprintf(w, "\n## By setting\n\nHosts per state of each setting group.\n\n| group | drift | unsupported | unknown | in sync | no data |\n|---|---|---|---|---|---|\n")
		for _, r := range f.bySetting() {
			fmt.Fprintf(w, "| %s | %d | %d | %d | %d | %d |\n", mdEscape(r.group), r.drift, r.unsup, r.unknown, r.ok, r.none)
		}
	}
	if ps := f.driftPatterns(); len(ps) > 0 {
		fmt.Fprintf(w, "\n## By drift pattern\n\nHosts in drift, by the groups they drift in.\n\n| drifted groups | hosts | which |\n|---|---|---|\n")
		for _, p := range ps[:min(len(ps), maxPatterns)] {
			fmt.Fprintf(w, "| %s | %d | %s |\n", mdEscape(strings.Join(p.groups, ", ")), p.hosts, mdEscape(p.where()))
		}
		if more := len(ps) - maxPatterns; more > 0 {
			fmt.Fprintf(w, "\n… and %d more patterns, each on fewer hosts.\n", more)
		}
	}
	if len(f.Drift) > 0 {
		fmt.Fprintf(w, "\n## Drift, same value on N hosts\n\n| group | setting | have | want | hosts | where |\n|---|---|---|---|---|---|\n")
		for _, l := range f.Drift[:min(len(f.Drift), maxDriftShown)] {
			fmt.Fprintf(w, "| %s | %s | %s | %s | %d | %s |\n", mdEscape(l.Group), mdCode(l.Setting), mdCode(orEmpty(l.Have)), mdCode(orEmpty(l.Want)), len(l.Hosts), mdEscape(listHosts(l.Hosts)))
		}
		if more := len(f.Drift) - maxDriftShown; more > 0 {
			fmt.Fprintf(w, "\n… and %d more drift lines, each on fewer hosts (all of them in -o json).\n", more)
		}
	}
	cols := append(append([]string{}, f.Groups...), "verify", "peer")
	table := func(hosts []*HostView) {
		fmt.Fprintf(w, "| host | state | profile | %s |\n|---|---|---|%s\n", strings.Join(cols, " | "), strings.Repeat("---|", len(cols)))
		for _, h := range hosts {
			fmt.Fprintf(w, "| %s | %s | %s |", mdEscape(h.Host), h.State, mdEscape(h.Profile))
			for _, g := range f.Groups {
				fmt.Fprintf(w, " %s |", short(h.Cell(g)))
			}
			fmt.Fprintf(w, " %s | %s |\n", short(h.Verify), short(h.Peer))
		}
	}
	renderNCCLMarkdown(w, f)
	fmt.Fprintf(w, "\n## Hosts (%d)\n\n", len(f.Hosts))
	if len(f.Hosts) <= pageSize {
		table(f.Hosts)
	} else {
		fmt.Fprintf(w, "By state, in pages of %d hosts; open one to see its hosts.\n", pageSize)
		for _, pg := range f.hostPages() {
			fmt.Fprintf(w, "\n<details><summary>%s</summary>\n\n", html.EscapeString(pg.title(false)))
			table(pg.hosts)
			fmt.Fprint(w, "\n</details>\n")
		}
	}
	var errs []string
	nErrs := 0
	for _, h := range f.Hosts {
		for _, e := range h.Errors {
			if nErrs++; nErrs <= maxErrorsShown {
				errs = append(errs, fmt.Sprintf("- **%s**: %s", mdEscape(h.Host), mdLines(e)))
			}
		}
	}
	if nErrs > maxErrorsShown {
		errs = append(errs, fmt.Sprintf("- … and %d more (all of them in -o json)", nErrs-maxErrorsShown))
	}
	if len(errs) > 0 {
		fmt.Fprintf(w, "\n## Errors\n\n%s\n", strings.Join(errs, "\n"))
	}
	if len(f.Missing) > 0 {
		fmt.Fprintf(w, "\n## Did not report (%d)\n\n%s\n", len(f.Missing), mdEscape(joinSome(f.Missing, ", ")))
	}
	if len(f.Problems) > 0 {
		fmt.Fprint(w, "\n## Unreadable files\n\n")
		for _, p := range f.Problems {
			fmt.Fprintf(w, "- %s\n", mdEscape(p.Err))
		}
		if more := f.problemCount() - len(f.Problems); more > 0 {
			fmt.Fprintf(w, "- … and %d more\n", more)
		}
	}
	if len(f.Duplicates) > 0 {
		fmt.Fprintf(w, "\n## Duplicate documents (%d)\n\nEach is the same host, kind and time as a later one, which is read.\n\n", f.duplicateCount())
		for _, d := range f.Duplicates {
			fmt.Fprintf(w, "- %s\n", mdEscape(d.String()))
		}
		if more := f.duplicateCount() - len(f.Duplicates); more > 0 {
			fmt.Fprintf(w, "- … and %d more\n", more)
		}
	}
	if s := f.Sweep; s != nil {
		fmt.Fprintf(w, "\n## %s\n", s.headline())
		matrix := func(title string, cell func(*Pair) string) {
			fmt.Fprintf(w, "\n%s\n\n| |", title)
			for _, h := range s.Hosts {
				fmt.Fprintf(w, " %s |", mdEscape(h))
			}
			fmt.Fprintf(w, "\n|---|%s\n", strings.Repeat("---|", len(s.Hosts)))
			for _, a := range s.Hosts {
				fmt.Fprintf(w, "| **%s** |", mdEscape(a))
				for _, b := range s.Hosts {
					c := "-"
					if a != b {
						c = cell(s.Cell(a, b))
					}
					fmt.Fprintf(w, " %s |", c)
				}
				fmt.Fprintln(w)
			}
		}
		matrix("Bandwidth, Gb/s:", gbpsCell)
		matrix("Pause occupancy:", pauseCell)
		if len(s.Worst) > 0 {
			fmt.Fprintln(w, "\nWorst pairs:")
			fmt.Fprintln(w)
			for _, p := range s.Worst {
				fmt.Fprintf(w, "- %s\n", mdEscape(p.line()))
			}
		}
		if len(s.Common) > 0 {
			var parts []string
			for _, c := range s.Common {
				parts = append(parts, fmt.Sprintf("**%s** (%d pairs)", mdEscape(c.Host), c.Pairs))
			}
			fmt.Fprintf(w, "\nHosts common to the bad pairs: %s\n", strings.Join(parts, ", "))
		}
	}
}

// The HTML page is one file: inline CSS, no script, no external asset,
// every element closed so that an XML parser reads it too.
const htmlStyle = `body{font-family:sans-serif;margin:1.5em;color:#222}
table{border-collapse:collapse;margin:.5em 0 1.5em}
th,td{border:1px solid #ccc;padding:2px 6px;text-align:center;font-size:13px}
th{background:#f0f0f0}td.h{text-align:left;font-family:monospace}
.s-ok{background:#d8f0d8}.s-drift{background:#f7b0a8}.s-unsupported{background:#e6e6e6}
.s-unknown{background:#f5e08c}.s-stale{background:#c9d7ee}.s-error{background:#e57373}
.s-missing{background:#999;color:#fff}.s-none{color:#999}
code{background:#f4f4f4;padding:0 3px}`

func stateClass(s State) string {
	switch s {
	case InSync:
		return "s-ok"
	case Drift:
		return "s-drift"
	case NotSupported:
		return "s-unsupported"
	case Unknown:
		return "s-unknown"
	case Stale:
		return "s-stale"
	case Failed:
		return "s-error"
	case Missing:
		return "s-missing"
	}
	return "s-none"
}

// htmlLines is a multi-line text (an error) in HTML, its lines kept.
func htmlLines(s string) string {
	lines := strings.Split(s, "\n")
	for i, l := range lines {
		lines[i] = esc(l)
	}
	return strings.Join(lines, "<br/>")
}

// esc is text from a document in HTML: printable (the page is XML too,
// and XML has no control characters), then escaped.
func esc(s string) string { return html.EscapeString(printable(s)) }

// heat colours a heat-map cell: white at 0, red at 1 (good=false) or
// green at 1 (good=true).
func heat(v float64, good bool) string {
	v = min(max(v, 0), 1)
	if good {
		// low bandwidth red, high green
		r := int(230 - 130*v)
		g := int(110 + 110*v)
		return fmt.Sprintf("background:rgb(%d,%d,120)", r, g)
	}
	c := int(255 - 140*v)
	return fmt.Sprintf("background:rgb(255,%d,%d)", c, c)
}

func renderHTML(w *bufio.Writer, f *Fleet) {
	fmt.Fprintf(w, "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"/><title>rocectl fleet report</title><style>%s</style></head><body>\n", htmlStyle)
	fmt.Fprintf(w, "<h1>rocectl fleet report</h1>\n<p>%s. <b>%s</b>.</p>\n", esc(f.stamp()), esc(f.headline()))
	if len(f.Groups) > 0 {
		fmt.Fprintln(w, "<h2>By setting</h2>\n<p>Hosts per state of each setting group.</p>\n<table id=\"by-setting\"><thead><tr><th>group</th><th>drift</th><th>unsupported</th><th>unknown</th><th>in sync</th><th>no data</th></tr></thead><tbody>")
		for _, r := range f.bySetting() {
			fmt.Fprintf(w, "<tr><td>%s</td><td class=\"%s\">%d</td><td>%d</td><td>%d</td><td>%d</td><td>%d</td></tr>\n", esc(r.group), countClass(r.drift, "s-drift"), r.drift, r.unsup, r.unknown, r.ok, r.none)
		}
		fmt.Fprintln(w, "</tbody></table>")
	}
	if ps := f.driftPatterns(); len(ps) > 0 {
		fmt.Fprintln(w, "<h2>By drift pattern</h2>\n<p>Hosts in drift, by the groups they drift in.</p>\n<table id=\"patterns\"><thead><tr><th>drifted groups</th><th>hosts</th><th>which</th></tr></thead><tbody>")
		for _, p := range ps[:min(len(ps), maxPatterns)] {
			fmt.Fprintf(w, "<tr><td>%s</td><td>%d</td><td class=\"h\">%s</td></tr>\n", esc(strings.Join(p.groups, ", ")), p.hosts, esc(p.where()))
		}
		if more := len(ps) - maxPatterns; more > 0 {
			fmt.Fprintf(w, "<tr><td colspan=\"3\">… and %d more patterns, each on fewer hosts</td></tr>\n", more)
		}
		fmt.Fprintln(w, "</tbody></table>")
	}
	if len(f.Drift) > 0 {
		driftTable := func(id string, lines []*DriftLine) {
			fmt.Fprintf(w, "<table id=\"%s\"><thead><tr><th>group</th><th>setting</th><th>have</th><th>want</th><th>hosts</th><th>which</th></tr></thead><tbody>\n", id)
			for _, l := range lines {
				fmt.Fprintf(w, "<tr><td>%s</td><td><code>%s</code></td><td><code>%s</code></td><td><code>%s</code></td><td>%d</td><td class=\"h\">%s</td></tr>\n",
					esc(l.Group), esc(l.Setting), esc(l.Have), esc(l.Want), len(l.Hosts), esc(listHosts(l.Hosts)))
			}
			fmt.Fprintln(w, "</tbody></table>")
		}
		fmt.Fprintln(w, "<h2>Drift, same value on N hosts</h2>")
		driftTable("drift", f.Drift[:min(len(f.Drift), maxDriftShown)])
		if more := f.Drift[min(len(f.Drift), maxDriftShown):]; len(more) > 0 {
			fmt.Fprintf(w, "<details id=\"drift-more\"><summary>%d more drift lines, each on fewer hosts</summary>\n", len(more))
			driftTable("drift-rest", more)
			fmt.Fprintln(w, "</details>")
		}
	}
	cols := append(append([]string{}, f.Groups...), "verify", "peer")
	cell := func(s State) {
		fmt.Fprintf(w, "<td class=\"%s\">%s</td>", stateClass(s), esc(string(s)))
	}
	table := func(attr string, hosts []*HostView) {
		fmt.Fprintf(w, "<table %s><thead><tr><th>host</th><th>state</th><th>profile</th>", attr)
		for _, c := range cols {
			fmt.Fprintf(w, "<th>%s</th>", esc(c))
		}
		fmt.Fprintln(w, "</tr></thead><tbody>")
		for _, h := range hosts {
			fmt.Fprintf(w, "<tr><td class=\"h\">%s</td>", esc(h.Host))
			cell(h.State)
			fmt.Fprintf(w, "<td>%s</td>", esc(h.Profile))
			for _, g := range f.Groups {
				cell(h.Cell(g))
			}
			cell(h.Verify)
			cell(h.Peer)
			fmt.Fprintln(w, "</tr>")
		}
		fmt.Fprintln(w, "</tbody></table>")
	}
	renderNCCLHTML(w, f)
	fmt.Fprintf(w, "<h2>Hosts (%d)</h2>\n", len(f.Hosts))
	if len(f.Hosts) <= pageSize {
		table(`id="matrix"`, f.Hosts)
	} else {
		// A table of 100,000 rows is no page a browser or a person can
		// use: one collapsed section per state and page, its count in
		// its summary, the states that need a look first.
		fmt.Fprintf(w, "<p>By state, in pages of %d hosts; open one to see its hosts.</p>\n", pageSize)
		for _, pg := range f.hostPages() {
			fmt.Fprintf(w, "<details class=\"hosts\"><summary class=\"%s\">%s</summary>\n", stateClass(pg.state), esc(pg.title(true)))
			table(`class="matrix"`, pg.hosts)
			fmt.Fprintln(w, "</details>")
		}
	}
	var errs []string
	nErrs := 0
	for _, h := range f.Hosts {
		for _, e := range h.Errors {
			if nErrs++; nErrs <= maxErrorsShown {
				errs = append(errs, fmt.Sprintf("<li><b>%s</b>: %s</li>", esc(h.Host), htmlLines(e)))
			}
		}
	}
	if nErrs > maxErrorsShown {
		errs = append(errs, fmt.Sprintf("<li>… and %d more (all of them in -o json)</li>", nErrs-maxErrorsShown))
	}
	if len(errs) > 0 {
		fmt.Fprintf(w, "<h2>Errors</h2>\n<ul>%s</ul>\n", strings.Join(errs, ""))
	}
	if len(f.Missing) > 0 {
		fmt.Fprintf(w, "<h2>Did not report (%d)</h2>\n<p id=\"missing\">%s</p>\n", len(f.Missing), esc(joinSome(f.Missing, ", ")))
	}
	if len(f.Problems) > 0 {
		fmt.Fprint(w, "<h2>Unreadable files</h2>\n<ul id=\"problems\">")
		for _, p := range f.Problems {
			fmt.Fprintf(w, "<li>%s</li>", esc(p.Err))
		}
		if more := f.problemCount() - len(f.Problems); more > 0 {
			fmt.Fprintf(w, "<li>… and %d more</li>", more)
		}
		fmt.Fprintln(w, "</ul>")
	}
	if len(f.Duplicates) > 0 {
		fmt.Fprintf(w, "<h2>Duplicate documents (%d)</h2>\n<p>Each is the same host, kind and time as a later one, which is read.</p>\n<ul id=\"duplicates\">", f.duplicateCount())
		for _, d := range f.Duplicates {
			fmt.Fprintf(w, "<li>%s</li>", esc(d.String()))
		}
		if more := f.duplicateCount() - len(f.Duplicates); more > 0 {
			fmt.Fprintf(w, "<li>… and %d more</li>", more)
		}
		fmt.Fprintln(w, "</ul>")
	}
	if s := f.Sweep; s != nil {
		renderSweepHTML(w, s)
	}
	fmt.Fprintln(w, "</body></html>")
}

func renderSweepHTML(w *bufio.Writer, s *Sweep) {
	fmt.Fprintf(w, "<h2>%s</h2>\n", esc(s.headline()))
	matrix := func(id, title string, cell func(*Pair) (string, string)) {
		fmt.Fprintf(w, "<h3>%s</h3>\n<table id=\"%s\"><thead><tr><th></th>", esc(title), id)
		for _, h := range s.Hosts {
			fmt.Fprintf(w, "<th>%s</th>", esc(h))
		}
		fmt.Fprintln(w, "</tr></thead><tbody>")
		for _, a := range s.Hosts {
			fmt.Fprintf(w, "<tr><th>%s</th>", esc(a))
			for _, b := range s.Hosts {
				if a == b {
					fmt.Fprint(w, "<td class=\"s-none\">-</td>")
					continue
				}
				text, style := cell(s.Cell(a, b))
				fmt.Fprintf(w, "<td style=\"%s\">%s</td>", style, esc(text))
			}
			fmt.Fprintln(w, "</tr>")
		}
		fmt.Fprintln(w, "</tbody></table>")
	}
	failStyle := "background:#e57373;color:#fff"
	matrix("sweep-bandwidth", "Bandwidth, Gb/s", func(p *Pair) (string, string) {
		switch {
		case p == nil || p.State == PairNoTraffic:
			return gbpsCell(p), "color:#999"
		case p.State == PairFailed || p.State == PairError:
			return gbpsCell(p), failStyle
		}
		v := 0.0
		if s.MaxGbps > 0 {
			v = p.Gbps / s.MaxGbps
		}
		return gbpsCell(p), heat(v, true)
	})
	matrix("sweep-pause", "Pause occupancy, worst priority of either end", func(p *Pair) (string, string) {
		switch {
		case p == nil || p.State == PairNoTraffic:
			return pauseCell(p), "color:#999"
		case p.State == PairFailed || p.State == PairError:
			return pauseCell(p), failStyle
		}
		return pauseCell(p), heat(p.PauseOccupancy, false)
	})
	if len(s.Worst) > 0 {
		fmt.Fprint(w, "<h3>Worst pairs</h3>\n<ol id=\"worst\">")
		for _, p := range s.Worst {
			fmt.Fprintf(w, "<li>%s</li>", esc(p.line()))
		}
		fmt.Fprintln(w, "</ol>")
	}
	if len(s.Common) > 0 {
		var parts []string
		for _, c := range s.Common {
			parts = append(parts, fmt.Sprintf("<b>%s</b> (%d pairs)", esc(c.Host), c.Pairs))
		}
		fmt.Fprintf(w, "<p id=\"common\">Hosts common to the bad pairs: %s</p>\n", strings.Join(parts, ", "))
	}
}
