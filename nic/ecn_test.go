package nic

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rocectl/rocectl/port"
)

// ecnRoot writes files (host path -> content) under a temp root.
func ecnRoot(t *testing.T, files map[string]string) (string, FS) {
	t.Helper()
	root := t.TempDir()
	for p, c := range files {
		full := filepath.Join(root, p)
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(c), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return root, NewFS(root, false)
}

func readRoot(t *testing.T, root, p string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(root, p))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// Parameters are found directly under roce_np/ (the driver) or under
// roce_np/params/ (NVIDIA's docs), read and written where they are, and a
// missing one is unsupported without any file being created.
func TestECNParamLocations(t *testing.T) {
	const ofed = "/sys/class/net/ens1f0np0/ecn"
	root, fs := ecnRoot(t, map[string]string{
		ofed + "/roce_np/enable/3":           "0\n",
		ofed + "/roce_np/cnp_dscp":           "48\n",
		ofed + "/roce_rp/params/rpg_ai_rate": "5\n",
	})
	e, err := OpenECN(fs, port.Port{Netdev: "ens1f0np0", Driver: "mlx5_core"})
	if err != nil || e.Kind != ECNOFED {
		t.Fatalf("OpenECN = %+v, %v", e, err)
	}
	if v, err := e.Param("np", "cnp_dscp", "np_cnp_dscp"); err != nil || v != 48 {
		t.Errorf("cnp_dscp = %d, %v", v, err)
	}
	if v, err := e.Param("rp", "rpg_ai_rate", "rp_ai_rate"); err != nil || v != 5 {
		t.Errorf("params/rpg_ai_rate = %d, %v", v, err)
	}
	if err := e.SetParam("rp", "rpg_ai_rate", "rp_ai_rate", 7); err != nil {
		t.Fatal(err)
	}
	if got := readRoot(t, root, ofed+"/roce_rp/params/rpg_ai_rate"); got != "7\n" {
		t.Errorf("params/rpg_ai_rate holds %q after SetParam 7", got)
	}
	_, err = e.Param("np", "cnp_802p_prio", "np_cnp_prio")
	if !errors.Is(err, ErrUnsupported) || !strings.Contains(err.Error(), "roce_np has no cnp_802p_prio parameter") {
		t.Errorf("missing parameter: %v", err)
	}
	err = e.SetParam("np", "cnp_802p_prio", "np_cnp_prio", 6)
	if !errors.Is(err, ErrUnsupported) {
		t.Errorf("write of a missing parameter: %v", err)
	}
	for _, p := range []string{ofed + "/roce_np/cnp_802p_prio", ofed + "/roce_np/params/cnp_802p_prio"} {
		if _, err := os.Stat(filepath.Join(root, p)); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s was created (%v)", p, err)
		}
	}
}

func TestECNUpstreamAndBnxtParams(t *testing.T) {
	const cc = "/sys/kernel/debug/mlx5/0000:3b:00.0/cc_params"
	const bnxt = "/sys/kernel/config/bnxt_re/bnxt_re0/ports/1/cc"
	root, fs := ecnRoot(t, map[string]string{
		cc + "/np_cnp_dscp": "48\n",
		bnxt + "/cnp_dscp":  "0x30\n",
		bnxt + "/apply":     "0x0\n",
	})
	up, err := OpenECN(fs, port.Port{Netdev: "ens1f0np0", Driver: "mlx5_core", PCI: "0000:3b:00.0"})
	if err != nil || up.Kind != ECNUpstreamMlx5 {
		t.Fatalf("OpenECN upstream = %+v, %v", up, err)
	}
	if v, err := up.Param("np", "cnp_dscp", "np_cnp_dscp"); err != nil || v != 48 {
		t.Errorf("np_cnp_dscp = %d, %v", v, err)
	}
	if _, err := up.Param("np", "cnp_802p_prio", "np_cnp_prio"); !errors.Is(err, ErrUnsupported) ||
		!strings.Contains(err.Error(), "cc_params/np_cnp_prio is absent (needs a firmware capability)") {
		t.Errorf("absent cc param: %v", err)
	}
	if _, err := up.Param("rp", "dce_tcp_g", ""); !errors.Is(err, ErrUnsupported) ||
		!strings.Contains(err.Error(), "no equivalent of dce_tcp_g") {
		t.Errorf("param without upstream name: %v", err)
	}

	bn, err := OpenECN(fs, port.Port{Netdev: "ens2f0np0", RDMADevice: "bnxt_re0", PortNum: 1, Driver: "bnxt_en"})
	if err != nil || bn.Kind != ECNBnxt {
		t.Fatalf("OpenECN bnxt = %+v, %v", bn, err)
	}
	if v, err := bn.Param("np", "cnp_dscp", "np_cnp_dscp"); err != nil || v != 48 {
		t.Errorf("bnxt cnp_dscp = %d, %v", v, err)
	}
	if err := bn.SetParam("np", "cnp_dscp", "np_cnp_dscp", 46); err != nil {
		t.Fatal(err)
	}
	// configfs.c cnp_dscp_store only stages the value: the step that
	// wrote it commits once, after all its writes (apply_store).
	if commit := readRoot(t, root, bnxt+"/apply"); commit != "0x0\n" {
		t.Errorf("SetParam committed on its own: apply %q", commit)
	}
	if err := bn.Commit(); err != nil {
		t.Fatal(err)
	}
	if got, commit := readRoot(t, root, bnxt+"/cnp_dscp"), readRoot(t, root, bnxt+"/apply"); got != "0x2e\n" || commit != "0x1\n" {
		t.Errorf("bnxt after SetParam 46: cnp_dscp %q, apply %q", got, commit)
	}
}

// bnxt_re's per-priority enable is its configfs ecn_enable and roce_prio
// (configfs.c): a priority reads enabled when ECN is on and roce_prio is
// it. Mainline bnxt_re's debugfs (debugfs.c) names the CNP's DSCP
// alt_vlan_dscp under the PCI function's directory, takes decimal, and
// has no RoCE priority: its per-priority enable is unsupported, saying
// where the setting lives instead.
func TestBnxtEnableAndMainlineDebugfs(t *testing.T) {
	const bnxt = "/sys/kernel/config/bnxt_re/bnxt_re0/ports/1/cc"
	const dbg = "/sys/kernel/debug/bnxt_re/0000:ca:00.1/cc_config"
	root, fs := ecnRoot(t, map[string]string{
		bnxt + "/ecn_enable":   "0x1\n",
		bnxt + "/roce_prio":    "0x3\n",
		dbg + "/alt_vlan_dscp": "48\n",
		dbg + "/alt_vlan_pcp":  "6\n",
		dbg + "/enable_cc":     "1\n",
	})
	p := port.Port{Netdev: "enp202s0f1np1", RDMADevice: "bnxt_re0", PortNum: 1, Driver: "bnxt_en", PCI: "0000:ca:00.1"}
	bn, err := OpenECN(fs, p)
	if err != nil || bn.Kind != ECNBnxt {
		t.Fatalf("OpenECN bnxt configfs = %+v, %v", bn, err)
	}
	for prio := range 8 {
		on, err := bn.Enabled("rp", prio)
		if err != nil || on != (prio == 3) {
			t.Errorf("configfs rp enable %d = %v, %v", prio, on, err)
		}
	}
	if err := bn.SetEnabled("rp", 5, true); err != nil {
		t.Fatal(err)
	}
	if e, r := readRoot(t, root, bnxt+"/ecn_enable"), readRoot(t, root, bnxt+"/roce_prio"); e != "0x1\n" || r != "0x5\n" {
		t.Errorf("after enabling 5: ecn_enable %q roce_prio %q", e, r)
	}

	p.RDMADevice = "bnxt_re1" // no configfs group: mainline's debugfs
	db, err := OpenECN(fs, p)
	if err != nil || db.Kind != ECNBnxtDebugfs {
		t.Fatalf("OpenECN bnxt debugfs = %+v, %v", db, err)
	}
	if v, err := db.Param("np", "cnp_dscp", "np_cnp_dscp"); err != nil || v != 48 {
		t.Errorf("debugfs cnp_dscp = %d, %v", v, err)
	}
	if err := db.SetParam("np", "cnp_802p_prio", "np_cnp_prio", 5); err != nil {
		t.Fatal(err)
	}
	if got := readRoot(t, root, dbg+"/alt_vlan_pcp"); got != "5\n" {
		t.Errorf("debugfs alt_vlan_pcp after 5: %q", got)
	}
	if _, err := db.Enabled("rp", 3); !errors.Is(err, ErrUnsupported) || !strings.Contains(err.Error(), "roce_prio in configfs") {
		t.Errorf("debugfs per-priority enable: %v", err)
	}

	p.PCI = "0000:cb:00.0" // neither
	if _, err := OpenECN(fs, p); !errors.Is(err, ErrUnsupported) || !strings.Contains(err.Error(), "mainline bnxt_re's debugfs") {
		t.Errorf("bnxt without either interface: %v", err)
	}
}

// Intel's out-of-tree irdma: its configfs group holds one switch per
// algorithm for the device, read and written as 0/1; no per-priority
// enable and no CNP parameters; no group, or a group without the RoCE
// switches (iWARP), is unsupported saying which.
func TestIrdmaConfigfs(t *testing.T) {
	p := port.Port{Netdev: "enp59s0f0", RDMADevice: "irdma0", Driver: "ice", PCI: "0000:3b:00.0", PortNum: 1}
	const dir = "/sys/kernel/config/irdma/irdma0"
	root, fs := ecnRoot(t, map[string]string{dir + "/roce_dcqcn_enable": "0\n", dir + "/roce_dctcp_enable": "1\n", dir + "/roce_timely_enable": "0\n"})
	e, err := OpenECN(fs, p)
	if err != nil || e.Kind != ECNIrdma {
		t.Fatalf("OpenECN: %v %v", e, err)
	}
	if v, err := e.Param("rp", "roce_dctcp_enable", ""); err != nil || v != 1 {
		t.Errorf("dctcp %d %v", v, err)
	}
	if err := e.SetParam("rp", "roce_timely_enable", "", 1); err != nil || strings.TrimSpace(readRoot(t, root, dir+"/roce_timely_enable")) != "1" {
		t.Errorf("set timely: %v", err)
	}
	if _, err := e.Enabled("rp", 3); !errors.Is(err, ErrUnsupported) || !strings.Contains(err.Error(), "[ecn] mode") {
		t.Errorf("per-priority enable: %v", err)
	}
	if _, err := e.Param("np", "cnp_dscp", "np_cnp_dscp"); !errors.Is(err, ErrUnsupported) {
		t.Errorf("cnp_dscp: %v", err)
	}
	_, fs = ecnRoot(t, nil)
	if _, err := OpenECN(fs, p); !errors.Is(err, ErrUnsupported) || !strings.Contains(err.Error(), "mkdir") {
		t.Errorf("no group: %v", err)
	}
	_, fs = ecnRoot(t, map[string]string{dir + "/iw_dctcp_enable": "0\n"})
	if _, err := OpenECN(fs, p); !errors.Is(err, ErrUnsupported) || !strings.Contains(err.Error(), "iWARP") {
		t.Errorf("iWARP group: %v", err)
	}
}
