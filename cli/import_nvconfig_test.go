package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rocectl/rocectl/internal/testkit/fakemst"
	"github.com/rocectl/rocectl/internal/testkit/fixturehost"
	"github.com/rocectl/rocectl/nic"
	"github.com/rocectl/rocectl/nic/nvconfig"
	"github.com/rocectl/rocectl/nic/snapshot"
)

// Real mstconfig queries given to rocectl import become the snapshot's
// firmware facts, by the PCI address their "Device:" line names (a short
// address completed); their values audit as the firmware holds them: in
// sync where next boot and current agree with the wanted value, drift
// where next boot does not. A device without a query is not captured.
func TestImportMstconfigQueries(t *testing.T) {
	out := filepath.Join(t.TempDir(), "snap")
	code, stdout, stderr := run(t, nil, "import", "-o", out,
		repo("testdata/nvconfig/cx5-mstconfig-e-2019.txt"), repo("testdata/nvconfig/cx6lx-mstconfig-e-2025.txt"))
	if code != ExitOK {
		t.Fatalf("exit %d\n%s%s", code, stdout, stderr)
	}
	for _, want := range []string{
		"0000:02:00.1: mstconfig q: 3 NVConfig setting(s) (Default, Current, Next Boot)",
		"0108:00:00.0: mstconfig q: 7 NVConfig setting(s) (Default, Current, Next Boot)",
		"2 device(s)' firmware NVConfig",
	} {
		if !strings.Contains(stdout, want) {
			t.Errorf("output lacks %q:\n%s", want, stdout)
		}
	}
	s, err := snapshot.Open(out)
	if err != nil {
		t.Fatal(err)
	}
	q, err := s.Firmware().Query(context.Background(), "0000:02:00.1")
	if err != nil {
		t.Fatal(err)
	}
	v := nvconfig.Audit(q, nil, []nvconfig.Want{{Name: "MEMIC_SIZE_LIMIT", Value: 1}, {Name: "MEMIC_SIZE_LIMIT", Value: 0}, {Name: "ROCE_CC_PRIO_MASK_P1", Value: 8}})
	if v[0].State != nvconfig.InSync || v[1].State != nvconfig.Drift || v[2].State != nvconfig.Unknown {
		t.Errorf("verdicts %s, %s, %s", v[0].State, v[1].State, v[2].State)
	}
	q2, err := s.Firmware().Query(context.Background(), "0108:00:00.0")
	if err != nil {
		t.Fatal(err)
	}
	if c, err := q2.Get("CRYPTO_POLICY"); err != nil || c.Next.Num != 1 || c.Current.Num != 1 {
		t.Errorf("CRYPTO_POLICY %+v %v", c, err)
	}
	if _, err := s.Firmware().Query(context.Background(), "0000:3b:00.0"); !errors.Is(err, nic.ErrNotCaptured) {
		t.Errorf("a device without a query: %v", err)
	}
	if err := s.Firmware().Set(context.Background(), "0000:02:00.1", []nvconfig.Param{{Name: "X", Value: 1}}); !errors.Is(err, nic.ErrReadOnly) {
		t.Errorf("set on a snapshot: %v", err)
	}
	// A dump without its header (the rows of a query) is not a query:
	// nothing usable, nothing written.
	out2 := filepath.Join(t.TempDir(), "snap")
	if code, _, _ := run(t, nil, "import", "-o", out2, repo("testdata/nvconfig/cx5-mstconfig-no-e-rows.txt")); code != ExitError {
		t.Errorf("rows without a header: exit %d", code)
	}
	if _, err := os.Stat(out2); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a snapshot was written from nothing usable")
	}
}

// fakeQuery is what the fake mstconfig prints for `-e -d pci q` over st:
// mlxcfg_ui.cpp's formats.
func fakeQuery(t *testing.T, st *fakemst.State, pci string) string {
	t.Helper()
	f := fakemst.New(t, st)
	r := f.Reader()
	cmd := exec.Command(r.Path, nvconfig.Argv(r.Path, pci)[1:]...)
	cmd.Env = append(append([]string(nil), nvconfig.Env...), r.ExtraEnv...)
	b, err := cmd.Output()
	if err != nil {
		t.Fatalf("fake query: %v\n%s", err, b)
	}
	return string(b)
}

// withFirmware copies a fixture host's snapshot and gives it the firmware
// queries of st's devices.
func withFirmware(t *testing.T, fixture string, st *fakemst.State, pcis ...string) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), fixture)
	if err := os.CopyFS(dir, os.DirFS(fixturehost.Dir(fixture))); err != nil {
		t.Fatal(err)
	}
	kpath := filepath.Join(dir, snapshot.KernelFile)
	b, err := os.ReadFile(kpath)
	if err != nil {
		t.Fatal(err)
	}
	var k map[string]any
	if err := json.Unmarshal(b, &k); err != nil {
		t.Fatal(err)
	}
	fw := map[string]any{}
	for _, pci := range pcis {
		fw[pci] = fakeQuery(t, st, pci)
	}
	k["firmware"] = fw
	if b, err = json.Marshal(k); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(kpath, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

const fwAuditProfile = `name = "fw"
[match]
drivers = ["mlx5_core"]
[firmware]
cc_priorities = [3]
cnp_dscp = 48
cnp_priority = 6
`

// audit keeps drift and pending apart: port 1's CC mask is written for
// the next boot (pending), its CNP priority is not (drift, exit 2); with
// the drift gone, only pending remains and audit exits 0, the pending
// setting listed with the mstfwreset command that makes it take effect.
func TestAuditFirmwarePendingIsNotDrift(t *testing.T) {
	prof := filepath.Join(t.TempDir(), "fw.toml")
	if err := os.WriteFile(prof, []byte(fwAuditProfile), 0o600); err != nil {
		t.Fatal(err)
	}
	p := func(name string, def, cur, next uint64) *fakemst.Param {
		return &fakemst.Param{Name: name, Default: def, Current: cur, Next: next}
	}
	st := func(prio uint64) *fakemst.State {
		return &fakemst.State{Devices: map[string]*fakemst.Device{"0000:3b:00.0": {Type: "ConnectX6DX", Params: []*fakemst.Param{
			p("ROCE_CC_PRIO_MASK_P1", 255, 255, 8), p("CNP_DSCP_P1", 48, 48, 48), p("CNP_802P_PRIO_P1", 6, 6, prio),
			p("ROCE_CC_PRIO_MASK_P2", 255, 8, 8), p("CNP_DSCP_P2", 48, 48, 48), p("CNP_802P_PRIO_P2", 6, 6, 6),
		}}}, Alias: map[string]string{"0000:3b:00.1": "0000:3b:00.0"}}
	}
	snap := withFirmware(t, "cx6dx-ofed-factory", st(5), "0000:3b:00.0", "0000:3b:00.1")
	code, out, errs := run(t, nil, "--snapshot", snap, "audit", "-p", prof)
	if code != ExitDrift {
		t.Fatalf("exit %d, want 2\n%s%s", code, out, errs)
	}
	golden(t, "audit-firmware-drift.txt", out)
	for _, want := range []string{
		"~ ens1f0np0.firmware.cnp_priority = 5 -> 6",
		"> ens1f0np0.firmware.cc_priorities = [0,1,2,3,4,5,6,7] -> [3]: pending (takes effect at the next firmware reset (`mstfwreset -d 0000:3b:00.0 reset`) or reboot)",
		"1 pending (firmware, next reset)",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q", want)
		}
	}
	code, js, _ := run(t, nil, "--snapshot", snap, "audit", "-o", "json", "-p", prof)
	doc := validDoc(t, compileSchema(t, "report"), js)
	if code != ExitDrift || len(doc["pending"].([]any)) != 1 || len(doc["changes"].([]any)) != 1 || doc["in_sync"].(float64) != 4 {
		t.Errorf("json: exit %d, %v pending, %v changes, %v in sync", code, doc["pending"], doc["changes"], doc["in_sync"])
	}

	snap = withFirmware(t, "cx6dx-ofed-factory", st(6), "0000:3b:00.0", "0000:3b:00.1")
	code, out, errs = run(t, nil, "--snapshot", snap, "audit", "-p", prof)
	if code != ExitOK {
		t.Fatalf("pending only: exit %d, want 0\n%s%s", code, out, errs)
	}
	golden(t, "audit-firmware-pending.txt", out)
	if !strings.Contains(out, "No changes to write") || !strings.Contains(out, "1 firmware setting(s) pending") {
		t.Errorf("pending only:\n%s", out)
	}
	// Only one function's query captured: the other port's settings are
	// unknown, not unsupported and not drift.
	snap = withFirmware(t, "cx6dx-ofed-factory", st(6), "0000:3b:00.0")
	code, out, _ = run(t, nil, "--snapshot", snap, "audit", "-p", prof)
	if code != ExitOK || !strings.Contains(out, "? ens1f1np1.firmware.cnp_dscp = unknown (mstconfig query 0000:3b:00.1: not in the snapshot") {
		t.Errorf("one query: exit %d\n%s", code, out)
	}
}

// runFW is run with the fake mstconfig as the host's firmware.
func runFW(t *testing.T, sim nic.Kernel, fw *fakemst.Fake, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errb bytes.Buffer
	env := NewEnv(&out, &errb)
	env.NewKernel = func(*slog.Logger) (nic.Kernel, func() error, error) { return sim, func() error { return nil }, nil }
	env.Firmware = fw.Reader()
	cmd := NewRootCommand(env)
	cmd.SetArgs(args)
	err := cmd.ExecuteContext(context.Background())
	if msg := ErrorMessage(err); msg != "" {
		errb.WriteString(msg + "\n")
	}
	return ExitCode(err), out.String(), errb.String()
}

// rocectl apply writes [firmware] for the next boot and says so per
// setting, with the command that makes it take effect; JSON lists them in
// pending[]; the next audit finds them pending, not drift (exit 0); and
// rollback puts the next-boot values back.
func TestApplyFirmwareSaysPending(t *testing.T) {
	root, sim := fixturehost.Copy(t, "cx6dx-ofed-factory")
	prof := filepath.Join(t.TempDir(), "fw.toml")
	if err := os.WriteFile(prof, []byte(fwAuditProfile), 0o600); err != nil {
		t.Fatal(err)
	}
	p := func(name string, v uint64) *fakemst.Param {
		return &fakemst.Param{Name: name, Default: v, Current: v, Next: v}
	}
	fw := fakemst.New(t, &fakemst.State{Devices: map[string]*fakemst.Device{"0000:3b:00.0": {Type: "ConnectX6DX", Params: []*fakemst.Param{
		p("ROCE_CC_PRIO_MASK_P1", 255), p("CNP_DSCP_P1", 48), p("CNP_802P_PRIO_P1", 6),
		p("ROCE_CC_PRIO_MASK_P2", 255), p("CNP_DSCP_P2", 48), p("CNP_802P_PRIO_P2", 6),
	}}}, Alias: map[string]string{"0000:3b:00.1": "0000:3b:00.0"}})
	state := t.TempDir()
	code, out, errs := runFW(t, sim, fw, "--root", root, "--state-dir", state, "apply", "--soak", "0", "-p", prof)
	if code != ExitOK {
		t.Fatalf("apply: exit %d\n%s%s", code, out, errs)
	}
	for _, want := range []string{
		"pending: ens1f0np0.firmware.cc_priorities = [3]: takes effect at the next firmware reset (`mstfwreset -d 0000:3b:00.0 reset`) or reboot",
		"pending: ens1f1np1.firmware.cc_priorities = [3]: takes effect at the next firmware reset (`mstfwreset -d 0000:3b:00.1 reset`) or reboot",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("apply output lacks %q:\n%s", want, out)
		}
	}
	code, js, _ := runFW(t, sim, fw, "--root", root, "--state-dir", state, "audit", "-o", "json", "-p", prof)
	doc := validDoc(t, compileSchema(t, "report"), js)
	if code != ExitOK || len(doc["pending"].([]any)) != 2 || doc["changed"] != false {
		t.Errorf("audit after apply: exit %d, pending %v, changed %v", code, doc["pending"], doc["changed"])
	}
	code, out, errs = runFW(t, sim, fw, "--root", root, "--state-dir", state, "rollback")
	if code != ExitOK {
		t.Fatalf("rollback: exit %d\n%s%s", code, out, errs)
	}
	if got := fw.Load().Get("0000:3b:00.0", "ROCE_CC_PRIO_MASK_P2").Next; got != 255 {
		t.Errorf("after rollback ROCE_CC_PRIO_MASK_P2 next %d, want 255", got)
	}
}

// rocectl capture keeps each ConnectX PCI function's NVConfig query as
// mstconfig printed it, so that auditing the capture against [firmware]
// reads the firmware the host had: here port 1's CC mask is set for the
// next boot only (pending), port 2's not at all (drift). A device the
// tool cannot query is left not captured, and the capture still succeeds.
func TestCaptureKeepsFirmwareQueries(t *testing.T) {
	root, sim := fixturehost.Copy(t, "cx6dx-ofed-factory")
	prof := filepath.Join(t.TempDir(), "fw.toml")
	if err := os.WriteFile(prof, []byte(fwAuditProfile), 0o600); err != nil {
		t.Fatal(err)
	}
	p := func(name string, cur, next uint64) *fakemst.Param {
		return &fakemst.Param{Name: name, Default: 255, Current: cur, Next: next}
	}
	fw := fakemst.New(t, &fakemst.State{Devices: map[string]*fakemst.Device{"0000:3b:00.0": {Type: "ConnectX6DX", Params: []*fakemst.Param{
		p("ROCE_CC_PRIO_MASK_P1", 255, 8), p("CNP_DSCP_P1", 48, 48), p("CNP_802P_PRIO_P1", 6, 6),
		p("ROCE_CC_PRIO_MASK_P2", 255, 255), p("CNP_DSCP_P2", 48, 48), p("CNP_802P_PRIO_P2", 6, 6),
	}}}, Alias: map[string]string{"0000:3b:00.1": "0000:3b:00.0"}})
	snap := filepath.Join(t.TempDir(), "snap")
	code, out, errs := runFW(t, sim, fw, "--root", root, "capture", "--tree", "-o", snap)
	if code != ExitOK {
		t.Fatalf("capture: exit %d\n%s%s", code, out, errs)
	}
	code, out, errs = run(t, nil, "--snapshot", snap, "audit", "-p", prof)
	if code != ExitDrift {
		t.Fatalf("audit of the capture: exit %d, want drift\n%s%s", code, out, errs)
	}
	for _, want := range []string{"> ens1f0np0.firmware.cc_priorities", "~ ens1f1np1.firmware.cc_priorities"} {
		if !strings.Contains(out, want) {
			t.Errorf("audit of the capture lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "not in the snapshot") {
		t.Errorf("a captured query reads as not captured:\n%s", out)
	}

	// No mstconfig: the capture succeeds and the firmware is unknown.
	none := fakemst.New(t, &fakemst.State{Devices: map[string]*fakemst.Device{}})
	snap2 := filepath.Join(t.TempDir(), "snap")
	if code, out, errs := runFW(t, sim, none, "--root", root, "capture", "--tree", "-o", snap2); code != ExitOK {
		t.Fatalf("capture without a queryable device: exit %d\n%s%s", code, out, errs)
	}
	if _, out, _ := run(t, nil, "--snapshot", snap2, "audit", "-p", prof); !strings.Contains(out, "not in the snapshot") {
		t.Errorf("a device the tool could not query is not 'not captured':\n%s", out)
	}
}
