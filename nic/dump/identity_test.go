package dump

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// parseFiles parses corpus files (by name) or inline dumps ("name=text").
func parseFiles(t *testing.T, files ...string) []Block {
	t.Helper()
	var blocks []Block
	for _, f := range files {
		name, text, inline := strings.Cut(f, "=")
		if !inline {
			b, err := os.ReadFile(filepath.Join("testdata", "corpus", f))
			if err != nil {
				t.Fatal(err)
			}
			name, text = f, string(b)
		}
		bs, _ := Parse(name, []byte(text))
		blocks = append(blocks, bs...)
	}
	return blocks
}

func TestCheckIdentity(t *testing.T) {
	qosDSCP := "mlx5-netarbiter-mlnx_qos-dscp-pfc3.txt"
	qosPCP := "mlx5-mlnx_qos-trust-pcp-default-centos12.txt"
	cases := []struct {
		name      string
		files     []string
		conflicts []string // keys, in order
		anonymous []string
	}{
		// The case: which of two mlnx_qos dumps of one --netdev
		// the snapshot held depended on the order of the arguments.
		{name: "two mlnx_qos of one netdev", files: []string{qosDSCP, qosPCP},
			conflicts: []string{"eth4 mlnx_qos output"}, anonymous: []string{qosDSCP, qosPCP}},
		{name: "the same mlnx_qos twice", files: []string{qosDSCP, "copy.txt=" + mustRead(t, qosDSCP)},
			anonymous: []string{qosDSCP, "copy.txt"}},
		// Prompts of two hosts: coyote2's ibv_devinfo, dev-canyon1's GPU
		// matrix.
		{name: "two hosts' prompts", files: []string{"mlx5-cx7-ibv_devinfo-4dev-stelline-coyote2.txt", "nvidia-smi-topo-m-2gpu-2nic-stelline-dev-canyon1.txt"},
			conflicts: []string{"host name"}},
		{name: "one host's prompts", files: []string{"mlx5-cx7-ibv_devinfo-4dev-stelline-coyote2.txt", "nvidia-smi-topo-m-4gpu-4nic-stelline-coyote2.txt"}},
		// Two hosts' GID tables: mlx5_0 port 1 has another default GID
		// and another netdev in each.
		{name: "two hosts' show_gids", files: []string{"mlx5-cx6-show_gids-ibm-spectrumscale.txt", "mlx5-show_gids-centos12-multidev.txt"},
			conflicts: []string{"mlx5_0/1 default GID", "mlx5_0/1 netdev"}},
		// An mlnx_qos dump next to a host's show_gids: no conflict, but
		// nothing ties it to that host.
		{name: "a dump without identity", files: []string{"mlx5-cx6-show_gids-ibm-spectrumscale.txt", qosDSCP},
			anonymous: []string{qosDSCP}},
		// ip link and ethtool -i disagreeing on the PCI function of ens1f0np0.
		{name: "PCI function", files: []string{
			"ip.txt=$ ip -d link show\n2: ens1f0np0: <BROADCAST,MULTICAST,UP,LOWER_UP> mtu 9000 qdisc mq state UP mode DEFAULT group default qlen 1000\n    link/ether 0c:42:a1:5d:4d:b8 brd ff:ff:ff:ff:ff:ff promiscuity 0 parentbus pci parentdev 0000:3b:00.0\n",
			"i.txt=$ ethtool -i ens1f0np0\ndriver: mlx5_core\nversion: 5.15.0\nfirmware-version: 22.36.1010 (MT_0000000359)\nbus-info: 0000:5e:00.0\n"},
			conflicts: []string{"ens1f0np0 PCI function"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			anonymous, err := CheckIdentity(parseFiles(t, c.files...), "eth4")
			var ie *IdentityError
			var keys []string
			if errors.As(err, &ie) {
				for _, cf := range ie.Conflicts {
					keys = append(keys, cf.Key)
					if cf.AAt.File == cf.BAt.File {
						t.Errorf("conflict within one file: %v", cf)
					}
				}
			}
			if (err != nil) != (c.conflicts != nil) || !slices.Equal(keys, c.conflicts) || (err != nil && !errors.Is(err, ErrConflict)) {
				t.Errorf("conflicts %q (%v), want %q", keys, err, c.conflicts)
			}
			if err != nil {
				for _, f := range c.files {
					name, _, _ := strings.Cut(f, "=")
					if !strings.Contains(err.Error(), name) {
						t.Errorf("the error does not name %s:\n%v", name, err)
					}
				}
			}
			if !slices.Equal(anonymous, c.anonymous) {
				t.Errorf("anonymous %q, want %q", anonymous, c.anonymous)
			}
		})
	}
}

// Within one file a later output of one interface is its later state (a
// session that set PFC, then showed it): not a conflict.
func TestCheckIdentityOneFileSession(t *testing.T) {
	a := mustRead(t, "mlx5-netarbiter-mlnx_qos-dscp-pfc3.txt")
	b := mustRead(t, "mlx5-mlnx_qos-trust-pcp-default-centos12.txt")
	text := "[root@gpu-17 ~]# mlnx_qos -i eth4\n" + a + "\n[root@gpu-17 ~]# mlnx_qos -i eth4\n" + b
	if _, err := CheckIdentity(parseFiles(t, "session.txt="+text), ""); err != nil {
		t.Errorf("%v", err)
	}
}

func TestPromptHost(t *testing.T) {
	for in, want := range map[string]string{
		"[root@node75 ~]# rdma link show":       "node75",
		"$ sonata@coyote2:~$ lspci -tv":         "coyote2",
		"user@gpu-17.example.net:/tmp# ip link": "gpu-17.example.net",
		"$ mlnx_qos -i eth4":                    "",
		"# ethtool -S eth4":                     "",
	} {
		if got := promptHost(in); got != want {
			t.Errorf("promptHost(%q) = %q, want %q", in, got, want)
		}
	}
}

func mustRead(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "corpus", name))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
