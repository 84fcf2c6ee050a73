//go:build lab

package cli

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/rocectl/rocectl/nic/dcb"
	"github.com/rocectl/rocectl/nic/snapshot"
	"github.com/rocectl/rocectl/test/lab/labenv"
)

// mlnxQosRun is one run of NVIDIA's mlnx_qos in TestLabMlnxQosImport:
// the revision (a folder of test/lab/mlnx-tools.sh), its arguments after
// -i PORT, the corpus file of nic/dump its stdout is, and what the import
// must make of it.
type mlnxQosRun struct {
	rev  string
	args []string
	file string
	// allTCs: the output has a tc row for every TC (mlnx_qos -a), so the
	// import knows ETS; otherwise it must say why it does not.
	allTCs bool
	// sets: the run changes the port (else it leaves the base state and
	// shares one capture with the other queries: a capture of the whole
	// guest takes 7-16 s under TCG).
	sets bool
	// pfc, delay: the kernel's PFC after the run (a query leaves the
	// base state: PFC on 3, delay 7).
	pfc   uint8
	delay uint16
}

var mlnxQosRuns = []mlnxQosRun{
	// The old tool prints dcbnl's total_size as "total_size=".
	{rev: "v5.6", file: "netdevsim-mlnx_qos-v5.6-total_size.txt", pfc: 1 << 3, delay: 7},
	{rev: "v23.10.0", file: "netdevsim-mlnx_qos-v23.10.0-max_buffer_size.txt", pfc: 1 << 3, delay: 7},
	// -a: a tc row for all 8 TCs, the only form that carries ETS.
	{rev: "v2607.0.6", args: []string{"-a"}, file: "netdevsim-mlnx_qos-v2607.0.6-a.txt", allTCs: true, pfc: 1 << 3, delay: 7},
	// --pfc re-reads and prints the state after the change. Since
	// mlnx-tools 83b87d9 (2024) it keeps the cable length...
	{rev: "v2607.0.6", args: []string{"--pfc", "0,0,0,1,1,0,0,0"}, file: "netdevsim-mlnx_qos-v2607.0.6-pfc-3-4.txt", sets: true, pfc: 1<<3 | 1<<4, delay: 7},
	// ...before, --pfc without --cable_len wrote cable length 0.
	{rev: "v23.10.0", args: []string{"--pfc", "0,0,0,1,1,0,0,0"}, file: "netdevsim-mlnx_qos-v23.10.0-pfc-3-4-cable-len-reset.txt", sets: true, pfc: 1<<3 | 1<<4, delay: 0},
}

// mlnxQosInDumps are the settings mlnx_qos prints in full (names after
// the port's scope; trust is the import's inference from the DSCP table,
// as upstream mlx5 trusts DSCP exactly when it has DSCP APP entries);
// with -a, ETS too.
var mlnxQosInDumps = []string{"qos.pfc", "qos.dcbx", "qos.trust", "qos.dscp2prio", "buffers.priority_to_buffer", "buffers.buffer_size"}

// mlnxQosNotInDumps: what mlnx_qos does not print (link, pause, ethtool,
// sysfs/configfs/debugfs, devlink), and ETS when it lists only some TCs.
var mlnxQosNotInDumps = []string{"link.", "qos.global_pause", "qos.pfc_storm_prevention", "ecn.", "roce.", "devlink."}

// TestLabMlnxQosImport runs NVIDIA's mlnx_qos, unmodified, at the
// revisions test/lab/mlnx-tools.sh pins, on a netdevsim port whose DCB
// goes through the guest kernel's dcbnl (the lab's netdevsim patch:
// buffers total 256 KiB), and checks three things per run:
//   - its stdout is byte for byte the nic/dump corpus file (the hashes in
//     testdata/lab-mlnx_qos.sha256; TestLabMlnxQosCorpusHashes ties them
//     to the corpus on the host), so the corpus is what these tools print;
//   - `rocectl import` of it, without a warning other than ETS for a
//     partial tc list, gives the port's DCB state as `rocectl capture`
//     reads it from the kernel after the run (runs that only query share
//     one capture of the base state);
//   - both audit alike with the lab profile (compareImport).
//
// Every output is logged base64-encoded on a "mlnx_qos-corpus FILE B64"
// line: nic/dump/testdata/corpus/SOURCES.md says how to regenerate the
// corpus from them.
func TestLabMlnxQosImport(t *testing.T) {
	env := labenv.Get(t)
	if env.MlnxTools == "" {
		t.Skip("no mlnx_qos revisions in the guest: test/lab/mlnx-tools.sh could not fetch them at setup " +
			"(GitHub unreachable? set LAB_MLNX_TOOLS_GIT to a clone of Mellanox/mlnx-tools and rerun make lab-setup)")
	}
	var missing []string
	for _, r := range mlnxQosRuns {
		if _, err := os.Stat(filepath.Join(env.MlnxTools, r.rev, "python", "mlnx_qos")); err != nil {
			missing = append(missing, r.rev)
		}
	}
	if missing != nil {
		t.Skipf("mlnx_qos revisions %v not fetched by test/lab/mlnx-tools.sh (see its log in make lab-setup)", missing)
	}
	sums := readSums(t, "testdata/lab-mlnx_qos.sha256")
	l := newLabNIC(t)
	nd := l.port.Ifname
	tmp := t.TempDir()
	queryCap := "" // the capture of the base state
	for _, r := range mlnxQosRuns {
		t.Run(r.file, func(t *testing.T) {
			mlnxQosBase(t, nd)
			out := mlnxQos(t, env, r.rev, append([]string{"-i", nd}, r.args...)...)
			t.Logf("mlnx_qos-corpus %s %s", r.file, base64.StdEncoding.EncodeToString(out))
			sum := sha256.Sum256(out)
			if got := hex.EncodeToString(sum[:]); got != sums[r.file] {
				t.Errorf("stdout is not nic/dump/testdata/corpus/%s (sha256 %s, testdata has %q):\n%s", r.file, got, sums[r.file], out)
			}
			dumpFile := filepath.Join(tmp, r.file)
			if err := os.WriteFile(dumpFile, out, 0o644); err != nil {
				t.Fatal(err)
			}
			capDir, impDir := queryCap, filepath.Join(tmp, "import", r.file)
			if r.sets || capDir == "" {
				capDir = filepath.Join(tmp, "capture", r.file)
				if code, out, errs := l.rocectl(t, "capture", "-o", capDir); code != ExitOK {
					t.Fatalf("capture: exit %d\n%s%s", code, out, errs)
				}
				if !r.sets {
					queryCap = capDir
				}
			}
			code, iout, errs := l.rocectl(t, "import", "--netdev", nd, "-o", impDir, dumpFile)
			if code != ExitOK {
				t.Fatalf("import: exit %d\n%s%s", code, iout, errs)
			}
			t.Logf("import:\n%s", iout)
			var warns []string
			for _, ln := range strings.Split(iout, "\n") {
				if strings.Contains(ln, "warning:") {
					warns = append(warns, ln)
				}
			}
			wantWarn := 0
			if !r.allTCs {
				wantWarn = 1 // ETS: no tc row for the TCs no priority maps to
				if len(warns) != 1 || !strings.Contains(warns[0], "no tc row for tc 1,2,4,5,7") {
					t.Errorf("want one warning, about tc 1,2,4,5,7 missing from the ETS section; got %q", warns)
				}
			}
			if len(warns) != wantWarn {
				t.Errorf("import warnings %q, want %d", warns, wantWarn)
			}
			capDCB, impDCB := snapDCB(t, capDir, nd), snapDCB(t, impDir, nd)
			if p := capDCB.PFC; p == nil || p.Enable != r.pfc || p.Delay != r.delay {
				t.Errorf("kernel PFC after mlnx_qos %v: %+v, want enable %#x delay %d", r.args, p, r.pfc, r.delay)
			}
			compareMlnxQosDCB(t, capDCB, impDCB, r.allTCs)
			notIn := mlnxQosNotInDumps
			inDumps := mlnxQosInDumps
			if r.allTCs {
				inDumps = append(inDumps[:len(inDumps):len(inDumps)], "qos.ets.priority_to_tc", "qos.ets.tc_tsa", "qos.ets.tc_bandwidth")
			} else {
				notIn = append(notIn[:len(notIn):len(notIn)], "qos.ets.")
			}
			compareImport(t, l, capDir, impDir, inDumps, notIn)
		})
	}
}

// mlnxQosBase puts the port into the state every run starts from: PFC
// on priority 3 with cable length 7, DSCP 26 (AF31) → priority 3, buffer
// 1 of 128 KiB for priority 3 and 64 KiB for the rest, RoCE-style ETS
// (priority 3 → TC3, 6 → TC6 strict, the rest → TC0; TC0/TC3 50 % each)
// and TC3 limited to 25 Gbit/s. It uses rocectl's dcbnl client rather
// than iproute2's dcb, whose 6.1 version numbers requests with time(NULL)
// (mnlu_msg_prepare) and failed a `dcb ets set` here with "Protocol
// error" now and then, and whose maxrate passes bytes/s where the uapi,
// mlx5 and mlnx_qos mean kbit/s (fixed in later iproute2).
func mlnxQosBase(t *testing.T, nd string) {
	t.Helper()
	c := dcb.NewClient()
	st, err := c.Get(nd)
	if err != nil {
		t.Fatal(err)
	}
	if len(st.Apps) > 0 {
		if err := c.DelApps(nd, st.Apps); err != nil {
			t.Fatal(err)
		}
	}
	const ets, strict = dcb.TSAETS, dcb.TSAStrict
	for _, err := range []error{
		c.SetPFC(nd, dcb.PFC{Cap: 8, Enable: 1 << 3, Delay: 7}),
		c.AddApps(nd, []dcb.App{{Selector: dcb.SelDSCP, Priority: 3, Protocol: 26}}),
		c.SetBuffer(nd, dcb.Buffer{PrioBuffer: [8]uint8{3: 1}, Size: [8]uint32{64 << 10, 128 << 10}}),
		c.SetETS(nd, dcb.ETS{TCTxBW: [8]uint8{0: 50, 3: 50}, TCTSA: [8]uint8{ets, strict, strict, ets, strict, strict, strict, strict},
			PrioTC: [8]uint8{3: 3, 6: 6}}),
		c.SetMaxrate(nd, dcb.Maxrate{TCMaxrate: [8]uint64{3: 25_000_000}}),
	} {
		if err != nil {
			t.Fatal(err)
		}
	}
}

// mlnxQos runs mlnx_qos of revision rev with python3 and returns its
// stdout; anything on stderr or a non-zero exit fails the test. The
// helpers dcbnetlink.py and netlink.py come from the revision's own tree
// (python/ next to the script before 23.x, python/Python/ after, where
// the package installs them to /usr/share/mlnx-tools/python).
func mlnxQos(t *testing.T, env labenv.Env, rev string, args ...string) []byte {
	t.Helper()
	dir := filepath.Join(env.MlnxTools, rev, "python")
	cmd := exec.Command("python3", append([]string{filepath.Join(dir, "mlnx_qos")}, args...)...)
	cmd.Env = append(os.Environ(), "PYTHONPATH="+filepath.Join(dir, "Python"))
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil || stderr.Len() > 0 {
		t.Fatalf("mlnx_qos %s %v: %v\nstdout:\n%s\nstderr:\n%s", rev, args, err, stdout.Bytes(), stderr.Bytes())
	}
	return stdout.Bytes()
}

// readSums reads "SHA256  FILE" lines (sha256sum's format).
func readSums(t *testing.T, path string) map[string]string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	m := map[string]string{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if sum, file, ok := strings.Cut(sc.Text(), "  "); ok {
			m[file] = sum
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return m
}

func snapDCB(t *testing.T, dir, nd string) *dcb.State {
	t.Helper()
	s, err := snapshot.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	ls := s.State().Links[nd]
	if ls == nil || ls.DCB == nil {
		t.Fatalf("%s: no DCB state for %s", dir, nd)
	}
	return ls.DCB
}

// compareMlnxQosDCB: what mlnx_qos printed equals what the kernel holds,
// member by member; ETS only when every TC was printed, else absent.
func compareMlnxQosDCB(t *testing.T, kernel, imp *dcb.State, allTCs bool) {
	t.Helper()
	if imp.PFC == nil || kernel.PFC == nil || imp.PFC.Enable != kernel.PFC.Enable || imp.PFC.Delay != kernel.PFC.Delay {
		t.Errorf("PFC: import %+v, kernel %+v", imp.PFC, kernel.PFC)
	}
	var dscp []dcb.App
	for _, a := range kernel.Apps {
		if a.Selector == dcb.SelDSCP {
			dscp = append(dscp, a)
		}
	}
	if len(dscp) != len(kernel.Apps) || !reflect.DeepEqual(imp.Apps, dscp) {
		t.Errorf("APP table: import %+v, kernel %+v", imp.Apps, kernel.Apps)
	}
	if !reflect.DeepEqual(imp.Buffer, kernel.Buffer) {
		t.Errorf("buffers: import %+v, kernel %+v", imp.Buffer, kernel.Buffer)
	}
	if imp.DCBX == nil || kernel.DCBX == nil || *imp.DCBX != *kernel.DCBX {
		t.Errorf("DCBX: import %v, kernel %v", imp.DCBX, kernel.DCBX)
	}
	switch {
	case !allTCs && imp.ETS != nil:
		t.Errorf("ETS %+v imported from a partial tc list", imp.ETS)
	case allTCs && (imp.ETS == nil || kernel.ETS == nil):
		t.Errorf("ETS: import %+v, kernel %+v", imp.ETS, kernel.ETS)
	case allTCs && (imp.ETS.PrioTC != kernel.ETS.PrioTC || imp.ETS.TCTSA != kernel.ETS.TCTSA || imp.ETS.TCTxBW != kernel.ETS.TCTxBW):
		t.Errorf("ETS: import %+v, kernel %+v", imp.ETS, kernel.ETS)
	}
}
