package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rocectl/rocectl/apply"
	"github.com/rocectl/rocectl/internal/testkit/fixturehost"
	"github.com/rocectl/rocectl/nic"
	"github.com/rocectl/rocectl/nic/dcb"
	"github.com/rocectl/rocectl/nic/nictest"
	"github.com/rocectl/rocectl/nic/snapshot"
	"github.com/rocectl/rocectl/policy"
	"github.com/rocectl/rocectl/statedir"
)

var update = flag.Bool("update", false, "rewrite golden files")

func repo(p string) string { return filepath.Join(fixturehost.RepoRoot(), p) }

// run executes rocectl in-process; sim, when non-nil, stands in for the
// live kernel.
func run(t *testing.T, sim nic.Kernel, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errb bytes.Buffer
	env := NewEnv(&out, &errb)
	if sim != nil {
		env.NewKernel = func(*slog.Logger) (nic.Kernel, func() error, error) { return sim, func() error { return nil }, nil }
	}
	cmd := NewRootCommand(env)
	cmd.SetArgs(args)
	err := cmd.ExecuteContext(context.Background())
	if msg := ErrorMessage(err); msg != "" {
		errb.WriteString(msg + "\n")
	}
	return ExitCode(err), out.String(), errb.String()
}

func golden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run with -update to create it)", err)
	}
	if string(want) != got {
		t.Errorf("%s differs from the golden file (run with -update after checking):\n%s", name, got)
	}
}

func TestAuditFactoryHostShowsDriftExit2(t *testing.T) {
	code, out, errs := run(t, nil, "audit", "-p", repo("profiles/connectx-lossless.toml"), "--snapshot", repo("testdata/hosts/cx6dx-ofed-factory"))
	if code != ExitDrift {
		t.Fatalf("exit %d, want 2\n%s%s", code, out, errs)
	}
	golden(t, "audit-cx6dx-factory.txt", out)
	for _, want := range []string{
		"~ ens1f0np0 (mlx5_0 port 1, mlx5_core)",
		"~ ens1f0np0.link.mtu = 1500 -> 9000",
		"~ ens1f0np0.qos.pfc = [] -> [3]",
		"~ mlx5_0.ecn.np.enable.0 = on -> off",
		"+ mlx5_0.roce.traffic_class = 106",
		"Plan: 46 to change",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q", want)
		}
	}
}

func TestAuditConfiguredHostInSyncExit0(t *testing.T) {
	code, out, errs := run(t, nil, "audit", "-p", repo("profiles/connectx-lossless.toml"), "--snapshot", repo("testdata/hosts/cx6dx-ofed-lossless"))
	if code != ExitOK || !strings.Contains(out, "No changes. Host matches profile.") {
		t.Fatalf("exit %d\n%s%s", code, out, errs)
	}
}

func TestAuditJSONIsTheAnsibleContract(t *testing.T) {
	code, out, _ := run(t, nil, "audit", "-o", "json", "-p", repo("profiles/connectx-lossless.toml"), "--snapshot", repo("testdata/hosts/cx7-upstream-factory"))
	if code != ExitDrift {
		t.Fatalf("exit %d", code)
	}
	var doc map[string]any
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"changed", "changes", "unsupported", "errors", "rolled_back"} {
		if _, ok := doc[k]; !ok {
			t.Errorf("JSON lacks %q", k)
		}
	}
	if doc["changed"] != true || len(doc["changes"].([]any)) != 16 || len(doc["unsupported"].([]any)) != 34 {
		t.Errorf("changed=%v changes=%d unsupported=%d", doc["changed"], len(doc["changes"].([]any)), len(doc["unsupported"].([]any)))
	}
}

func TestAuditHostWithoutRoCEIsNotAnError(t *testing.T) {
	empty := t.TempDir()
	if err := os.MkdirAll(filepath.Join(empty, "sys/class/net"), 0o755); err != nil {
		t.Fatal(err)
	}
	meta := snapshot.Meta{CapturedAt: time.Now().UTC().Format(time.RFC3339), Source: "test"}
	dir := filepath.Join(t.TempDir(), "snap")
	if err := snapshot.Write(dir, meta, &snapshot.KernelState{}, nic.NewFS(empty, true), nil); err != nil {
		t.Fatal(err)
	}
	code, out, _ := run(t, nil, "audit", "-p", repo("profiles/connectx-lossless.toml"), "--snapshot", dir)
	if code != ExitOK || !strings.Contains(out, "No RoCE devices found") {
		t.Fatalf("exit %d: %s", code, out)
	}
}

func TestValidateShippedProfilesAndABadOne(t *testing.T) {
	files, _ := filepath.Glob(repo("profiles/*.toml"))
	code, out, errs := run(t, nil, append([]string{"validate"}, files...)...)
	if code != ExitOK || strings.Count(out, ": ok") != len(files) {
		t.Fatalf("exit %d\n%s%s", code, out, errs)
	}
	bad := filepath.Join(t.TempDir(), "bad.toml")
	os.WriteFile(bad, []byte("[qos]\npfc_priorities = [3, 9]\n[ecn]\ncnp_priority = 3\n"), 0o600)
	code, _, errs = run(t, nil, "validate", bad)
	if code != ExitError || !strings.Contains(errs, "bad.toml:2:22: qos.pfc_priorities[1]: 9 is out of range (allowed: 0..7)") {
		t.Fatalf("exit %d\n%s", code, errs)
	}
}

// The capture round trip: capture a fixture host, audit the capture, get the
// same answer as auditing the host itself.
func TestCaptureRoundTrip(t *testing.T) {
	for _, host := range []string{"cx6dx-ofed-factory", "cx7-upstream-factory", "bnxt-re-factory", "ice-e810-factory"} {
		s, err := snapshot.Open(fixturehost.Dir(host))
		if err != nil {
			t.Fatal(err)
		}
		for _, form := range []string{"packed", "--tree"} {
			out := filepath.Join(t.TempDir(), "capture")
			args := []string{"--root", fixturehost.Dir(host), "capture", "-o", out}
			if form == "--tree" {
				args = append(args, form)
			}
			code, stdout, errs := run(t, s.Kernel(), args...)
			if code != 0 {
				t.Fatalf("%s: capture %s exit %d: %s%s", host, form, code, stdout, errs)
			}
			// Packed by default: one file of the host's files, no tree.
			_, packErr := os.Stat(filepath.Join(out, snapshot.PackFile))
			_, treeErr := os.Stat(filepath.Join(out, "sys"))
			if (form == "packed") != (packErr == nil) || (form == "packed") == (treeErr == nil) {
				t.Errorf("%s: capture %s: files.pack %v, sys/ %v", host, form, packErr, treeErr)
			}
			auditsAlike(t, host, form, out)
		}
	}
}

// auditsAlike audits the fixture host and its capture out with each
// profile and compares the documents.
func auditsAlike(t *testing.T, host, form, out string) {
	t.Helper()
	for _, prof := range []string{"connectx-lossless.toml", "fat-tree-32gpu-100g.toml"} {
		_, a, _ := run(t, nil, "audit", "-o", "json", "-p", repo("profiles/"+prof), "--snapshot", fixturehost.Dir(host))
		_, b, _ := run(t, nil, "audit", "-o", "json", "-p", repo("profiles/"+prof), "--snapshot", out)
		// The documents name their host and time: a capture of a
		// fixture root records this machine's hostname.
		a, b = withoutHostAndTime(t, a), withoutHostAndTime(t, b)
		if a != b {
			t.Errorf("%s/%s (%s): audit of the capture differs from audit of the host\nhost:    %s\ncapture: %s", host, prof, form, a, b)
		}
	}
}

// apply on a writable copy of a fixture host with a simulated kernel, then
// audit: in sync. No soak, so the test stays fast.
func TestApplyThenAuditInSync(t *testing.T) {
	root, sim := fixturehost.Copy(t, "cx6dx-ofed-factory")
	state := t.TempDir()
	code, out, errs := run(t, sim, "--root", root, "--state-dir", state, "apply", "--soak", "0", "-p", repo("profiles/connectx-lossless.toml"))
	if code != ExitOK || !strings.Contains(out, "Applied 46 change(s)") {
		t.Fatalf("apply exit %d\n%s%s", code, out, errs)
	}
	code, out, _ = run(t, sim, "--root", root, "--state-dir", state, "audit", "-p", repo("profiles/connectx-lossless.toml"))
	if code != ExitOK {
		t.Fatalf("audit after apply: exit %d\n%s", code, out)
	}
	// A second apply has nothing to do.
	code, out, _ = run(t, sim, "--root", root, "--state-dir", state, "apply", "--soak", "0", "-p", repo("profiles/connectx-lossless.toml"))
	if code != ExitOK || !strings.Contains(out, "No changes") {
		t.Fatalf("second apply: exit %d\n%s", code, out)
	}
}

// Apply, rollback, apply again... with --keep-journals 1: the state dir
// keeps the newest finished journal (here the last committed one) and
// passes the flag's limit to nothing else; 0 is refused before any work.
func TestKeepJournalsPrunesFinishedApplies(t *testing.T) {
	root, sim := fixturehost.Copy(t, "cx6dx-ofed-factory")
	state := t.TempDir()
	args := func(a ...string) []string {
		return append([]string{"--root", root, "--state-dir", state, "--keep-journals", "1"}, a...)
	}
	prof := repo("profiles/connectx-lossless.toml")
	for i := range 3 {
		if code, out, errs := run(t, sim, args("apply", "--soak", "0", "-p", prof)...); code != ExitOK {
			t.Fatalf("apply %d: exit %d\n%s%s", i, code, out, errs)
		}
		if i < 2 {
			if code, out, errs := run(t, sim, args("rollback")...); code != ExitOK {
				t.Fatalf("rollback %d: exit %d\n%s%s", i, code, out, errs)
			}
		}
	}
	js, err := apply.Store{Store: statedir.Store{Dir: state}}.List()
	if err != nil || len(js) != 1 || js[0].State != apply.StateCommitted {
		t.Fatalf("journals left: %d (%v), want the last committed one only", len(js), err)
	}
	if ents, _ := os.ReadDir(filepath.Join(state, "journal", "done")); len(ents) != 1 {
		t.Errorf("journal/done holds %d files, want 1", len(ents))
	}
	code, _, errs := run(t, sim, "--root", root, "--state-dir", state, "--keep-journals", "0", "audit", "-p", prof)
	if code != ExitError || !strings.Contains(errs, "--keep-journals must be at least 1") {
		t.Errorf("--keep-journals 0: exit %d, %q", code, errs)
	}
}

// A pause storm during the soak rolls the change back: exit 3, the host as it was.
func TestApplyStormRollsBackExit3(t *testing.T) {
	root, sim := fixturehost.Copy(t, "cx6dx-ofed-factory")
	before := sim.Config()
	prof := filepath.Join(t.TempDir(), "p.toml")
	os.WriteFile(prof, []byte(`include = ["`+repo("profiles/connectx-lossless.toml")+`"]
[guard]
soak = "5s"
poll = "100ms"
detection_time = "200ms"
`), 0o600)
	code, out, errs := run(t, &stormingKernel{Sim: sim}, "--root", root, "--state-dir", t.TempDir(), "apply", "-p", prof)
	if code != ExitRolledBack {
		t.Fatalf("exit %d, want 3\n%s%s", code, out, errs)
	}
	if !strings.Contains(errs, "pause storm on ens1f0np0 priority 3 (rx)") || !strings.Contains(errs, "host restored") {
		t.Errorf("stderr should name the storm and the restore:\n%s", errs)
	}
	if got := sim.Config(); got != before {
		t.Errorf("kernel configuration not restored after the storm")
	}
}

// stormingKernel is a host whose peer pauses priority 3 of ens1f0np0
// without end once PFC is on for it (its counters exist): from then the
// pause duration it reports runs at 1.25 × wall-clock time, computed when
// the guard reads it, so every poll sees a share above the 99 % threshold
// and below verify.MaxPlausibleOccupancy (1.5: more is a bad sample, not
// a storm) with up to a fifth of the window of scheduling lag either way. (A goroutine adding 20 ms every 20 ms of
// sleep fell below it on a busy machine, 2 runs in 10, and outlived the
// test.)
type stormingKernel struct {
	*nictest.Sim
	mu    sync.Mutex
	onset time.Time
}

func (k *stormingKernel) Stats(name string) (map[string]uint64, error) {
	st, err := k.Sim.Stats(name)
	if err != nil || name != "ens1f0np0" {
		return st, err
	}
	base, ok := st["rx_prio3_pause_duration"]
	if !ok {
		return st, nil
	}
	k.mu.Lock()
	if k.onset.IsZero() {
		k.onset = time.Now()
	}
	d := time.Since(k.onset)
	k.mu.Unlock()
	st["rx_prio3_pause_duration"] = base + uint64(1.25*float64(d.Microseconds()))
	return st, nil
}

// resettingKernel is a driver that silently puts the MTU back when PFC
// changes (as a firmware reset of the port would): every step reads back
// fine on its own, but the whole host does not hold the profile.
type resettingKernel struct {
	*nictest.Sim
}

func (k resettingKernel) SetPFC(ifname string, p dcb.PFC) error {
	if err := k.Sim.SetPFC(ifname, p); err != nil {
		return err
	}
	return k.Sim.SetMTU(ifname, 1500)
}

func TestApplyVerificationFailureRollsBackExit3(t *testing.T) {
	root, sim := fixturehost.Copy(t, "cx6dx-ofed-factory")
	before := sim.Config()
	code, out, errs := run(t, resettingKernel{sim}, "--root", root, "--state-dir", t.TempDir(), "apply", "--soak", "0", "-p", repo("profiles/connectx-lossless.toml"))
	if code != ExitRolledBack {
		t.Fatalf("exit %d, want 3\n%s%s", code, out, errs)
	}
	if !strings.Contains(errs, "verify: ens1f0np0.link.mtu: want 9000, have 1500") || !strings.Contains(errs, "host restored") {
		t.Errorf("stderr:\n%s", errs)
	}
	if sim.Config() != before {
		t.Error("host not restored")
	}
	// --no-verify skips that check (the operator's call): applied, exit 0.
	code, _, errs = run(t, resettingKernel{sim}, "--root", root, "--state-dir", t.TempDir(), "apply", "--soak", "0", "--no-verify", "-p", repo("profiles/connectx-lossless.toml"))
	if code != ExitOK {
		t.Fatalf("--no-verify: exit %d\n%s", code, errs)
	}
}

// withoutHostAndTime drops the host and generated_at fields of an audit
// document.
func withoutHostAndTime(t *testing.T, doc string) string {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal([]byte(doc), &m); err != nil {
		t.Fatalf("%v: %s", err, doc)
	}
	delete(m, "host")
	delete(m, "generated_at")
	b, _ := json.MarshalIndent(m, "", "  ")
	return string(b)
}

// A capture keeps the NCCL config files at their paths: auditing the capture
// of a host that an apply with [nccl] write configured reports no NCCL
// drift, and $NCCL_CONF_FILE is taken too.
func TestCaptureKeepsNCCLConfFiles(t *testing.T) {
	root, sim := fixturehost.Copy(t, "cx6dx-ofed-factory")
	prof := repo("profiles/fat-tree-32gpu-100g.toml")
	if err := os.MkdirAll(filepath.Join(root, "etc"), 0o755); err != nil {
		t.Fatal(err)
	}
	code, out, errs := run(t, sim, "--root", root, "--state-dir", t.TempDir(), "apply", "--soak", "0", "-p", prof)
	if code != ExitOK {
		t.Fatalf("apply exit %d\n%s%s", code, out, errs)
	}
	site := []byte("NCCL_DEBUG=WARN\n")
	if err := os.MkdirAll(filepath.Join(root, "opt/nccl"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "opt/nccl/site.conf"), site, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Setenv("NCCL_CONF_FILE", "/opt/nccl/site.conf")
	snap := filepath.Join(t.TempDir(), "capture")
	if code, out, errs := run(t, sim, "--root", root, "capture", "-o", snap); code != ExitOK {
		t.Fatalf("capture exit %d\n%s%s", code, out, errs)
	}
	s, err := snapshot.Open(snap)
	if err != nil {
		t.Fatal(err)
	}
	for p, want := range map[string][]byte{"etc/nccl.conf": nil, "opt/nccl/site.conf": site} {
		got, err := s.FS().ReadFile("/" + p)
		if err != nil {
			t.Fatal(err)
		}
		if want == nil {
			want, _ = os.ReadFile(filepath.Join(root, p))
		}
		if !bytes.Equal(got, want) || len(got) == 0 {
			t.Errorf("%s in the capture: %q, want %q", p, got, want)
		}
	}
	code, out, errs = run(t, nil, "audit", "-p", prof, "--snapshot", snap)
	if code != ExitOK || strings.Contains(out, "nccl") {
		t.Fatalf("audit of the capture: exit %d\n%s%s", code, out, errs)
	}
}

// capture copies no file through a user's link: a ~/.nccl.conf that is a
// symlink (to a root-only file) or a second hard link of one is listed as
// unreadable (ELOOP, EMLINK), not copied into the world-readable snapshot,
// and the audit of the capture says the file is unreadable, as the audit
// of the host does. Before, capture followed the link and copied the
// secret.
func TestCaptureCopiesNothingThroughALink(t *testing.T) {
	for _, c := range []struct{ name, errno string }{{"symlink", "ELOOP"}, {"hard link", "EMLINK"}} {
		t.Run(c.name, func(t *testing.T) {
			root, sim := fixturehost.Copy(t, "cx6dx-ofed-factory")
			home := filepath.Join(root, "home", "alice")
			if err := os.MkdirAll(home, 0o755); err != nil {
				t.Fatal(err)
			}
			secret := filepath.Join(root, "secret")
			if err := os.WriteFile(secret, []byte("root:$6$hash\n"), 0o600); err != nil {
				t.Fatal(err)
			}
			link := filepath.Join(home, ".nccl.conf")
			var err error
			if c.errno == "ELOOP" {
				err = os.Symlink("/secret", link)
			} else {
				err = os.Link(secret, link)
			}
			if err != nil {
				t.Fatal(err)
			}
			t.Setenv("NCCL_CONF_FILE", "/home/alice/.nccl.conf")
			for _, form := range [][]string{nil, {"--tree"}} {
				snap := filepath.Join(t.TempDir(), "capture")
				args := append([]string{"--root", root, "capture", "-o", snap}, form...)
				if code, out, errs := run(t, sim, args...); code != ExitOK {
					t.Fatalf("capture %v exit %d\n%s%s", form, code, out, errs)
				}
				if _, err := os.Lstat(filepath.Join(snap, "home/alice/.nccl.conf")); !errors.Is(err, os.ErrNotExist) {
					t.Errorf("capture %v: the tree holds home/alice/.nccl.conf (%v): it copied through the %s", form, err, c.name)
				}
				s, err := snapshot.Open(snap)
				if err != nil {
					t.Fatal(err)
				}
				// The snapshot's FS answers with the recorded errno,
				// never with content: the pack holds no such file.
				if got, err := s.FS().ReadFile("/home/alice/.nccl.conf"); err == nil || strings.Contains(err.Error(), "root:") || len(got) > 0 {
					t.Errorf("capture %v: reading home/alice/.nccl.conf gave %q, %v: it copied through the %s", form, got, err, c.name)
				}
				if !slices.Contains(s.Meta.Unreadable, "/home/alice/.nccl.conf: "+c.errno) {
					t.Errorf("capture %v: unreadable %q lacks /home/alice/.nccl.conf: %s", form, s.Meta.Unreadable, c.errno)
				}
			}
		})
	}
}

// An audit that could compare only some settings says so in its last
// line: not "Host matches profile" (issue 34, item 13). The snapshot is
// the configured host's with its DCB, pause and storm-prevention state
// not captured, as an import that lacked them would be.
func TestAuditHeadlineSaysWhatWasCompared(t *testing.T) {
	snap := filepath.Join(t.TempDir(), "snap")
	if err := fixturehost.CopyTree(repo("testdata/hosts/cx6dx-ofed-lossless"), snap); err != nil {
		t.Fatal(err)
	}
	kj := filepath.Join(snap, "kernel.json")
	data, err := os.ReadFile(kj)
	if err != nil {
		t.Fatal(err)
	}
	var ks map[string]json.RawMessage
	var links map[string]map[string]any
	if err := json.Unmarshal(data, &ks); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(ks["links"], &links); err != nil {
		t.Fatal(err)
	}
	for _, l := range links {
		delete(l, "dcb")
		delete(l, "pause")
		delete(l, "pfc_prevention_tout")
		l["not_captured"] = []string{"dcb", "pause", "tunable"}
	}
	if ks["links"], err = json.Marshal(links); err != nil {
		t.Fatal(err)
	}
	if data, err = json.Marshal(ks); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(kj, data, 0o644); err != nil {
		t.Fatal(err)
	}
	code, out, errs := run(t, nil, "audit", "-p", repo("profiles/connectx-lossless.toml"), "--snapshot", snap)
	if code != ExitOK {
		t.Fatalf("exit %d\n%s%s", code, out, errs)
	}
	last := strings.TrimSpace(out[strings.LastIndex(strings.TrimSpace(out), "\n")+1:])
	if strings.Contains(last, "matches profile") || !strings.HasPrefix(last, "No drift in the ") || !strings.Contains(last, " unknown (not captured or not readable") {
		t.Errorf("last line %q, want how many settings were compared and how many unknown\n%s", last, out)
	}
}

func TestNoChangesHeadline(t *testing.T) {
	unknown := []policy.Unknown{{Key: "a"}, {Key: "b"}}
	for _, c := range []struct {
		p    policy.Plan
		want string
	}{
		{policy.Plan{InSync: 29}, "No changes. Host matches profile."},
		{policy.Plan{InSync: 3, Unknown: unknown}, "No drift in the 3 setting(s) compared; 2 unknown (not captured or not readable), listed above with why."},
		{policy.Plan{Unknown: unknown}, "Nothing compared: the profile's 2 setting(s) are unknown (not captured or not readable), listed above with why. No drift found, none ruled out."},
	} {
		if got := noChangesHeadline(&c.p); got != c.want {
			t.Errorf("got  %q\nwant %q", got, c.want)
		}
	}
}
