package cli

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/rocectl/rocectl/nic/dcb"
	"github.com/rocectl/rocectl/nic/snapshot"
)

// partialSnapshot is the cx6dx factory host with ens1f0np0's pause and
// DSCP APP table and its ECN files marked as not captured.
func partialSnapshot(t *testing.T) string {
	t.Helper()
	s, err := snapshot.Open(repo("testdata/hosts/cx6dx-ofed-factory"))
	if err != nil {
		t.Fatal(err)
	}
	st := s.State()
	ls := st.Links["ens1f0np0"]
	ls.Pause, ls.DCB.Apps = nil, nil
	ls.NotCaptured = []string{snapshot.OpPause, snapshot.OpDCB + "." + snapshot.DCBPartApps}
	meta := s.Meta
	meta.NotCaptured = []string{"/sys/class/net/ens1f0np0/ecn"}
	dir := filepath.Join(t.TempDir(), "snap")
	if err := snapshot.Write(dir, meta, st, s.FS(), []string{"/sys"}); err != nil {
		t.Fatal(err)
	}
	ecn, err := filepath.EvalSymlinks(filepath.Join(dir, "sys/class/net/ens1f0np0/ecn"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.RemoveAll(ecn); err != nil {
		t.Fatal(err)
	}
	return dir
}

// TestAuditUnknownIsNotUnsupported: what a snapshot did not capture reads
// as unknown, in text, JSON (valid under the schema) and the summary; exit
// 0 unless --require-known.
func TestAuditUnknownIsNotUnsupported(t *testing.T) {
	dir := partialSnapshot(t)
	prof := repo("profiles/connectx-lossless.toml")
	code, out, errs := run(t, nil, "audit", "-p", prof, "--snapshot", dir)
	if code != ExitDrift {
		t.Fatalf("exit %d: %s %s", code, out, errs)
	}
	for _, want := range []string{
		"? ens1f0np0.qos.global_pause = unknown (not in the snapshot (pause of ens1f0np0)), profile wants off",
		"? ens1f0np0.qos.trust = unknown (not in the snapshot (dcb.apps of ens1f0np0))",
		"not in the snapshot (/sys/class/net/ens1f0np0/ecn not captured)",
		"unknown (not in the snapshot).\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("audit output lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "global pause (ethtool -A) not supported") {
		t.Errorf("claims no driver support for what was not captured:\n%s", out)
	}
	_, js, _ := run(t, nil, "audit", "-o", "json", "-p", prof, "--snapshot", dir)
	doc := validDoc(t, compileSchema(t, "report"), js)
	var keys []string
	for _, u := range doc["unknown"].([]any) {
		keys = append(keys, u.(map[string]any)["key"].(string))
	}
	if !slices.Contains(keys, "ens1f0np0.qos.global_pause") || slices.ContainsFunc(keys, func(k string) bool { return strings.HasPrefix(k, "ens1f1np1.") }) {
		t.Errorf("unknown[] = %v", keys)
	}
	if code, _, _ := run(t, nil, "audit", "--require-known", "-p", prof, "--snapshot", dir); code != ExitError {
		t.Errorf("--require-known: exit %d, want %d", code, ExitError)
	}
}

// TestImportDumps: mlnx_qos and ethtool -S, tied to --netdev, become a
// snapshot whose kernel.json holds exactly what they said and lists the
// rest as not captured; facts name their file:line; the pause frames the
// counters show are an inference, not a pause setting.
func TestImportDumps(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "snap")
	corpus := repo("nic/dump/testdata/corpus")
	code, out, errs := run(t, nil, "import", "-o", dir, "--netdev", "eth4",
		filepath.Join(corpus, "mlx5-netarbiter-mlnx_qos-dscp-pfc3.txt"), filepath.Join(corpus, "mlx5-cx6dx-ethtool-S-k5.15-txpause.txt"))
	if code != ExitOK {
		t.Fatalf("exit %d: %s %s", code, out, errs)
	}
	for _, want := range []string{
		"eth4: dcb.pfc from mlx5-netarbiter-mlnx_qos-dscp-pfc3.txt:15",
		"eth4: trust dscp (DSCP APP table populated): inferred from mlnx_qos dscp2prio table (mlx5-netarbiter-mlnx_qos-dscp-pfc3.txt:4)",
		"inferred from ethtool -S tx_pause_ctrl_phy = 5745055 (mlx5-cx6dx-ethtool-S-k5.15-txpause.txt:37)",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("import output lacks %q:\n%s", want, out)
		}
	}
	b, err := os.ReadFile(filepath.Join(dir, snapshot.KernelFile))
	if err != nil {
		t.Fatal(err)
	}
	var ks snapshot.KernelState
	if err := json.Unmarshal(b, &ks); err != nil {
		t.Fatal(err)
	}
	ls := ks.Links["eth4"]
	if ls == nil || ls.Pause != nil || ls.DCB == nil || ls.DCB.PFC == nil || ls.DCB.PFC.Enable != 1<<3 || ls.DCB.PFC.Delay != 7 || len(ls.DCB.Apps) != 64 || ls.Stats["tx_global_pause"] != 5745042 {
		t.Fatalf("eth4 = %+v", ls)
	}
	wantNC := []string{"link", "driver", "pause", "rings", "privflags", "tunable", "dcb.buffer", "dcb.maxrate", "dcb.app_trust"}
	if !slices.Equal(ls.NotCaptured, wantNC) || !slices.Equal(ks.NotCaptured, []string{"devlink"}) {
		t.Errorf("not_captured = %v / %v, want %v / [devlink]", ls.NotCaptured, ks.NotCaptured, wantNC)
	}
	s, err := snapshot.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Kernel().Pause("eth4"); err == nil || !strings.Contains(err.Error(), "not in the snapshot") {
		t.Errorf("Pause on the import: %v", err)
	}
	if code, _, errs := run(t, nil, "import", "-o", filepath.Join(t.TempDir(), "x"), filepath.Join(corpus, "mlx5-netarbiter-mlnx_qos-dscp-pfc3.txt")); code != ExitError || !strings.Contains(errs, "--netdev") {
		t.Errorf("without --netdev: exit %d, %s", code, errs)
	}
}

// ethtoolIA is `ethtool -i` and `ethtool -a` of a ConnectX-6 Dx port as
// pasted into a ticket, prompts included.
const ethtoolIA = `$ ethtool -i eth4
driver: mlx5_core
version: 5.15.0-91-generic
firmware-version: 22.36.1010 (MT_0000000359)
expansion-rom-version:
bus-info: 0000:3b:00.0
supports-statistics: yes
supports-test: yes
supports-eeprom-access: no
supports-register-dump: no
supports-priv-flags: yes
$ ethtool -a eth4
Pause parameters for eth4:
Autonegotiate:	off
RX:		on
TX:		on
`

// TestImportThenAudit: a host known only from netdev-level dumps (mlnx_qos,
// ethtool -S/-a/-i; no RDMA device named) is a netdev-only port the
// profile matches by driver: its netdev settings are audited (global pause
// on is drift, PFC, trust and DCBX are in sync), the rest reads as unknown
// (not in the snapshot); exit 2 for the drift, 1 with --require-known.
func TestImportThenAudit(t *testing.T) {
	tmp := t.TempDir()
	dir := filepath.Join(tmp, "snap")
	ia := filepath.Join(tmp, "ethtool-i-a.txt")
	if err := os.WriteFile(ia, []byte(ethtoolIA), 0o644); err != nil {
		t.Fatal(err)
	}
	corpus := repo("nic/dump/testdata/corpus")
	if code, out, errs := run(t, nil, "import", "-o", dir, "--netdev", "eth4",
		filepath.Join(corpus, "mlx5-netarbiter-mlnx_qos-dscp-pfc3.txt"), filepath.Join(corpus, "mlx5-cx6dx-ethtool-S-k5.15-txpause.txt"), ia); code != ExitOK {
		t.Fatalf("import: exit %d: %s %s", code, out, errs)
	}
	prof := repo("profiles/connectx-lossless.toml")
	code, out, errs := run(t, nil, "audit", "-p", prof, "--snapshot", dir)
	if code != ExitDrift {
		t.Fatalf("audit: exit %d, want %d: %s %s", code, ExitDrift, out, errs)
	}
	for _, want := range []string{
		"~ eth4 (no RDMA device known, mlx5_core)\n",
		"~ eth4.qos.global_pause = on -> off\n",
		"? eth4.link.mtu = unknown (not in the snapshot (link of eth4)), profile wants 9000\n",
		"? eth4.ecn.np.enable.3 = unknown (not in the snapshot (/sys not captured)), profile wants on\n",
		"? eth4.roce.default_roce_tos = unknown (not in the snapshot (/sys not captured)), profile wants 106\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("audit output lacks %q:\n%s", want, out)
		}
	}
	_, js, _ := run(t, nil, "audit", "-o", "json", "-p", prof, "--snapshot", dir)
	doc := validDoc(t, compileSchema(t, "report"), js)
	// What mlnx_qos said (DCBX, trust, DSCP map, PFC, cable length) is
	// audited and in sync; everything else a port has is unknown.
	if !strings.Contains(out, "Plan: 1 to change, 5 in sync, 0 unsupported, 0 unreadable, 23 unknown (not in the snapshot).") || doc["in_sync"] != 5.0 {
		t.Errorf("summary (in_sync %v):\n%s", doc["in_sync"], out)
	}
	for _, u := range doc["unknown"].([]any) {
		if k := u.(map[string]any)["key"].(string); strings.HasPrefix(k, "eth4.qos.") && k != "eth4.qos.pfc_storm_prevention" {
			t.Errorf("%s unknown, but mlnx_qos and ethtool -a said it", k)
		}
	}
	if code, _, _ := run(t, nil, "audit", "--require-known", "-p", prof, "--snapshot", dir); code != ExitError {
		t.Errorf("--require-known: exit %d, want %d", code, ExitError)
	}
}

// TestImportWithoutDriverIsUnknown: dumps without `ethtool -i` do not say
// which driver a port has, and cable length is mlx5's use of the PFC delay
// field, so whether the port has one is unknown too: the audit says so,
// never "unsupported" (which it said before, from the missing driver).
func TestImportWithoutDriverIsUnknown(t *testing.T) {
	tmp := t.TempDir()
	dir := filepath.Join(tmp, "snap")
	corpus := repo("nic/dump/testdata/corpus")
	if code, out, errs := run(t, nil, "import", "-o", dir, "--netdev", "eth4",
		filepath.Join(corpus, "mlx5-netarbiter-mlnx_qos-dscp-pfc3.txt")); code != ExitOK {
		t.Fatalf("import: exit %d: %s %s", code, out, errs)
	}
	prof := filepath.Join(tmp, "any.toml")
	if err := os.WriteFile(prof, fmt.Appendf(nil, "name = \"any\"\ninclude = [%q]\n[match]\ndrivers = [\"*\"]\n", repo("profiles/connectx-lossless.toml")), 0o600); err != nil {
		t.Fatal(err)
	}
	code, out, errs := run(t, nil, "audit", "-p", prof, "--snapshot", dir)
	if code != ExitOK {
		t.Fatalf("audit: exit %d, want %d: %s %s", code, ExitOK, out, errs)
	}
	if want := "? eth4.qos.cable_length_m = unknown (not in the snapshot (driver of eth4)), profile wants 7\n"; !strings.Contains(out, want) {
		t.Errorf("audit output lacks %q:\n%s", want, out)
	}
	if strings.Contains(out, "unsupported") {
		t.Errorf("claims no driver support from a driver nobody captured:\n%s", out)
	}
}

// mlnxQos2310 is `mlnx_qos -i ens1f0np0` as OFED 23.10 prints it: the
// receive buffer row ends in max_buffer_size=N, which the first import
// refused ("invalid syntax"). Built for the test in the shape the issue
// quotes.
const mlnxQos2310 = `[root@gpu1 ~]# mlnx_qos -i ens1f0np0
DCBX mode: OS controlled
Priority trust state: dscp
dscp2prio mapping:
	prio:0 dscp:07,06,05,04,03,02,01,00,
	prio:1 dscp:15,14,13,12,11,10,09,08,
	prio:2 dscp:23,22,21,20,19,18,17,16,
	prio:3 dscp:31,30,29,28,27,26,25,24,
	prio:4 dscp:39,38,37,36,35,34,33,32,
	prio:5 dscp:47,46,45,44,43,42,41,40,
	prio:6 dscp:55,54,53,52,51,50,49,48,
	prio:7 dscp:63,62,61,60,59,58,57,56,
default priority:
Receive buffer size (bytes): 130944,130944,0,0,0,0,0,0,max_buffer_size=4151520
Cable len: 7
PFC configuration:
	priority    0   1   2   3   4   5   6   7
	enabled     0   0   0   1   0   0   0   0
	buffer      0   0   0   1   0   0   0   0
tc: 1 ratelimit: unlimited, tsa: vendor
	 priority:  0
tc: 0 ratelimit: unlimited, tsa: vendor
	 priority:  1
tc: 2 ratelimit: unlimited, tsa: vendor
	 priority:  2
tc: 3 ratelimit: unlimited, tsa: vendor
	 priority:  3
tc: 4 ratelimit: unlimited, tsa: vendor
	 priority:  4
tc: 5 ratelimit: unlimited, tsa: vendor
	 priority:  5
tc: 6 ratelimit: unlimited, tsa: vendor
	 priority:  6
tc: 7 ratelimit: unlimited, tsa: vendor
	 priority:  7
`

// TestImportOFED2310Buffer: the OFED 23.10 buffer row imports, without a
// warning, as the DCB buffer with max_buffer_size as the port's total;
// and a profile's [buffers] is audited against it (in sync).
func TestImportOFED2310Buffer(t *testing.T) {
	tmp := t.TempDir()
	in := filepath.Join(tmp, "mlnx_qos.txt")
	if err := os.WriteFile(in, []byte(mlnxQos2310), 0o644); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(tmp, "snap")
	code, out, errs := run(t, nil, "import", "-o", dir, in)
	if code != ExitOK || strings.Contains(out, "warning:") || !strings.Contains(out, "0 warning(s)") {
		t.Fatalf("import: exit %d:\n%s%s", code, out, errs)
	}
	if !strings.Contains(out, "ens1f0np0: dcb.buffer from mlnx_qos.txt:14") {
		t.Errorf("no dcb.buffer fact:\n%s", out)
	}
	st := mustState(t, dir)
	buf := st.Links["ens1f0np0"].DCB.Buffer
	want := dcb.Buffer{PrioBuffer: [8]uint8{0, 0, 0, 1}, Size: [8]uint32{130944, 130944}, TotalSize: 4151520}
	if buf == nil || *buf != want {
		t.Fatalf("dcb.buffer = %+v, want %+v", buf, want)
	}
	prof := filepath.Join(tmp, "buffers.toml")
	if err := os.WriteFile(prof, []byte(`name = "buffers"
[match]
netdevs = ["ens1f0np0"]
[buffers]
priority_to_buffer = [0, 0, 0, 1, 0, 0, 0, 0]
buffer_size = ["130944", "130944", "0", "0", "0", "0", "0", "0"]
`), 0o600); err != nil {
		t.Fatal(err)
	}
	code, out, errs = run(t, nil, "audit", "-p", prof, "--snapshot", dir)
	if code != ExitOK || !strings.Contains(out, "No changes.") || strings.Contains(out, "unknown") {
		t.Errorf("audit of [buffers]: exit %d:\n%s%s", code, out, errs)
	}
}

// mustState is the kernel state of the snapshot in dir.
func mustState(t *testing.T, dir string) *snapshot.KernelState {
	t.Helper()
	s, err := snapshot.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	return s.State()
}

// laterSample writes the corpus's ConnectX-6 Dx `ethtool -S` with its
// global pause counters raised by rise: a second sample of the same port
// taken later (the corpus has no real pair of one port).
func laterSample(t *testing.T, dir string, rise uint64) string {
	t.Helper()
	b, err := os.ReadFile(repo("nic/dump/testdata/corpus/mlx5-cx6dx-ethtool-S-k5.15-txpause.txt"))
	if err != nil {
		t.Fatal(err)
	}
	s := strings.Replace(string(b), "tx_pause_ctrl_phy: 5745055", fmt.Sprintf("tx_pause_ctrl_phy: %d", 5745055+rise), 1)
	s = strings.Replace(s, "tx_global_pause: 5745042", fmt.Sprintf("tx_global_pause: %d", 5745042+rise), 1)
	p := filepath.Join(dir, "later-ethtool-S.txt")
	if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// ethtoolI is `ethtool -i` of the port the kernel documentation's devlink
// example names (bus 0000:06:00.0), as pasted.
const ethtoolI = `$ ethtool -i eth4
driver: mlx5_core
version: 5.15.0-91-generic
firmware-version: 22.36.1010 (MT_0000000359)
bus-info: 0000:06:00.0
`

// TestImportPauseInferredFromTwoSamples: two `ethtool -S` dumps of one
// port, in argument order, whose global pause counter rose: audit shows
// global pause as inferred in use, with both lines, instead of a bare
// unknown; it stays unknown in the count, in JSON (with the inference)
// and for --require-known. With one sample the counter is only a note.
func TestImportPauseInferredFromTwoSamples(t *testing.T) {
	tmp := t.TempDir()
	first := repo("nic/dump/testdata/corpus/mlx5-cx6dx-ethtool-S-k5.15-txpause.txt")
	second := laterSample(t, tmp, 4242)
	ei := filepath.Join(tmp, "ethtool-i.txt")
	if err := os.WriteFile(ei, []byte(ethtoolI), 0o644); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(tmp, "two")
	code, out, errs := run(t, nil, "import", "-o", dir, "--netdev", "eth4", ei, first, second)
	if code != ExitOK || !strings.Contains(out, "eth4: global pause in use (tx pause frames sent between the two samples): inferred from ethtool -S tx_pause_ctrl_phy 5745055 → 5749297 (mlx5-cx6dx-ethtool-S-k5.15-txpause.txt:37 → later-ethtool-S.txt:37)") {
		t.Fatalf("import: exit %d:\n%s%s", code, out, errs)
	}
	prof := repo("profiles/connectx-lossless.toml")
	code, out, errs = run(t, nil, "audit", "-p", prof, "--snapshot", dir)
	want := "? eth4.qos.global_pause = inferred: in use (from mlx5-cx6dx-ethtool-S-k5.15-txpause.txt:37 → later-ethtool-S.txt:37), profile wants off\n"
	if code != ExitOK || !strings.Contains(out, want) || !strings.Contains(out, "unknown (not captured or not readable; 1 of them inferred)") {
		t.Fatalf("audit: exit %d, want %q:\n%s%s", code, want, out, errs)
	}
	if strings.Contains(out, "global_pause = on") || strings.Contains(out, "global pause (ethtool -A) not supported") {
		t.Errorf("an inference shown as a value or a refusal:\n%s", out)
	}
	_, js, _ := run(t, nil, "audit", "-o", "json", "-p", prof, "--snapshot", dir)
	doc := validDoc(t, compileSchema(t, "report"), js)
	found := false
	for _, u := range doc["unknown"].([]any) {
		if m := u.(map[string]any); m["key"] == "eth4.qos.global_pause" {
			found = m["inferred"] == "in use (from mlx5-cx6dx-ethtool-S-k5.15-txpause.txt:37 → later-ethtool-S.txt:37)"
		}
	}
	if !found {
		t.Errorf("JSON unknown[] lacks the inferred global pause:\n%s", js)
	}
	if code, _, _ := run(t, nil, "audit", "--require-known", "-p", prof, "--snapshot", dir); code != ExitError {
		t.Errorf("--require-known: exit %d, want %d (an inference is not a known value)", code, ExitError)
	}

	one := filepath.Join(tmp, "one")
	if code, out, errs := run(t, nil, "import", "-o", one, "--netdev", "eth4", ei, first); code != ExitOK {
		t.Fatalf("import: exit %d:\n%s%s", code, out, errs)
	}
	_, out, _ = run(t, nil, "audit", "-p", prof, "--snapshot", one)
	for _, w := range []string{
		"? eth4.qos.global_pause = unknown (not in the snapshot (pause of eth4)), profile wants off\n",
		"        note: global pause frames were sent at some time (tx_pause_ctrl_phy = 5745055; one sample, so not known to be rising) (from mlx5-cx6dx-ethtool-S-k5.15-txpause.txt:37)\n",
	} {
		if !strings.Contains(out, w) {
			t.Errorf("one sample: audit lacks %q:\n%s", w, out)
		}
	}
	if strings.Contains(out, "inferred") {
		t.Errorf("one sample inferred a value:\n%s", out)
	}
}

// TestImportDevlink: the kernel documentation's `devlink dev param show
// ... name enable_roce` (mlx5) is the devlink section of the snapshot: a
// profile's enable_roce is audited against it (in sync), and a parameter
// the dump does not list reads as unknown, not as missing from mlx5.
func TestImportDevlink(t *testing.T) {
	tmp := t.TempDir()
	ei := filepath.Join(tmp, "ethtool-i.txt")
	if err := os.WriteFile(ei, []byte(ethtoolI), 0o644); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(tmp, "snap")
	dl := repo("nic/dump/testdata/corpus/mlx5-devlink-dev-param-show-enable_roce-kernel-doc.txt")
	code, out, errs := run(t, nil, "import", "-o", dir, ei, dl)
	if code != ExitOK || !strings.Contains(out, "pci/0000:06:00.0: devlink enable_roce (driverinit true) from mlx5-devlink-dev-param-show-enable_roce-kernel-doc.txt:3") {
		t.Fatalf("import: exit %d:\n%s%s", code, out, errs)
	}
	prof := filepath.Join(tmp, "devlink.toml")
	if err := os.WriteFile(prof, []byte("name = \"dl\"\n[match]\ndrivers = [\"mlx5_core\"]\n[devlink]\nenable_roce = true\nio_eq_size = 1024\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	code, out, errs = run(t, nil, "audit", "-p", prof, "--snapshot", dir)
	if w := "? eth4.devlink.io_eq_size = unknown (not in the snapshot (devlink of pci/0000:06:00.0)), profile wants 1024\n"; code != ExitOK || !strings.Contains(out, w) {
		t.Errorf("audit lacks %q (exit %d):\n%s%s", w, code, out, errs)
	}
	_, js, _ := run(t, nil, "audit", "-o", "json", "-p", prof, "--snapshot", dir)
	if doc := validDoc(t, compileSchema(t, "report"), js); doc["in_sync"] != 1.0 {
		t.Errorf("in_sync %v, want 1 (enable_roce):\n%s", doc["in_sync"], js)
	}
	if strings.Contains(out, "has no devlink parameter") {
		t.Errorf("a parameter the dump did not list is claimed missing:\n%s", out)
	}

	// Without ethtool -i nothing gives the port's bus device: its devlink
	// settings are unknown, not "no bus device" (unsupported).
	bare := filepath.Join(tmp, "bare")
	qos := repo("nic/dump/testdata/corpus/mlx5-netarbiter-mlnx_qos-dscp-pfc3.txt")
	if code, out, errs := run(t, nil, "import", "-o", bare, "--netdev", "eth4", qos, dl); code != ExitOK {
		t.Fatalf("import: exit %d:\n%s%s", code, out, errs)
	}
	byName := filepath.Join(tmp, "byname.toml")
	if err := os.WriteFile(byName, []byte("name = \"dl\"\n[match]\nnetdevs = [\"eth4\"]\n[devlink]\nenable_roce = true\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	_, out, _ = run(t, nil, "audit", "-p", byName, "--snapshot", bare)
	if !strings.Contains(out, "? eth4.devlink.enable_roce = unknown (not in the snapshot (devlink of eth4)), profile wants true\n") || strings.Contains(out, "no bus device") {
		t.Errorf("devlink of a port without a known bus device:\n%s", out)
	}
}

// A port whose driver nobody captured neither matches [match] drivers =
// ["mlx5_core"] nor is left out: each of its settings is unknown, saying
// why, and --require-known fails. Before, the port was left out ("No RoCE
// port matches the profile's [match]: nothing to do", exit 0 even with
// --require-known) while its dump showed PFC off and trust pcp.
func TestPortOfUnknownDriverIsNeitherMatchedNorLeftOut(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "snap")
	if code, out, errs := run(t, nil, "import", "-o", dir, "--netdev", "eth4",
		repo("nic/dump/testdata/corpus/mlx5-mlnx_qos-trust-pcp-default-centos12.txt")); code != ExitOK {
		t.Fatalf("import: exit %d: %s %s", code, out, errs)
	}
	prof := repo("profiles/connectx-lossless.toml")
	code, out, errs := run(t, nil, "audit", "-p", prof, "--snapshot", dir)
	want := "? eth4.qos.pfc = unknown (whether [match] selects eth4 is unknown: its driver is not known), profile wants [3]\n"
	if code != ExitOK || !strings.Contains(out, want) || strings.Contains(out, "No RoCE port matches") {
		t.Errorf("audit: exit %d, want 0 and %q\n%s%s", code, want, out, errs)
	}
	if code, out, _ := run(t, nil, "audit", "--require-known", "-p", prof, "--snapshot", dir); code != ExitError {
		t.Errorf("audit --require-known: exit %d, want %d\n%s", code, ExitError, out)
	}
	// A driver known not to be mlx5_core is left out, as ever.
	other := filepath.Join(t.TempDir(), "bnxt.toml")
	if err := os.WriteFile(other, []byte("name = \"b\"\n[match]\ndrivers = [\"bnxt_en\"]\nnetdevs = [\"eth9\"]\n[link]\nmtu = 9000\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if code, out, _ := run(t, nil, "audit", "-p", other, "--snapshot", dir); code != ExitOK || !strings.Contains(out, "No RoCE port matches") {
		t.Errorf("a netdev [match] leaves eth4 out whatever its driver: exit %d\n%s", code, out)
	}
}

// The audit of a snapshot that recorded no hostname (an import without
// --hostname) names no host, so that report names it by its document's
// file; before, it took the name of the machine running the audit.
func TestSnapshotWithoutHostnameIsNotThisMachine(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "snap")
	if code, out, errs := run(t, nil, "import", "-o", dir, "--netdev", "eth4",
		repo("nic/dump/testdata/corpus/mlx5-mlnx_qos-trust-pcp-default-centos12.txt")); code != ExitOK {
		t.Fatalf("import: exit %d: %s %s", code, out, errs)
	}
	_, out, errs := run(t, nil, "audit", "-o", "json", "-p", repo("profiles/connectx-lossless.toml"), "--snapshot", dir)
	var rep struct {
		Host *string `json:"host"`
	}
	if err := json.Unmarshal([]byte(out), &rep); err != nil || rep.Host == nil || *rep.Host != "" {
		t.Errorf("audit -o json host %v (%v), want \"\"\n%s%s", rep.Host, err, out, errs)
	}
}

// nccl-env on an import that does not say which driver the port has
// cannot know whether [match] selects it: it says so (exit 1, nothing
// printed), not "No RoCE port matches" (issue 34, item 14).
func TestNCCLEnvOnAnImportWithUnknownMatch(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "snap")
	corpus := repo("nic/dump/testdata/corpus")
	if code, out, errs := run(t, nil, "import", "-o", dir, "--netdev", "eth4",
		filepath.Join(corpus, "mlx5-netarbiter-mlnx_qos-dscp-pfc3.txt")); code != ExitOK {
		t.Fatalf("import: exit %d: %s %s", code, out, errs)
	}
	code, out, errs := run(t, nil, "nccl-env", "-p", repo("profiles/connectx-lossless.toml"), "--snapshot", dir)
	if code != ExitError || out != "" || strings.Contains(errs, "No RoCE port matches") ||
		!strings.Contains(errs, "IB_HCA: cannot derive: whether [match] selects eth4 is unknown: its driver is not known") {
		t.Errorf("exit %d, stdout %q\nstderr:\n%s", code, out, errs)
	}
}
