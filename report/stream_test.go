package report

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

var corpusExpected = []string{"rack-a-01", "rack-a-02", "rack-a-03", "rack-a-04", "rack-a-05", "rack-b-01", "rack-b-02", "rack-b-03", "rack-b-04"}

func corpusOptions() Options {
	return Options{Now: time.Date(2026, 1, 2, 4, 0, 0, 0, time.UTC), MaxAge: 24 * time.Hour, Expected: corpusExpected}
}

// Stream, with any number of workers, prints the golden files byte for
// byte: the order of the output is the one of sorting at the end, never
// the one the workers finish in (go test -race runs this with real
// interleavings).
func TestStreamMatchesTheGoldens(t *testing.T) {
	for _, c := range []struct {
		corpus string
		opt    Options
	}{{"corpus", corpusOptions()}, {"nccl", ncclOptions()}} {
		for _, workers := range []int{1, 2, 8} {
			for round := 0; round < 3; round++ {
				f, err := stream(context.Background(), []string{filepath.Join("testdata", c.corpus)}, c.opt, workers)
				if err != nil {
					t.Fatal(err)
				}
				for _, format := range Formats {
					var buf bytes.Buffer
					if err := Render(&buf, f, format); err != nil {
						t.Fatal(err)
					}
					ext := map[string]string{"text": "txt", "markdown": "md", "html": "html", "json": "json"}[format]
					want, err := os.ReadFile(filepath.Join("testdata", "golden", c.corpus+"."+ext))
					if err != nil {
						t.Fatal(err)
					}
					if !bytes.Equal(buf.Bytes(), want) {
						t.Fatalf("%s, %d workers, %s differs from the golden file:\n%s", c.corpus, workers, format, buf.String())
					}
				}
			}
		}
	}
}

// copyCorpus copies testdata/corpus into a new directory.
func copyCorpus(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	src := filepath.Join("testdata", "corpus")
	err := filepath.WalkDir(src, func(p string, de os.DirEntry, err error) error {
		if err != nil || de.IsDir() {
			if de != nil && de.IsDir() {
				rel, _ := filepath.Rel(src, p)
				return os.MkdirAll(filepath.Join(dir, rel), 0o755)
			}
			return err
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		return os.WriteFile(filepath.Join(dir, rel), b, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
	return dir
}

// Malformed, truncated and duplicated documents mixed into a fleet (issue
// 39, "Bad input"): each unreadable file is counted, the first 50 named
// and the rest said as "and N more"; each duplicate is named with the
// document read instead; the fleet view of the good documents is the one
// without the bad ones.
func TestBadDocumentsAreCountedAndNamed(t *testing.T) {
	dir := copyCorpus(t)
	real, err := os.ReadFile(filepath.Join(dir, "rack-c-01.audit.json"))
	if err != nil {
		t.Fatal(err)
	}
	write := func(name string, b []byte) {
		t.Helper()
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	// 60 truncated (a real document cut at a different place each), 3
	// malformed: not JSON, a field of the wrong type, a bad time.
	for i := range 60 {
		write(fmt.Sprintf("trunc-%02d.audit.json", i), real[:len(real)*(i+1)/62])
	}
	write("zz-garbage.audit.json", []byte(`{"changes": [}`))
	write("zz-wrongtype.audit.json", bytes.Replace(real, []byte(`"changes": [`), []byte(`"changes": "x", "was": [`), 1))
	write("zz-badtime.audit.json", bytes.Replace(real, []byte(`"generated_at": "2026-01-02T03:00:00Z"`), []byte(`"generated_at": "yesterday"`), 1))
	// Duplicates: a file copied, and a document gathered twice (the role's
	// result and the fact cache).
	a02, err := os.ReadFile(filepath.Join(dir, "rack-a-02.audit.json"))
	if err != nil {
		t.Fatal(err)
	}
	write("rack-a-02.copy.json", a02)
	write("rack-a-02.again.json", a02)

	f, err := Stream(context.Background(), []string{dir}, corpusOptions())
	if err != nil {
		t.Fatal(err)
	}
	if f.ProblemsTotal != 63 || len(f.Problems) != maxNamed {
		t.Fatalf("%d problems named, %d in all; want %d of 63", len(f.Problems), f.ProblemsTotal, maxNamed)
	}
	for i, p := range f.Problems {
		if want := filepath.Join(dir, fmt.Sprintf("trunc-%02d.audit.json", i)); p.Path != want || !strings.HasPrefix(p.Err, want+": ") {
			t.Errorf("problem %d: %+v, want %s first, in walk order", i, p, want)
		}
	}
	wantDups := []Duplicate{
		{Path: filepath.Join(dir, "rack-a-02.again.json"), Host: "rack-a-02", Kind: KindAudit, Of: filepath.Join(dir, "rack-a-02.copy.json")},
		{Path: filepath.Join(dir, "rack-a-02.audit.json"), Host: "rack-a-02", Kind: KindAudit, Of: filepath.Join(dir, "rack-a-02.copy.json")},
	}
	if fmt.Sprint(f.Duplicates) != fmt.Sprint(wantDups) {
		t.Errorf("duplicates %v\nwant %v", f.Duplicates, wantDups)
	}
	// The three malformed files, past the 50 named, with what is wrong.
	all, err := Stream(context.Background(), []string{filepath.Join(dir, "zz-garbage.audit.json"), filepath.Join(dir, "zz-wrongtype.audit.json"), filepath.Join(dir, "zz-badtime.audit.json")}, corpusOptions())
	if err != nil {
		t.Fatal(err)
	}
	for i, want := range []string{"invalid character '}'", "cannot unmarshal string into Go struct field Plan.changes", "generated_at: parsing time"} {
		if i >= len(all.Problems) || !strings.Contains(all.Problems[i].Err, want) {
			t.Errorf("problems %v: want %q in #%d", all.Problems, want, i)
		}
	}

	var text strings.Builder
	if err := Render(&text, f, "text"); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"  … and 13 more (63 files could not be read)\n",
		"Duplicate documents (2), each the same host, kind and time as a later one, which is read:\n  " + wantDups[0].String() + "\n",
	} {
		if !strings.Contains(text.String(), want) {
			t.Errorf("text lacks %q:\n%s", want, text.String())
		}
	}
	// Without the bad files, the hosts are what the corpus says.
	good, err := Stream(context.Background(), []string{filepath.Join("testdata", "corpus")}, corpusOptions())
	if err != nil {
		t.Fatal(err)
	}
	if len(good.Hosts) != len(f.Hosts) || good.headline() != f.headline() {
		t.Errorf("headline %q, want %q", f.headline(), good.headline())
	}
	for i, h := range good.Hosts {
		if g := f.Hosts[i]; g.Host != h.Host || g.State != h.State || fmt.Sprint(g.Groups) != fmt.Sprint(h.Groups) {
			t.Errorf("host %s: %s %v, want %s %v", g.Host, g.State, g.Groups, h.State, h.Groups)
		}
	}
}

// A path that does not exist is an error, and a cancelled context stops
// the walk; no worker outlives Stream (TestMain's leak check).
func TestStreamErrors(t *testing.T) {
	if _, err := Stream(context.Background(), []string{filepath.Join("testdata", "corpus"), "no-such-dir"}, corpusOptions()); !os.IsNotExist(err) {
		t.Errorf("a missing path: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := Stream(ctx, []string{filepath.Join("testdata", "corpus")}, corpusOptions()); err != context.Canceled {
		t.Errorf("a cancelled context: %v", err)
	}
}

// Render's JSON, written one host at a time, is json.Encoder's output of
// the Fleet byte for byte, for the corpus and for a fleet with every
// optional field (problems past the cap, duplicates, no max age); a field
// added to Fleet but not to renderJSON fails here.
func TestJSONIsTheEncoders(t *testing.T) {
	dir := copyCorpus(t)
	for i := range maxNamed + 2 {
		if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("bad-%02d.json", i)), []byte(`{"changes": [`), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	b, err := os.ReadFile(filepath.Join(dir, "rack-a-02.audit.json"))
	if err != nil {
		t.Fatal(err)
	}
	for i := range maxNamed + 1 {
		if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("rack-a-02.%02d.json", i)), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	full, err := Stream(context.Background(), []string{dir}, Options{Now: time.Unix(0, 0)})
	if err != nil {
		t.Fatal(err)
	}
	if full.ProblemsTotal == 0 || full.DuplicatesTotal == 0 || full.Sweep == nil {
		t.Fatalf("the fleet lacks an optional field: %d problems, %d duplicates", full.ProblemsTotal, full.DuplicatesTotal)
	}
	empty, err := Stream(context.Background(), []string{t.TempDir()}, Options{Now: time.Unix(0, 0)})
	if err != nil {
		t.Fatal(err)
	}
	for i, f := range []*Fleet{corpusFleet(t), full, empty} {
		var want, got bytes.Buffer
		enc := json.NewEncoder(&want)
		enc.SetIndent("", "  ")
		if err := enc.Encode(f); err != nil {
			t.Fatal(err)
		}
		if err := Render(&got, f, "json"); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got.Bytes(), want.Bytes()) {
			t.Errorf("fleet %d: Render's JSON differs from the encoder's:\n%s\nwant\n%s", i, got.String(), want.String())
		}
	}
}

// Stream over many workers gives what Load then Build give, one document
// after the other, over a fleet with every kind of document, bad and
// duplicated ones, and hosts with several documents of one kind and time.
func TestStreamIsBuildOfLoad(t *testing.T) {
	dir := copyCorpus(t)
	for i, b := range fleetDocs(t, 300) {
		name := fmt.Sprintf("f%03d.audit.json", i)
		if i%3 == 0 {
			name = fmt.Sprintf("g%03d.audit.json", i) // the same host again, later in the walk
			if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("f%03d.audit.json", i)), b, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		if i%37 == 0 {
			b = b[:len(b)/3]
		}
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	docs, problems, err := Load(context.Background(), []string{dir})
	if err != nil {
		t.Fatal(err)
	}
	var want bytes.Buffer
	if err := Render(&want, Build(docs, problems, corpusOptions()), "json"); err != nil {
		t.Fatal(err)
	}
	for _, workers := range []int{1, 3, 16} {
		f, err := stream(context.Background(), []string{dir}, corpusOptions(), workers)
		if err != nil {
			t.Fatal(err)
		}
		if len(f.Duplicates) < 50 || len(f.Problems) < 5 {
			t.Fatalf("%d duplicates, %d problems: the fleet should have both", len(f.Duplicates), len(f.Problems))
		}
		var got bytes.Buffer
		if err := Render(&got, f, "json"); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got.Bytes(), want.Bytes()) {
			t.Errorf("%d workers: Stream differs from Build(Load)", workers)
		}
	}
}
