package cli

import (
	"fmt"
	"maps"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/rocectl/rocectl/apply"
	"github.com/rocectl/rocectl/host"
	"github.com/rocectl/rocectl/nic"
	"github.com/rocectl/rocectl/nic/dcb"
	"github.com/rocectl/rocectl/nic/snapshot"
	"github.com/rocectl/rocectl/policy"
)

// The round trip of the import: a fixture host's snapshot is rendered to
// the text dumps people paste (mlnx_qos, ethtool -S/-a/-i, show_gids,
// ip -d -s link), imported, and both are audited. The import's audit must
// equal the capture's, setting by setting, except for what those dumps
// cannot carry, which must read as unknown.

// notInDumps are the settings (names after the scope) no rendered dump
// carries: rings and private flags (ethtool -g/--show-priv-flags), the
// PFC storm tunable, the ECN, rdma_cm and traffic-class files of sysfs,
// configfs and debugfs, and devlink; and the NCCL file's variables: no
// dump holds the file (an import lists /etc as not captured).
var notInDumps = []string{"link.rx_ring", "link.tx_ring", "link.private_flags.", "qos.pfc_storm_prevention", "ecn.", "roce.", "devlink.", "nccl."}

// gidSelection are the NCCL variables "auto" adds only for NCCL's dynamic
// GID selection (nccl.gidIndex).
var gidSelection = map[string]bool{"host.nccl.NCCL_IB_ROCE_VERSION_NUM": true, "host.nccl.NCCL_IB_ADDR_FAMILY": true}

func TestImportRoundTrip(t *testing.T) {
	for _, name := range []string{"cx6dx-ofed-lossless", "cx6dx-ofed-factory"} {
		t.Run(name, func(t *testing.T) {
			src, err := snapshot.Open(repo("testdata/hosts/" + name))
			if err != nil {
				t.Fatal(err)
			}
			tmp := t.TempDir()
			dumps := filepath.Join(tmp, "dumps.txt")
			if err := os.WriteFile(dumps, []byte(renderDumps(t, src)), 0o644); err != nil {
				t.Fatal(err)
			}
			dir := filepath.Join(tmp, "snap")
			code, out, errs := run(t, nil, "import", "-o", dir, dumps)
			if code != ExitOK || strings.Contains(out, "warning:") {
				t.Fatalf("import: exit %d:\n%s%s", code, out, errs)
			}
			imp, err := snapshot.Open(dir)
			if err != nil {
				t.Fatal(err)
			}
			for _, prof := range []string{"profiles/connectx-lossless.toml", "profiles/lossy-ecn-only.toml", "profiles/rack-a12.toml"} {
				p, err := policy.Load(repo(prof), policy.LoadOptions{AllowInsecure: true})
				if err != nil {
					t.Fatal(err)
				}
				want, _ := outcomes(src, p)
				got, _ := outcomes(imp, p)
				known := 0
				for _, g := range got {
					if g != "unknown" {
						known++
					}
				}
				if known == 0 {
					t.Fatalf("%s: the import's audit knows no setting: %v", prof, got)
				}
				for key, w := range want {
					// The import's ports are RDMA ports, as the capture's:
					// show_gids names the RDMA device and port behind
					// each netdev, and the import keeps its GID table.
					_, rest, _ := strings.Cut(key, ".")
					ikey := key
					g, ok := got[ikey]
					delete(got, ikey)
					switch {
					case !ok && gidSelection[ikey]:
						// Whether NCCL needs these depends on the GIDs
						// (pinned index or dynamic selection), which the
						// import does not know.
					case !ok:
						t.Errorf("%s: %s: not in the import's audit (capture: %s)", prof, ikey, w)
					case slices.ContainsFunc(notInDumps, func(p string) bool { return strings.HasPrefix(rest, p) }):
						if g != "unknown" {
							t.Errorf("%s: %s = %s in the import, want unknown (no dump carries it; capture: %s)", prof, ikey, g, w)
						}
					case g != w:
						t.Errorf("%s: %s = %s in the import, %s in the capture", prof, ikey, g, w)
					}
				}
				for key, g := range got {
					t.Errorf("%s: %s = %s only in the import's audit", prof, key, g)
				}
			}
		})
	}
}

// outcomes audits s against p: each setting's key → "in sync",
// "change FROM", "unsupported", "unknown" or "error"; and, per RDMA scope,
// its netdev.
func outcomes(s *snapshot.Snapshot, p *policy.Profile) (map[string]string, map[string]string) {
	h := &host.Host{FS: s.FS(), K: s.Kernel(), NotCaptured: s.Meta.NotCaptured}
	pl := apply.Prepare(h, p, false)
	out := map[string]string{}
	rdma := map[string]string{}
	for _, st := range pl.Desired.All() {
		out[st.Key] = "in sync"
		if st.Port != nil && st.Port.RDMADevice != "" {
			rdma[st.Port.RDMAScope()] = st.Port.Netdev
		}
	}
	for _, c := range pl.Plan.Changes {
		out[c.Key] = "change " + c.Before
	}
	for _, u := range pl.Plan.Unsupported {
		out[u.Key] = "unsupported"
	}
	for _, u := range pl.Plan.Unknown {
		out[u.Key] = "unknown"
	}
	for _, e := range pl.Plan.Errors {
		out[e.Key] = "error " + e.Error
	}
	return out, rdma
}

// renderDumps prints what the tools would have printed on the host of s,
// each command after its prompt line.
func renderDumps(t *testing.T, s *snapshot.Snapshot) string {
	t.Helper()
	st := s.State()
	var b strings.Builder
	b.WriteString("$ ip -d -s link show\n")
	for _, nd := range slices.Sorted(maps.Keys(st.Links)) {
		l := st.Links[nd].Link
		if l == nil {
			t.Fatalf("%s: no link in the fixture", nd)
		}
		flags := "BROADCAST,MULTICAST"
		if l.AdminUp {
			flags += ",UP,LOWER_UP"
		}
		fmt.Fprintf(&b, "%d: %s: <%s> mtu %d qdisc mq state %s mode DEFAULT group default qlen 1000\n", l.Index, nd, flags, l.MTU, strings.ToUpper(l.OperState))
		fmt.Fprintf(&b, "    link/ether %s brd ff:ff:ff:ff:ff:ff promiscuity 0 minmtu %d maxmtu %d addrgenmode eui64 numtxqueues 8\n", l.MAC, l.MinMTU, l.MaxMTU)
		b.WriteString("    RX:  bytes packets errors dropped  missed   mcast\n            0       0      0       0       0       0\n")
	}
	for _, nd := range slices.Sorted(maps.Keys(st.Links)) {
		ls := st.Links[nd]
		if d := ls.Driver; d != nil {
			fmt.Fprintf(&b, "$ ethtool -i %s\ndriver: %s\nversion: %s\nfirmware-version: %s\nexpansion-rom-version:\nbus-info: %s\nsupports-statistics: yes\n",
				nd, d.Driver, d.Version, d.Firmware, d.BusInfo)
		}
		if p := ls.Pause; p != nil {
			fmt.Fprintf(&b, "$ ethtool -a %s\nPause parameters for %s:\nAutonegotiate:\t%s\nRX:\t\t%s\nTX:\t\t%s\n\n", nd, nd, onOff(p.Autoneg), onOff(p.Rx), onOff(p.Tx))
		}
		if len(ls.Stats) > 0 {
			fmt.Fprintf(&b, "$ ethtool -S %s\nNIC statistics:\n", nd)
			for _, c := range slices.Sorted(maps.Keys(ls.Stats)) {
				fmt.Fprintf(&b, "     %s: %d\n", c, ls.Stats[c])
			}
		}
		if ls.DCB != nil {
			fmt.Fprintf(&b, "$ mlnx_qos -i %s\n", nd)
			renderMlnxQos(&b, ls.DCB)
		}
	}
	b.WriteString("$ show_gids\nDEV\tPORT\tINDEX\tGID\t\t\t\t\tIPv4\t\tVER\tDEV\n---\t----\t-----\t---\t\t\t\t\t------------\t---\t---\n")
	n := 0
	for _, dev := range nic.RDMADevices(s.FS()) {
		for _, pn := range nic.RDMAPorts(s.FS(), dev) {
			gids, err := nic.ReadGIDs(s.FS(), dev, pn)
			if err != nil {
				t.Fatal(err)
			}
			for _, g := range gids {
				a, _ := netip.AddrFromSlice(g.GID)
				ipv4, ver := "", "v1"
				if a.Is4In6() {
					ipv4 = a.Unmap().String()
				}
				if g.Type == nic.GIDTypeRoCEv2 {
					ver = "v2"
				}
				fmt.Fprintf(&b, "%s\t%d\t%d\t%s\t%s\t%s\t%s\n", dev, pn, g.Index, a.StringExpanded(), ipv4, ver, g.Netdev)
				n++
			}
		}
	}
	fmt.Fprintf(&b, "n_gids_found=%d\n", n)
	return b.String()
}

// renderMlnxQos prints a DCB state as mlnx_qos (OFED 23.10) does.
func renderMlnxQos(b *strings.Builder, st *dcb.State) {
	if st.DCBX != nil {
		// As mlnx_qos and rocectl read it: the host bit or not.
		mode := "Firmware controlled"
		if *st.DCBX&dcb.DCBXHost != 0 {
			mode = "OS controlled"
		}
		fmt.Fprintf(b, "DCBX mode: %s\n", mode)
	}
	prios := map[uint8][]int{}
	for _, a := range st.Apps {
		if a.Selector == dcb.SelDSCP {
			prios[a.Priority] = append(prios[a.Priority], int(a.Protocol))
		}
	}
	if len(prios) > 0 {
		b.WriteString("Priority trust state: dscp\ndscp2prio mapping:\n")
		for p := range uint8(8) {
			fmt.Fprintf(b, "\tprio:%d dscp:", p)
			for _, d := range slices.Sorted(slices.Values(prios[p])) {
				fmt.Fprintf(b, "%02d,", d)
			}
			b.WriteString("\n")
		}
	} else {
		b.WriteString("Priority trust state: pcp\n")
	}
	if buf := st.Buffer; buf != nil {
		b.WriteString("Receive buffer size (bytes): ")
		for _, sz := range buf.Size {
			fmt.Fprintf(b, "%d,", sz)
		}
		fmt.Fprintf(b, "max_buffer_size=%d\n", buf.TotalSize)
	}
	if pfc := st.PFC; pfc != nil {
		fmt.Fprintf(b, "Cable len: %d\nPFC configuration:\n\tpriority    0   1   2   3   4   5   6   7\n\tenabled   ", pfc.Delay)
		for p := range 8 {
			fmt.Fprintf(b, "  %d", pfc.Enable>>p&1)
		}
		b.WriteString("\n")
		if buf := st.Buffer; buf != nil {
			b.WriteString("\tbuffer    ")
			for _, n := range buf.PrioBuffer {
				fmt.Fprintf(b, "  %d", n)
			}
			b.WriteString("\n")
		}
	}
	if e := st.ETS; e != nil {
		for tc := range 8 {
			switch e.TCTSA[tc] {
			case dcb.TSAETS:
				fmt.Fprintf(b, "tc: %d ratelimit: unlimited, tsa: ets, bw: %d%%\n", tc, e.TCTxBW[tc])
			case dcb.TSAStrict:
				fmt.Fprintf(b, "tc: %d ratelimit: unlimited, tsa: strict\n", tc)
			default:
				fmt.Fprintf(b, "tc: %d ratelimit: unlimited, tsa: vendor\n", tc)
			}
			for p, ptc := range e.PrioTC {
				if int(ptc) == tc {
					fmt.Fprintf(b, "\t priority:  %d\n", p)
				}
			}
		}
	}
}

func onOff(v bool) string {
	if v {
		return "on"
	}
	return "off"
}
