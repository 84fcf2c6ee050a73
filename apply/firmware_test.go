package apply

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/rocectl/rocectl/host"
	"github.com/rocectl/rocectl/internal/testkit/fakemst"
	"github.com/rocectl/rocectl/internal/testkit/fixturehost"
	"github.com/rocectl/rocectl/nccl"
	"github.com/rocectl/rocectl/nic"
	"github.com/rocectl/rocectl/policy"
	"github.com/rocectl/rocectl/port"
	"github.com/rocectl/rocectl/statedir"
)

// fwProfile sets the RoCE firmware keys only.
const fwProfile = `name = "fw"
[match]
drivers = ["mlx5_core"]
[firmware]
cc_priorities = [3]
cnp_dscp = 48
cnp_priority = 6
ats = true
`

// factoryFirmware is a ConnectX-6 Dx at its firmware defaults (the mask
// 255, CNP DSCP 48 and priority 6 mlxconfig's query shows on a fresh card,
// testdata/SOURCES.md of nic/nvconfig), both PCI functions of one adapter.
func factoryFirmware() *fakemst.State {
	p := func(name string, v uint64) *fakemst.Param {
		return &fakemst.Param{Name: name, Default: v, Current: v, Next: v}
	}
	return &fakemst.State{
		Devices: map[string]*fakemst.Device{"0000:3b:00.0": {Type: "ConnectX6DX", Params: []*fakemst.Param{
			p("ROCE_CC_PRIO_MASK_P1", 255), p("CNP_DSCP_P1", 48), p("CNP_802P_PRIO_P1", 6),
			p("ROCE_CC_PRIO_MASK_P2", 255), p("CNP_DSCP_P2", 48), p("CNP_802P_PRIO_P2", 6),
			{Name: "ATS_ENABLED", Bool: true},
		}}},
		Alias: map[string]string{"0000:3b:00.1": "0000:3b:00.0"},
	}
}

type fwRig struct {
	root string
	h    *host.Host
	fake *fakemst.Fake
	p    *policy.Profile
	opts Options
}

func newFWRig(t *testing.T, st *fakemst.State) *fwRig {
	t.Helper()
	root, sim := fixturehost.Copy(t, "cx6dx-ofed-factory")
	fake := fakemst.New(t, st)
	path := filepath.Join(t.TempDir(), "fw.toml")
	if err := os.WriteFile(path, []byte(fwProfile), 0o600); err != nil {
		t.Fatal(err)
	}
	p, err := policy.Load(path, policy.LoadOptions{AllowInsecure: true})
	if err != nil {
		t.Fatal(err)
	}
	return &fwRig{root: root, fake: fake, p: p,
		h:    &host.Host{FS: nic.NewFS(root, false), K: sim, FW: fake.Reader()},
		opts: Options{Store: Store{Store: statedir.Store{Dir: t.TempDir()}}, Retries: 1}}
}

func (r *fwRig) prepare() *Prepared {
	pr := Prepare(r.h, r.p, false)
	nccl.Resolve(pr.Desired)
	return pr
}

func keysOf[T any](xs []T, key func(T) string) []string {
	var out []string
	for _, x := range xs {
		out = append(out, key(x))
	}
	return out
}

// A firmware apply writes the next-boot values with one mstconfig set per
// PCI function, byte for byte; the journal keeps the previous next-boot
// values by parameter name; the read-back passes on the next-boot value
// while the current one waits for a firmware reset, which audit reports
// as pending, not drift; rollback writes the saved values back.
func TestFirmwareApplyPendingRollback(t *testing.T) {
	r := newFWRig(t, factoryFirmware())
	pr := r.prepare()
	got := keysOf(pr.Plan.Changes, func(c policy.Change) string { return c.Key + "=" + c.Before + "->" + c.Value })
	want := []string{
		"ens1f0np0.firmware.ats=off->on",
		"ens1f0np0.firmware.cc_priorities=[0,1,2,3,4,5,6,7]->[3]",
		"ens1f1np1.firmware.ats=off->on",
		"ens1f1np1.firmware.cc_priorities=[0,1,2,3,4,5,6,7]->[3]",
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("changes:\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if pr.Plan.InSync != 4 || len(pr.Plan.Pending) != 0 {
		t.Errorf("in sync %d, pending %v", pr.Plan.InSync, pr.Plan.Pending)
	}
	for _, c := range pr.Plan.Changes {
		if !strings.Contains(c.Note, "pending: takes effect at the next firmware reset (`mstfwreset -d 0000:3b:00.") {
			t.Errorf("%s: note %q", c.Key, c.Note)
		}
	}
	r.fake.Save(func() *fakemst.State { st := r.fake.Load(); st.Argv = nil; return st }())
	txn, err := Begin(r.h, pr.Desired, pr.Plan, "fw", r.opts)
	if err != nil {
		t.Fatal(err)
	}
	if err := txn.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := txn.Finish(time.Time{}); err != nil {
		t.Fatal(err)
	}
	st := r.fake.Load()
	var sets []string
	for _, a := range st.Argv {
		if a[len(a)-1] != "q" {
			sets = append(sets, strings.Join(a, " "))
		}
	}
	wantSets := []string{
		"mstconfig -y -d 0000:3b:00.0 set ATS_ENABLED=1 ROCE_CC_PRIO_MASK_P1=8",
		"mstconfig -y -d 0000:3b:00.1 set ATS_ENABLED=1 ROCE_CC_PRIO_MASK_P2=8",
	}
	if !reflect.DeepEqual(sets, wantSets) {
		t.Errorf("sets:\n%s\nwant\n%s", strings.Join(sets, "\n"), strings.Join(wantSets, "\n"))
	}
	if q := strings.Join(st.Argv[0], " "); q != "mstconfig -e -d 0000:3b:00.0 q" {
		t.Errorf("first query %q", q)
	}
	for _, name := range []string{"ROCE_CC_PRIO_MASK_P1", "ROCE_CC_PRIO_MASK_P2"} {
		if p := st.Get("0000:3b:00.0", name); p.Next != 8 || p.Current != 255 {
			t.Errorf("%s: %+v", name, p)
		}
	}
	// The journal on disk: each firmware step's previous next-boot values.
	j, err := r.opts.Store.LastCommitted()
	if err != nil || j == nil {
		t.Fatal(err)
	}
	var saved []host.FirmwareSaved
	for _, s := range j.Steps {
		saved = append(saved, s.Firmware...)
	}
	wantSaved := []host.FirmwareSaved{
		{PCI: "0000:3b:00.0", Params: []host.FirmwareValue{{Name: "ATS_ENABLED", NextBoot: 0}, {Name: "ROCE_CC_PRIO_MASK_P1", NextBoot: 255}}},
		{PCI: "0000:3b:00.1", Params: []host.FirmwareValue{{Name: "ATS_ENABLED", NextBoot: 0}, {Name: "ROCE_CC_PRIO_MASK_P2", NextBoot: 255}}},
	}
	if !reflect.DeepEqual(saved, wantSaved) {
		t.Errorf("journal's saved values %+v, want %+v", saved, wantSaved)
	}
	if j.Version != JournalVersion {
		t.Errorf("journal version %d, want %d", j.Version, JournalVersion)
	}
	// Audit now: nothing to write, every written setting pending.
	pr2 := r.prepare()
	if pr2.Plan.Changed() {
		t.Errorf("changes after apply: %v", pr2.Plan.Changes)
	}
	pend := keysOf(pr2.Plan.Pending, func(p policy.Pending) string { return p.Key + " current " + p.Current + " want " + p.Want })
	wantPend := []string{
		"ens1f0np0.firmware.ats current off want on",
		"ens1f0np0.firmware.cc_priorities current [0,1,2,3,4,5,6,7] want [3]",
		"ens1f1np1.firmware.ats current off want on",
		"ens1f1np1.firmware.cc_priorities current [0,1,2,3,4,5,6,7] want [3]",
	}
	if !reflect.DeepEqual(pend, wantPend) {
		t.Errorf("pending:\n%s\nwant\n%s", strings.Join(pend, "\n"), strings.Join(wantPend, "\n"))
	}
	// A firmware reset: current takes the next-boot values; in sync.
	st = r.fake.Load()
	for _, p := range st.Devices["0000:3b:00.0"].Params {
		p.Current = p.Next
	}
	r.fake.Save(st)
	if pr3 := r.prepare(); pr3.Plan.Changed() || len(pr3.Plan.Pending) != 0 || pr3.Plan.InSync != 8 {
		t.Errorf("after reset: %d changes, %d pending, %d in sync", len(pr3.Plan.Changes), len(pr3.Plan.Pending), pr3.Plan.InSync)
	}
	// Rollback from the journal on disk, in a new process: the saved
	// next-boot values come back; current stays until the next reset.
	h2 := &host.Host{FS: r.h.FS, K: r.h.K, FW: r.fake.Reader()}
	if err := Rollback(h2, j, r.opts); err != nil {
		t.Fatal(err)
	}
	st = r.fake.Load()
	for name, want := range map[string]uint64{"ROCE_CC_PRIO_MASK_P1": 255, "ROCE_CC_PRIO_MASK_P2": 255, "ATS_ENABLED": 0, "CNP_DSCP_P1": 48} {
		if p := st.Get("0000:3b:00.0", name); p.Next != want {
			t.Errorf("after rollback %s next %d, want %d", name, p.Next, want)
		}
	}
	last := strings.Join(st.Argv[len(st.Argv)-1], " ")
	if !strings.Contains(strings.Join(flat(st.Argv), "\n"), "mstconfig -y -d 0000:3b:00.1 set ATS_ENABLED=0 ROCE_CC_PRIO_MASK_P2=255") {
		t.Errorf("no rollback set of 0000:3b:00.1 (last command %q)", last)
	}
}

func flat(argv [][]string) []string {
	var out []string
	for _, a := range argv {
		out = append(out, strings.Join(a, " "))
	}
	return out
}

// Bad input: each firmware setting ends up unknown, unsupported or
// unreadable with the reason, and nothing is written: no mstconfig set
// runs, the firmware's next-boot values stay as they were.
func TestFirmwareBadInputWritesNothing(t *testing.T) {
	for _, tc := range []struct {
		name    string
		mutate  func(st *fakemst.State)
		reader  func(r *fwRig)
		state   string // "unknown", "unsupported" or "error", for the 0000:3b:00.0 port's cc_priorities
		reason  string
		noApply bool // the plan is refused
	}{
		{name: "tool missing", reader: func(r *fwRig) {
			rd := r.fake.Reader()
			rd.Path = filepath.Join(t.TempDir(), "mstconfig")
			r.h.FW = rd
		}, state: "unknown", reason: "mstconfig not found (install the mstflint package)"},
		{name: "not a ConnectX", mutate: func(st *fakemst.State) { st.Devices["0000:3b:00.0"].Type = "" },
			state: "unknown", reason: "device is not a ConnectX"},
		{name: "busy", mutate: func(st *fakemst.State) { st.Devices["0000:3b:00.0"].Fail = "busy" },
			state: "error", reason: "Semaphore locked", noApply: true},
		{name: "locked down", mutate: func(st *fakemst.State) { st.Devices["0000:3b:00.0"].Fail = "open" },
			state: "error", reason: "kernel lockdown under secure boot", noApply: true},
		{name: "timeout", mutate: func(st *fakemst.State) { st.Devices["0000:3b:00.0"].Fail = "hang" },
			reader: func(r *fwRig) { rd := r.fake.Reader(); rd.Timeout = 300 * time.Millisecond; r.h.FW = rd },
			state:  "error", reason: "mstconfig query timed out", noApply: true},
		{name: "garbage", mutate: func(st *fakemst.State) { st.Devices["0000:3b:00.0"].Fail = "garbage" },
			state: "error", reason: "unexpected mstconfig output", noApply: true},
		{name: "parameter unknown to the firmware", mutate: func(st *fakemst.State) {
			d := st.Devices["0000:3b:00.0"]
			d.Params = d.Params[1:] // no ROCE_CC_PRIO_MASK_P1
		}, state: "unsupported", reason: "parameter ROCE_CC_PRIO_MASK_P1 unknown to this firmware"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st := factoryFirmware()
			if tc.mutate != nil {
				tc.mutate(st)
			}
			r := newFWRig(t, st)
			if tc.reader != nil {
				tc.reader(r)
			}
			pr := r.prepare()
			key := "ens1f0np0.firmware.cc_priorities"
			var got string
			switch tc.state {
			case "unknown":
				for _, u := range pr.Plan.Unknown {
					if u.Key == key {
						got = u.Reason
					}
				}
			case "unsupported":
				for _, u := range pr.Plan.Unsupported {
					if u.Key == key {
						got = u.Reason
					}
				}
			case "error":
				for _, e := range pr.Plan.Errors {
					if e.Key == key {
						got = e.Error
					}
				}
			}
			if !strings.Contains(got, tc.reason) {
				t.Fatalf("%s: %s %q, want one saying %q\nplan: changes %v\nunknown %v\nunsupported %v\nerrors %v",
					key, tc.state, got, tc.reason, pr.Plan.Changes, pr.Plan.Unknown, pr.Plan.Unsupported, pr.Plan.Errors)
			}
			for _, c := range pr.Plan.Changes {
				if c.Key == key {
					t.Errorf("%s planned as a change", key)
				}
			}
			if refusal := Refusal(pr.Plan, false); (refusal != nil) != tc.noApply {
				t.Errorf("refusal %v, want refused %v", refusal, tc.noApply)
			}
			if tc.noApply || tc.name == "tool missing" {
				for _, a := range r.fake.Load().Argv {
					if a[len(a)-1] != "q" {
						t.Errorf("a write ran: %q", a)
					}
				}
			}
		})
	}
}

// A set that fails mid-apply (the firmware refuses the write) fails the
// apply and rolls back: the other port's set is undone, and every
// next-boot value is what it was.
func TestFirmwareSetFailsRollsBack(t *testing.T) {
	r := newFWRig(t, factoryFirmware())
	pr := r.prepare()
	// The first port's set goes through; the device then refuses writes.
	r.opts.BeforeStep = func(i int, st host.Step) error {
		if len(st.Changes) > 0 && st.Changes[0].Port != nil && st.Changes[0].Port.Netdev == "ens1f1np1" {
			s := r.fake.Load()
			s.Devices["0000:3b:00.0"].Fail = "set-fail-once"
			r.fake.Save(s)
		}
		return nil
	}
	txn, err := Begin(r.h, pr.Desired, pr.Plan, "fw", r.opts)
	if err != nil {
		t.Fatal(err)
	}
	err = txn.Run(context.Background())
	if err == nil || !strings.Contains(err.Error(), "Failed to set configuration") {
		t.Fatalf("apply: %v", err)
	}
	st := r.fake.Load()
	for _, p := range st.Devices["0000:3b:00.0"].Params {
		if p.Next != p.Default {
			t.Errorf("%s next %d after the failed apply, want %d", p.Name, p.Next, p.Default)
		}
	}
}

// fwJournal is a committed apply of one port's [firmware] keys, as the
// transaction writes it.
func fwJournal() *Journal {
	p := &port.Port{Netdev: "ens1f0np0", RDMADevice: "mlx5_0", PortNum: 1, Driver: "mlx5_core", PCI: "0000:3b:00.0", RoCEv2GID: -1}
	ch := func(arg, before, after string) policy.Change {
		name := "firmware." + arg
		return policy.Change{Setting: policy.Setting{Key: p.Netdev + "." + name, Scope: p.Netdev, Name: name, Kind: policy.KindFirmware,
			Arg: arg, Value: after, From: name, Port: p}, Before: before}
	}
	return &Journal{Version: JournalVersion, ID: "20261204T000000Z-000001", Profile: "fw", ProfileHash: "h", Root: "/",
		Started: time.Date(2026, 12, 4, 0, 0, 0, 0, time.UTC), State: StateCommitted, Done: 1, PID: 1,
		Steps: []host.Step{{Scope: "ens1f0np0", Group: "firmware",
			Changes: []policy.Change{ch("ats", "off", "on"), ch("cc_priorities", "[0,1,2,3,4,5,6,7]", "[3]")},
			Firmware: []host.FirmwareSaved{{PCI: "0000:3b:00.0", Params: []host.FirmwareValue{
				{Name: "ATS_ENABLED", NextBoot: 0}, {Name: "ROCE_CC_PRIO_MASK_P1", NextBoot: 255}}}}}}}
}

// A firmware step keeps its previous next-boot values in version 3's
// "firmware", byte for byte as recorded (testdata/journal-v3-firmware.json,
// -update-journals), decoded as encoded; version 2 has no place for them,
// and saved values a rollback must not act on are refused as damaged.
func TestFirmwareJournalVersion3(t *testing.T) {
	j := fwJournal()
	data, err := encodeJournal(j)
	if err != nil {
		t.Fatal(err)
	}
	const file = "testdata/journal-v3-firmware.json"
	if *updateJournals {
		if err := os.WriteFile(file, data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	golden, err := os.ReadFile(file)
	if err != nil {
		t.Fatalf("%v (record it with -update-journals)", err)
	}
	if !bytes.Equal(data, golden) {
		t.Errorf("the encoder no longer writes %s byte for byte", file)
	}
	if !bytes.Contains(data, []byte(`"firmware":[{"pci":"0000:3b:00.0","params":[{"name":"ATS_ENABLED","next_boot":0},{"name":"ROCE_CC_PRIO_MASK_P1","next_boot":255}]}]`)) {
		t.Fatalf("encoded: %s", data)
	}
	got, err := DecodeJournal(golden)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(normalize(got), normalize(j)) {
		t.Errorf("round trip:\n got %+v\nwant %+v", got.Steps, j.Steps)
	}
	step := func(b map[string]any) map[string]any { return b["steps"].([]any)[0].(map[string]any) }
	saved := func(b map[string]any) map[string]any { return step(b)["firmware"].([]any)[0].(map[string]any) }
	for name, edit := range map[string]func(b map[string]any){
		"pci not an address": func(b map[string]any) { saved(b)["pci"] = "3b:00.0 -y" },
		"parameter name":     func(b map[string]any) { saved(b)["params"].([]any)[0].(map[string]any)["name"] = "ATS_ENABLED=1" },
		"value over 32 bits": func(b map[string]any) { saved(b)["params"].([]any)[0].(map[string]any)["next_boot"] = 1 << 33 },
		"no parameter":       func(b map[string]any) { saved(b)["params"] = []any{} },
		"change's port's pci": func(b map[string]any) {
			step(b)["changes"].([]any)[0].(map[string]any)["port"].(map[string]any)["pci"] = ""
		},
		"unknown key": func(b map[string]any) { step(b)["changes"].([]any)[0].(map[string]any)["arg"] = "link_type" },
	} {
		t.Run(name, func(t *testing.T) {
			if _, err := DecodeJournal(reseal(t, data, edit)); !errors.Is(err, ErrJournalDamaged) {
				t.Errorf("DecodeJournal = %v, want damaged", err)
			}
		})
	}
	t.Run("as version 2", func(t *testing.T) {
		v2 := bytes.Replace(data, []byte(`"version":3`), []byte(`"version":2`), 1)
		if _, err := DecodeJournal(v2); !errors.Is(err, ErrJournalDamaged) || !strings.Contains(err.Error(), "not in format version 2") {
			t.Errorf("DecodeJournal = %v, want damaged: not in version 2", err)
		}
	})
}
