package cli

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rocectl/rocectl/doc"
	"github.com/rocectl/rocectl/internal/testkit/fixturehost"
	"github.com/rocectl/rocectl/nic/snapshot"
)

// unreadableSnapshot copies a fixture snapshot and makes each of files (host
// paths as a capture lists them: resolved) one the capture could not read:
// gone from sys/ and listed in snapshot.json's unreadable with errno.
func unreadableSnapshot(t *testing.T, fixture, errno string, files ...string) string {
	t.Helper()
	dir := copySnapshot(t, fixture)
	editJSON(t, filepath.Join(dir, snapshot.MetaFile), func(m map[string]any) {
		list, _ := m["unreadable"].([]any)
		for _, f := range files {
			if err := os.Remove(filepath.Join(dir, f)); err != nil && !os.IsNotExist(err) {
				t.Fatal(err)
			}
			list = append(list, f+": "+errno)
		}
		m["unreadable"] = list
	})
	return dir
}

// copySnapshot is a copy of a fixture snapshot, the test's to change.
func copySnapshot(t *testing.T, fixture string) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "snap")
	if err := fixturehost.CopyTree(fixturehost.Dir(fixture), dir); err != nil {
		t.Fatal(err)
	}
	return dir
}

// editJSON rewrites the JSON object in file as edit changes it.
func editJSON(t *testing.T, file string, edit func(map[string]any)) {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	edit(m)
	if b, err = json.Marshal(m); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(file, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// A file the capture could not read is unreadable when audited, as it was
// on the host: never "unsupported by the driver" (the file's absence from
// sys/ is no evidence about the driver), never absent, never in sync.
// Each of these read as unsupported (the NCCL file as absent) before.
func TestUnreadableFilesAreNotUnsupported(t *testing.T) {
	const dev0 = "/sys/devices/pci0000:3a/0000:3a:00.0/0000:3b:00.0"
	cases := []struct {
		name, file, errno, key string
		profile                string // appended to connectx-lossless
	}{
		{name: "traffic_class", file: dev0 + "/infiniband/mlx5_0/tc/1/traffic_class", errno: "EACCES", key: "mlx5_0.roce.traffic_class"},
		{name: "rdma_cm", file: "/sys/kernel/config/rdma_cm/mlx5_0/ports/1/default_roce_tos", errno: "EIO", key: "mlx5_0.roce.default_roce_tos"},
		{name: "ECN parameter", file: dev0 + "/net/ens1f0np0/ecn/roce_np/cnp_dscp", errno: "EIO", key: "mlx5_0.ecn.np.cnp_dscp"},
		{name: "NCCL file", file: "/etc/nccl.conf", errno: "EACCES", key: "host.nccl.",
			profile: "[nccl]\nwrite = \"/etc/nccl.conf\"\nIB_TC = 106\n"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := unreadableSnapshot(t, "cx6dx-ofed-lossless", c.errno, c.file)
			prof := filepath.Join(t.TempDir(), "p.toml")
			text := fmt.Sprintf("name = \"p\"\ninclude = [%q]\n", repo("profiles/connectx-lossless.toml"))
			if c.profile != "" {
				text = fmt.Sprintf("name = \"p\"\ninclude = [%q]\n%s", repo("profiles/base.toml"), c.profile)
			}
			if err := os.WriteFile(prof, []byte(text), 0o600); err != nil {
				t.Fatal(err)
			}
			code, out, errs := run(t, nil, "audit", "-o", "json", "-p", prof, "--snapshot", dir)
			if code != ExitError {
				t.Errorf("audit exit %d, want %d (a managed value could not be read)\n%s%s", code, ExitError, out, errs)
			}
			var rep struct {
				Errors      []string `json:"errors"`
				Unsupported []struct {
					Key string `json:"key"`
				} `json:"unsupported"`
				Changes []struct {
					Key string `json:"key"`
				} `json:"changes"`
			}
			if err := json.Unmarshal([]byte(out), &rep); err != nil {
				t.Fatalf("%v\n%s", err, out)
			}
			for _, u := range rep.Unsupported {
				if strings.HasPrefix(u.Key, c.key) {
					t.Errorf("%s reported unsupported, from a file the capture could not read", u.Key)
				}
			}
			for _, ch := range rep.Changes {
				if strings.HasPrefix(ch.Key, c.key) {
					t.Errorf("%s planned as a change, as if the unreadable file were absent", ch.Key)
				}
			}
			found := false
			for _, e := range rep.Errors {
				if strings.HasPrefix(e, c.key) && strings.Contains(e, filepath.Base(c.file)+": "+errnoText[c.errno]+" (as the capture read it on the host)") {
					found = true
				}
			}
			if !found {
				t.Errorf("no error names %s, %s and its recorded %s: %q", c.key, filepath.Base(c.file), c.errno, rep.Errors)
			}
		})
	}
}

var errnoText = map[string]string{"EACCES": "permission denied", "EIO": "input/output error"}

// nccl-env derives nothing from what it does not know: a GID type the
// capture could not read (EIO, not the kernel's EINVAL of an entry without
// one) leaves the GID pick unknown, and a snapshot imported from netdev
// dumps knows no RDMA device to list in NCCL_IB_HCA. Each exits 1 with
// nothing on stdout and complete false. Before, the first pinned the
// other port's index ("all ports agree on index 5") and the second printed
// NCCL_IB_HCA==:0 as complete.
func TestNCCLEnvOfUnknownGIDsAndDevices(t *testing.T) {
	prof := filepath.Join(t.TempDir(), "pn.toml")
	if err := os.WriteFile(prof, []byte("name = \"pn\"\n[match]\ndrivers = [\"*\"]\nnetdevs = [\"ens1f1np1\", \"ens1f0np0\", \"eth4\"]\n[nccl]\nIB_HCA = \"auto\"\nIB_GID_INDEX = \"auto\"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	mlx51 := "/sys/devices/pci0000:3a/0000:3a:00.0/0000:3b:00.1/infiniband/mlx5_1/ports/1/gid_attrs/types/3"
	gidUnread := unreadableSnapshot(t, "cx6dx-ofed-lossless", "EIO", mlx51)
	imported := filepath.Join(t.TempDir(), "imp")
	if code, out, errs := run(t, nil, "import", "-o", imported, "--netdev", "eth4",
		repo("nic/dump/testdata/corpus/mlx5-netarbiter-mlnx_qos-dscp-pfc3.txt")); code != ExitOK {
		t.Fatalf("import: exit %d: %s %s", code, out, errs)
	}
	for name, c := range map[string]struct{ dir, why string }{
		"GID type unreadable": {gidUnread, "NCCL_IB_GID_INDEX: cannot derive: unknown: the GID table of mlx5_1:1 could not be read (GID 3 of mlx5_1 port 1: "},
		"imported, no device": {imported, "NCCL_IB_HCA: cannot derive: unknown: the RDMA devices behind eth4 are not known"},
	} {
		t.Run(name, func(t *testing.T) {
			code, out, errs := run(t, nil, "nccl-env", "-p", prof, "--snapshot", c.dir)
			if code != ExitError || out != "" || !strings.Contains(errs, c.why) {
				t.Errorf("nccl-env: exit %d, stdout %q, stderr:\n%s\nwant exit 1, nothing printed, and %q", code, out, errs, c.why)
			}
			code, out, _ = run(t, nil, "nccl-env", "-o", "json", "-p", prof, "--snapshot", c.dir)
			var doc struct {
				Complete bool `json:"complete"`
			}
			if err := json.Unmarshal([]byte(out), &doc); err != nil || code != ExitError || doc.Complete {
				t.Errorf("nccl-env -o json: exit %d, %v, complete %v; want exit 1, complete false\n%s", code, err, doc.Complete, out)
			}
		})
	}
}

// verify says nothing holds that it could not read: a setting the
// snapshot did not capture is listed as unknown, in text and JSON, and
// verify exits 1. Before, it counted the setting among those that "hold
// their profile values" and exited 0, with no unknown in the JSON.
func TestVerifyDoesNotCountUnknownAsHolding(t *testing.T) {
	dir := copySnapshot(t, "cx6dx-ofed-lossless")
	editJSON(t, filepath.Join(dir, snapshot.KernelFile), func(k map[string]any) {
		link := k["links"].(map[string]any)["ens1f0np0"].(map[string]any)
		delete(link, "pause")
		link["not_captured"] = []string{"pause"}
	})
	prof := repo("profiles/connectx-lossless.toml")
	code, out, errs := run(t, nil, "verify", "-p", prof, "--snapshot", dir)
	if code != ExitError || strings.Contains(out, "hold their profile values") ||
		!strings.Contains(out, "ens1f0np0.qos.global_pause: unknown (not in the snapshot (pause of ens1f0np0)), not checked") {
		t.Errorf("verify: exit %d\n%s%s\nwant exit 1 and the unknown setting named, no success line", code, out, errs)
	}
	code, out, _ = run(t, nil, "verify", "-o", "json", "-p", prof, "--snapshot", dir)
	vd, err := doc.DecodeVerify([]byte(out))
	if err != nil || code != ExitError || vd.OK || len(vd.Unknown) != 1 || vd.Unknown[0].Key != "ens1f0np0.qos.global_pause" {
		t.Errorf("verify -o json: exit %d, %v: %+v", code, err, vd)
	}
	validDoc(t, compileSchema(t, "verify"), out)
}

// apply of a plan with nothing to change but a setting it cannot read,
// and apply --dry-run of any plan with one, exit 1 as the apply of that
// plan would (README: such a plan "changes nothing and exits 1"); with
// --skip-unreadable they exit 0. Before, both exited 0.
func TestApplyWithUnreadableSettingExitsOneWithNothingToChange(t *testing.T) {
	root, sim := fixturehost.Copy(t, "cx6dx-ofed-factory")
	prof := repo("profiles/connectx-lossless.toml")
	state := t.TempDir()
	// cnp_dscp, a directory where the attribute should be: unreadable.
	attr := filepath.Join(root, "sys/class/net/ens1f0np0/ecn/roce_np/cnp_dscp")
	real, err := filepath.EvalSymlinks(attr)
	if err != nil {
		t.Fatal(err)
	}
	breakIt := func() {
		t.Helper()
		if err := os.Remove(real); err != nil {
			t.Fatal(err)
		}
		if err := os.Mkdir(real, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	breakIt()
	if code, out, errs := run(t, sim, "--root", root, "--state-dir", state, "apply", "--dry-run", "-p", prof); code != ExitError || !strings.Contains(errs, "nothing was changed") {
		t.Errorf("apply --dry-run with an unreadable setting: exit %d, want 1\n%s%s", code, out, errs)
	}
	if code, out, errs := run(t, sim, "--root", root, "--state-dir", state, "apply", "--soak", "0", "--skip-unreadable", "-p", prof); code != ExitOK {
		t.Fatalf("apply --skip-unreadable: exit %d\n%s%s", code, out, errs)
	}
	before := fixturehost.Files(t, root)
	code, out, errs := run(t, sim, "--root", root, "--state-dir", state, "apply", "-p", prof)
	if code != ExitError || !strings.Contains(errs, "cnp_dscp: cannot read") {
		t.Errorf("apply with nothing to change but an unreadable setting: exit %d, want 1 naming it\n%s%s", code, out, errs)
	}
	if code, _, _ := run(t, sim, "--root", root, "--state-dir", state, "apply", "-o", "json", "-p", prof); code != ExitError {
		t.Errorf("apply -o json: exit %d, want 1", code)
	}
	if code, out, errs := run(t, sim, "--root", root, "--state-dir", state, "apply", "--skip-unreadable", "-p", prof); code != ExitOK {
		t.Errorf("apply --skip-unreadable with nothing to change: exit %d, want 0\n%s%s", code, out, errs)
	}
	if d := fixturehost.DiffTrees(before, fixturehost.Files(t, root)); len(d) > 0 {
		t.Errorf("files changed: %v", d)
	}
}
