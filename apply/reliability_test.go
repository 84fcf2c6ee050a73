package apply

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"
)

// smallFS mounts a tmpfs of size bytes under the test's temp dir.
func smallFS(t *testing.T, size string) string {
	t.Helper()
	needRoot(t)
	dir := t.TempDir()
	if err := syscall.Mount("tmpfs", dir, "tmpfs", syscall.MS_NOSUID|syscall.MS_NODEV, "size="+size+",mode=0700"); err != nil {
		t.Skipf("cannot mount a tmpfs: %v", err)
	}
	t.Cleanup(func() {
		if err := syscall.Unmount(dir, 0); err != nil {
			t.Errorf("unmount %s: %v", dir, err)
		}
	})
	return dir
}

// fill takes every free byte of the filesystem dir is on.
func fill(t *testing.T, dir string) {
	t.Helper()
	f, err := os.Create(filepath.Join(dir, "filler"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	buf := make([]byte, 4096)
	for {
		if _, err := f.Write(buf); err != nil {
			if !errors.Is(err, syscall.ENOSPC) {
				t.Fatal(err)
			}
			return
		}
	}
}

// Defect 2: with room for one journal save but not two, the final save
// failed after every change was made, and the message did not say the host
// held the profile. The room for the final save is now reserved at Begin.
func TestFinalSaveHasRoomOnAFullStateFS(t *testing.T) {
	r := newRig(t, "cx6dx-ofed-factory", "connectx-lossless.toml")
	r.opts.Store.Dir = filepath.Join(smallFS(t, "1m"), "state")
	txn, err := Begin(r.h, r.d, r.plan, "test", r.opts)
	if err != nil {
		t.Fatal(err)
	}
	fill(t, filepath.Dir(r.opts.Store.Dir))
	if err := txn.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := txn.Finish(time.Time{}); err != nil {
		t.Fatalf("final save on a full state filesystem: %v", err)
	}
	j, err := r.opts.Store.Load(txn.J.ID)
	if err != nil || j.State != StateCommitted {
		t.Fatalf("journal %+v, %v; want committed", j, err)
	}
	if _, err := os.Stat(r.opts.Store.ReservePath(j.ID)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the reserve of a final journal is still there (%v)", err)
	}
}

// Without the reserve (as before), the failure is told honestly: the host
// holds the profile, the journal still says applying, and the next run
// rolls it back. Nothing says "restored".
func TestFinalSaveFailureSaysWhatTheHostHolds(t *testing.T) {
	r := newRig(t, "cx6dx-ofed-factory", "connectx-lossless.toml")
	r.opts.Store.Dir = filepath.Join(smallFS(t, "1m"), "state")
	txn, err := Begin(r.h, r.d, r.plan, "test", r.opts)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(r.opts.Store.ReservePath(txn.J.ID)); err != nil {
		t.Fatal(err)
	}
	fill(t, filepath.Dir(r.opts.Store.Dir))
	if err := txn.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	err = txn.Finish(time.Time{})
	var se *SaveError
	if !errors.As(err, &se) || !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("Finish = %v; want a SaveError wrapping ENOSPC", err)
	}
	msg := err.Error()
	for _, want := range []string{"hold the profile", `still says "applying"`, "will roll this apply back"} {
		if !strings.Contains(msg, want) {
			t.Errorf("message %q does not say %q", msg, want)
		}
	}
	if strings.Contains(msg, "restored") {
		t.Errorf("message says restored: %q", msg)
	}
	if j, err := r.opts.Store.Load(txn.J.ID); err != nil || j.State != StateApplying {
		t.Errorf("journal on disk: %+v, %v; want still applying, as the message says", j, err)
	}
}

// No room for the journal and its reserve: Begin fails before any write
// and leaves no journal behind to recover.
func TestBeginWithoutRoomChangesNothing(t *testing.T) {
	r := newRig(t, "cx6dx-ofed-factory", "connectx-lossless.toml")
	dir := smallFS(t, "1m")
	r.opts.Store.Dir = filepath.Join(dir, "state")
	if err := os.MkdirAll(r.opts.Store.JournalDir(), 0o700); err != nil {
		t.Fatal(err)
	}
	fill(t, dir)
	if _, err := Begin(r.h, r.d, r.plan, "test", r.opts); !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("Begin = %v; want ENOSPC", err)
	}
	if ops := r.sim.Ops(); len(ops) != 0 {
		t.Errorf("the host was written: %v", ops)
	}
	if open, err := r.opts.Store.Open(); err != nil || len(open) != 0 {
		t.Errorf("Open = %v, %v; want nothing", open, err)
	}
}

// vanish makes a netdev disappear as a hot-unplugged NIC does: its sysfs
// directory goes and the kernel answers ENODEV to every write.
func (r *rig) vanish(t *testing.T, netdev string) {
	t.Helper()
	if err := os.Remove(filepath.Join(r.root, "sys/class/net", netdev)); err != nil {
		t.Fatal(err)
	}
	r.sim.Inject(func(op, ifname string) error {
		if ifname == netdev {
			return syscall.ENODEV
		}
		return nil
	})
}

// Defect 4: a NIC that vanished after the apply blocked every later apply
// and the agent. Its steps are now skipped and listed, the journal is final,
// and the rest of the host is restored.
func TestRollbackSkipsAVanishedDevice(t *testing.T) {
	r := newRig(t, "cx6dx-ofed-factory", "connectx-lossless.toml")
	before := r.sim.State().Links["ens1f0np0"]
	txn, err := Begin(r.h, r.d, r.plan, "test", r.opts)
	if err != nil {
		t.Fatal(err)
	}
	if err := txn.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := txn.Finish(time.Time{}); err != nil {
		t.Fatal(err)
	}
	gone := "ens1f1np1"
	if _, ok := r.sim.State().Links[gone]; !ok {
		t.Fatalf("the fixture has no %s", gone)
	}
	r.vanish(t, gone)
	j, err := r.opts.Store.Load(txn.J.ID)
	if err != nil {
		t.Fatal(err)
	}
	if err := Rollback(r.h, j, r.opts); err != nil {
		t.Fatalf("Rollback = %v; want the vanished device skipped", err)
	}
	if j.State != StateRolledBack || len(j.Skipped) == 0 {
		t.Fatalf("journal %s, skipped %+v", j.State, j.Skipped)
	}
	for _, sk := range j.Skipped {
		if sk.Scope != gone || !strings.Contains(sk.Reason, gone) {
			t.Errorf("skipped %+v, want only %s", sk, gone)
		}
		for _, k := range sk.Keys {
			if slices.Contains(j.Restored, k) {
				t.Errorf("%s is both skipped and restored", k)
			}
		}
	}
	if got := r.sim.State().Links["ens1f0np0"]; got.Link.MTU != before.Link.MTU || got.DCB.PFC.Enable != before.DCB.PFC.Enable {
		t.Errorf("the port still present was not restored: mtu %d pfc %#x", got.Link.MTU, got.DCB.PFC.Enable)
	}
	// Recorded on disk, final: nothing is left open to block the host.
	disk, err := r.opts.Store.Load(j.ID)
	if err != nil || disk.State != StateRolledBack || len(disk.Skipped) != len(j.Skipped) {
		t.Fatalf("journal on disk %+v, %v", disk, err)
	}
	if open, err := r.opts.Store.Open(); err != nil || len(open) != 0 {
		t.Errorf("Open = %v, %v; want nothing open", open, err)
	}
	if !strings.Contains(SkippedSummary(j.Skipped), "NOT restored") {
		t.Errorf("summary %q", SkippedSummary(j.Skipped))
	}
}

// A damaged journal blocked every apply and rollback with no way out.
// Abandon reports, moves it aside, and unblocks.
func TestAbandonDamagedJournalUnblocks(t *testing.T) {
	r := newRig(t, "cx6dx-ofed-factory", "connectx-lossless.toml")
	txn, err := Begin(r.h, r.d, r.plan, "test", r.opts)
	if err != nil {
		t.Fatal(err)
	}
	s := r.opts.Store
	p := s.JournalPath(txn.J.ID)
	data, _ := os.ReadFile(p)
	if err := os.WriteFile(p, data[:len(data)/2], 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := Recover(r.h, s, false, time.Now()); !errors.Is(err, ErrJournalDamaged) {
		t.Fatalf("Recover = %v; want blocked by the damaged journal", err)
	}
	a, err := Abandon(r.h, s, txn.J.ID)
	if err != nil {
		t.Fatal(err)
	}
	if a.Journal != nil || !errors.Is(a.ReadErr, ErrJournalDamaged) || a.MovedTo != filepath.Join(s.AbandonedDir(), txn.J.ID+".json") {
		t.Fatalf("Abandon = %+v", a)
	}
	if got, _ := os.ReadFile(a.MovedTo); string(got) != string(data[:len(data)/2]) {
		t.Error("the abandoned file is not the journal as it was")
	}
	if _, err := Recover(r.h, s, false, time.Now()); err != nil {
		t.Fatalf("Recover after abandon = %v", err)
	}
}

// A readable journal abandoned: each step is reported against the host,
// which is not written.
func TestAbandonReportsTheHost(t *testing.T) {
	r := newRig(t, "cx6dx-ofed-factory", "connectx-lossless.toml")
	if err := r.apply(t); err != nil { // applied, never finished: open
		t.Fatal(err)
	}
	open, err := r.opts.Store.Open()
	if err != nil || len(open) != 1 {
		t.Fatalf("Open = %v, %v", open, err)
	}
	ops := len(r.sim.Ops())
	a, err := Abandon(r.h, r.opts.Store, open[0].ID)
	if err != nil {
		t.Fatal(err)
	}
	if a.Journal == nil || len(a.AtBefore) != 0 || len(a.NotRestored) == 0 {
		t.Fatalf("Abandon = %+v; want every step reported as not restored", a)
	}
	if !strings.Contains(strings.Join(a.NotRestored, "\n"), "ens1f0np0.link.mtu") {
		t.Errorf("not restored: %v", a.NotRestored)
	}
	if len(r.sim.Ops()) != ops {
		t.Error("abandon wrote to the host")
	}
	if open, err := r.opts.Store.Open(); err != nil || len(open) != 0 {
		t.Errorf("Open after abandon = %v, %v", open, err)
	}
}
