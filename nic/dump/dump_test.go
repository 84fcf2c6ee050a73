package dump

import (
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite testdata/golden")

type parsed struct {
	Blocks   []Block
	Warnings []string
}

func parseFile(t *testing.T, path string) parsed {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	blocks, warns := Parse(filepath.Base(path), b)
	p := parsed{Blocks: blocks, Warnings: []string{}}
	for _, w := range warns {
		p.Warnings = append(p.Warnings, w.String())
	}
	return p
}

// TestCorpusGolden parses every real dump in testdata/corpus and compares
// the result with its golden file: kinds recognised by content, values,
// and the line each came from.
func TestCorpusGolden(t *testing.T) {
	files, _ := filepath.Glob("testdata/corpus/*.txt")
	if len(files) < 10 {
		t.Fatalf("corpus has %d files", len(files))
	}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			p := parseFile(t, f)
			if len(p.Blocks) == 0 {
				t.Fatalf("nothing recognised; warnings %v", p.Warnings)
			}
			got, err := json.MarshalIndent(p, "", "  ")
			if err != nil {
				t.Fatal(err)
			}
			got = append(got, '\n')
			golden := filepath.Join("testdata/golden", strings.TrimSuffix(filepath.Base(f), ".txt")+".json")
			if *update {
				if err := os.WriteFile(golden, got, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != string(want) {
				t.Errorf("parse differs from %s (go test -update to accept):\n%s", golden, got)
			}
		})
	}
}

// TestMlnxQosMaxBufferSize: OFED 23.x appends max_buffer_size=N to the
// receive buffer row; the old parser stopped with strconv's "invalid
// syntax" on it. The row below has the shape the issue quotes (built for
// the test, not a corpus capture).
func TestMlnxQosMaxBufferSize(t *testing.T) {
	const text = "DCBX mode: OS controlled\nPriority trust state: dscp\nReceive buffer size (bytes): 130944,130944,0,0,0,0,0,0,max_buffer_size=4151520\nCable len: 7\nPFC configuration:\n\tpriority    0   1   2   3   4   5   6   7\n\tenabled     0   0   0   1   0   0   0   0\n\tbuffer      0   0   0   1   0   0   0   0\n"
	blocks, warns := Parse("q.txt", []byte(text))
	if len(warns) != 0 || len(blocks) != 1 {
		t.Fatalf("blocks %d, warnings %v", len(blocks), warns)
	}
	q := blocks[0].Qos
	if q.MaxBufferSize != 4151520 || len(q.BufferSize) != 8 || q.BufferSize[1] != 130944 {
		t.Errorf("buffers %v max %d", q.BufferSize, q.MaxBufferSize)
	}
	if q.Prio2Buffer == nil || q.Prio2Buffer[3] != 1 || q.PFC == nil || !q.PFC[3] {
		t.Errorf("pfc %v prio2buffer %v", q.PFC, q.Prio2Buffer)
	}
	if q.At["buffer_size"].Line != 3 || q.TSA != nil {
		t.Errorf("at %v, TSA %v (no tc rows: must stay unknown)", q.At, q.TSA)
	}
}

// TestSessionWithPrompts: one pasted terminal session with several
// commands and interfaces; prompt lines name the interface of dumps that
// do not name it themselves, and unrecognised text is a warning.
func TestSessionWithPrompts(t *testing.T) {
	const text = `[root@gpu1 ~]# ethtool -a ens1f0np0
Pause parameters for ens1f0np0:
Autonegotiate:	off
RX:		on
TX:		on

[root@gpu1 ~]# ethtool -S ens1f1np1 | grep pause
     tx_pause_ctrl_phy: 12
     rx_pause_ctrl_phy: 0
[root@gpu1 ~]# mlnx_qos -i ens1f1np1
DCBX mode: OS controlled
Priority trust state: pcp
Cable len: 7
[root@gpu1 ~]# uptime
 10:00:01 up 3 days
$ ip -d -s link show
4: ens1f0np0: <BROADCAST,MULTICAST,UP,LOWER_UP> mtu 9000 qdisc mq state UP mode DEFAULT group default qlen 1000
    link/ether 0c:42:a1:5d:4d:b8 brd ff:ff:ff:ff:ff:ff promiscuity 0 minmtu 68 maxmtu 9978 addrgenmode eui64 parentbus pci parentdev 0000:3b:00.0
    RX:  bytes packets errors dropped  missed   mcast
         1000      10      0       0       0       0
9: ens1f0np0.100@ens1f0np0: <BROADCAST,MULTICAST,UP,LOWER_UP> mtu 1500 qdisc noqueue state UP mode DEFAULT group default qlen 1000
    link/ether 0c:42:a1:5d:4d:b8 brd ff:ff:ff:ff:ff:ff promiscuity 0 minmtu 0 maxmtu 65535
    vlan protocol 802.1Q id 100 <REORDER_HDR> addrgenmode eui64
`
	blocks, warns := Parse("s.txt", []byte(text))
	if len(warns) != 1 || warns[0].At.Line != 15 {
		t.Errorf("warnings %v, want one for uptime's output at line 15", warns)
	}
	if len(blocks) != 4 {
		t.Fatalf("%d blocks", len(blocks))
	}
	if b := blocks[0]; b.Kind != KindEthtoolA || b.Netdev != "ens1f0np0" || b.Pause == nil || !b.Pause.RX || !b.Pause.TX || b.Pause.Autoneg {
		t.Errorf("ethtool -a: %+v %+v", b, b.Pause)
	}
	if b := blocks[1]; b.Kind != KindEthtoolS || b.Netdev != "ens1f1np1" || !b.Stats.Partial || b.Stats.Values["tx_pause_ctrl_phy"] != 12 || func() int { at, _ := b.Stats.At("rx_pause_ctrl_phy"); return at.Line }() != 9 {
		t.Errorf("ethtool -S: %+v %+v", b, b.Stats)
	}
	if b := blocks[2]; b.Kind != KindMlnxQos || b.Netdev != "ens1f1np1" || b.Qos.Trust != "pcp" {
		t.Errorf("mlnx_qos: %+v", b)
	}
	b := blocks[3]
	if b.Kind != KindIPLink || len(b.Links) != 2 {
		t.Fatalf("ip link: %+v", b)
	}
	if l := b.Links[0]; l.Name != "ens1f0np0" || l.MTU != 9000 || l.MaxMTU != 9978 || l.OperState != "up" || !l.AdminUp || l.ParentDev != "0000:3b:00.0" || l.MAC != "0c:42:a1:5d:4d:b8" {
		t.Errorf("link 0: %+v", l)
	}
	if l := b.Links[1]; l.Name != "ens1f0np0.100" || l.Parent != "ens1f0np0" || l.VLANID != 100 {
		t.Errorf("vlan: %+v", l)
	}
}

// FuzzParse: no input panics, and every value reported comes from a line
// of the input (no invented counters or interfaces).
func FuzzParse(f *testing.F) {
	files, _ := filepath.Glob("testdata/corpus/*.txt")
	for _, p := range files {
		b, _ := os.ReadFile(p)
		f.Add(b)
	}
	f.Add([]byte("Receive buffer size (bytes): 1,2,3,4,5,6,7,8,max_buffer_size=9\n"))
	f.Add([]byte("$ ethtool -S eth0\nNIC statistics:\n     tx_pause_ctrl_phy: 5\n$ ethtool -S eth0\nNIC statistics:\n     tx_pause_ctrl_phy: 9\n"))
	f.Add([]byte(`[{"ifindex":0,"ifname":"mlx5_0","port":1,"state":"ACTIVE","physical_state":"LINK_UP","netdev":"eth0"}]` + "\n"))
	f.Add([]byte(`{"param":{"pci/0000:01:00.0":[{"name":"enable_roce","type":"generic","values":[{"cmode":"driverinit","value":true}]}]}}` + "\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		blocks, warns := Parse("f", b)
		lines := strings.Split(strings.ReplaceAll(string(b), "\r\n", "\n"), "\n")
		within := func(s Source) {
			if s.Line < 1 || s.Line > len(lines) {
				t.Fatalf("source line %d outside the input's %d lines", s.Line, len(lines))
			}
		}
		for _, w := range warns {
			within(w.At)
		}
		for _, bl := range blocks {
			within(bl.At)
			if bl.Netdev != "" && !strings.Contains(string(b), bl.Netdev) {
				t.Fatalf("netdev %q is not in the input", bl.Netdev)
			}
			if bl.Stats != nil {
				for _, name := range bl.Stats.Names() {
					at, _ := bl.Stats.At(name)
					within(at)
					if !strings.Contains(lines[at.Line-1], name) {
						t.Fatalf("counter %q not on its line %q", name, lines[at.Line-1])
					}
				}
			}
			for _, g := range bl.GIDs {
				within(g.At)
				if !strings.Contains(lines[g.At.Line-1], g.Device) {
					t.Fatalf("GID device %q not on its line", g.Device)
				}
			}
			if q := bl.Qos; q != nil {
				for _, at := range q.At {
					within(at)
				}
			}
			onLine := func(at Source, what string) {
				within(at)
				if !strings.Contains(lines[at.Line-1], what) {
					t.Fatalf("%q not on its line %q", what, lines[at.Line-1])
				}
			}
			for _, d := range bl.Devices {
				onLine(d.At, d.Name)
				for _, p := range d.Ports {
					onLine(p.At, "port")
					for _, g := range p.GIDs {
						onLine(g.At, g.GID)
					}
				}
			}
			for _, l := range bl.RDMALinks {
				onLine(l.At, l.Device)
			}
			for _, p := range bl.DevlinkParams {
				within(p.At)
				if !strings.Contains(string(b), p.Name) || !strings.Contains(string(b), p.Dev) {
					t.Fatalf("devlink %s %s not in the input", p.Dev, p.Name)
				}
				for _, v := range p.Values {
					within(v.At)
				}
			}
			for _, f := range bl.PCI {
				onLine(f.At, f.Addr[len(f.Addr)-7:])
				for _, at := range f.AtOf {
					within(at)
				}
			}
			for _, n := range bl.PCITree {
				within(n.At)
			}
			if g := bl.GPUTopo; g != nil {
				for row, at := range g.At {
					onLine(at, strings.TrimSuffix(row, " legend"))
				}
			}
		}
		// Build invents nothing either: what it records came from a line
		// of the input, and an inference names lines that exist.
		im, err := Build(blocks, "eth0")
		if err != nil {
			return
		}
		for dev, ps := range im.State.Devlink {
			for _, p := range ps {
				if !strings.Contains(string(b), dev) || !strings.Contains(string(b), p.Name) {
					t.Fatalf("devlink %s %s not in the input", dev, p.Name)
				}
			}
		}
		for _, ls := range im.State.Links {
			for _, inf := range ls.Inferred {
				for _, from := range inf.From {
					_, n, _ := strings.Cut(from, "f:")
					if ln, err := strconv.Atoi(n); err != nil || ln < 1 || ln > len(lines) {
						t.Fatalf("inference from %q outside the input", from)
					}
				}
			}
		}
		for _, f := range im.Facts {
			within(f.From)
		}
	})
}

// TestEthtoolAEndsAtForeignKey: a pasted `ethtool -a` runs straight into
// the next command's output, with no blank line or prompt between them.
// The first "key: value" line that is not a pause parameter ends the pause
// block, and is read as the start of the next one.
func TestEthtoolAEndsAtForeignKey(t *testing.T) {
	const text = `Pause parameters for ens1f0np0:
Autonegotiate:	off
RX:		off
TX:		on
DCBX mode: OS controlled
Priority trust state: dscp
Cable len: 7
`
	blocks, warns := Parse("s.txt", []byte(text))
	if len(warns) != 0 || len(blocks) != 2 {
		t.Fatalf("blocks %+v, warnings %v", blocks, warns)
	}
	if b := blocks[0]; b.Kind != KindEthtoolA || b.Pause == nil || b.Pause.RX || !b.Pause.TX {
		t.Errorf("ethtool -a: %+v %+v", b, b.Pause)
	}
	if b := blocks[1]; b.Kind != KindMlnxQos || b.At.Line != 5 || b.Qos.Trust != "dscp" {
		t.Errorf("mlnx_qos: %+v", b)
	}
}

// TestStripTerminalEscapes: terminal control sequences are dropped, the
// text around them kept byte for byte. The first case is the header of
// the real H200 `nvidia-smi topo -m` in the corpus.
func TestStripTerminalEscapes(t *testing.T) {
	for in, want := range map[string]string{
		"\t\x1b[4mGPU0\tCPU Affinity\x1b[0m":             "\tGPU0\tCPU Affinity",
		"\x1b[01;31m\x1b[Kprio3\x1b[m\x1b[K: 12":         "prio3: 12", // grep --color
		"\x1b[32mUP\x1b(B\x1b[m eth0":                    "UP eth0",   // tput sgr0
		"\x1b]0;root@h: ~\x07# mlnx_qos -i eth0":         "# mlnx_qos -i eth0",
		"\x1b]8;;file:///x\x1b\\link\x1b]8;;\x1b\\ done": "link done", // OSC 8 hyperlink
		"no escapes\there":                               "no escapes\there",
		"cut at the end \x1b[":                           "cut at the end ",
	} {
		if got := stripTerminalEscapes(in); got != want {
			t.Errorf("stripTerminalEscapes(%q) = %q, want %q", in, got, want)
		}
	}
}
