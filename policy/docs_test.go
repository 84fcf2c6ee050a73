package policy

import (
	"bufio"
	"fmt"
	"os"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/rocectl/rocectl/port"
)

// The schema is not written down twice: the tests ask the decoder itself.
// Every fixed table answers an unknown key with "unknown key (allowed: a, b,
// …)", which lists its keys; a key whose own probe does not answer that way
// is a leaf. Leaves are then probed with out-of-range and invalid values,
// and the "(allowed: …)" the decoder answers is what the README must say.

const probeKey = "zz_probe_key"

// schema is what probing found.
type schema struct {
	tables map[string]bool // "", "link", "qos.ets", "ecn.dcqcn", …
	leaves []string        // sorted dotted keys
}

// filler makes a probe profile set something (the loader refuses a profile
// that sets nothing), in a table the probe does not touch.
func filler(key string) string {
	if strings.HasPrefix(key, "roce") {
		return "link.mtu = 9000\n"
	}
	return "roce.mode = \"v2\"\n"
}

// allowedKeys returns the keys of the fixed table at prefix, or nil when the
// decoder does not treat prefix as a table with fixed keys.
func allowedKeys(t *testing.T, prefix string) []string {
	t.Helper()
	text := filler(prefix) + join(prefix, probeKey) + " = 1\n"
	_, ds := loadText(t, text)
	for _, d := range diagFor(ds, join(prefix, probeKey)) {
		if strings.HasPrefix(d.Msg, "unknown key") {
			return strings.Split(d.Allowed, ", ")
		}
	}
	return nil
}

func probeSchema(t *testing.T) *schema {
	t.Helper()
	s := &schema{tables: map[string]bool{}}
	var walk func(prefix string)
	walk = func(prefix string) {
		keys := allowedKeys(t, prefix)
		if keys == nil {
			s.leaves = append(s.leaves, prefix)
			return
		}
		s.tables[prefix] = true
		for _, k := range keys {
			walk(join(prefix, k))
		}
	}
	walk("")
	sort.Strings(s.leaves)
	if len(s.leaves) < 50 || !s.tables["ecn.dcqcn"] || !s.tables["qos.ets"] {
		t.Fatalf("probing the decoder found too little: tables %v, leaves %v", s.tables, s.leaves)
	}
	return s
}

// dynamicTables hold keys the operator names (ethtool flags, devlink
// parameters, NCCL variables): the README documents them as
// `link.private_flags.<flag>` and so on.
func normalizeKey(k string) string {
	for _, dyn := range []string{"link.private_flags", "devlink", "nccl.extra", "nccl.rails", "classes"} {
		if strings.HasPrefix(k, dyn+".") {
			return dyn
		}
	}
	return k
}

// readmeRow is one row of a key table in profiles/README.md.
type readmeRow struct {
	key  string // normalized
	line int
	text string
}

var rowKeyRe = regexp.MustCompile("^\\|\\s*`([^`]+)`\\s*\\|")

// readmeKeys parses the tables of profiles/README.md whose header's first
// column is "Key".
func readmeKeys(t *testing.T) map[string]readmeRow {
	t.Helper()
	f, err := os.Open("../profiles/README.md")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	rows := map[string]readmeRow{}
	inKeyTable := false
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		if !strings.HasPrefix(line, "|") {
			inKeyTable = false
			continue
		}
		cells := strings.Split(line, "|")
		if len(cells) > 1 && strings.TrimSpace(cells[1]) == "Key" {
			inKeyTable = true
			continue
		}
		if !inKeyTable {
			continue
		}
		m := rowKeyRe.FindStringSubmatch(line)
		if m == nil {
			if !strings.HasPrefix(line, "|--") && !strings.HasPrefix(line, "| --") && !strings.HasPrefix(line, "|:") {
				t.Errorf("README.md:%d: a key table row without a `key` in its first column: %s", n, line)
			}
			continue
		}
		k := normalizeKey(m[1])
		if prev, dup := rows[k]; dup {
			t.Errorf("README.md:%d: %s is documented twice (first on line %d)", n, m[1], prev.line)
		}
		rows[k] = readmeRow{key: k, line: n, text: line}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return rows
}

// Every key the decoder accepts is documented, and every documented key is
// accepted.
func TestReadmeDocumentsEveryKey(t *testing.T) {
	s := probeSchema(t)
	rows := readmeKeys(t)
	for _, k := range s.leaves {
		if _, ok := rows[k]; !ok {
			t.Errorf("profiles/README.md does not document `%s`", k)
		}
	}
	accepted := map[string]bool{}
	for _, k := range s.leaves {
		accepted[k] = true
	}
	for k, r := range rows {
		if !accepted[k] && !s.tables[k] { // a sub-table may have a row pointing to its own section
			t.Errorf("profiles/README.md:%d documents `%s`, which the decoder does not accept", r.line, k)
		}
	}
	for _, spec := range DCQCNParams {
		k := "ecn.dcqcn." + spec.Name
		r, ok := rows[k]
		if !ok {
			t.Errorf("DCQCNParams has %s, the README does not", k)
			continue
		}
		if want := fmt.Sprintf("%d..%d", spec.Min, spec.Max); !strings.Contains(r.text, want) {
			t.Errorf("README.md:%d: %s must give its range %s", r.line, k, want)
		}
		if spec.Upstream != "" && !strings.Contains(r.text, spec.Upstream) {
			t.Errorf("README.md:%d: %s must name its upstream debugfs file %s", r.line, k, spec.Upstream)
		}
	}
	for _, spec := range NCCLVars {
		k := "nccl." + spec.Name
		r, ok := rows[k]
		if !ok {
			t.Errorf("NCCLVars has %s, the README does not", k)
			continue
		}
		var want []string
		switch spec.Kind {
		case "int":
			want = []string{fmt.Sprintf("%d..%d", spec.Min, spec.Max)}
		case "enum":
			want = spec.Enum
		}
		if spec.Auto {
			want = append(want, `"auto"`)
		}
		for _, w := range want {
			if !strings.Contains(r.text, w) {
				t.Errorf("README.md:%d: %s must list %s", r.line, k, w)
			}
		}
	}
}

// testdata/all-keys.toml sets every key; it must load cleanly and its keys
// must be exactly the probed ones, so that a key added to the decoder
// without being added there (and to the README) is noticed.
func TestAllKeysProfile(t *testing.T) {
	s := probeSchema(t)
	p, err := Load("testdata/all-keys.toml", LoadOptions{AllowInsecure: true})
	if err != nil {
		t.Fatalf("all-keys.toml must load cleanly:\n%v", err)
	}
	for _, w := range p.Warnings {
		t.Errorf("all-keys.toml must not warn: %s", w)
	}
	set := map[string]bool{}
	for k := range p.pos {
		if !s.tables[k] {
			set[normalizeKey(k)] = true
		}
	}
	for _, k := range s.leaves {
		if !set[k] {
			t.Errorf("testdata/all-keys.toml does not set %s", k)
		}
	}
	for k := range set {
		if !contains(s.leaves, k) {
			t.Errorf("testdata/all-keys.toml sets %s, which probing did not find", k)
		}
	}
	if len(p.ECN.DCQCN) != len(DCQCNParams) {
		t.Errorf("all-keys.toml sets %d DCQCN parameters, DCQCNParams has %d", len(p.ECN.DCQCN), len(DCQCNParams))
	}
	if len(p.NCCL.Vars) != len(NCCLVars) {
		t.Errorf("all-keys.toml sets %d NCCL variables, NCCLVars has %d", len(p.NCCL.Vars), len(NCCLVars))
	}
	// Every setting it produces has a canonical value.
	d := Resolve(p, testPorts)
	for _, st := range d.All() {
		if st.Value == "" {
			t.Errorf("%s resolved to an empty value", st.Key)
		}
	}
}

func contains(ss []string, s string) bool {
	for _, x := range ss {
		if x == s {
			return true
		}
	}
	return false
}

// testPorts is a small synthetic host: two ports of one dual-port ConnectX
// and a second, single-port NIC.
var testPorts = []port.Port{
	{Netdev: "ens1f0np0", RDMADevice: "mlx5_0", PortNum: 1, Driver: "mlx5_core", PCI: "0000:3b:00.0", RoCEv2GID: 3, Role: port.RolePF},
	{Netdev: "ens1f1np1", RDMADevice: "mlx5_1", PortNum: 1, Driver: "mlx5_core", PCI: "0000:3b:00.1", RoCEv2GID: 3, Role: port.RolePF},
	{Netdev: "ens3f0np0", RDMADevice: "mlx5_2", PortNum: 2, Driver: "mlx5_core", PCI: "0000:5e:00.0", RoCEv2GID: -1, Role: port.RolePF},
}

// valueRange is what the decoder announced for a leaf.
type valueRange struct {
	key     string
	kind    string // "int", "duration", "float", "size", "enum"
	lo, hi  string // as the decoder wrote them
	enum    []string
	msg     string // the out-of-range message for the probe value
	allowed string
}

var (
	rangeRe  = regexp.MustCompile(`(-?[0-9][0-9a-zµ.+]*)\.\.(-?[0-9][0-9a-zµ.+]*)$`)
	quotedRe = regexp.MustCompile(`"([^"]*)"`)
)

// probeContext keeps cross-field rules out of a probe of key.
func probeContext(key string) string {
	switch key {
	case "qos.dscp_to_priority":
		return "qos.trust = \"dscp\"\n"
	case "guard.poll":
		return "guard.detection_time = \"5s\"\n"
	case "guard.detection_time":
		return "guard.poll = \"100ms\"\n"
	}
	return ""
}

func probeLeaf(t *testing.T, key, value string) Diagnostics {
	t.Helper()
	_, ds := loadText(t, filler(key)+probeContext(key)+key+" = "+value+"\n")
	return diagFor(ds, key)
}

// probeRanges asks the decoder for the range or values of every leaf.
func probeRanges(t *testing.T, s *schema) []valueRange {
	t.Helper()
	var out []valueRange
	for _, k := range s.leaves {
		var found []valueRange
		for _, probe := range []struct{ kind, value string }{
			{"int", "-99999999999"}, {"float", "-99999999999.5"}, {"duration", `"-9999h"`}, {"size", `"99999GiB"`}, {"enum", `"zz_probe"`},
		} {
			for _, d := range probeLeaf(t, k, probe.value) {
				r := valueRange{key: k, kind: probe.kind, msg: d.Msg, allowed: d.Allowed}
				switch {
				case probe.kind == "enum" && strings.HasSuffix(d.Msg, "is not a valid value"):
					if q := quotedRe.FindAllStringSubmatch(d.Allowed, -1); q != nil {
						for _, m := range q {
							r.enum = append(r.enum, m[1])
						}
					} else {
						r.enum = strings.Split(d.Allowed, ", ")
					}
				case probe.kind == "size" && strings.HasSuffix(d.Msg, "is too large"):
					_, hi, _ := strings.Cut(d.Allowed, "at most ")
					r.hi = hi
				case probe.kind != "enum" && probe.kind != "size" && strings.HasSuffix(d.Msg, "is out of range"):
					m := rangeRe.FindStringSubmatch(d.Allowed)
					if m == nil {
						t.Errorf("%s: cannot read the range in (allowed: %s)", k, d.Allowed)
						continue
					}
					r.lo, r.hi = m[1], m[2]
				default:
					continue
				}
				found = append(found, r)
			}
		}
		// A float key also takes integers, so its integer probe is out of
		// range too; the float probe is the one that describes it.
		isFloat := false
		for _, r := range found {
			isFloat = isFloat || r.kind == "float"
		}
		for _, r := range found {
			if !(isFloat && r.kind == "int") {
				out = append(out, r)
			}
		}
	}
	return out
}

// Whatever range or value list the decoder announces for a key, the README
// row of that key states it too.
func TestReadmeStatesDecoderRanges(t *testing.T) {
	s := probeSchema(t)
	rows := readmeKeys(t)
	ranges := probeRanges(t, s)
	if len(ranges) < 50 {
		t.Fatalf("probing found only %d ranges", len(ranges))
	}
	for _, r := range ranges {
		row, ok := rows[r.key]
		if !ok {
			continue // reported by TestReadmeDocumentsEveryKey
		}
		var want []string
		switch r.kind {
		case "enum":
			want = r.enum
		case "size":
			want = []string{r.hi}
		case "duration":
			lo, _ := time.ParseDuration(r.lo)
			hi, _ := time.ParseDuration(r.hi)
			want = []string{shortDuration(lo) + ".." + shortDuration(hi)}
		default:
			want = []string{r.lo + ".." + r.hi}
		}
		for _, w := range want {
			if !strings.Contains(row.text, w) {
				t.Errorf("README.md:%d: `%s` must state %s (the decoder says: %s)", row.line, r.key, w, r.allowed)
			}
		}
	}
}

// shortDuration prints 24h rather than Go's 24h0m0s, as the README does.
func shortDuration(d time.Duration) string {
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}

// Each announced range is the enforced one: both ends load, one step past
// either end is refused with the same (allowed: …).
func TestRangeEdges(t *testing.T) {
	s := probeSchema(t)
	for _, r := range probeRanges(t, s) {
		switch r.kind {
		case "int":
			lo, err1 := strconv.ParseInt(r.lo, 10, 64)
			hi, err2 := strconv.ParseInt(r.hi, 10, 64)
			if err1 != nil || err2 != nil {
				t.Errorf("%s: range %s..%s", r.key, r.lo, r.hi)
				continue
			}
			format := strings.Replace(r.msg, "-99999999999", "%d", 1)
			edges(t, r, strconv.FormatInt(lo, 10), strconv.FormatInt(hi, 10),
				strconv.FormatInt(lo-1, 10), fmt.Sprintf(format, lo-1),
				strconv.FormatInt(hi+1, 10), fmt.Sprintf(format, hi+1))
		case "duration":
			lo, err1 := time.ParseDuration(r.lo)
			hi, err2 := time.ParseDuration(r.hi)
			if err1 != nil || err2 != nil {
				t.Errorf("%s: range %s..%s", r.key, r.lo, r.hi)
				continue
			}
			q := func(d time.Duration) string { return strconv.Quote(d.String()) }
			edges(t, r, q(lo), q(hi),
				q(lo-time.Millisecond), fmt.Sprintf("%v is out of range", lo-time.Millisecond),
				q(hi+time.Millisecond), fmt.Sprintf("%v is out of range", hi+time.Millisecond))
		case "float":
			lo, err1 := strconv.ParseFloat(r.lo, 64)
			hi, err2 := strconv.ParseFloat(r.hi, 64)
			if err1 != nil || err2 != nil {
				t.Errorf("%s: range %s..%s", r.key, r.lo, r.hi)
				continue
			}
			step := (hi - lo) / 1000
			f := func(x float64) string { return strconv.FormatFloat(x, 'g', -1, 64) }
			tomlFloat := func(x float64) string {
				s := f(x)
				if !strings.ContainsAny(s, ".e") {
					s += ".0"
				}
				return s
			}
			edges(t, r, tomlFloat(lo), tomlFloat(hi),
				tomlFloat(lo-step), fmt.Sprintf("%g is out of range", lo-step),
				tomlFloat(hi+step), fmt.Sprintf("%g is out of range", hi+step))
		case "size":
			hi, err := ParseSize(r.hi)
			if err != nil {
				t.Errorf("%s: at most %s", r.key, r.hi)
				continue
			}
			if ds := probeLeaf(t, r.key, strconv.Quote(hi.String())); len(ds.Errors()) > 0 {
				t.Errorf("%s = %v is the announced maximum but is refused: %v", r.key, hi, ds)
			}
			ds := probeLeaf(t, r.key, strconv.FormatUint(uint64(hi)+1, 10))
			if len(ds) != 1 || ds[0].Msg != fmt.Sprintf("%v is too large", hi+1) || ds[0].Allowed != r.allowed {
				t.Errorf("%s = %d: got %v", r.key, hi+1, ds)
			}
		case "enum":
			for _, v := range r.enum {
				if ds := probeLeaf(t, r.key, strconv.Quote(v)); len(ds.Errors()) > 0 {
					t.Errorf("%s = %q is listed as allowed but refused: %v", r.key, v, ds)
				}
			}
		}
	}
}

func edges(t *testing.T, r valueRange, lo, hi, below, belowMsg, above, aboveMsg string) {
	t.Helper()
	for _, v := range []string{lo, hi} {
		if ds := probeLeaf(t, r.key, v); len(ds.Errors()) > 0 {
			t.Errorf("%s = %s is an end of the announced range %s..%s but is refused: %v", r.key, v, r.lo, r.hi, ds)
		}
	}
	for _, c := range []struct{ v, msg string }{{below, belowMsg}, {above, aboveMsg}} {
		ds := probeLeaf(t, r.key, c.v)
		if len(ds) != 1 || ds[0].Msg != c.msg || ds[0].Allowed != r.allowed {
			t.Errorf("%s = %s: want the one error %q (allowed: %s), got %v", r.key, c.v, c.msg, r.allowed, ds)
		}
	}
}

var settingTemplates = []struct {
	re   *regexp.Regexp
	repl string
}{
	{regexp.MustCompile(`^ecn\.(rp|np)\.enable\.[0-7]$`), "ecn.$1.enable.<prio>"},
	{regexp.MustCompile(`^ecn\.np\.(cnp_dscp|cnp_802p_prio)$`), "ecn.np.$1"},
	{regexp.MustCompile(`^ecn\.(rp|np)\.[a-z0-9_]+$`), "ecn.$1.<param>"},
	{regexp.MustCompile(`^link\.private_flags\..+$`), "link.private_flags.<flag>"},
	{regexp.MustCompile(`^devlink\..+$`), "devlink.<param>"},
	{regexp.MustCompile(`^nccl\.NCCL_.+$`), "nccl.NCCL_<VAR>"},
}

// settingTemplate turns a setting key into the README's form:
// "mlx5_2:2.ecn.rp.enable.3" -> "<rdma>.ecn.rp.enable.<prio>".
func settingTemplate(s Setting) string {
	scope := s.Scope
	switch {
	case s.Port == nil:
	case scope == s.Port.Netdev:
		scope = "<netdev>"
	case scope == s.Port.RDMAScope():
		scope = "<rdma>"
	}
	name := s.Name
	for _, t := range settingTemplates {
		if t.re.MatchString(name) {
			name = t.re.ReplaceAllString(name, t.repl)
			break
		}
	}
	return scope + "." + name
}

// Every setting a profile can produce is in the README's settings table.
func TestReadmeDocumentsSettingKeys(t *testing.T) {
	readme, err := os.ReadFile("../profiles/README.md")
	if err != nil {
		t.Fatal(err)
	}
	p, err := Load("testdata/all-keys.toml", LoadOptions{AllowInsecure: true})
	if err != nil {
		t.Fatal(err)
	}
	d := Resolve(p, testPorts)
	// The NCCL file's host settings are nccl's (nccl's docs test).
	if len(d.Ports) != len(testPorts) {
		t.Fatalf("all-keys.toml matched %d of %d ports", len(d.Ports), len(testPorts))
	}
	seen := map[string]bool{}
	for _, s := range d.All() {
		tmpl := settingTemplate(s)
		if seen[tmpl] {
			continue
		}
		seen[tmpl] = true
		if !strings.Contains(string(readme), "| `"+tmpl+"` |") {
			t.Errorf("setting %s (%s) is not in the README's settings table as `%s`", s.Key, s.Kind, tmpl)
		}
	}
	if len(seen) < 25 {
		t.Errorf("only %d kinds of settings: %v", len(seen), seen)
	}
}

// The walkthrough shows what connectx-lossless.toml resolves to; it must be
// what Resolve returns.
func TestReadmeWalkthroughSettings(t *testing.T) {
	readme, err := os.ReadFile("../profiles/README.md")
	if err != nil {
		t.Fatal(err)
	}
	const marker = "<!-- resolved: connectx-lossless.toml ens1f0np0 mlx5_0 -->\n```\n"
	_, rest, ok := strings.Cut(string(readme), marker)
	if !ok {
		t.Fatalf("README.md has no %q block", marker)
	}
	block, _, ok := strings.Cut(rest, "```\n")
	if !ok {
		t.Fatal("the walkthrough block is not closed")
	}
	p, err := Load("../profiles/connectx-lossless.toml", LoadOptions{AllowInsecure: true})
	if err != nil {
		t.Fatal(err)
	}
	d := Resolve(p, testPorts[:1])
	var b strings.Builder
	for _, s := range d.All() {
		fmt.Fprintf(&b, "%s = %s\n", s.Key, s.Value)
	}
	if got := b.String(); got != block {
		t.Errorf("the README's walkthrough block differs from Resolve:\n--- Resolve:\n%s--- README:\n%s", got, block)
	}
}
