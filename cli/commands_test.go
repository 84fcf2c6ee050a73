package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rocectl/rocectl/doc"
	"github.com/rocectl/rocectl/internal/testkit/fixturehost"
	"github.com/rocectl/rocectl/policy"
	"github.com/rocectl/rocectl/verify"
)

func TestVerifyReadBackOnFixtureHosts(t *testing.T) {
	code, out, errs := run(t, nil, "verify", "-p", repo("profiles/connectx-lossless.toml"), "--snapshot", repo("testdata/hosts/cx6dx-ofed-lossless"))
	if code != ExitOK || !strings.Contains(out, "setting(s) hold their profile values") {
		t.Fatalf("verify on the configured host: exit %d\n%s%s", code, out, errs)
	}
	code, out, _ = run(t, nil, "verify", "-p", repo("profiles/connectx-lossless.toml"), "--snapshot", repo("testdata/hosts/cx6dx-ofed-factory"))
	if code != ExitError || !strings.Contains(out, "verify: ens1f0np0.qos.pfc: want [3], have []") {
		t.Fatalf("verify on the factory host: exit %d\n%s", code, out)
	}
	// Loopback needs verbs: the default build says so instead of pretending.
	code, out, errs = run(t, nil, "verify", "--loopback", "-p", repo("profiles/connectx-lossless.toml"), "--snapshot", repo("testdata/hosts/cx6dx-ofed-lossless"))
	out += errs
	if code != ExitError || !strings.Contains(out, "verbs support not built in") && !strings.Contains(out, "no RoCE v2 IPv4 GID") && !strings.Contains(out, "no such") {
		t.Fatalf("verify --loopback: exit %d\n%s", code, out)
	}
}

// --size overrides [verify] message_size within the profile's bounds; a
// size out of them is refused before anything runs.
func TestVerifySizeFlag(t *testing.T) {
	prof, snap := repo("profiles/connectx-lossless.toml"), repo("testdata/hosts/cx6dx-ofed-lossless")
	if code, out, errs := run(t, nil, "verify", "--size", "1MiB", "-p", prof, "--snapshot", snap); code != ExitOK {
		t.Errorf("--size 1MiB: exit %d\n%s%s", code, out, errs)
	}
	for _, tc := range []struct{ size, want string }{
		{"0", "--size must be 1 byte to 1GiB, not 0"},
		{"2GiB", "--size must be 1 byte to 1GiB, not 2GiB"},
		{"lots", `--size: "lots" is not a size`},
	} {
		code, out, errs := run(t, nil, "verify", "--size", tc.size, "-p", prof, "--snapshot", snap)
		if code != ExitError || !strings.Contains(errs, tc.want) || out != "" {
			t.Errorf("--size %s: exit %d, stdout %q, stderr %q, want %q", tc.size, code, out, errs, tc.want)
		}
	}
}

func TestNCCLEnvFormatsAndWrite(t *testing.T) {
	snap := repo("testdata/hosts/cx6dx-ofed-lossless")
	// This host's two ports have their IPv4 RoCE v2 GID at different
	// indexes (as the captured GID tables do), so no single index fits:
	// "auto" leaves the choice to NCCL's per-device selection and says so.
	code, out, errs := run(t, nil, "nccl-env", "-p", repo("profiles/base.toml"), "--snapshot", snap)
	if code != ExitOK || !strings.Contains(errs, "NCCL_IB_GID_INDEX: dynamic: ports disagree (mlx5_0:1=5, mlx5_1:1=3); NCCL ≥ 2.21 selects per device with ROCE_VERSION_NUM=2, ADDR_FAMILY=AF_INET\n") {
		t.Fatalf("exit %d\n%s%s", code, out, errs)
	}
	for _, want := range []string{"NCCL_IB_HCA==mlx5_0:1,mlx5_1:1\n", "NCCL_IB_TC=106\n", "NCCL_IB_GID_INDEX=-1\nNCCL_IB_ROCE_VERSION_NUM=2\nNCCL_IB_ADDR_FAMILY=AF_INET\n"} {
		if !strings.Contains(out, want) {
			t.Errorf("env output lacks %q:\n%s", want, out)
		}
	}
	_, out, _ = run(t, nil, "nccl-env", "--format", "shell", "-p", repo("profiles/base.toml"), "--snapshot", snap)
	if !strings.Contains(out, "export NCCL_IB_HCA='=mlx5_0:1,mlx5_1:1'\n") && !strings.Contains(out, "export NCCL_IB_HCA==mlx5_0:1,mlx5_1:1\n") {
		t.Errorf("shell output:\n%s", out)
	}
	_, out, _ = run(t, nil, "nccl-env", "-o", "json", "-p", repo("profiles/base.toml"), "--snapshot", snap)
	var nd doc.NCCLEnv
	if err := json.Unmarshal([]byte(out), &nd); err != nil || nd.Variables["NCCL_IB_TC"] != "106" || !nd.Complete ||
		nd.GIDIndex == nil || nd.GIDIndex.Mode != "dynamic" || nd.SchemaVersion != 1 {
		t.Errorf("json output %q: %v", out, err)
	}

	// --write into a copy of the host's root: the whole list.
	root := t.TempDir()
	os.MkdirAll(filepath.Join(root, "etc"), 0o755)
	// A copy, not a symlink out of the root: --root confines every path
	// to the tree.
	if err := os.CopyFS(filepath.Join(root, "sys"), os.DirFS(filepath.Join(snap, "sys"))); err != nil {
		t.Fatal(err)
	}
	code, _, errs = run(t, nil, "--root", root, "nccl-env", "-p", repo("profiles/fat-tree-32gpu-100g.toml"), "--write", "/etc/nccl.conf")
	data, err := os.ReadFile(filepath.Join(root, "etc/nccl.conf"))
	if code != ExitOK || err != nil || !strings.Contains(string(data), "NCCL_IB_GID_INDEX=-1\n") || !strings.Contains(string(data), "NCCL_IB_TIMEOUT=22\n") || !strings.HasPrefix(string(data), "# BEGIN rocectl managed block") {
		t.Fatalf("write: exit %d %v\n%s\n%s", code, err, errs, data)
	}

	// pre-2.21 NCCL cannot select per device: refused with the reason,
	// and neither a partial list nor a partial file.
	legacy := filepath.Join(t.TempDir(), "legacy.toml")
	os.WriteFile(legacy, []byte("include = [\""+repo("profiles/fat-tree-32gpu-100g.toml")+"\"]\n[nccl]\ngeneration = \"pre-2.21\"\n"), 0o600)
	os.Remove(filepath.Join(root, "etc/nccl.conf"))
	code, out, errs = run(t, nil, "--root", root, "nccl-env", "-p", legacy, "--write", "/etc/nccl.conf")
	if code != ExitError || out != "" || !strings.Contains(errs, "NCCL_IB_GID_INDEX: cannot derive: ports disagree (mlx5_0:1=5, mlx5_1:1=3); with generation = \"pre-2.21\"") {
		t.Fatalf("pre-2.21: exit %d\n%s%s", code, out, errs)
	}
	if _, err := os.Stat(filepath.Join(root, "etc/nccl.conf")); !os.IsNotExist(err) {
		t.Errorf("pre-2.21: a file was written: %v", err)
	}
	code, out, _ = run(t, nil, "--root", root, "nccl-env", "-o", "json", "-p", legacy)
	nd = doc.NCCLEnv{}
	if err := json.Unmarshal([]byte(out), &nd); code != ExitError || err != nil || nd.Complete || len(nd.Variables) != 0 || len(nd.Errors) != 1 || nd.GIDIndex.Mode != "refused" {
		t.Errorf("pre-2.21 json: exit %d %v\n%s", code, err, out)
	}
}

// Every shipped host with the shipped profiles: a complete list and exit
// 0, or (bnxt, which connectx-lossless does not match) nothing to derive,
// exit 0, and exit 1 with --require-match.
func TestNCCLEnvOnShippedHosts(t *testing.T) {
	hosts, _ := filepath.Glob(repo("testdata/hosts/*"))
	profiles, _ := filepath.Glob(repo("profiles/*.toml"))
	if len(hosts) < 4 || len(profiles) < 4 {
		t.Fatalf("hosts %v, profiles %v", hosts, profiles)
	}
	for _, h := range hosts {
		for _, p := range profiles {
			t.Run(filepath.Base(h)+"/"+filepath.Base(p), func(t *testing.T) {
				code, out, errs := run(t, nil, "nccl-env", "-o", "json", "-p", p, "--snapshot", h)
				var nd doc.NCCLEnv
				if err := json.Unmarshal([]byte(out), &nd); err != nil || code != ExitOK || !nd.Complete || len(nd.Errors) != 0 {
					t.Fatalf("exit %d %v\n%s%s", code, err, out, errs)
				}
				if nd.Message != "" {
					if len(nd.Variables) != 0 {
						t.Errorf("variables without a matched port: %v", nd.Variables)
					}
					if code, _, _ := run(t, nil, "nccl-env", "--require-match", "-p", p, "--snapshot", h); code != ExitError {
						t.Errorf("--require-match without a matched port: exit %d", code)
					}
					return
				}
				prof, err := policy.Load(p, policy.LoadOptions{AllowInsecure: true})
				if err != nil {
					t.Fatal(err)
				}
				if want := len(prof.NCCL.Vars) > 0; want != (len(nd.Variables) > 0) || len(nd.Order) != len(nd.Variables) {
					t.Errorf("variables %v, order %v", nd.Variables, nd.Order)
				}
			})
		}
	}
}

func TestTopoCommand(t *testing.T) {
	dirs, _ := filepath.Glob(repo("nic/testdata/pci/*"))
	var root string
	for _, d := range dirs {
		if strings.Contains(d, "hgx") {
			root = d
		}
	}
	if root == "" {
		t.Fatal("no HGX PCI fixture")
	}
	code, out, errs := run(t, nil, "--root", root, "topo")
	if code != ExitOK || !strings.Contains(out, "NCCL_IB_HCA==") || !strings.Contains(out, "PIX") {
		t.Fatalf("exit %d\n%s%s", code, out, errs)
	}
}

func TestJSONOnEarlyErrorsAndRequireMatch(t *testing.T) {
	code, out, _ := run(t, nil, "audit", "-o", "json", "-p", "/nonexistent.toml", "--snapshot", repo("testdata/hosts/cx6dx-ofed-factory"))
	var nd doc.Plan
	if code != ExitError || json.Unmarshal([]byte(out), &nd) != nil || len(nd.Errors) != 1 || !strings.Contains(nd.Errors[0], "no such file") {
		t.Fatalf("exit %d, stdout %q", code, out)
	}
	// A profile for mlx5 on a Broadcom host: nothing to do, unless the
	// caller (a boot unit) requires a match.
	code, _, _ = run(t, nil, "audit", "-p", repo("profiles/lossy-ecn-only.toml"), "--snapshot", repo("testdata/hosts/bnxt-re-factory"))
	if code != ExitOK {
		t.Fatalf("no match: exit %d", code)
	}
	code, _, errs := run(t, nil, "audit", "--require-match", "-p", repo("profiles/lossy-ecn-only.toml"), "--snapshot", repo("testdata/hosts/bnxt-re-factory"))
	if code != ExitError || !strings.Contains(errs, "no RoCE port to work on (--require-match): no RoCE port matches the profile's [match]") ||
		strings.Contains(errs, "nothing to do") {
		t.Fatalf("--require-match: exit %d\n%s", code, errs)
	}
}

// One rule for "nothing matched" (issue 34, item 12): on a host where the
// profile matches no RoCE port (an mlx5 profile on the Broadcom host),
// every command says so and exits 0; under --require-match every one
// exits 1 with an error that says what matched nothing, never "nothing
// to do". topo, which has no profile, applies it to a host without an
// RDMA NIC.
func TestNothingMatchedIsOneRule(t *testing.T) {
	root, sim := fixturehost.Copy(t, "bnxt-re-factory")
	prof := repo("profiles/lossy-ecn-only.toml")
	empty := t.TempDir()
	for _, d := range []string{"sys/class/net", "sys/bus/pci/devices"} {
		if err := os.MkdirAll(filepath.Join(empty, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for _, c := range []struct {
		args []string
		said string // what the command says without --require-match
	}{
		{[]string{"audit", "-p", prof}, "No RoCE port matches the profile's [match]: nothing to do."},
		{[]string{"apply", "--dry-run", "-p", prof}, "No RoCE port matches the profile's [match]: nothing to do."},
		{[]string{"verify", "-p", prof}, "No RoCE port matches the profile's [match]: nothing checked."},
		{[]string{"nccl-env", "-p", prof}, "No RoCE port matches the profile's [match]: nothing to do."},
		{[]string{"peer", "-p", prof}, "No RoCE port matches the profile's [match]: nothing checked."},
		{[]string{"watch", "--once", "--interval", "10ms", "-p", prof}, "Nothing to watch: no RoCE port matches the profile's [match]"},
		{[]string{"--root", empty, "topo"}, "No NVIDIA GPU and no RDMA NIC found."},
	} {
		name := strings.Join(c.args, " ")
		args := append([]string{"--root", root}, c.args...)
		code, out, errs := run(t, sim, args...)
		if code != ExitOK || !strings.Contains(out+errs, c.said) {
			t.Errorf("%s: exit %d, want 0 and %q\n%s%s", name, code, c.said, out, errs)
		}
		code, out, errs = run(t, sim, append(args, "--require-match")...)
		if code != ExitError || !strings.Contains(errs, "(--require-match): no R") || strings.Contains(out+errs, "nothing to do") {
			t.Errorf("%s --require-match: exit %d, want 1 and what matched nothing\n%s%s", name, code, out, errs)
		}
	}
	// verify -o json: matched_ports 0 and why, ok without a check.
	_, out, _ := run(t, sim, "--root", root, "verify", "-o", "json", "-p", prof)
	var v doc.Verify
	if err := json.Unmarshal([]byte(out), &v); err != nil || v.MatchedPorts == nil || *v.MatchedPorts != 0 || !strings.Contains(v.Message, "nothing checked") {
		t.Errorf("verify -o json: %v\n%s", err, out)
	}
}

// verify --loopback on a build without verbs is an error on any host,
// one where no port matched too: before, it said "ok": true there.
func TestVerifyLoopbackWithoutVerbsIsAnError(t *testing.T) {
	if verify.VerbsBuiltIn() {
		t.Skip("this test binary has verbs")
	}
	root, sim := fixturehost.Copy(t, "bnxt-re-factory")
	code, out, errs := run(t, sim, "--root", root, "verify", "--loopback", "-o", "json", "-p", repo("profiles/lossy-ecn-only.toml"))
	var v doc.Verify
	if code != ExitError || json.Unmarshal([]byte(out), &v) != nil || v.OK || !strings.Contains(errs, "verbs support not built in") {
		t.Errorf("exit %d, ok %v\n%s%s", code, v.OK, out, errs)
	}
}
