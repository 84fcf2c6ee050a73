package host

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/rocectl/rocectl/internal/testkit/fixturehost"
	"github.com/rocectl/rocectl/nic"
	"github.com/rocectl/rocectl/policy"
	"github.com/rocectl/rocectl/port"
)

// A snapshot that says it did not capture the files a setting is read from
// (snapshot.json's not_captured) knows nothing about the driver: each
// setting kind that its registry entry says is read from files comes out
// unknown, naming the prefix, when those files are missing under such a
// prefix. The same tree without the not_captured list reports them
// unsupported or unreadable, never unknown: the list is what makes the
// difference. Each case drops the files of real fixture hosts, as a partial
// capture would leave them out; every kind with files must be covered.
func TestFilesNotCapturedAreUnknown(t *testing.T) {
	const roce = "[roce]\nmode = \"v2\"\ndefault_tos = 106\nverbs_traffic_class = 106\n"
	cases := []struct {
		name, fixture, profile string
		// drop is the host path whose files the capture left out, for
		// port p; prefix is the not_captured entry that says so.
		drop   func(p *port.Port) string
		prefix func(p *port.Port) string
		kinds  []policy.Kind
	}{
		{
			name: "DOCA-OFED ECN sysfs", fixture: "cx6dx-ofed-factory",
			profile: "[ecn]\nnp_priorities = [3]\ncnp_dscp = 48\n",
			drop:    func(p *port.Port) string { ofed, _, _ := nic.ECNDirs(*p); return ofed },
			prefix:  func(p *port.Port) string { ofed, _, _ := nic.ECNDirs(*p); return ofed },
			kinds:   []policy.Kind{policy.KindECNEnable, policy.KindECNParam},
		},
		{
			name: "upstream mlx5 debugfs", fixture: "cx7-upstream-factory",
			profile: "[ecn]\ncnp_dscp = 48\n",
			drop:    func(p *port.Port) string { _, _, mlx5 := nic.ECNDirs(*p); return mlx5 },
			prefix:  func(*port.Port) string { return "/sys/kernel/debug" },
			kinds:   []policy.Kind{policy.KindECNParam},
		},
		{
			name: "bnxt_re configfs", fixture: "bnxt-re-factory",
			profile: "[ecn]\ncnp_dscp = 48\n",
			drop:    func(p *port.Port) string { _, bnxt, _ := nic.ECNDirs(*p); return bnxt },
			prefix:  func(*port.Port) string { return "/sys/kernel/config/bnxt_re" },
			kinds:   []policy.Kind{policy.KindECNParam},
		},
		{
			// No configfs group: mainline bnxt_re's debugfs, named after
			// the PCI function, is where the settings would be.
			name: "bnxt_re mainline debugfs", fixture: "bnxt-re-factory",
			profile: "[ecn]\ncnp_dscp = 48\n",
			drop:    func(p *port.Port) string { _, bnxt, _ := nic.ECNDirs(*p); return bnxt },
			prefix:  func(*port.Port) string { return "/sys/kernel/debug" },
			kinds:   []policy.Kind{policy.KindECNParam},
		},
		{
			name: "rdma_cm configfs", fixture: "cx6dx-ofed-factory", profile: roce,
			drop:   func(p *port.Port) string { return "/sys/kernel/config/rdma_cm/" + p.RDMADevice },
			prefix: func(*port.Port) string { return "/sys/kernel/config" },
			kinds:  []policy.Kind{policy.KindRoCEMode, policy.KindRoCETOS},
		},
		{
			name: "RDMA device sysfs", fixture: "cx6dx-ofed-factory", profile: roce,
			drop:   func(p *port.Port) string { return "/sys/class/infiniband/" + p.RDMADevice + "/tc" },
			prefix: func(p *port.Port) string { return "/sys/class/infiniband/" + p.RDMADevice },
			kinds:  []policy.Kind{policy.KindTrafficClass},
		},
	}
	covered := map[policy.Kind]bool{}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			root, sim := fixturehost.Copy(t, c.fixture)
			pf := filepath.Join(t.TempDir(), "p.toml")
			if err := os.WriteFile(pf, []byte("[match]\ndrivers = [\"*\"]\n"+c.profile), 0o600); err != nil {
				t.Fatal(err)
			}
			p, err := policy.Load(pf, policy.LoadOptions{})
			if err != nil {
				t.Fatal(err)
			}
			found := (&Host{FS: nic.NewFS(root, false), K: sim}).Discover()
			if len(found.Ports) == 0 {
				t.Fatal("the fixture has no ports")
			}
			var prefixes []string
			for i := range found.Ports {
				pt := &found.Ports[i]
				dir := filepath.Join(root, c.drop(pt))
				if _, err := os.Stat(dir); err != nil {
					t.Fatalf("%s: the fixture has no %s to leave out: %v", pt.Netdev, c.drop(pt), err)
				}
				if err := os.RemoveAll(dir); err != nil {
					t.Fatal(err)
				}
				if pre := c.prefix(pt); !slices.Contains(prefixes, pre) {
					prefixes = append(prefixes, pre)
				}
			}
			observe := func(notCaptured []string) (*policy.Desired, *policy.Observed) {
				h := &Host{FS: nic.NewFS(root, false), K: sim, NotCaptured: notCaptured}
				d := policy.Resolve(p, h.Ports(h.Discover(), false))
				return d, h.Observe(d)
			}
			d, o := observe(prefixes)
			n := 0
			for _, dp := range d.Ports {
				for _, s := range dp.Settings {
					if !slices.Contains(c.kinds, s.Kind) {
						continue
					}
					n++
					why, ok := o.Unknown[s.Key]
					if !ok || !strings.Contains(why, " not captured)") {
						t.Errorf("%s: unknown %q (%v), want it unknown because not captured; unsupported %q, error %q",
							s.Key, why, ok, o.Unsupported[s.Key], o.Errors[s.Key])
						continue
					}
					covered[s.Kind] = true
				}
			}
			if n == 0 {
				t.Fatalf("the profile gives no setting of %v on %s", c.kinds, c.fixture)
			}
			// Without the list, the same missing files are the driver's
			// (or the tree's) answer.
			d, o = observe(nil)
			for _, dp := range d.Ports {
				for _, s := range dp.Settings {
					if _, unknown := o.Unknown[s.Key]; slices.Contains(c.kinds, s.Kind) && unknown {
						t.Errorf("%s: unknown (%s) with no not_captured list", s.Key, o.Unknown[s.Key])
					}
				}
			}
		})
	}
	for k, e := range kinds {
		if e.files != nil && !covered[k] {
			t.Errorf("kind %s is read from files, but no case shows it unknown when they were not captured", k)
		}
	}
}

// Cable length is mlx5's use of the PFC delay field, so a port whose
// driver nobody knows has an unknown cable length: not captured when the
// snapshot left the netdev's device out (an import without ethtool -i),
// unreadable on a source that should have said, and unsupported only for
// a driver known not to be mlx5.
func TestCableLengthOfAnUnknownDriver(t *testing.T) {
	root, sim := fixturehost.Copy(t, "cx6dx-ofed-factory")
	s := policy.Setting{Key: "ens1f0np0.qos.cable_length_m", Kind: policy.KindCableLength}
	read := func(driver string, notCaptured []string) (string, error) {
		h := &Host{FS: nic.NewFS(root, false), K: sim, NotCaptured: notCaptured}
		p := &port.Port{Netdev: "ens1f0np0", Driver: driver}
		v, _, err := readCableLength(h.newPortReader(p, ""), s, nil)
		return v, err
	}
	if v, err := read("mlx5_core", nil); err != nil || v != "7" {
		t.Errorf("mlx5_core: %q, %v; want the fixture's 7", v, err)
	}
	if _, err := read("", []string{"/sys"}); !errors.Is(err, nic.ErrNotCaptured) {
		t.Errorf("driver not captured: %v, want not captured", err)
	}
	if _, err := read("", nil); err == nil || isUnsupported(err) || errors.Is(err, nic.ErrNotCaptured) {
		t.Errorf("driver unknown on a full source: %v, want an error that is neither unsupported nor not captured", err)
	}
	if _, err := read("ice", nil); !isUnsupported(err) {
		t.Errorf("ice: %v, want unsupported", err)
	}
}
