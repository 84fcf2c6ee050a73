package cli

import (
	"encoding/hex"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rocectl/rocectl/apply"
	"github.com/rocectl/rocectl/doc"
	"github.com/rocectl/rocectl/lldp"
	"github.com/rocectl/rocectl/peer"
	"github.com/rocectl/rocectl/policy"
)

// audit's QoS chain on a captured host: the factory cx6dx against the
// ConnectX recipe, each line naming the host's value, the profile's and
// the arithmetic; nothing on the host that matches.
func TestAuditQoSChainSection(t *testing.T) {
	prof := repo("profiles/connectx-lossless.toml")
	code, out, _ := run(t, nil, "audit", "-p", prof, "--snapshot", repo("testdata/hosts/cx6dx-ofed-factory"))
	want := "\nQoS chain (data DSCP 26 → priority 3 (lossless), TOS 106; CNP DSCP 48 → priority 6 (from roce.default_tos)):\n" +
		"  host ens1f0np0: mlx5_0.roce.default_roce_tos: TOS 0 = DSCP 0 << 2 | ECN 00: DSCP 0; the profile's data class is DSCP 26 on priority 3 (roce.default_tos) → 106\n" +
		"  host ens1f0np0: trust: the host trusts PCP, so DSCP 26 (the profile's data class, roce.default_tos) decides nothing: RoCE traffic lands on the priority of its VLAN tag, or 0\n" +
		"  host ens1f0np0: pfc: the host's PFC [] leaves priority 3 without pause; the profile's data class (DSCP 26) is lossless on priority 3\n"
	if code != ExitDrift || !strings.Contains(out, want) {
		t.Fatalf("exit %d:\n%s", code, out)
	}
	// -o json: the same, structured, for rocectl report and Ansible.
	_, out, _ = run(t, nil, "audit", "-o", "json", "-p", prof, "--snapshot", repo("testdata/hosts/cx6dx-ofed-factory"))
	rep, err := doc.DecodePlan([]byte(out))
	if err != nil || len(rep.QoSChain) != 6 || rep.QoSChain[2] != (doc.ChainProblem{Side: "host", Port: "ens1f0np0", Key: "pfc",
		Message: "the host's PFC [] leaves priority 3 without pause; the profile's data class (DSCP 26) is lossless on priority 3"}) {
		t.Fatalf("%v %+v", err, rep)
	}
	_, out, _ = run(t, nil, "audit", "-p", prof, "--snapshot", repo("testdata/hosts/cx6dx-ofed-lossless"))
	if strings.Contains(out, "QoS chain") {
		t.Fatalf("a host in sync has a chain section:\n%s", out)
	}
}

// The switch's side, from the DCBX a Juniper QFX3500 sent (lldp/testdata,
// a real capture): IEEE DCBX with PFC on no priority and no DSCP
// application entry. Against the ConnectX recipe the PFC set disagrees;
// the map is not known (no DSCP entry) and is not judged.
func TestChainSwitchSide(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join("..", "lldp", "testdata", "juniper-qfx3500-ieee.hex"))
	if err != nil {
		t.Fatal(err)
	}
	b, err := hex.DecodeString(strings.Join(strings.Fields(string(raw)), ""))
	if err != nil {
		t.Fatal(err)
	}
	f, err := lldp.DecodeFrame(b)
	if err != nil {
		t.Fatal(err)
	}
	p, err := policy.Load(repo("profiles/connectx-lossless.toml"), policy.LoadOptions{AllowInsecure: true})
	if err != nil {
		t.Fatal(err)
	}
	pl := &apply.Prepared{Profile: p, Desired: &policy.Desired{Profile: p}, Observed: policy.NewObserved()}
	rep := &peer.Report{Ports: []peer.Result{{Netdev: "ens1f0np0", Verdict: peer.Mismatch, Source: peer.SourceLLDP, Frame: f}}}
	_, lines := chainLines(pl, rep)
	want := []string{"switch chassis 84:18:88:d6:39:48 port 526 (ens1f0np0, from LLDP): pfc: the switch's PFC [] leaves priority 3 without pause; the profile's data class (DSCP 26) is lossless on priority 3"}
	if strings.Join(lines, "\n") != strings.Join(want, "\n") {
		t.Fatalf("lines:\n%s", strings.Join(lines, "\n"))
	}
	// With the switch mapping DSCP 26 elsewhere (an APP entry added to the
	// captured frame), the map disagrees too.
	f.IEEE.App = append(f.IEEE.App, lldp.App{Selector: lldp.SelDSCP, Protocol: 26, Priority: 4}, lldp.App{Selector: lldp.SelDSCP, Protocol: 48, Priority: 6})
	_, lines = chainLines(pl, rep)
	if len(lines) != 2 || !strings.HasSuffix(lines[0], "dscp 26: the switch's map sends DSCP 26 to priority 4; the profile's data class is DSCP 26 → priority 3") {
		t.Fatalf("lines:\n%s", strings.Join(lines, "\n"))
	}
}

// An /etc/nccl.conf the profile does not manage is the host's word too:
// every NCCL job there marks its traffic with its IB_TC. The host is in
// sync with the profile (exit 0) and the chain names the file, once.
func TestAuditQoSChainReadsUnmanagedNCCLConf(t *testing.T) {
	snap := copySnapshot(t, "cx6dx-ofed-lossless")
	if err := os.MkdirAll(filepath.Join(snap, "etc"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(snap, "etc", "nccl.conf"), []byte("NCCL_DEBUG=WARN\nNCCL_IB_TC=104\nNCCL_IB_SL=3\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	code, out, errs := run(t, nil, "audit", "-p", repo("profiles/connectx-lossless.toml"), "--snapshot", snap)
	want := "No changes. Host matches profile.\n\nQoS chain (data DSCP 26 → priority 3 (lossless), TOS 106; CNP DSCP 48 → priority 6 (from roce.default_tos)):\n" +
		"  host: /etc/nccl.conf NCCL_IB_TC: TOS 104 = DSCP 26 << 2 | ECN 00: not ECN-capable; DCQCN needs ECT(0) → 106\n"
	if code != ExitOK || !strings.HasSuffix(out, want) {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errs)
	}
}
