package cli

import (
	"strings"
	"testing"
)

// h200Capture is `rocectl capture` (packed, the default) run read-only on
// a lent NVIDIA H200 server: one GPU, a virtio NIC, no RDMA device
// (testdata/captures/SOURCES.md says where and when).
const h200Capture = "testdata/captures/rocectl-capture-h200-vm"

// TestTopoReadsPackedRealCapture: topo opened --snapshot as a directory
// tree, so every packed capture (files.pack, capture's default) failed
// with "open …/sys/bus/pci/devices: no such file or directory"; found on
// the first capture of a real GPU server. It must read the PCI functions
// from the pack as every other command does.
func TestTopoReadsPackedRealCapture(t *testing.T) {
	code, out, errs := run(t, nil, "topo", "--snapshot", repo(h200Capture))
	if code != 0 {
		t.Fatalf("exit %d\n%s%s", code, out, errs)
	}
	for _, want := range []string{
		"No RDMA NIC found.",
		"GPU0  0000:00:06.0  10de:2335  NUMA N/A  32.0 GT/s PCIe x16",
		"Degraded links: none",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("topo output lacks %q:\n%s", want, out)
		}
	}
	code, out, errs = run(t, nil, "topo", "-o", "json", "--require-match", "--snapshot", repo(h200Capture))
	if code != ExitError || !strings.Contains(errs, "no RDMA NIC found on this host") {
		t.Errorf("--require-match on a host without an RDMA NIC: exit %d, want %d\n%s%s", code, ExitError, out, errs)
	}
}

// TestAuditRealGPUServerWithoutRoCE: the same capture audits as a host
// with nothing to do (exit 0), not as an error or as drift.
func TestAuditRealGPUServerWithoutRoCE(t *testing.T) {
	code, out, errs := run(t, nil, "audit", "-p", repo("profiles/connectx-lossless.toml"), "--snapshot", repo(h200Capture))
	if code != ExitOK || !strings.Contains(out, "No RoCE devices found on this host: nothing to do.") {
		t.Fatalf("exit %d\n%s%s", code, out, errs)
	}
}
