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

// No shipped host prints a bare "unsupported" (issue 35, item 6): every
// reason names the port's driver and says where the setting lives
// instead ("; instead: ..."), or is the placement of a setting that
// another port owns (a VF's, set on its PF). Each shipped profile is
// audited, and each again with [match] taking every driver, so that the
// Broadcom host, which no shipped recipe selects, is audited too.
func TestNoBareUnsupportedOnShippedHosts(t *testing.T) {
	hostDirs, _ := filepath.Glob(repo("testdata/hosts/*"))
	profiles, _ := filepath.Glob(repo("profiles/*.toml"))
	if len(hostDirs) < 6 || len(profiles) < 5 {
		t.Fatalf("hosts %v, profiles %v", hostDirs, profiles)
	}
	tmp := t.TempDir()
	for _, p := range append([]string(nil), profiles...) {
		any := filepath.Join(tmp, "any-"+filepath.Base(p))
		body := fmt.Sprintf("name = \"any\"\ninclude = [%q]\n[match]\ndrivers = [\"*\"]\n", p)
		if err := os.WriteFile(any, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		profiles = append(profiles, any)
	}
	seen := map[string]bool{}
	for _, h := range hostDirs {
		for _, p := range profiles {
			_, out, errs := run(t, nil, "audit", "-o", "json", "-p", p, "--snapshot", h)
			var d doc.Plan
			if err := json.Unmarshal([]byte(out), &d); err != nil {
				t.Fatalf("%s on %s: %v\n%s%s", filepath.Base(p), filepath.Base(h), err, out, errs)
			}
			var ports []struct {
				Netdev     string `json:"netdev"`
				RDMADevice string `json:"rdma_device"`
				Driver     string `json:"driver"`
			}
			if err := json.Unmarshal(d.Ports, &ports); err != nil {
				t.Fatal(err)
			}
			driverOf := map[string]string{}
			for _, pt := range ports {
				driverOf[pt.Netdev], driverOf[pt.RDMADevice] = pt.Driver, pt.Driver
			}
			for _, u := range d.Unsupported {
				seen[filepath.Base(h)] = true
				placed := strings.Contains(u.Reason, "the PF owns the port's") || strings.Contains(u.Reason, `left alone unless [match] roles includes "vf"`)
				if placed {
					continue
				}
				drv := driverOf[u.Scope]
				if drv == "" && len(ports) > 0 {
					drv = ports[0].Driver // a LAG's slave: the bond's driver
				}
				if drv == "" || !strings.Contains(u.Reason, drv) || !strings.Contains(u.Reason, "; instead: ") {
					t.Errorf("%s on %s: %s: %q names no driver (%q) or no place instead", filepath.Base(p), filepath.Base(h), u.Key, u.Reason, drv)
				}
			}
		}
	}
	for _, h := range []string{"bnxt-re-factory", "cx7-upstream-factory", "ice-e810-factory"} {
		if !seen[h] {
			t.Errorf("no unsupported setting on %s: the test checks nothing there", h)
		}
	}
}
