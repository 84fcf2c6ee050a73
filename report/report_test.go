package report

import (
	"bytes"
	"context"
	"encoding/json"
	"encoding/xml"
	"errors"
	"flag"
	"fmt"
	"html"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

var update = flag.Bool("update", false, "rewrite testdata/golden")

// corpusFleet builds the fleet view of testdata/corpus as of a fixed time,
// with rack-b-04 expected but silent.
func corpusFleet(t *testing.T) *Fleet {
	t.Helper()
	docs, problems, err := Load(context.Background(), []string{filepath.Join("testdata", "corpus")})
	if err != nil {
		t.Fatal(err)
	}
	if len(problems) != 0 {
		t.Fatalf("corpus problems: %v", problems)
	}
	now := time.Date(2026, 1, 2, 4, 0, 0, 0, time.UTC)
	expected := []string{"rack-a-01", "rack-a-02", "rack-a-03", "rack-a-04", "rack-a-05", "rack-b-01", "rack-b-02", "rack-b-03", "rack-b-04"}
	return Build(docs, problems, Options{Now: now, MaxAge: 24 * time.Hour, Expected: expected})
}

func TestGolden(t *testing.T) {
	f := corpusFleet(t)
	for _, format := range Formats {
		var buf bytes.Buffer
		if err := Render(&buf, f, format); err != nil {
			t.Fatal(err)
		}
		ext := map[string]string{"text": "txt", "markdown": "md", "html": "html", "json": "json"}[format]
		golden := filepath.Join("testdata", "golden", "corpus."+ext)
		if *update {
			if err := os.MkdirAll(filepath.Dir(golden), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(golden, buf.Bytes(), 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		want, err := os.ReadFile(golden)
		if err != nil {
			t.Fatalf("%v (run with -update to create it)", err)
		}
		if !bytes.Equal(buf.Bytes(), want) {
			t.Errorf("%s differs from the golden file (run with -update after checking):\n%s", golden, buf.String())
		}
	}
}

// The facts the golden files encode, checked on their own so that an
// -update cannot bless a wrong view.
func TestCorpusFacts(t *testing.T) {
	f := corpusFleet(t)
	state := map[string]State{}
	for _, h := range f.Hosts {
		state[h.Host] = h.State
	}
	want := map[string]State{
		"rack-a-01": InSync, "rack-a-04": InSync, "rack-a-05": Stale,
		"rack-b-01": Drift, "rack-b-03": Drift, "rack-b-04": Missing,
		"rack-c-01": Drift, "rack-c-03": Failed, "rack-d-03": InSync,
	}
	for h, s := range want {
		if state[h] != s {
			t.Errorf("%s: %q, want %q", h, state[h], s)
		}
	}
	// The rack with the wrong cable length is one line, three hosts.
	var cable *DriftLine
	for _, l := range f.Drift {
		if l.Setting == "qos.cable_length_m" && l.Want == "30" {
			cable = l
		}
	}
	if cable == nil || strings.Join(cable.Hosts, " ") != "rack-b-01 rack-b-02 rack-b-03" || cable.Have != "7" || cable.Ports != 6 {
		t.Errorf("cable drift line: %+v", cable)
	}
	if strings.Join(f.Missing, " ") != "rack-b-04" {
		t.Errorf("missing %v", f.Missing)
	}
	if f.Sweep == nil || len(f.Sweep.Pairs) != 6 || f.Sweep.Rounds != 3 {
		t.Fatalf("sweep: %+v", f.Sweep)
	}
	if p := f.Sweep.Cell("rack-a-04", "rack-a-02"); p == nil || p.State != PairFailed {
		t.Errorf("the timed-out pair: %+v", p)
	}
	if c := f.Sweep.Common; len(c) == 0 || c[0].Host != "rack-a-03" || c[0].Pairs != 3 {
		t.Errorf("common hosts %+v, want rack-a-03 first (3 slow pairs)", c)
	}
	if p := f.Sweep.Cell("rack-a-01", "rack-a-03"); p == nil || p.State != PairSlow || p.PauseOccupancy != 0.6 {
		t.Errorf("rack-a-01 <-> rack-a-03: %+v, want slow with 60%% pause occupancy", p)
	}
}

// renderHTML checks the page: well-formed (an XML parser reads it), no
// reference to anything outside the file.
func TestHTMLSelfContained(t *testing.T) {
	var buf bytes.Buffer
	if err := Render(&buf, corpusFleet(t), "html"); err != nil {
		t.Fatal(err)
	}
	page := buf.String()
	if strings.Contains(strings.ToLower(page), "http") {
		t.Error("the page references http(s): it must open offline")
	}
	for _, ref := range []string{"<script", "<link", "src=", "url("} {
		if strings.Contains(page, ref) {
			t.Errorf("the page has %q: no external or scripted assets", ref)
		}
	}
	d := xml.NewDecoder(strings.NewReader(page))
	d.Strict = true
	var stack []string
	ids := map[string]bool{}
	for {
		tok, err := d.Token()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("not well-formed: %v", err)
		}
		switch el := tok.(type) {
		case xml.StartElement:
			stack = append(stack, el.Name.Local)
			for _, a := range el.Attr {
				if a.Name.Local == "id" {
					ids[a.Value] = true
				}
			}
		case xml.EndElement:
			stack = stack[:len(stack)-1]
		}
	}
	if len(stack) != 0 {
		t.Errorf("unclosed elements %v", stack)
	}
	for _, id := range []string{"matrix", "drift", "missing", "sweep-bandwidth", "sweep-pause", "worst", "common"} {
		if !ids[id] {
			t.Errorf("no element with id %q", id)
		}
	}
}

// A real browser engine renders the page: the host matrix and the sweep's
// heat map are in the DOM it builds.
func TestHTMLInBrowser(t *testing.T) {
	chromium, err := exec.LookPath("chromium")
	if err != nil {
		t.Skip("chromium not installed (apt-get install -y --no-install-recommends chromium): the page is not opened in a browser")
	}
	dir := t.TempDir()
	page := filepath.Join(dir, "fleet.html")
	var buf bytes.Buffer
	if err := Render(&buf, corpusFleet(t), "html"); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(page, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(chromium, "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
		"--disable-component-update", "--disable-sync", "--no-first-run", "--user-data-dir="+filepath.Join(dir, "profile"),
		"--dump-dom", "file://"+page)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	dom, err := cmd.Output()
	if err != nil {
		t.Fatalf("chromium: %v\n%s", err, stderr.String())
	}
	for _, want := range []string{`<table id="matrix">`, `<td class="h">rack-b-02</td>`, `<table id="sweep-bandwidth">`, "Hosts common to the bad pairs: <b>rack-a-03</b>"} {
		if !strings.Contains(string(dom), want) {
			t.Errorf("the rendered DOM lacks %s:\n%s", want, dom)
		}
	}
}

// largeFleet is the fleet view of n hosts' audit documents (fleetDocs).
func largeFleet(t *testing.T, n int) *Fleet {
	t.Helper()
	var docs []Doc
	for i, b := range fleetDocs(t, n) {
		ds, err := Parse(fmt.Sprintf("h%05d.audit.json", i), b)
		if err != nil {
			t.Fatal(err)
		}
		docs = append(docs, ds...)
	}
	return Build(docs, nil, Options{Now: time.Date(2026, 1, 2, 4, 0, 0, 0, time.UTC)})
}

// A large fleet's page (issue 39: readable at 100,000 hosts): the summary
// by setting and the drift first, then the hosts by state in collapsed
// pages of pageSize, each summary with its count; a browser builds every
// row, inside closed <details>. Markdown has the same pages.
func TestLargeFleetCollapsedInBrowser(t *testing.T) {
	const n = 1600
	f := largeFleet(t, n)
	pages := f.hostPages()
	if f.Summary.Drift <= pageSize || f.Summary.InSync <= pageSize || len(pages) < 4 {
		t.Fatalf("the fleet has %d drift and %d in sync hosts in %d pages: want more than a page of each", f.Summary.Drift, f.Summary.InSync, len(pages))
	}
	var buf bytes.Buffer
	if err := Render(&buf, f, "html"); err != nil {
		t.Fatal(err)
	}
	page := buf.String()
	bySetting, drift, hosts := strings.Index(page, `<table id="by-setting">`), strings.Index(page, `<table id="drift">`), strings.Index(page, `<details class="hosts">`)
	if bySetting < 0 || drift < bySetting || hosts < drift || strings.Contains(page, `id="matrix"`) {
		t.Errorf("want the summary by setting, the drift, then collapsed host pages (no open matrix): at %d, %d, %d", bySetting, drift, hosts)
	}
	md := new(strings.Builder)
	if err := Render(md, f, "markdown"); err != nil {
		t.Fatal(err)
	}
	if got := strings.Count(md.String(), "\n<details><summary>"); got != len(pages) {
		t.Errorf("markdown: %d collapsed pages, want %d", got, len(pages))
	}
	if rows := len(regexp.MustCompile(`(?m)^\| r\d{3}-h\d{2} \|`).FindAllString(md.String(), -1)); rows != n {
		t.Errorf("markdown: %d host rows, want %d", rows, n)
	}

	chromium, err := exec.LookPath("chromium")
	if err != nil {
		t.Skip("chromium not installed (make deps): the page is not opened in a browser")
	}
	dom := dumpDOM(t, chromium, buf.Bytes())
	if got := strings.Count(dom, `<details class="hosts">`); got != len(pages) {
		t.Errorf("the DOM has %d closed host sections, want %d (none open)", got, len(pages))
	}
	if got := strings.Count(dom, `<tr><td class="h">`); got != n {
		t.Errorf("the DOM has %d host rows, want %d", got, n)
	}
	for _, pg := range pages {
		if want := "</summary>"; !strings.Contains(dom, `">`+html.EscapeString(pg.title(true))+want) {
			t.Errorf("the DOM lacks the summary %q", pg.title(true))
		}
	}
	for _, want := range []string{
		fmt.Sprintf("drift: hosts 1–%d of %d (", pageSize, f.Summary.Drift),
		fmt.Sprintf("in sync: hosts %d–%d of %d (", 2*pageSize+1, min(3*pageSize, f.Summary.InSync), f.Summary.InSync),
	} {
		if !strings.Contains(dom, want) {
			t.Errorf("the DOM lacks %q", want)
		}
	}
}

// dumpDOM opens page in headless chromium and returns the DOM it built.
func dumpDOM(t *testing.T, chromium string, page []byte) string {
	t.Helper()
	dir := t.TempDir()
	file := filepath.Join(dir, "fleet.html")
	if err := os.WriteFile(file, page, 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(chromium, "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
		"--disable-component-update", "--disable-sync", "--no-first-run", "--user-data-dir="+filepath.Join(dir, "profile"),
		"--dump-dom", "file://"+file)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	dom, err := cmd.Output()
	if err != nil {
		t.Fatalf("chromium: %v\n%s", err, stderr.String())
	}
	return string(dom)
}

// A pair whose listener timed out waiting is failed; the connector's own
// error, the reason it never came, is still in the pair's why (the lab's
// sweep lost "no RoCE v2 IPv4 GID" that way).
func TestSweepFailedPairSaysTheOtherEndsError(t *testing.T) {
	dir := t.TempDir()
	for name, body := range map[string]string{
		"sweep.r2.h3--h4.h3.json": `{"sweep": {"round": 2, "pair": ["h3", "h4"], "host": "h3", "peer": "h4", "role": "listen",
			"rc": 124, "timed_out": true, "elapsed_s": 20.1, "stderr": ""}, "verify": null}`,
		"sweep.r2.h3--h4.h4.json": `{"sweep": {"round": 2, "pair": ["h3", "h4"], "host": "h4", "peer": "h3", "role": "peer",
			"rc": 1, "timed_out": false, "elapsed_s": 0.4, "stderr": ""},
			"verify": {"ok": false, "errors": ["no RoCE v2 IPv4 GID on rxe44 port 1: configure an IPv4 address on eth3"], "mismatches": []}}`,
	} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	docs, problems, err := Load(context.Background(), []string{dir})
	if err != nil || len(problems) != 0 {
		t.Fatalf("load: %v %v", err, problems)
	}
	p := Build(docs, problems, Options{Now: time.Now()}).Sweep.Cell("h3", "h4")
	want := []string{"h3: timed out after 20s", "h4: no RoCE v2 IPv4 GID on rxe44 port 1: configure an IPv4 address on eth3"}
	if p == nil || p.State != PairFailed || strings.Join(p.Why, "\n") != strings.Join(want, "\n") {
		t.Errorf("pair %+v, want failed with why %q", p, want)
	}
}

// A round's file (the playbook's: every end's record of the round in
// one list) gives the same documents and the same sweep as one file per
// record; a record that does not parse is named by its place.
func TestSweepRoundFileReadsAsItsRecords(t *testing.T) {
	recs := []string{
		`{"sweep": {"round": 1, "pair": ["h1", "h2"], "host": "h1", "peer": "h2", "role": "listen", "rc": 0, "timed_out": false, "elapsed_s": 1.5, "stderr": ""},
		  "verify": {"ok": true, "mismatches": [], "traffic": [{"write_gbps": 90.5}]}}`,
		`{"sweep": {"round": 1, "pair": ["h1", "h2"], "host": "h2", "peer": "h1", "role": "peer", "rc": 0, "timed_out": false, "elapsed_s": 1.2, "stderr": ""},
		  "verify": {"ok": true, "mismatches": [], "traffic": [{"write_gbps": 90.5}]}}`,
		`{"sweep": {"round": 1, "pair": ["h3", "h4"], "host": "h3", "peer": "h4", "role": "listen", "rc": 124, "timed_out": true, "elapsed_s": 20.1, "stderr": ""}, "verify": null}`,
		`{"sweep": {"round": 1, "pair": ["h3", "h4"], "host": "h4", "peer": "h3", "role": "peer", "rc": 1, "timed_out": false, "elapsed_s": 0.4, "stderr": "rocectl: mlx5_0: no such device"}, "verify": null}`,
	}
	perRecord, round := t.TempDir(), t.TempDir()
	for i, r := range recs {
		if err := os.WriteFile(filepath.Join(perRecord, fmt.Sprintf("sweep.r1.%d.json", i)), []byte(r), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	roundFile := filepath.Join(round, "sweep.r1.json")
	if err := os.WriteFile(roundFile, []byte(`{"rocectl_sweep_records": [`+strings.Join(recs, ",")+`]}`), 0o644); err != nil {
		t.Fatal(err)
	}
	sweepOf := func(dir string) (*Sweep, int) {
		docs, problems, err := Load(context.Background(), []string{dir})
		if err != nil || len(problems) != 0 {
			t.Fatalf("load %s: %v %v", dir, err, problems)
		}
		return Build(docs, problems, Options{Now: time.Unix(0, 0)}).Sweep, len(docs)
	}
	want, n := sweepOf(perRecord)
	got, m := sweepOf(round)
	if n != 4 || m != 4 {
		t.Fatalf("%d documents from the records' files, %d from the round's file, want 4 and 4", n, m)
	}
	wj, _ := json.Marshal(want)
	gj, _ := json.Marshal(got)
	if !bytes.Equal(wj, gj) {
		t.Errorf("the round's file gives another sweep:\n%s\nwant\n%s", gj, wj)
	}
	if c := got.Cell("h3", "h4"); c == nil || c.State != PairFailed {
		t.Errorf("h3-h4: %+v, want failed", c)
	}
	bad := []byte(`{"rocectl_sweep_records": [` + recs[0] + `, {"sweep": {"round": "one"}}]}`)
	if _, err := Parse(roundFile, bad); err == nil || !strings.Contains(err.Error(), "rocectl_sweep_records[1]") {
		t.Errorf("a bad record: %v, want an error naming rocectl_sweep_records[1]", err)
	}
}

// An audit or verify document's unknown[] (settings the snapshot did not
// hold) makes the host unknown, its group's cell "?", and is counted as
// unknown, not in sync. Before, report did not read unknown[] and showed
// such a host in sync.
func TestUnknownSettingsAreNotInSync(t *testing.T) {
	dir := t.TempDir()
	for name, body := range map[string]string{
		"gpu-001.audit.json": `{"schema_version": 1, "command": "audit", "host": "gpu-001", "profile": "connectx-lossless",
			"changed": false, "changes": [], "unsupported": [], "errors": [], "in_sync": 55, "ports": [], "rolled_back": false, "diagnostics": [],
			"unknown": [{"key": "ens1f0np0.qos.global_pause", "scope": "ens1f0np0", "reason": "not in the snapshot (pause of ens1f0np0)", "want": "off"}]}`,
		"gpu-002.verify.json": `{"schema_version": 1, "host": "gpu-002", "profile": "connectx-lossless", "ok": false, "mismatches": [], "errors": [], "diagnostics": [],
			"unknown": [{"key": "ens1f0np0.qos.pfc", "scope": "ens1f0np0", "reason": "not in the snapshot (dcb of ens1f0np0)", "want": "[3]"}]}`,
	} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	docs, problems, err := Load(context.Background(), []string{dir})
	if err != nil || len(problems) != 0 {
		t.Fatalf("load: %v %v", err, problems)
	}
	f := Build(docs, problems, Options{Now: time.Now()})
	for _, h := range f.Hosts {
		switch h.Host {
		case "gpu-001":
			if h.State != Unknown || h.Cell("global pause") != Unknown {
				t.Errorf("gpu-001: state %s, pause cell %s; want unknown, unknown (groups %v)", h.State, h.Cell("global pause"), h.Groups)
			}
		case "gpu-002":
			if h.Verify != Unknown {
				t.Errorf("gpu-002: verify %s, want unknown", h.Verify)
			}
		}
	}
	if f.Summary.InSync != 0 || f.Summary.Unknown < 1 {
		t.Errorf("summary %+v: want no host in sync, gpu-001 unknown", f.Summary)
	}
}

// A buffer-size drift reads in one unit, and the same drift on two hosts
// is one line however each document wrote it: the NIC reports bytes, a
// profile says KiB.
func TestBufferSizeDriftInOneUnit(t *testing.T) {
	dir := t.TempDir()
	doc := func(host, before, after string) string {
		return `{"schema_version": 1, "command": "audit", "host": "` + host + `", "profile": "fat-tree",
			"changed": true, "unsupported": [], "errors": [], "in_sync": 1, "ports": [], "rolled_back": false, "diagnostics": [], "unknown": [],
			"changes": [{"key": "ens1f0np0.buffers.buffer_size", "scope": "ens1f0np0", "netdev": "ens1f0np0", "before": "` + before + `", "after": "` + after + `"}]}`
	}
	for name, body := range map[string]string{
		"gpu-001.audit.json": doc("gpu-001", "[524160,0,0,0,0,0,0,0]", "[63KiB,192KiB,0,0,0,0,0,0]"),
		"gpu-002.audit.json": doc("gpu-002", "[524160,0,0,0,0,0,0,0]", "[64512,196608,0,0,0,0,0,0]"),
	} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	docs, problems, err := Load(context.Background(), []string{dir})
	if err != nil || len(problems) != 0 {
		t.Fatalf("load: %v %v", err, problems)
	}
	var out strings.Builder
	if err := Render(&out, Build(docs, problems, Options{Now: time.Now()}), "text"); err != nil {
		t.Fatal(err)
	}
	want := "= [524160,0,0,0,0,0,0,0], want [64512,196608,0,0,0,0,0,0]\n      on 2 hosts"
	if n := strings.Count(out.String(), want); n != 1 || strings.Contains(out.String(), "KiB") {
		t.Errorf("want one drift line in bytes for both hosts (%q), found %d:\n%s", want, n, out.String())
	}
}

// A host whose profile matched no port was not checked: its state is "no
// match", every group cell "-", and it is not counted in sync (issue 34,
// item 16). gpu-001's document is what audit prints today (the real
// output of `rocectl audit -o json -p profiles/connectx-lossless.toml
// --snapshot testdata/hosts/bnxt-re-factory`, ports elided); gpu-002's is
// one from before matched_ports, where nothing compared says the same;
// gpu-003 is in sync.
func TestHostThatMatchedNoPortIsNotInSync(t *testing.T) {
	dir := t.TempDir()
	for name, body := range map[string]string{
		"gpu-001.audit.json": `{"schema_version": 1, "profile": "connectx-lossless", "profile_hash": "80332495f1256f15", "changed": false, "changes": [],
			"unsupported": [], "errors": [], "unknown": [], "in_sync": 0, "matched_ports": 0, "ports": [], "rolled_back": false,
			"message": "No RoCE port matches the profile's [match]: nothing to do. Ports on this host: enp202s0f1np1 (bnxt_re0, bnxt_en)",
			"diagnostics": [], "host": "gpu-001", "generated_at": "2026-12-03T23:19:59Z"}`,
		"gpu-002.audit.json": `{"schema_version": 1, "profile": "connectx-lossless", "changed": false, "changes": [], "unsupported": [], "errors": [],
			"unknown": [], "in_sync": 0, "ports": [], "rolled_back": false, "diagnostics": [], "host": "gpu-002", "generated_at": "2026-12-03T23:19:59Z"}`,
		"gpu-003.audit.json": `{"schema_version": 1, "profile": "connectx-lossless", "changed": false, "changes": [], "unsupported": [], "errors": [],
			"unknown": [], "in_sync": 29, "matched_ports": 2, "ports": [], "rolled_back": false, "diagnostics": [], "host": "gpu-003", "generated_at": "2026-12-03T23:19:59Z"}`,
	} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	docs, problems, err := Load(context.Background(), []string{dir})
	if err != nil || len(problems) != 0 {
		t.Fatalf("load: %v %v", err, problems)
	}
	f := Build(docs, problems, Options{Now: time.Now()})
	for _, h := range f.Hosts {
		want := NoMatch
		if h.Host == "gpu-003" {
			want = InSync
		}
		if h.State != want {
			t.Errorf("%s: state %q, want %q", h.Host, h.State, want)
		}
		if want == NoMatch && h.Cell("pfc") != NoData {
			t.Errorf("%s: pfc cell %q, want %q", h.Host, h.Cell("pfc"), NoData)
		}
	}
	if f.Summary.InSync != 1 || f.Summary.NoMatch != 2 {
		t.Errorf("summary %+v: want 1 in sync, 2 that matched no port", f.Summary)
	}
	var out strings.Builder
	if err := Render(&out, f, "text"); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "3 hosts: 1 in sync, 2 matched no port") {
		t.Errorf("headline:\n%s", out.String())
	}
}
