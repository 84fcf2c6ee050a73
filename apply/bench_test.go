package apply

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/rocectl/rocectl/host"
	"github.com/rocectl/rocectl/internal/testkit/fixturehost"
	"github.com/rocectl/rocectl/internal/testkit/hosts"
	"github.com/rocectl/rocectl/nccl"
	"github.com/rocectl/rocectl/nic"
	"github.com/rocectl/rocectl/nic/nictest"
	"github.com/rocectl/rocectl/nic/snapshot"
	"github.com/rocectl/rocectl/policy"
	"github.com/rocectl/rocectl/statedir"
)

// benchHost is a writable host with the ConnectX recipe resolved for it:
// the committed 2-port cx6dx-ofed-factory fixture, or that host scaled to
// more ports by mkhosts. Its root is under b.TempDir(), on the same file
// system as the journal's state dir (disk, here: the fsyncs are real).
type benchHost struct {
	h   *host.Host
	d   *policy.Desired
	sim *nictest.Sim
}

func newBenchHost(b *testing.B, ports int) *benchHost {
	b.Helper()
	var root string
	var sim *nictest.Sim
	if ports == 2 {
		root, sim = fixturehost.Copy(b, "cx6dx-ofed-factory")
	} else {
		tmpl := filepath.Join(b.TempDir(), "host")
		if err := hosts.WriteCX6DxFactoryN(hosts.DefaultCapturesDir(), tmpl, ports); err != nil {
			b.Fatal(err)
		}
		s, err := snapshot.Open(tmpl)
		if err != nil {
			b.Fatal(err)
		}
		root = b.TempDir()
		if err := fixturehost.CopyTree(tmpl, root); err != nil {
			b.Fatal(err)
		}
		sim = nictest.NewSim(s.State())
	}
	h := &host.Host{FS: nic.NewFS(root, false), K: sim}
	p, err := policy.Load(profilePath("connectx-lossless.toml"), policy.LoadOptions{})
	if err != nil {
		b.Fatal(err)
	}
	d := policy.Resolve(p, h.Ports(h.Discover(), true))
	nccl.Resolve(d)
	if len(d.Ports) != ports {
		b.Fatalf("the recipe matches %d ports, want %d", len(d.Ports), ports)
	}
	return &benchHost{h: h, d: d, sim: sim}
}

func (bh *benchHost) plan(b *testing.B) *policy.Plan {
	pl := policy.Diff(bh.d, bh.h.Observe(bh.d))
	if !pl.Changed() || len(pl.Errors) > 0 {
		b.Fatalf("plan: changed %v, errors %v", pl.Changed(), pl.Errors)
	}
	return pl
}

// BenchmarkJournalSave is one durable write of the journal of a full 2-port
// recipe plan (46 changes with their before-values), as Begin makes before
// the first write: JSON, temp file, fsync, rename, fsync of the directory.
// /marshal is the JSON alone, to split CPU from the file system's part.
func BenchmarkJournalSave(b *testing.B) {
	bh := newBenchHost(b, 2)
	opts := Options{Store: Store{Store: statedir.Store{Dir: b.TempDir()}}}
	txn, err := Begin(bh.h, bh.d, bh.plan(b), "bench", opts)
	if err != nil {
		b.Fatal(err)
	}
	data, err := json.Marshal(txn.J)
	if err != nil {
		b.Fatal(err)
	}
	b.Run("save", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if err := opts.Store.Save(txn.J); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(len(data)), "journal-bytes")
	})
	b.Run("marshal", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := json.Marshal(txn.J); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// BenchmarkApplyRecipe is Begin+Run of the ConnectX recipe on a factory
// host (simulated kernel, files in a temporary root): journal, every write,
// every read-back, the final journal save. Verification retries are the
// profile defaults (5 × 1 s); a Sim reads back at once, so none waits.
//
// journal-share-% is the part of an apply spent in its two journal saves
// (Begin's and Run's last), measured by timing two Saves of the same
// journal right after each apply, outside the timer. Between iterations
// the host is put back by Rollback (also outside the timer) rather than
// by a fresh copy: copying the 64-port tree takes seconds here.
//
// link-toggles/port is the most link toggles any port took in one apply
// (nictest.Sim.LinkToggles, counted around Run only: Rollback toggles
// too), the disruption the plan shows beforehand; target ≤ 1.
func BenchmarkApplyRecipe(b *testing.B) {
	for _, ports := range []int{2, 64} {
		b.Run(fmt.Sprintf("ports=%d", ports), func(b *testing.B) {
			bh := newBenchHost(b, ports)
			opts := Options{Store: Store{Store: statedir.Store{Dir: b.TempDir()}}, Retries: 5, Interval: time.Second}
			want := len(bh.plan(b).Changes)
			var applyDur, journalDur time.Duration
			toggles := 0
			b.ReportAllocs()
			b.ResetTimer()
			for range b.N {
				b.StopTimer()
				pl := bh.plan(b)
				if len(pl.Changes) != want {
					b.Fatalf("plan has %d changes after the reset, want %d", len(pl.Changes), want)
				}
				before := bh.linkToggles()
				b.StartTimer()
				t0 := time.Now()
				txn, err := Begin(bh.h, bh.d, pl, "bench", opts)
				if err != nil {
					b.Fatal(err)
				}
				if err := txn.Run(context.Background()); err != nil {
					b.Fatal(err)
				}
				applyDur += time.Since(t0)
				b.StopTimer()
				after := bh.linkToggles()
				for nd, n := range after {
					toggles = max(toggles, n-before[nd])
				}
				t1 := time.Now()
				for range 2 {
					if err := opts.Store.Save(txn.J); err != nil {
						b.Fatal(err)
					}
				}
				journalDur += time.Since(t1)
				if err := Rollback(bh.h, txn.J, opts); err != nil {
					b.Fatal(err)
				}
				// Keep the state dir as small as between a host's applies
				// (the rolled-back journal went to done/).
				if err := os.Remove(opts.Store.DonePath(txn.J.ID)); err != nil {
					b.Fatal(err)
				}
				b.StartTimer()
			}
			b.ReportMetric(float64(want), "changes")
			b.ReportMetric(100*float64(journalDur)/float64(applyDur), "journal-share-%")
			b.ReportMetric(float64(journalDur.Microseconds())/float64(b.N), "journal-µs/op")
			b.ReportMetric(float64(toggles), "link-toggles/port")
		})
	}
}

// linkToggles returns the Sim's link toggle count of each recipe port.
func (bh *benchHost) linkToggles() map[string]int {
	out := make(map[string]int, len(bh.d.Ports))
	for _, dp := range bh.d.Ports {
		out[dp.Port.Netdev] = bh.sim.LinkToggles(dp.Port.Netdev)
	}
	return out
}

// BenchmarkStoreOpen is the look for open journals that every apply,
// rollback and agent start makes, on a host with 200 finished journals of
// the 8-port recipe (≈ 45 KB each): layout=flat keeps them in journal/
// beside the open ones, as the Store did before journal/done/, so each look
// parses all of them; layout=done is the Store now.
func BenchmarkStoreOpen(b *testing.B) {
	bh := newBenchHost(b, 8)
	txn, err := Begin(bh.h, bh.d, bh.plan(b), "bench", Options{Store: Store{Store: statedir.Store{Dir: b.TempDir()}}})
	if err != nil {
		b.Fatal(err)
	}
	txn.J.State = StateCommitted
	const finished = 200
	for _, layout := range []string{"flat", "done"} {
		b.Run("layout="+layout, func(b *testing.B) {
			s := Store{Store: statedir.Store{Dir: b.TempDir()}}
			dir := s.JournalDir()
			if layout == "done" {
				dir = s.DoneDir()
			}
			if err := os.MkdirAll(dir, 0o700); err != nil {
				b.Fatal(err)
			}
			for i := range finished {
				j := *txn.J
				j.ID = fmt.Sprintf("20261130T%06dZ-%06x", i, i)
				data, err := encodeJournal(&j) // as Store.Save writes it
				if err != nil {
					b.Fatal(err)
				}
				if err := os.WriteFile(filepath.Join(dir, j.ID+".json"), data, 0o600); err != nil {
					b.Fatal(err)
				}
			}
			for b.Loop() {
				if open, err := s.Open(); err != nil || len(open) != 0 {
					b.Fatalf("Open() = %d journals, %v; want none", len(open), err)
				}
			}
			b.ReportMetric(finished, "finished-journals")
		})
	}
}
