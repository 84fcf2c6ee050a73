package main

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// template is one real document, marshalled once with placeholders for
// what changes per host.
type template struct {
	name  string
	parts [][]byte // the document split at its placeholders
	holes []string // the placeholder between parts[i] and parts[i+1]
}

const (
	holeHost = "@@HOST@@"
	holeAt   = "@@AT@@"
	holeVar  = "@@VAR@@"
)

func load(path string, mutate func(map[string]any)) (*template, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if mutate != nil {
		mutate(m)
	}
	out, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return nil, err
	}
	t := &template{name: filepath.Base(path)}
	rest := append(out, '\n')
	for {
		i, hole := -1, ""
		for _, h := range []string{holeHost, holeAt, holeVar} {
			if j := bytes.Index(rest, []byte(h)); j >= 0 && (i < 0 || j < i) {
				i, hole = j, h
			}
		}
		if i < 0 {
			t.parts = append(t.parts, rest)
			return t, nil
		}
		t.parts = append(t.parts, rest[:i])
		t.holes = append(t.holes, hole)
		rest = rest[i+len(hole):]
	}
}

func (t *template) render(host, at, v string) []byte {
	var b bytes.Buffer
	for i, p := range t.parts {
		b.Write(p)
		if i < len(t.holes) {
			switch t.holes[i] {
			case holeHost:
				b.WriteString(host)
			case holeAt:
				b.WriteString(at)
			case holeVar:
				b.WriteString(v)
			}
		}
	}
	return b.Bytes()
}

func named(m map[string]any) {
	m["host"], m["generated_at"] = holeHost, holeAt
}

func main() {
	n := flag.Int("n", 10000, "files to write")
	out := flag.String("o", "", "output directory (created; must not exist)")
	dir := flag.String("templates", "report/testdata/corpus", "the corpus of real documents")
	var extra []string
	flag.Func("extra", "another real audit document: a template for the factory hosts (repeatable)", func(s string) error {
		extra = append(extra, s)
		return nil
	})
	factoryOnly := flag.Bool("factory-only", false, "every file an audit of a factory host (the last -extra template, every setting drifted): a fleet audited before its first apply; no bad documents")
	flag.Parse()
	if *out == "" {
		fmt.Fprintln(os.Stderr, "reportcorpus: -o is required")
		os.Exit(2)
	}
	if err := run(*n, *out, *dir, extra, *factoryOnly); err != nil {
		fmt.Fprintln(os.Stderr, "reportcorpus:", err)
		os.Exit(1)
	}
}

func run(n int, out, dir string, extra []string, factoryOnly bool) error {
	if err := os.Mkdir(out, 0o755); err != nil {
		return err
	}
	p := func(name string) string { return filepath.Join(dir, name) }
	inSync, err := load(p("rack-a-01.audit.json"), named)
	if err != nil {
		return err
	}
	// Rack B's drift: the profile says 30 m, the hosts have VAR.
	cable, err := load(p("rack-b-01.audit.json"), func(m map[string]any) {
		named(m)
		for _, c := range m["changes"].([]any) {
			if c := c.(map[string]any); strings.HasSuffix(c["key"].(string), "cable_length_m") {
				c["before"] = holeVar
			}
		}
	})
	if err != nil {
		return err
	}
	factory := []*template{}
	for _, f := range append([]string{p("rack-c-01.audit.json"), p("rack-d-02.audit.json")}, extra...) {
		t, err := load(f, named)
		if err != nil {
			return err
		}
		factory = append(factory, t)
	}
	noMatch, err := load(p("rack-d-01.audit.json"), named)
	if err != nil {
		return err
	}
	failed, err := load(p("rack-c-03.audit.json"), named)
	if err != nil {
		return err
	}
	verify, err := load(p("rack-a-01.verify.json"), func(m map[string]any) { m["host"] = holeHost })
	if err != nil {
		return err
	}
	peer, err := load(p("rack-b-01.peer.json"), func(m map[string]any) { m["host"], m["checked_at"] = holeHost, holeAt })
	if err != nil {
		return err
	}
	fact, err := load(p("facts/rack-d-03"), func(m map[string]any) {
		m["rocectl_audit_doc"].(map[string]any)["generated_at"] = holeAt
	})
	if err != nil {
		return err
	}

	counts := map[string]int{}
	var prev []byte
	var prevName string
	sub := ""
	for i, h := 0, 0; i < n; h++ {
		if d := filepath.Join(out, fmt.Sprintf("d%03d", i/1000)); d != sub {
			sub = d
			if err := os.MkdirAll(sub, 0o755); err != nil {
				return err
			}
		}
		rack := h / 32
		host := fmt.Sprintf("r%04d-h%02d.example.net", rack, h%32)
		at := "2026-01-02T03:00:00Z"
		if h%50 == 7 {
			at = "2025-12-20T00:00:00Z"
		}
		write := func(name, kind string, b []byte) error {
			if i >= n {
				return nil
			}
			i++
			counts[kind]++
			if kind != "truncated" && kind != "malformed" {
				prev, prevName = b, name
			}
			return os.WriteFile(filepath.Join(sub, name), b, 0o644)
		}
		var doc []byte
		kind := "audit"
		switch {
		case factoryOnly:
			doc, kind = factory[len(factory)-1].render(host, at, ""), "audit, factory"
		case h%200 == 199:
			// Truncated: the document cut where a copy stopped.
			b := inSync.render(host, at, "")
			if err := write(host+".audit.json", "truncated", b[:len(b)*(1+h%7)/9]); err != nil {
				return err
			}
			continue
		case h%500 == 401:
			b := bytes.Replace(cable.render(host, at, "7"), []byte(`"changes": [`), []byte(`"changes": {"oops": [`), 1)
			if err := write(host+".audit.json", "malformed", b); err != nil {
				return err
			}
			continue
		case h%150 == 149 && prev != nil:
			// The previous file again, under another name.
			if err := write(strings.TrimSuffix(prevName, ".json")+".copy.json", "duplicate", prev); err != nil {
				return err
			}
			continue
		case h%25 == 3:
			if err := write(host, "fact cache", fact.render(host, at, "")); err != nil {
				return err
			}
			continue
		case rack%4 == 3:
			doc, kind = factory[rack/4%len(factory)].render(host, at, ""), "audit, factory"
		case rack%7 == 2:
			doc, kind = cable.render(host, at, []string{"7", "5", "3", "10"}[rack/7%4]), "audit, drift"
		case h%97 == 5:
			doc, kind = noMatch.render(host, at, ""), "audit, no match"
		case h%331 == 17:
			doc, kind = failed.render(host, at, ""), "audit, failed"
		default:
			doc = inSync.render(host, at, "")
		}
		if err := write(host+".audit.json", kind, doc); err != nil {
			return err
		}
		if factoryOnly {
			continue
		}
		if h%5 == 0 {
			if err := write(host+".verify.json", "verify", verify.render(host, at, "")); err != nil {
				return err
			}
		}
		if h%10 == 1 {
			if err := write(host+".peer.json", "peer", peer.render(host, at, "")); err != nil {
				return err
			}
		}
	}
	fmt.Printf("%d files in %s:", n, out)
	for _, k := range []string{"audit", "audit, drift", "audit, factory", "audit, no match", "audit, failed", "fact cache", "verify", "peer", "truncated", "malformed", "duplicate"} {
		fmt.Printf(" %s %d;", k, counts[k])
	}
	fmt.Println()
	return nil
}
