package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// audit -o json names its host (the snapshot's recorded hostname) and its
// time; report reads such documents and prints the fleet view.
func TestAuditNamesHostAndReportReadsIt(t *testing.T) {
	_, out, _ := run(t, nil, "audit", "-o", "json", "-p", repo("profiles/connectx-lossless.toml"), "--snapshot", repo("testdata/hosts/cx6dx-ofed-factory"))
	var doc struct {
		Host        string `json:"host"`
		GeneratedAt string `json:"generated_at"`
	}
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatal(err)
	}
	if at, err := time.Parse(time.RFC3339, doc.GeneratedAt); doc.Host != "cx6dx-ofed-factory" || err != nil || time.Since(at) > time.Minute {
		t.Errorf("host %q generated_at %q (%v)", doc.Host, doc.GeneratedAt, err)
	}
	// nccl-env's document is named the same way (issue 37: the fleet
	// view compares hosts' GID indexes).
	_, out, _ = run(t, nil, "nccl-env", "-o", "json", "-p", repo("profiles/connectx-lossless.toml"), "--snapshot", repo("testdata/hosts/cx6dx-ofed-factory"))
	doc.Host, doc.GeneratedAt = "", ""
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatal(err)
	}
	if at, err := time.Parse(time.RFC3339, doc.GeneratedAt); doc.Host != "cx6dx-ofed-factory" || err != nil || time.Since(at) > time.Minute {
		t.Errorf("nccl-env: host %q generated_at %q (%v)", doc.Host, doc.GeneratedAt, err)
	}
	code, out, errs := run(t, nil, "report", "--expect", "rack-b-04", "-o", "markdown", repo("report/testdata/corpus"))
	if code != ExitOK || !strings.Contains(out, "| rack-b-02 | drift |") || !strings.Contains(out, "## Did not report (1)\n\nrack-b-04") {
		t.Errorf("exit %d\n%s%s", code, out, errs)
	}
	if code, _, errs := run(t, nil, "report", "-o", "yaml", repo("report/testdata/corpus")); code != ExitError || !strings.Contains(errs, "-o must be one of text, markdown, html, json") {
		t.Errorf("-o yaml: exit %d %s", code, errs)
	}
}

// report -o json is a document like the others: schema_version, and
// valid under docs/schema/fleet.json.
func TestReportJSONSchema(t *testing.T) {
	code, out, errs := run(t, nil, "report", "--expect", "rack-b-04", "-o", "json", repo("report/testdata/corpus"))
	if code != ExitOK {
		t.Fatalf("exit %d\n%s", code, errs)
	}
	if m := validDoc(t, compileSchema(t, "fleet"), out); m["schema_version"] != float64(SchemaVersion) {
		t.Errorf("schema_version %v", m["schema_version"])
	}
}

// A truncated document among good ones (issue 39, "Bad input"): the
// fleet view is printed with the file named under the unreadable ones and
// the exit is 1, as for any unreadable file; a duplicate is named and
// leaves the exit at 0.
func TestReportTruncatedAndDuplicatedDocuments(t *testing.T) {
	good, err := os.ReadFile(repo("report/testdata/corpus/rack-a-01.audit.json"))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	for name, body := range map[string][]byte{
		"rack-a-01.audit.json": good,
		"rack-a-01.copy.json":  good,
	} {
		if err := os.WriteFile(filepath.Join(dir, name), body, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	code, out, errs := run(t, nil, "report", dir)
	if code != ExitOK || !strings.Contains(out, "Duplicate documents (1)") || !strings.Contains(out, "rack-a-01.audit.json: the same audit of rack-a-01 as "+filepath.Join(dir, "rack-a-01.copy.json")) {
		t.Errorf("a duplicate: exit %d\n%s%s", code, out, errs)
	}
	cut := filepath.Join(dir, "rack-a-02.audit.json")
	if err := os.WriteFile(cut, good[:len(good)/2], 0o644); err != nil {
		t.Fatal(err)
	}
	code, out, errs = run(t, nil, "report", dir)
	if code != ExitError || !strings.Contains(out, "Unreadable files:\n  "+cut+": unexpected end of JSON input") || !strings.Contains(out, "1 host: 1 in sync") || !strings.Contains(errs, "1 file(s) could not be read") {
		t.Errorf("a truncated document: exit %d\n%s%s", code, out, errs)
	}
	// -o json with both is valid under docs/schema/fleet.json.
	_, out, _ = run(t, nil, "report", "-o", "json", dir)
	if m := validDoc(t, compileSchema(t, "fleet"), out); len(m["duplicates"].([]any)) != 1 || len(m["problems"].([]any)) != 1 {
		t.Errorf("-o json: duplicates %v, problems %v", m["duplicates"], m["problems"])
	}
}

// The fleet's NCCL sections through the command (issue 37 item 4): nccl-env
// and audit documents written by rocectl itself on the shipped hosts,
// gathered in one directory as the Ansible role gathers them, then
// rocectl report over them; and report over report/testdata/nccl prints
// its goldens (less the time line) and a document valid under fleet.json.
func TestReportNCCLSections(t *testing.T) {
	dir := t.TempDir()
	prof := repo("profiles/connectx-lossless.toml")
	for _, h := range []string{"cx5-roce-lag", "cx6dx-ofed-factory", "cx6dx-ofed-lossless", "cx7-upstream-factory"} {
		code, out, errs := run(t, nil, "nccl-env", "-o", "json", "-p", prof, "--snapshot", repo("testdata/hosts/"+h))
		if code != ExitOK {
			t.Fatalf("%s: exit %d %s", h, code, errs)
		}
		if err := os.WriteFile(filepath.Join(dir, h+".nccl-env.json"), []byte(out), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	snap := copySnapshot(t, "cx6dx-ofed-lossless")
	if err := os.MkdirAll(filepath.Join(snap, "etc"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(snap, "etc", "nccl.conf"), []byte("NCCL_IB_TC=104\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, out, _ := run(t, nil, "audit", "-o", "json", "-p", prof, "--snapshot", snap)
	if err := os.WriteFile(filepath.Join(dir, "cx6dx-ofed-lossless.audit.json"), []byte(out), 0o644); err != nil {
		t.Fatal(err)
	}
	code, out, errs := run(t, nil, "report", dir)
	want := "\nNCCL GID index (4 hosts of 1 profile, 1 differ from their profile's most common value):\n" +
		"  A fleet-wide NCCL_IB_GID_INDEX"
	want2 := "  connectx-lossless: 4 hosts; 3 at -1 (dynamic)\n      3 (pinned) on 1 host: cx5-roce-lag\n\n" +
		"NCCL against the NIC classes (1 host, 1 problem):\n" +
		"  cx6dx-ofed-lossless: /etc/nccl.conf NCCL_IB_TC: TOS 104 = DSCP 26 << 2 | ECN 00: not ECN-capable; DCQCN needs ECT(0) → 106\n"
	if code != ExitOK || !strings.Contains(out, want) || !strings.Contains(out, want2) {
		t.Fatalf("exit %d\n%s%s", code, out, errs)
	}

	corpus := repo("report/testdata/nccl")
	for ext, format := range map[string]string{"txt": "text", "md": "markdown", "html": "html"} {
		code, out, errs := run(t, nil, "report", "-o", format, corpus)
		golden, err := os.ReadFile(repo("report/testdata/golden/nccl." + ext))
		if err != nil {
			t.Fatal(err)
		}
		stamp := regexp.MustCompile(`generated \d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ`)
		if code != ExitOK || stamp.ReplaceAllString(out, "") != stamp.ReplaceAllString(string(golden), "") {
			t.Errorf("%s: exit %d, differs from report/testdata/golden/nccl.%s\n%s%s", format, code, ext, out, errs)
		}
	}
	code, out, errs = run(t, nil, "report", "-o", "json", corpus)
	if code != ExitOK {
		t.Fatalf("exit %d %s", code, errs)
	}
	m := validDoc(t, compileSchema(t, "fleet"), out)
	if g, ok := m["nccl_gid_index"].(map[string]any); !ok || g["differ"] != float64(2) || m["nccl_chain"] == nil {
		t.Errorf("json: %v", m["nccl_gid_index"])
	}
}
