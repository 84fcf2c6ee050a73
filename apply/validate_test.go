package apply

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rocectl/rocectl/host"
	"github.com/rocectl/rocectl/statedir"
)

// noPanic runs f and fails t, naming what, if it panics: a journal on
// disk must never crash rocectl, whatever it holds.
func noPanic(t *testing.T, what string, f func()) {
	t.Helper()
	defer func() {
		if p := recover(); p != nil {
			t.Errorf("%s panicked: %v", what, p)
		}
	}()
	f()
}

// openV1 is the golden v1 journal for r's root, reopened as an unfinished
// apply (state applying), with edit applied to its raw JSON.
func openV1(t *testing.T, r *rig, edit func([]byte) []byte) (string, []byte) {
	t.Helper()
	data, err := os.ReadFile(goldenV1)
	if err != nil {
		t.Fatal(err)
	}
	data = bytes.ReplaceAll(data, []byte(goldenRoot(t, data)), []byte(r.root))
	data = bytes.Replace(data, []byte(`"state":"committed"`), []byte(`"state":"applying"`), 1)
	var head struct{ ID string }
	if err := json.Unmarshal(data, &head); err != nil {
		t.Fatal(err)
	}
	if _, err := DecodeJournal(data); err != nil {
		t.Fatalf("the unedited journal does not decode: %v", err)
	}
	edited := edit(data)
	if bytes.Equal(edited, data) {
		t.Fatal("the edit changed nothing")
	}
	return head.ID, edited
}

// Issue #34 item 2: a v1 journal (no checksum) whose change has `"Port":
// null` decoded, and rollback, apply's recovery, the agent's and even
// `rollback --abandon` then crashed on a nil port reading the host. Such
// a journal is damaged: every path refuses it with the way out, and
// abandon moves it aside.
func TestV1JournalWithNullPortIsRefusedNotACrash(t *testing.T) {
	r := newRig(t, "cx6dx-ofed-factory", "connectx-lossless.toml")
	s := r.opts.Store
	id, data := openV1(t, r, func(b []byte) []byte {
		i := bytes.Index(b, []byte(`"Port":{`))
		end := bytes.IndexByte(b[i:], '}')
		return append(append(append([]byte{}, b[:i]...), `"Port":null`...), b[i+end+1:]...)
	})
	noPanic(t, "DecodeJournal", func() {
		if j, err := DecodeJournal(data); !errors.Is(err, ErrJournalDamaged) {
			t.Errorf("DecodeJournal = %v (journal %t); want damaged", err, j != nil)
		}
	})
	if err := os.MkdirAll(s.JournalDir(), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(s.JournalPath(id), data, 0o600); err != nil {
		t.Fatal(err)
	}
	ops := len(r.sim.Ops())
	// apply and the agent first recover unfinished journals.
	noPanic(t, "Recover", func() {
		_, err := Recover(r.h, s, false, time.Now())
		var je *JournalError
		if !errors.As(err, &je) || !errors.Is(err, ErrJournalDamaged) || !strings.Contains(err.Error(), "rollback --abandon "+id) {
			t.Errorf("Recover = %v; want a damaged JournalError naming the way out", err)
		}
	})
	// `rocectl rollback ID` loads the journal first.
	noPanic(t, "Load and Rollback", func() {
		j, err := s.Load(id)
		if !errors.Is(err, ErrJournalDamaged) {
			t.Errorf("Load = %v; want damaged", err)
		}
		if j != nil {
			_ = Rollback(r.h, j, r.opts)
		}
	})
	if len(r.sim.Ops()) != ops {
		t.Error("the host was written")
	}
	noPanic(t, "Abandon", func() {
		a, err := Abandon(r.h, s, id)
		if err != nil {
			t.Fatalf("Abandon = %v", err)
		}
		if a.Journal != nil || !errors.Is(a.ReadErr, ErrJournalDamaged) || a.MovedTo != filepath.Join(s.AbandonedDir(), id+".json") {
			t.Errorf("Abandon = %+v", a)
		}
	})
	noPanic(t, "Recover after abandon", func() {
		if _, err := Recover(r.h, s, false, time.Now()); err != nil {
			t.Errorf("Recover after abandon = %v", err)
		}
	})
}

// Every field a rollback uses is checked on decode: a journal that holds
// what no rocectl writes is damaged, whatever its version, and abandon
// still sets it aside.
func TestJournalFieldsAreValidatedOnDecode(t *testing.T) {
	r := newRig(t, "cx6dx-ofed-factory", "connectx-lossless.toml")
	txn, err := Begin(r.h, r.d, r.plan, "test", r.opts)
	if err != nil {
		t.Fatal(err)
	}
	s := r.opts.Store
	good, err := os.ReadFile(s.JournalPath(txn.J.ID))
	if err != nil {
		t.Fatal(err)
	}
	steps := func(b map[string]any) []any { return b["steps"].([]any) }
	step := func(b map[string]any, i int) map[string]any { return steps(b)[i].(map[string]any) }
	change := func(b map[string]any, i, k int) map[string]any {
		return step(b, i)["changes"].([]any)[k].(map[string]any)
	}
	// The index of the first step whose change has the kind.
	kindAt := func(b map[string]any, kind string) int {
		for i := range steps(b) {
			if change(b, i, 0)["kind"] == kind {
				return i
			}
		}
		t.Fatalf("the journal has no %s step", kind)
		return -1
	}
	for name, edit := range map[string]func(b map[string]any){
		"port null": func(b map[string]any) { change(b, 0, 0)["port"] = nil },
		"port without a netdev": func(b map[string]any) {
			change(b, 0, 0)["port"].(map[string]any)["netdev"] = ""
		},
		"netdev with a slash": func(b map[string]any) {
			change(b, 0, 0)["port"].(map[string]any)["netdev"] = "../../etc"
		},
		"rdma port kind without an RDMA device": func(b map[string]any) {
			change(b, kindAt(b, "roce_tos"), 0)["port"].(map[string]any)["rdma_device"] = ""
		},
		"changes of a step on two ports": func(b map[string]any) {
			i := kindAt(b, "trust")
			change(b, i, 1)["port"].(map[string]any)["netdev"] = "ens1f1np1"
		},
		"changes of a step through two objects": func(b map[string]any) {
			i := kindAt(b, "trust")
			change(b, i, 1)["kind"] = "mtu"
		},
		"saved APP entry out of range": func(b map[string]any) {
			i := kindAt(b, "trust")
			step(b, i)["dscp_apps"] = map[string]any{"entries": []any{map[string]any{"selector": 5, "priority": 9, "protocol": 1}}}
		},
		"saved APP table on a step that has none": func(b map[string]any) {
			step(b, kindAt(b, "mtu"))["dscp_apps"] = map[string]any{"entries": []any{}}
		},
		"file undo on a step that has none": func(b map[string]any) {
			step(b, kindAt(b, "mtu"))["undo"] = map[string]any{"path": "/etc/passwd", "absent": true}
		},
		"confirm-pending without a deadline": func(b map[string]any) { b["state"] = StateConfirmPending },
		"ID that is no file name":            func(b map[string]any) { b["id"] = "../x" },
	} {
		t.Run(name, func(t *testing.T) {
			data := reseal(t, good, edit)
			noPanic(t, "DecodeJournal", func() {
				if j, err := DecodeJournal(data); !errors.Is(err, ErrJournalDamaged) {
					t.Errorf("DecodeJournal = %v (journal %t); want damaged", err, j != nil)
				}
			})
		})
	}
	// An NCCL step's saved file is where its variables are read and
	// restored: one of a relative path is damaged.
	nccl := ncclStepJournal(t, newRig(t, "cx6dx-ofed-lossless", "base.toml"))
	for name, undo := range map[string]any{"relative path": map[string]any{"path": "etc/nccl.conf", "absent": true}} {
		t.Run("nccl step with "+name, func(t *testing.T) {
			data := reseal(t, nccl, func(b map[string]any) { step(b, kindAt(b, "nccl"))["undo"] = undo })
			noPanic(t, "DecodeJournal", func() {
				if j, err := DecodeJournal(data); !errors.Is(err, ErrJournalDamaged) {
					t.Errorf("DecodeJournal = %v (journal %t); want damaged", err, j != nil)
				}
			})
		})
	}
}

// ncclStepJournal is the journal of r's apply, which writes the NCCL
// file, before its first write.
func ncclStepJournal(t *testing.T, r *rig) []byte {
	t.Helper()
	txn, err := Begin(r.h, r.d, r.plan, "test", r.opts)
	if err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(r.opts.Store.JournalPath(txn.J.ID))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(data, []byte(`"kind":"nccl"`)) {
		t.Fatalf("the plan has no NCCL step: %s", data)
	}
	return data
}

// goldenJournalFiles are the journals of every format version in
// testdata, as rocectl wrote them: the fuzzers' seeds.
func goldenJournalFiles(tb testing.TB) [][]byte {
	tb.Helper()
	names, err := filepath.Glob("testdata/journal-v*.json")
	if err != nil || len(names) < 3 {
		tb.Fatalf("golden journals %v, %v: want v1, v2 and v3", names, err)
	}
	var out [][]byte
	for _, n := range names {
		b, err := os.ReadFile(n)
		if err != nil {
			tb.Fatal(err)
		}
		out = append(out, b)
	}
	return out
}

// `rollback --abandon` is the way out of any journal rocectl cannot act
// on, so it must work on any file: whatever a journal file holds, Abandon
// reads what it can (never panicking), compares what it read with the
// host, writes nothing, and moves the file aside, after which nothing is
// blocked. A journal that decodes is also abandoned once more pointed at
// the fixture host's root, so that its steps are read back against a real
// host (the reads a rollback and recovery make first), and put in undo
// order as a rollback does.
func FuzzAbandonJournal(f *testing.F) {
	for _, g := range goldenJournalFiles(f) {
		f.Add(g)
	}
	lag, err := encodeJournal(lagJournal())
	if err != nil {
		f.Fatal(err)
	}
	f.Add(lag)
	f.Add([]byte(`{"version":1,"id":"20260101T000000Z-000001","state":"applying","steps":[{"changes":[{"Kind":0,"Port":null}]}]}`))
	f.Add([]byte{})
	r := newRig(f, "cx6dx-ofed-factory", "connectx-lossless.toml")
	const fileID = "20260101T000000Z-000001"
	abandon := func(t *testing.T, s Store, id string, data []byte) *Abandoned {
		t.Helper()
		if err := os.MkdirAll(s.JournalDir(), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(s.JournalPath(id), data, 0o600); err != nil {
			t.Fatal(err)
		}
		var a *Abandoned
		noPanic(t, "Abandon", func() { a, err = Abandon(r.h, s, id) })
		if t.Failed() {
			t.FailNow()
		}
		if err != nil {
			t.Fatalf("Abandon = %v", err)
		}
		if a.MovedTo != filepath.Join(s.AbandonedDir(), id+".json") {
			t.Fatalf("moved to %q", a.MovedTo)
		}
		if got, err := os.ReadFile(a.MovedTo); err != nil || !bytes.Equal(got, data) {
			t.Fatalf("the abandoned file is not the journal as it was (%v)", err)
		}
		if open, err := s.Open(); err != nil || len(open) != 0 {
			t.Fatalf("Open after abandon = %d journals, %v", len(open), err)
		}
		return a
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		ops := len(r.sim.Ops())
		s := Store{Store: statedir.Store{Dir: t.TempDir()}}
		a := abandon(t, s, fileID, data)
		var j *Journal
		noPanic(t, "DecodeJournal", func() { j, err = DecodeJournal(data) })
		if err != nil || t.Failed() {
			return
		}
		if a.Journal == nil && j.ID == fileID {
			t.Fatalf("Abandon could not read a journal that decodes: %v", a.ReadErr)
		}
		// On this host: each step read back.
		j.Root = r.root
		again, err := encodeJournal(j)
		if err != nil {
			t.Fatalf("a decoded journal does not encode: %v", err)
		}
		if a := abandon(t, s, j.ID, again); a.Journal == nil {
			t.Fatalf("Abandon could not read a journal that decodes: %v", a.ReadErr)
		}
		noPanic(t, "UndoNeeded", func() {
			for _, st := range host.UndoOrder(j.Steps) {
				r.h.UndoNeeded(&host.Owed{}, st)
			}
		})
		if len(r.sim.Ops()) != ops {
			t.Fatal("abandon wrote to the host")
		}
	})
}
