package apply

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"
)

// Issue #34 item 1: rocectl killed while it rewrote the NCCL file left its
// temp file (/etc/.nccl.conf.rocectl-<hex>) for good: neither recovery
// nor the next apply removed it, and both said the host was restored. The
// temp file has a fixed name now, which the journal's saved path names,
// and recovery removes it, along with the random names of older rocectl
// versions; the NCCL step is not "unchanged" while one is there.
func TestRecoveryRemovesTheTempFileOfAKilledNCCLWrite(t *testing.T) {
	for name, temp := range map[string]string{
		"fixed name":        ".nccl.conf.rocectl-tmp",
		"older random name": ".nccl.conf.rocectl-0123456789abcdef",
	} {
		t.Run(name, func(t *testing.T) {
			r := newRig(t, "cx6dx-ofed-lossless", "base.toml")
			conf := filepath.Join(r.root, "etc", "nccl.conf")
			if err := os.WriteFile(conf, []byte("NCCL_DEBUG=WARN\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			before := r.state(t)
			txn, err := Begin(r.h, r.d, r.plan, "test", r.opts)
			if err != nil {
				t.Fatal(err)
			}
			// Killed with the temp file written, before its rename: the
			// journal is open, nccl.conf as it was.
			if err := os.WriteFile(filepath.Join(r.root, "etc", temp), []byte("half a new file"), 0o600); err != nil {
				t.Fatal(err)
			}
			done, err := Recover(r.h, r.opts.Store, false, time.Now())
			if err != nil || len(done) != 1 || done[0].Journal.ID != txn.J.ID {
				t.Fatalf("Recover = %+v, %v", done, err)
			}
			r.assertRestored(t, before, "after recovery")
			j := done[0].Journal
			if !slices.Contains(j.Restored, "host.nccl.NCCL_IB_TC") || slices.Contains(j.Unchanged, "host.nccl.NCCL_IB_TC") {
				t.Errorf("restored %v, unchanged %v: the NCCL step was left as it was", j.Restored, j.Unchanged)
			}
		})
	}
}
