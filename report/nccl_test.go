package report

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// The corpus under testdata/nccl is what the real rocectl printed for the
// shipped snapshot hosts (testdata/hosts), whose GID tables differ: the
// cx6dx's IPv4 RoCE v2 GIDs at 5 and 3, the cx7's second port and the
// cx4lx's VFs link-local only, the cx5 RoCE LAG's at 3. nccl-env ran with
// three profiles (connectx-lossless as shipped; "gpu-legacy", the same for
// NCCL before 2.21; "gpu-select", the same with IB_GID_INDEX = "select"),
// audit with connectx-lossless on copies of the cx6dx snapshots given an
// /etc/nccl.conf the profile does not manage. Only the host names and the
// times are set here. `go test ./report -run TestNCCLCorpus -regen`
// writes it again.
func TestNCCLCorpus(t *testing.T) {
	if !*regen {
		t.Skip("run with -regen to rebuild testdata/nccl from the real rocectl")
	}
	tmp := t.TempDir()
	bin := filepath.Join(tmp, "rocectl")
	build := exec.Command("go", "build", "-o", bin, "./cmd/rocectl")
	build.Dir = repo
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build: %v\n%s", err, out)
	}
	lossless, err := filepath.Abs(filepath.Join(repo, "profiles/connectx-lossless.toml"))
	if err != nil {
		t.Fatal(err)
	}
	// The derived profiles include a copy beside them. profile_hash
	// covers the files' paths, so it changes with each run (and with the
	// checkout's path for the shipped profile); the report does not read
	// it, and a regenerated corpus differs from the committed one there
	// only.
	base, err := os.ReadFile(lossless)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(tmp, "connectx-lossless.toml"), base, 0o644); err != nil {
		t.Fatal(err)
	}
	profile := func(name, extra string) string {
		p := filepath.Join(tmp, name+".toml")
		body := "include = [\"connectx-lossless.toml\"]\nname = \"" + name + "\"\n[nccl]\n" + extra
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	legacy := profile("gpu-legacy", "generation = \"pre-2.21\"\n")
	sel := profile("gpu-select", "IB_GID_INDEX = \"select\"\n")
	out := filepath.Join("testdata", "nccl")
	os.RemoveAll(out)
	if err := os.MkdirAll(out, 0o755); err != nil {
		t.Fatal(err)
	}
	const now = "2026-01-02T03:00:00Z"
	host := func(h string) string { return filepath.Join(repo, "testdata/hosts", h) }
	doc := func(name, snap string, args ...string) {
		cmd := exec.Command(bin, append([]string{"--snapshot", snap}, append(args, "-o", "json")...)...)
		b, err := cmd.Output()
		var ee *exec.ExitError
		if err != nil && !(errors.As(err, &ee) && ee.ExitCode() <= 2) {
			t.Fatalf("rocectl %v: %v", args, err)
		}
		var m map[string]any
		if err := json.Unmarshal(b, &m); err != nil {
			t.Fatalf("rocectl %v: %v\n%s", args, err, b)
		}
		m["host"], m["generated_at"] = strings.SplitN(name, ".", 2)[0], now
		b, _ = json.MarshalIndent(m, "", "  ")
		if err := os.WriteFile(filepath.Join(out, name+".json"), append(b, '\n'), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, c := range []struct{ name, snap, profile string }{
		{"gpu-a-01", "cx6dx-ofed-lossless", lossless},
		{"gpu-a-02", "cx6dx-ofed-lossless", lossless},
		{"gpu-a-03", "cx6dx-ofed-factory", lossless},
		{"gpu-a-04", "cx7-upstream-factory", lossless},
		{"gpu-a-05", "cx4lx-sriov", lossless},
		{"gpu-a-06", "cx5-roce-lag", lossless},
		{"gpu-b-01", "cx5-roce-lag", legacy},
		{"gpu-b-02", "cx6dx-ofed-factory", legacy},
		{"gpu-b-03", "cx7-upstream-factory", legacy},
		{"gpu-c-01", "cx6dx-ofed-factory", sel},
		{"gpu-c-02", "cx5-roce-lag", sel},
	} {
		doc(c.name+".nccl-env", host(c.snap), "nccl-env", "-p", c.profile)
	}
	// audit reads an /etc/nccl.conf the profile does not manage: TOS 104
	// is DSCP 26 without ECT; TOS 66 is DSCP 16 and SL 4 priority 4,
	// where the profile's data class is DSCP 26 on priority 3.
	withConf := func(snap, conf string) string {
		dir := filepath.Join(t.TempDir(), snap)
		if b, err := exec.Command("cp", "-a", host(snap), dir).CombinedOutput(); err != nil {
			t.Fatalf("cp: %v %s", err, b)
		}
		if err := os.MkdirAll(filepath.Join(dir, "etc"), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "etc", "nccl.conf"), []byte(conf), 0o644); err != nil {
			t.Fatal(err)
		}
		return dir
	}
	doc("gpu-a-01.audit", withConf("cx6dx-ofed-lossless", "NCCL_DEBUG=WARN\nNCCL_IB_TC=104\n"), "audit", "-p", lossless)
	doc("gpu-a-02.audit", withConf("cx6dx-ofed-lossless", "NCCL_IB_TC=66\nNCCL_IB_SL=4\n"), "audit", "-p", lossless)
	// The factory host's chain problems are its ports' (trust, PFC,
	// rdma_cm's TOS), none NCCL's: not in the NCCL section.
	doc("gpu-a-03.audit", host("cx6dx-ofed-factory"), "audit", "-p", lossless)
}

func ncclOptions() Options { return Options{Now: time.Date(2026, 1, 2, 4, 0, 0, 0, time.UTC)} }

// The NCCL sections of testdata/nccl, in every format, byte for byte
// against testdata/golden/nccl.*; -update rewrites them.
func TestNCCLGolden(t *testing.T) {
	f, err := Stream(context.Background(), []string{filepath.Join("testdata", "nccl")}, ncclOptions())
	if err != nil {
		t.Fatal(err)
	}
	for _, format := range Formats {
		var buf bytes.Buffer
		if err := Render(&buf, f, format); err != nil {
			t.Fatal(err)
		}
		ext := map[string]string{"text": "txt", "markdown": "md", "html": "html", "json": "json"}[format]
		golden := filepath.Join("testdata", "golden", "nccl."+ext)
		if *update {
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

// What the golden files say, checked on its own: per profile the values
// and the hosts that differ, and the NCCL chain problems of the audits
// (gpu-a-03's port problems left out).
func TestNCCLSectionsFacts(t *testing.T) {
	f, err := Stream(context.Background(), []string{filepath.Join("testdata", "nccl")}, ncclOptions())
	if err != nil {
		t.Fatal(err)
	}
	g := f.NCCLGID
	if g == nil || g.Hosts != 11 || g.Differ != 2 || len(g.Profiles) != 3 {
		t.Fatalf("gid section: %+v", g)
	}
	type val struct {
		value, mode string
		hosts       int
		names       string
	}
	want := map[string][]val{
		"connectx-lossless": {{"-1", "dynamic", 5, ""}, {"3", "pinned", 1, "gpu-a-06"}},
		"gpu-legacy":        {{"refused", "refused", 2, ""}, {"3", "pinned", 1, "gpu-b-01"}},
		"gpu-select":        {{"select (-1)", "select", 2, ""}},
	}
	for _, p := range g.Profiles {
		var got []val
		for _, v := range p.Values {
			got = append(got, val{v.Value, v.Mode, v.Hosts, strings.Join(v.Names, " ")})
		}
		if w := want[p.Profile]; len(got) != len(w) || p.Common != w[0].value {
			t.Errorf("%s: %+v, want %+v", p.Profile, got, w)
		} else {
			for i := range w {
				if got[i] != w[i] {
					t.Errorf("%s: %+v, want %+v", p.Profile, got, w)
				}
			}
		}
	}
	c := f.NCCLChain
	if c == nil || c.Hosts != 2 || c.Problems != 3 || len(c.Listed) != 2 ||
		c.Listed[0].Host != "gpu-a-01" || c.Listed[0].First != "/etc/nccl.conf NCCL_IB_TC: TOS 104 = DSCP 26 << 2 | ECN 00: not ECN-capable; DCQCN needs ECT(0) → 106" ||
		c.Listed[1].Host != "gpu-a-02" || c.Listed[1].Problems != 2 {
		t.Fatalf("chain section: %+v", c)
	}
}

// An nccl-env document is told by its shape (variables and complete; it
// has no "command"); one written before nccl-env named its host is named
// by its file, as the other kinds are. The newest per host is read.
func TestNCCLEnvDocuments(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("testdata", "nccl", "gpu-a-06.nccl-env.json"))
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	delete(m, "host")
	delete(m, "generated_at")
	old, _ := json.Marshal(m)
	docs, err := Parse("/results/rack-z-09.nccl-env.json", old)
	if err != nil || len(docs) != 1 {
		t.Fatalf("%v %+v", err, docs)
	}
	if d := docs[0]; d.Kind != KindNCCL || d.Host != "rack-z-09" || d.Profile != "connectx-lossless" || d.GIDIndex != "3" || d.GIDMode != "pinned" {
		t.Fatalf("%+v", d)
	}
	// gpu-a-06 pinned 3 on the 2nd, a later document says -1: the later
	// one is read, and the profile agrees.
	newer := docs[0]
	newer.Host, newer.GIDIndex, newer.GIDMode = "gpu-a-06", "-1", "dynamic"
	newer.GeneratedAt = time.Date(2026, 1, 3, 0, 0, 0, 0, time.UTC)
	all, _, err := Load(context.Background(), []string{filepath.Join("testdata", "nccl")})
	if err != nil {
		t.Fatal(err)
	}
	f := Build(append(all, newer), nil, ncclOptions())
	if p := f.NCCLGID.Profiles[0]; p.Profile != "connectx-lossless" || len(p.Values) != 1 || p.Values[0].Hosts != 6 || f.NCCLGID.Differ != 1 {
		t.Fatalf("%+v %+v", f.NCCLGID, p)
	}
	// A document that sets no index (no matched port) is in no group.
	docs, err = Parse("x.json", []byte(`{"schema_version": 1, "host": "bnxt", "profile": "connectx-lossless", "complete": true, "variables": {}, "order": [], "errors": [], "diagnostics": [], "message": "No RoCE port matches"}`))
	if err != nil || docs[0].Kind != KindNCCL || docs[0].GIDIndex != "" {
		t.Fatalf("%v %+v", err, docs)
	}
	if f := Build(docs, nil, ncclOptions()); f.NCCLGID != nil {
		t.Fatalf("%+v", f.NCCLGID)
	}
}
