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
	if got, commit := readRoot(t, root, bnxt+"/cnp_dscp"), readRoot(t, root, bnxt+"/apply"); got != "0x2e\n" || commit != "0x1\n" {
		t.Errorf("bnxt after SetParam 46: cnp_dscp %q, apply %q", got, commit)
	}
}
