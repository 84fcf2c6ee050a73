package apply

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/rocectl/rocectl/host"
	"github.com/rocectl/rocectl/nic"
	"github.com/rocectl/rocectl/policy"
)

// killed is the panic that stands for kill -9 in the middle of an apply:
// it unwinds Txn.Run without a rollback, leaving the journal on disk as
// Begin saved it (applying, nothing done) and the host as the kill point
// left it.
type killed struct{}

// The NCCL file's write killed at each of its points (issue 34, item 1):
// before the temporary file, with it created, half written, whole and
// synced, and after the rename. Every earlier step of the apply was
// written. Recovery, as the next rollback or apply runs it, must leave
// every file of the root as before, the temporary file
// (.nccl.conf.rocectl-tmp) included, and the kernel as before; before,
// the random temporary name of a killed write stayed for good while both
// said the host was restored. Each point with and without a user's
// /etc/nccl.conf before the apply.
func TestKillDuringTheNCCLFileWrite(t *testing.T) {
	points := []struct {
		name string
		at   func(t *testing.T, dir string, newData []byte)
	}{
		{"before the temporary file", func(*testing.T, string, []byte) {}},
		{"temporary file created", func(t *testing.T, dir string, _ []byte) { write(t, filepath.Join(dir, nic.TempName("nccl.conf")), nil) }},
		{"temporary file half written", func(t *testing.T, dir string, d []byte) {
			write(t, filepath.Join(dir, nic.TempName("nccl.conf")), d[:len(d)/2])
		}},
		{"temporary file whole and synced", func(t *testing.T, dir string, d []byte) { write(t, filepath.Join(dir, nic.TempName("nccl.conf")), d) }},
		{"renamed over the file", func(t *testing.T, dir string, d []byte) { write(t, filepath.Join(dir, "nccl.conf"), d) }},
	}
	for _, userFile := range []bool{false, true} {
		for _, pt := range points {
			name := pt.name
			if userFile {
				name += ", a user's file there before"
			}
			t.Run(name, func(t *testing.T) {
				r := newRig(t, "cx6dx-ofed-factory", "fat-tree-32gpu-100g.toml")
				dir := filepath.Join(r.root, "etc")
				if userFile {
					write(t, filepath.Join(dir, "nccl.conf"), []byte("NCCL_DEBUG=INFO\n"))
				}
				before := r.state(t)
				ncclStep := -1
				r.opts.BeforeStep = func(i int, st host.Step) error {
					if st.Changes[0].Kind == policy.KindNCCL {
						ncclStep = i
						pt.at(t, dir, []byte("# rocectl managed block\nNCCL_IB_TC=106\nNCCL_IB_TIMEOUT=22\n"))
						panic(killed{})
					}
					return nil
				}
				txn, err := Begin(r.h, r.d, r.plan, "test", r.opts)
				if err != nil {
					t.Fatal(err)
				}
				func() {
					defer func() {
						if v := recover(); v != nil {
							if _, ok := v.(killed); !ok {
								panic(v)
							}
						}
					}()
					_ = txn.Run(context.Background())
				}()
				if ncclStep < 0 {
					t.Fatal("the plan has no NCCL file step")
				}
				// The next rocectl: a new host over the same root and
				// kernel, the journal from disk.
				h := &host.Host{FS: nic.NewFS(r.root, false), K: r.sim}
				recs, err := Recover(h, r.opts.Store, false, time.Now())
				if err != nil || len(recs) != 1 {
					t.Fatalf("recover: %v, %v", recs, err)
				}
				r.assertRestored(t, before, "after recovery")
				if _, err := os.Lstat(filepath.Join(dir, nic.TempName("nccl.conf"))); !os.IsNotExist(err) {
					t.Errorf("the temporary file is still there (%v)", err)
				}
			})
		}
	}
}

func write(t *testing.T, p string, data []byte) {
	t.Helper()
	if err := os.WriteFile(p, data, 0o644); err != nil {
		t.Fatal(err)
	}
}
