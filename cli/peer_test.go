package cli

import (
	"encoding/hex"
	"encoding/json"
	"net"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/rocectl/rocectl/internal/testkit/fixturehost"
	"github.com/rocectl/rocectl/internal/testkit/netnstest"
	"github.com/rocectl/rocectl/lldp"
	"github.com/rocectl/rocectl/lldp/lldptest"
	"github.com/rocectl/rocectl/nic"
	"github.com/rocectl/rocectl/nic/dcb"
	"github.com/rocectl/rocectl/nic/nictest"
	"github.com/rocectl/rocectl/nic/snapshot"
	"github.com/rocectl/rocectl/peer"
	"github.com/rocectl/rocectl/report"
)

// switchPort plays the switch on one end of a veth pair: it sends frame
// through an AF_PACKET socket every interval until stopped, as a switch
// sends LLDP every 30 s (here much faster).
type switchPort struct {
	fd   int
	stop chan struct{}
	wg   sync.WaitGroup
}

func startSwitch(t *testing.T, ns *netnstest.NS, netdev string, frames ...[]byte) *switchPort {
	t.Helper()
	s := &switchPort{stop: make(chan struct{})}
	var addr unix.SockaddrLinklayer
	err := ns.Do(func() error {
		ifi, err := net.InterfaceByName(netdev)
		if err != nil {
			return err
		}
		addr = unix.SockaddrLinklayer{Ifindex: ifi.Index, Halen: 6}
		copy(addr.Addr[:], lldp.MulticastNearestBridge)
		s.fd, err = unix.Socket(unix.AF_PACKET, unix.SOCK_RAW|unix.SOCK_CLOEXEC, 0)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		tick := time.NewTicker(20 * time.Millisecond)
		defer tick.Stop()
		for {
			for _, f := range frames {
				if err := unix.Sendto(s.fd, f, 0, &addr); err != nil {
					t.Errorf("switch send: %v", err)
					return
				}
			}
			select {
			case <-s.stop:
				return
			case <-tick.C:
			}
		}
	}()
	t.Cleanup(func() {
		close(s.stop)
		s.wg.Wait()
		unix.Close(s.fd)
	})
	return s
}

var switchMAC = net.HardwareAddr{0x0c, 0x42, 0xa1, 0, 0, 1}

func frameOf(t *testing.T, change func(f *lldp.Frame)) []byte {
	t.Helper()
	f := lldptest.RoCEFrame()
	change(f)
	b, err := lldp.EncodeFrame(switchMAC, f)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func capture(t *testing.T, name string) []byte {
	t.Helper()
	raw, err := os.ReadFile(repo("lldp/testdata/" + name + ".hex"))
	if err != nil {
		t.Fatal(err)
	}
	b, err := hex.DecodeString(strings.Join(strings.Fields(string(raw)), ""))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// The real kernel: a veth pair in a test-owned namespace; the switch end
// sends real LLDP frames, `rocectl peer --netdev` listens on the other
// end and reports exactly the expected verdict and exit code.
func TestPeerOverVeth(t *testing.T) {
	ns := netnstest.New(t)
	profile := repo("profiles/connectx-lossless.toml") // PFC 3, DSCP 26 → 3, CNP 48 → 6
	cases := []struct {
		name    string
		frames  [][]byte
		wait    string
		code    int
		verdict string
		lines   []string // each must appear in the text output
	}{
		{"consistent", [][]byte{frameOf(t, func(*lldp.Frame) {})}, "20s", 0, peer.Consistent,
			[]string{"host0 <-> leaf-a12 (0c:42:a1:00:00:01) port swp7: consistent (IEEE DCBX, from LLDP)"}},
		{"pfc on another priority", [][]byte{frameOf(t, func(f *lldp.Frame) { f.IEEE.PFC.Enable = 1 << 4 })}, "20s", 2, peer.Mismatch,
			[]string{"host0 <-> leaf-a12 (0c:42:a1:00:00:01) port swp7: pfc: switch says priorities 4, profile says priorities 3 (from LLDP)"}},
		{"willing", [][]byte{frameOf(t, func(f *lldp.Frame) { f.IEEE.PFC.Willing = true })}, "20s", 2, peer.Mismatch,
			[]string{"port swp7: willing: switch says willing (PFC), profile says the switch decides: not willing"}},
		{"dscp map differs", [][]byte{frameOf(t, func(f *lldp.Frame) { f.IEEE.App[0].Priority = 4 })}, "20s", 2, peer.Mismatch,
			[]string{"port swp7: dscp 26 (RoCE data): switch says priority 4, profile says priority 3"}},
		{"CEE only", [][]byte{frameOf(t, func(f *lldp.Frame) {
			f.IEEE = nil
			f.CEE = &lldp.CEE{PFC: &lldp.CEEPFC{CEEFeature: lldp.CEEFeature{Enabled: true}, Enable: 1 << 3, NumTCs: 8}}
		})}, "20s", 0, peer.Consistent, []string{"consistent (CEE DCBX, from LLDP)"}},
		{"no DCBX TLVs", [][]byte{frameOf(t, func(f *lldp.Frame) { f.IEEE = nil })}, "20s", 1, peer.Unknown,
			[]string{"? host0: unknown: the switch sends LLDP without DCBX TLVs"}},
		{"malformed", [][]byte{append(frameOf(t, func(*lldp.Frame) {})[:14], 0x02, 0x07, 0x04, 1)}, "1s", 1, peer.Unknown,
			[]string{"? host0: unknown: heard", "malformed LLDP frame(s) and no valid one; last: malformed LLDPDU: Chassis ID TLV at byte 0: length 7 runs past the end"}},
		// Real captures (lldp/testdata/SOURCES.md), sent as they were heard.
		{"captured Cisco Nexus 5K, CEE, 802.1Q tagged", [][]byte{capture(t, "cisco-nexus5k-cee")}, "20s", 0, peer.Consistent,
			[]string{"host0 <-> N5K-5-Lab3-3 (00:05:73:f3:4d:4a) port Eth1/3: consistent (CEE DCBX, from LLDP)"}},
		{"captured Juniper QFX3500, IEEE", [][]byte{capture(t, "juniper-qfx3500-ieee")}, "20s", 2, peer.Mismatch,
			[]string{"host0 <-> chassis 84:18:88:d6:39:48 port 526: pfc: switch says priorities none, profile says priorities 3",
				"port 526: trust: switch says pcp (no DSCP → priority entry), profile says dscp"}},
		// Sent by lldpad (SOURCES.md): the same port with the profile's
		// DSCP map, then with DSCP 26 on priority 4, then in CEE mode.
		{"lldpad, IEEE, DSCP map as the profile", [][]byte{capture(t, "lldpad-ieee-dscp")}, "20s", 0, peer.Consistent,
			[]string{"host0 <-> lldpad-netns (02:dc:b0:00:00:01) port 02:dc:b0:00:00:01: consistent (IEEE DCBX, from LLDP)"}},
		{"lldpad, IEEE, DSCP 26 on priority 4", [][]byte{capture(t, "lldpad-ieee-dscp-differs")}, "20s", 2, peer.Mismatch,
			[]string{"~ host0 <-> lldpad-netns (02:dc:b0:00:00:01) port 02:dc:b0:00:00:01: 1 mismatch(es) (IEEE DCBX, from LLDP)\n",
				"host0 <-> lldpad-netns (02:dc:b0:00:00:01) port 02:dc:b0:00:00:01: dscp 26 (RoCE data): switch says priority 4, profile says priority 3 (from LLDP)\n"}},
		{"lldpad, CEE", [][]byte{capture(t, "lldpad-cee")}, "20s", 0, peer.Consistent,
			[]string{"host0 <-> lldpad-netns (02:dc:b0:00:00:01) port 02:dc:b0:00:00:01: consistent (CEE DCBX, from LLDP)"}},
		{"silent switch", nil, "300ms", 1, peer.Unknown,
			[]string{"? host0: unknown: no LLDP frame in 300ms"}},
	}
	for i, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			host, sw := "host0", "sw"+string(rune('a'+i))
			ns.AddVeth(host, sw)
			ns.SetUp(host)
			ns.SetUp(sw)
			t.Cleanup(func() { _ = ns.Command("ip", "link", "del", host).Run() })
			if c.frames != nil {
				startSwitch(t, ns, sw, c.frames...)
			}
			state := t.TempDir()
			var code int
			var out, errs string
			start := time.Now()
			err := ns.Do(func() error {
				code, out, errs = run(t, nil, "--state-dir", state, "peer", "-p", profile, "--netdev", host, "--wait", c.wait)
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
			if code != c.code {
				t.Errorf("exit %d, want %d\nstdout:\n%s\nstderr:\n%s", code, c.code, out, errs)
			}
			for _, l := range c.lines {
				if !strings.Contains(out, l) {
					t.Errorf("output lacks %q:\n%s", l, out)
				}
			}
			// It returns as soon as the partner was heard, not after --wait.
			if c.wait == "20s" && time.Since(start) > 10*time.Second {
				t.Errorf("peer took %s with a partner sending every 20ms", time.Since(start))
			}
			// The result is stored for audit, with the same verdict.
			rep, err := peer.ReadState(state)
			if err != nil || rep == nil || len(rep.Ports) != 1 || rep.Ports[0].Verdict != c.verdict {
				t.Errorf("stored result %+v, %v; want verdict %s", rep, err, c.verdict)
			}
		})
	}
}

// -o json is one document with each port's verdict, the switch's frame
// and the mismatches.
func TestPeerJSON(t *testing.T) {
	ns := netnstest.New(t)
	ns.AddVeth("host0", "sw0")
	ns.SetUp("host0")
	ns.SetUp("sw0")
	startSwitch(t, ns, "sw0", frameOf(t, func(f *lldp.Frame) { f.IEEE.PFC.Enable = 1 << 4 }))
	var code int
	var out string
	_ = ns.Do(func() error {
		code, out, _ = run(t, nil, "--state-dir", t.TempDir(), "peer", "-p", repo("profiles/connectx-lossless.toml"), "--netdev", "host0", "-o", "json")
		return nil
	})
	var rep peer.Report
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("%v:\n%s", err, out)
	}
	if code != 2 || len(rep.Ports) != 1 || rep.Ports[0].Frame == nil || rep.Ports[0].Frame.SystemName != "leaf-a12" ||
		len(rep.Ports[0].Mismatches) != 1 || rep.Ports[0].Mismatches[0] != (lldp.Mismatch{Key: "pfc", Switch: "priorities 4", Profile: "priorities 3"}) {
		t.Errorf("exit %d, report %+v", code, rep)
	}
}

// Audit shows a "switch peer" section from the state dir's last peer
// result while it is recent, and none once it is stale.
func TestAuditShowsRecentSwitchPeer(t *testing.T) {
	root, sim := fixturehost.Copy(t, "cx6dx-ofed-factory")
	state := t.TempDir()
	heard := time.Now().Add(-90 * time.Second) // shown rounded to the second: 1m30s, or 1m31s on a slow run
	f := lldptest.RoCEFrame()
	rep := &peer.Report{SchemaVersion: 1, Profile: "connectx-lossless", CheckedAt: time.Now(), Ports: []peer.Result{{
		Netdev: "ens1f0np0", Verdict: peer.Mismatch, HeardAt: &heard, Frame: f, DCBX: "ieee",
		Mismatches: []lldp.Mismatch{{Key: "pfc", Switch: "priorities 4", Profile: "priorities 3"}},
	}}}
	if err := peer.WriteState(state, rep); err != nil {
		t.Fatal(err)
	}
	_, out, _ := run(t, sim, "--root", root, "--state-dir", state, "audit", "-p", repo("profiles/connectx-lossless.toml"))
	for _, want := range []string{"Switch peer (DCBX, checked ",
		"  ens1f0np0 <-> leaf-a12 (0c:42:a1:00:00:01) port swp7: mismatch from LLDP, frame 1m3",
		"    pfc: switch says priorities 4, profile says priorities 3"} {
		if !strings.Contains(out, want) {
			t.Errorf("audit lacks %q:\n%s", want, out)
		}
	}
	rep.CheckedAt = time.Now().Add(-peerRecent - time.Minute)
	if err := peer.WriteState(state, rep); err != nil {
		t.Fatal(err)
	}
	if _, out, _ = run(t, sim, "--root", root, "--state-dir", state, "audit", "-p", repo("profiles/connectx-lossless.toml")); strings.Contains(out, "Switch peer") {
		t.Errorf("stale peer result shown:\n%s", out)
	}
}

// qedeHost is one QLogic FastLinQ port whose firmware runs IEEE DCBX
// (qed_dcbnl_getdcbx: LLD_MANAGED|VER_IEEE), or CEE, in the simulator,
// which reports the switch's DCBX as qede's peer ops do.
func qedeHost(mode uint8) *nictest.Sim {
	return nictest.NewSim(&snapshot.KernelState{Links: map[string]*snapshot.LinkState{
		"ens2f0": {
			Link:   &nic.LinkInfo{Index: 5, MTU: 9000, OperState: "up", AdminUp: true},
			Driver: &nic.DriverInfo{Driver: snapshot.DriverQede},
			DCB:    &dcb.State{ETS: &dcb.ETS{ETSCap: 8}, PFC: &dcb.PFC{Cap: 8, Enable: 1 << 3}, DCBX: &mode},
		},
	}})
}

// A switch port that agrees with profiles/connectx-lossless.toml: PFC on
// 3, priority 3 in an ETS class with 50 %, DSCP 26 → 3 and 48 → 6.
func roceSwitchPort() *nictest.Partner {
	return &nictest.Partner{
		PFC: 1 << 3, PFCCap: 8, ETSCap: 8,
		PrioTC: [8]uint8{3: 1, 6: 2}, Bandwidth: [8]uint8{50, 50}, TSA: [8]uint8{dcb.TSAETS, dcb.TSAETS},
		Apps: []dcb.App{{Selector: dcb.SelDSCP, Priority: 3, Protocol: 26}, {Selector: dcb.SelDSCP, Priority: 6, Protocol: 48}},
	}
}

// The driver's DCBX path: a qede port (simulated driver) whose firmware
// negotiated with the switch is judged from its dcbnl peer objects at once,
// the lines saying so; what qede cannot tell is listed, not judged.
func TestPeerFromDriverDCBX(t *testing.T) {
	profile := repo("profiles/connectx-lossless.toml") // PFC 3, DSCP 26 → 3, CNP 48 → 6
	const src = "from the driver's DCBX (dcbnl)"
	cases := []struct {
		name  string
		mode  uint8
		sw    func(p *nictest.Partner)
		code  int
		lines []string
	}{
		{"agrees", dcb.DCBXLLDManaged | dcb.DCBXVerIEEE, func(*nictest.Partner) {}, ExitOK, []string{
			"  ens2f0 <-> link partner: consistent (IEEE DCBX, " + src + ")\n",
			"    not checked: the switch's PFC willing bit (struct ieee_pfc carries none)\n",
			"    not checked: DSCP → priority and trust (qed_dcbnl_peer_getapptable reports every peer APP entry with selector 1 in IEEE mode",
			"1 port(s): 1 consistent, 0 mismatch, 0 unknown, 0 error.",
		}},
		{"switch PFC on another priority", dcb.DCBXLLDManaged | dcb.DCBXVerIEEE, func(p *nictest.Partner) { p.PFC = 1 << 4 }, ExitDrift, []string{
			"~ ens2f0 <-> link partner: 1 mismatch(es) (IEEE DCBX, " + src + ")\n",
			"    ens2f0 <-> link partner: pfc: switch says priorities 4, profile says priorities 3 (" + src + ")\n",
		}},
		{"CEE, switch PFC on another priority", dcb.DCBXLLDManaged | dcb.DCBXVerCEE, func(p *nictest.Partner) { p.PFC = 1<<3 | 1<<4 }, ExitDrift, []string{
			"~ ens2f0 <-> link partner: 1 mismatch(es) (CEE DCBX, " + src + ")\n",
			"    ens2f0 <-> link partner: pfc: switch says priorities 3,4, profile says priorities 3 (" + src + ")\n",
			"    not checked: the switch's PFC willing bit (qede's cee_peer_getpfc does not set it)\n",
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			sim := qedeHost(c.mode)
			p := roceSwitchPort()
			c.sw(p)
			sim.SetPartner("ens2f0", p)
			state := t.TempDir()
			// --wait is long: the driver's answer must not wait for LLDP.
			start := time.Now()
			code, out, errs := run(t, sim, "--state-dir", state, "peer", "-p", profile, "--netdev", "ens2f0", "--wait", "1m")
			if code != c.code {
				t.Errorf("exit %d, want %d\n%s%s", code, c.code, out, errs)
			}
			for _, l := range c.lines {
				if !strings.Contains(out, l) {
					t.Errorf("output lacks %q:\n%s", l, out)
				}
			}
			if time.Since(start) > 30*time.Second {
				t.Errorf("peer took %s: it waited for LLDP", time.Since(start))
			}
			// Audit's section names the source too.
			rep, err := peer.ReadState(state)
			if err != nil || rep == nil || len(rep.Ports) != 1 || rep.Ports[0].Source != peer.SourceDCBNL {
				t.Fatalf("stored %+v, %v", rep, err)
			}
			var b strings.Builder
			env := &Env{StateDir: state}
			env.renderPeerSection(&b)
			if !strings.Contains(b.String(), "  ens2f0 <-> link partner: ") || !strings.Contains(b.String(), " "+src) {
				t.Errorf("audit section:\n%s", b.String())
			}
		})
	}
}

// -o json says where the verdict came from, carries what the driver
// reported, and matches docs/schema/peer.json.
func TestPeerJSONFromDriverDCBX(t *testing.T) {
	sim := qedeHost(dcb.DCBXLLDManaged | dcb.DCBXVerIEEE)
	p := roceSwitchPort()
	p.PFC = 1 << 4
	sim.SetPartner("ens2f0", p)
	code, out, _ := run(t, sim, "--state-dir", t.TempDir(), "peer", "-p", repo("profiles/connectx-lossless.toml"), "--netdev", "ens2f0", "-o", "json")
	doc := validDoc(t, compileSchema(t, "peer"), out)
	port := doc["ports"].([]any)[0].(map[string]any)
	if code != ExitDrift || port["source"] != "dcbnl" || port["verdict"] != "mismatch" || port["frame"] != nil {
		t.Errorf("exit %d, port %v", code, port)
	}
	dp, _ := port["driver_peer"].(map[string]any)
	ieee, _ := dp["ieee"].(map[string]any)
	pfc, _ := ieee["pfc"].(map[string]any)
	if pfc["pfc_en"] != float64(16) {
		t.Errorf("driver_peer %v", dp)
	}
}

// The LLDP document matches the schema too, with source "lldp".
func TestPeerJSONFromLLDPMatchesSchema(t *testing.T) {
	ns := netnstest.New(t)
	ns.AddVeth("host0", "sw0")
	ns.SetUp("host0")
	ns.SetUp("sw0")
	startSwitch(t, ns, "sw0", frameOf(t, func(*lldp.Frame) {}))
	var code int
	var out string
	_ = ns.Do(func() error {
		code, out, _ = run(t, nil, "--state-dir", t.TempDir(), "peer", "-p", repo("profiles/connectx-lossless.toml"), "--netdev", "host0", "-o", "json")
		return nil
	})
	doc := validDoc(t, compileSchema(t, "peer"), out)
	if port := doc["ports"].([]any)[0].(map[string]any); code != ExitOK || port["source"] != "lldp" {
		t.Errorf("exit %d, %v", code, port)
	}
}

// Neither source: the qede firmware has heard nothing (all-zero peer
// objects) and no LLDP frame comes; the port is unknown, and the reason
// says both.
func TestPeerDriverHeardNothing(t *testing.T) {
	ns := netnstest.New(t) // a namespace without ens2f0: LLDP cannot be heard either
	sim := qedeHost(dcb.DCBXLLDManaged | dcb.DCBXVerIEEE)
	var code int
	var out string
	_ = ns.Do(func() error {
		code, out, _ = run(t, sim, "--state-dir", t.TempDir(), "peer", "-p", repo("profiles/connectx-lossless.toml"), "--netdev", "ens2f0", "--wait", "1s")
		return nil
	})
	if code != ExitError || !strings.Contains(out, "? ens2f0: error: ") ||
		!strings.Contains(out, "qede reports the switch's DCBX through dcbnl but has heard none yet") {
		t.Errorf("exit %d:\n%s", code, out)
	}
}

// The fleet report reads what `rocectl peer -o json` really prints: the
// document is recognised as a peer document, named by its host, and the
// switch's PFC mismatch becomes drift in the pfc column.
func TestReportReadsPeerDocument(t *testing.T) {
	sim := qedeHost(dcb.DCBXLLDManaged | dcb.DCBXVerIEEE)
	p := roceSwitchPort()
	p.PFC = 1 << 4
	sim.SetPartner("ens2f0", p)
	code, out, _ := run(t, sim, "--state-dir", t.TempDir(), "peer", "-p", repo("profiles/connectx-lossless.toml"), "--netdev", "ens2f0", "-o", "json")
	if code != ExitDrift {
		t.Fatalf("peer exit %d\n%s", code, out)
	}
	docs, err := report.Parse("somewhere/peer.json", []byte(out))
	if err != nil || len(docs) != 1 {
		t.Fatalf("Parse: %v, %d documents", err, len(docs))
	}
	d := docs[0]
	host, _ := os.Hostname()
	if d.Kind != report.KindPeer || d.Host != host || len(d.Mismatches) != 1 || d.Mismatches[0].Key != "ens2f0.peer.pfc" {
		t.Fatalf("document %+v", d)
	}
	f := report.Build(docs, nil, report.Options{Now: d.GeneratedAt})
	if len(f.Hosts) != 1 || f.Hosts[0].Peer != report.Drift || f.Hosts[0].Groups["pfc"] != report.Drift {
		t.Errorf("fleet %+v", f.Hosts)
	}
}
