package cli

import (
	"encoding/json"
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
