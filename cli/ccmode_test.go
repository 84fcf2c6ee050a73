package cli

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rocectl/rocectl/doc"
)

// [ecn] mode on the shipped hosts (issue 35, item 1): a mode the port's
// driver can run through rocectl is planned as writes (mode = "off" on
// DOCA-OFED mlx5: ECN off on the lossless priority, nothing else); one it
// cannot is refused on that port at plan time, naming the modes it can
// and where the others live; apply would change nothing.
func TestCCModePerDriver(t *testing.T) {
	tmp := t.TempDir()
	profile := func(name, mode string) string {
		p := filepath.Join(tmp, name+".toml")
		body := fmt.Sprintf("name = %q\ninclude = [%q]\n[match]\ndrivers = [\"*\"]\n", name, repo("profiles/pfc-only.toml"))
		if mode != "" {
			body += fmt.Sprintf("[ecn]\nmode = %q\n", mode)
		}
		if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	for _, c := range []struct {
		host, mode string
		changes    []string // ECN changes expected
		refused    string   // in every refusal, "" for none
		after      string   // what each ECN change writes, "" for "off"
	}{
		{"cx6dx-ofed-factory", "", []string{"mlx5_0.ecn.np.enable.3", "mlx5_0.ecn.rp.enable.3", "mlx5_1.ecn.np.enable.3", "mlx5_1.ecn.rp.enable.3"}, "", ""},
		{"cx6dx-ofed-factory", "dctcp", nil, `mlx5_core cannot run congestion-control mode "dctcp" here; it can: dcqcn, off`, ""},
		{"cx7-upstream-factory", "", nil, `mlx5_core cannot run congestion-control mode "off" here; it can: dcqcn; on upstream mlx5 the priorities DCQCN acts on are set in firmware (ROCE_CC_PRIO_MASK_P`, ""},
		{"cx7-upstream-factory", "dcqcn", nil, "", ""},
		// bnxt_re's configfs cc group: "off" is its ecn_enable, already
		// 0 on the factory host; dcqcn-p is its cc_mode 1; DCTCP is not
		// bnxt_re's.
		{"bnxt-re-factory", "", nil, "", ""},
		{"bnxt-re-factory", "dcqcn-p", []string{"bnxt_re0.ecn.rp.cc_mode"}, "", "1"},
		{"bnxt-re-factory", "dctcp", nil, `bnxt_en cannot run congestion-control mode "dctcp" here; it can: dcqcn, dcqcn-d, dcqcn-p, off; bnxt_re's cc_mode holds DCQCN-D (0) and DCQCN-P (1)`, ""},
		// ice with irdma's configfs: every mode; the factory host's
		// switches are all off, so "off" is in sync and dctcp turns its
		// own on.
		{"ice-e810-factory", "", nil, "", ""},
		{"ice-e810-factory", "dctcp", []string{"irdma0.ecn.rp.roce_dctcp_enable"}, "", "1"},
	} {
		name := c.host + "/" + c.mode
		_, out, errs := run(t, nil, "audit", "-o", "json", "-p", profile(strings.ReplaceAll(name, "/", "-"), c.mode), "--snapshot", repo("testdata/hosts/"+c.host))
		var d doc.Plan
		if err := json.Unmarshal([]byte(out), &d); err != nil {
			t.Fatalf("%s: %v\n%s%s", name, err, out, errs)
		}
		var ecn []string
		for _, ch := range d.Changes {
			if strings.Contains(ch.Key, ".ecn.") {
				ecn = append(ecn, ch.Key)
				want := "off"
				if c.after != "" {
					want = c.after
				}
				if ch.After != want {
					t.Errorf("%s: %s -> %s, want %s", name, ch.Key, ch.After, want)
				}
			}
		}
		if strings.Join(ecn, " ") != strings.Join(c.changes, " ") {
			t.Errorf("%s: ECN changes %v, want %v", name, ecn, c.changes)
		}
		modeRefusals := 0
		for _, r := range d.Refused {
			if strings.HasSuffix(r.Key, ".ecn.mode") {
				modeRefusals++
				if c.refused == "" || !strings.Contains(r.Error, c.refused) {
					t.Errorf("%s: refused %s: %s", name, r.Key, r.Error)
				}
			}
		}
		if c.refused != "" && modeRefusals == 0 {
			t.Errorf("%s: no refusal, want %q", name, c.refused)
		}
	}
}
