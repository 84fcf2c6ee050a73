package nvconfig

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func readDump(t testing.TB, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestParseRealDumps(t *testing.T) {
	for _, tc := range []struct {
		file     string
		devType  string
		addr     string
		cols     []Column
		n        int
		name     string
		def, cur string // "" when not shown
		next     string
		num      uint64
		err      error
	}{
		{file: "cx5-mstconfig-e-2019.txt", devType: "ConnectX5", addr: "0000:02:00.1",
			cols: []Column{Default, Current, NextBoot}, n: 3,
			name: "MEMIC_SIZE_LIMIT", def: "_256KB(1)", cur: "_256KB(1)", next: "_256KB(1)", num: 1},
		{file: "cx6lx-mstconfig-e-2025.txt", devType: "ConnectX6LX", addr: "0108:00:00.0",
			cols: []Column{Default, Current, NextBoot}, n: 7,
			name: "CRYPTO_POLICY", def: "UNRESTRICTED(1)", cur: "UNRESTRICTED(1)", next: "UNRESTRICTED(1)", num: 1},
		{file: "cx6lx-mstconfig-e-2022-table.txt",
			cols: []Column{Default, Current, NextBoot}, n: 12,
			name: "ROCE_NEXT_PROTOCOL", def: "254", cur: "254", next: "254", num: 254},
		{file: "cx7-mlxconfig-no-e-table.txt",
			cols: []Column{NextBoot}, n: 17,
			name: "MEMIC_ATOMIC", next: "MEMIC_ATOMIC_ENABLE(2)", num: 2},
		{file: "cx6-mlxconfig-set.txt", devType: "ConnectX6", addr: "c2:00.0",
			cols: []Column{NextBoot, New}, n: 4,
			name: "BOOT_UNDI_NETWORK_WAIT", next: "0", num: 0},
		{file: "cx5-mstconfig-no-e-rows.txt", err: ErrFormat},
		{file: "cx5-mstconfig-e-2023-rows.txt", err: ErrFormat},
		{file: "err-open.txt", err: ErrAccess},
		{file: "err-unsupported.txt", err: ErrNotConnectX},
	} {
		t.Run(tc.file, func(t *testing.T) {
			q, err := Parse(readDump(t, tc.file))
			if tc.err != nil {
				if !errors.Is(err, tc.err) {
					t.Fatalf("err %v, want %v", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if q.Device.Type != tc.devType || q.Device.Address != tc.addr {
				t.Errorf("device %+v", q.Device)
			}
			if strings.Join(colStrings(q.Columns), "|") != strings.Join(colStrings(tc.cols), "|") {
				t.Errorf("columns %v, want %v", q.Columns, tc.cols)
			}
			if len(q.Settings) != tc.n {
				t.Errorf("%d settings, want %d", len(q.Settings), tc.n)
			}
			s, err := q.Get(tc.name)
			if err != nil {
				t.Fatal(err)
			}
			if s.Next.Raw != tc.next || !s.Next.HasNum || s.Next.Num != tc.num {
				t.Errorf("next %+v, want %q (%d)", s.Next, tc.next, tc.num)
			}
			if s.Shown[Default] != (tc.def != "") || s.Default.Raw != tc.def {
				t.Errorf("default %+v shown %v, want %q", s.Default, s.Shown[Default], tc.def)
			}
			if s.Shown[Current] != (tc.cur != "") || s.Current.Raw != tc.cur {
				t.Errorf("current %+v, want %q", s.Current, tc.cur)
			}
			if _, err := q.Get("NO_SUCH_SETTING"); !errors.Is(err, ErrUnknownParam) {
				t.Errorf("unknown setting: %v", err)
			}
		})
	}
}

func colStrings(cs []Column) []string {
	var s []string
	for _, c := range cs {
		s = append(s, string(c))
	}
	return s
}

// The RoCE rows of a real dump (ironcore-dev/dpservice#26) under the
// current tool's header, with a pending change and a read-only row as
// printSingleParam prints them.
const roceTable = "\nDevice #1:\n----------\n\n" +
	"Device type:        ConnectX5           \n" +
	"Device:             0000:3b:00.0        \n\n" +
	"Configurations:                                          Default             Current             Next Boot\n" +
	"*       ROCE_CC_PRIO_MASK_P1                        255                  255                  8                   \n" +
	"        CNP_DSCP_P1                                 48                   48                   48                  \n" +
	" RO     CNP_802P_PRIO_P1                            6                    6                    6                   \n" +
	"*       ATS_ENABLED                                 False(0)             True(1)              True(1)             \n" +
	"        ADVANCED_PCI_SETTINGS                       False(0)             N/A                  False(0)            \n" +
	"The '*' shows parameters with next value different from default/current value.\n" +
	"\nThe 'RO' shows parameters which are for read only and cannot be changed\n"

func TestParseStates(t *testing.T) {
	q, err := Parse([]byte(roceTable))
	if err != nil {
		t.Fatal(err)
	}
	if len(q.Settings) != 5 {
		t.Fatalf("%d settings", len(q.Settings))
	}
	mask, _ := q.Get("ROCE_CC_PRIO_MASK_P1")
	if !mask.Modified || mask.Default.Num != 255 || mask.Current.Num != 255 || mask.Next.Num != 8 {
		t.Errorf("mask %+v", mask)
	}
	if p, err := mask.Pending(); err != nil || !p {
		t.Errorf("mask pending %v %v", p, err)
	}
	prio, _ := q.Get("CNP_802P_PRIO_P1")
	if !prio.ReadOnly || prio.Modified {
		t.Errorf("prio %+v", prio)
	}
	ats, _ := q.Get("ATS_ENABLED")
	if p, _ := ats.Pending(); p || ats.Current.Num != 1 || ats.Default.Num != 0 {
		t.Errorf("ats %+v", ats)
	}
	adv, _ := q.Get("ADVANCED_PCI_SETTINGS")
	if !adv.Current.NA || adv.Current.HasNum {
		t.Errorf("adv %+v", adv)
	}
	// Without -e there is no current value to compare.
	q2, err := Parse(readDump(t, "cx7-mlxconfig-no-e-table.txt"))
	if err != nil {
		t.Fatal(err)
	}
	s, _ := q2.Get("PF_BAR2_SIZE")
	if _, err := s.Pending(); !errors.Is(err, ErrNotShown) {
		t.Errorf("pending without -e: %v", err)
	}
}

func TestParseBad(t *testing.T) {
	for name, in := range map[string]string{
		"empty":        "",
		"no header":    "        X   1\n",
		"bad column":   "Configurations:   Default   Later\n",
		"no next":      "Configurations:   Default   Current\n",
		"short row":    "Configurations:   Default   Current   Next Boot\n        X   1   2\n",
		"bad name":     "Configurations:   Next Boot\n        X;rm   1\n",
		"duplicate":    "Configurations:   Next Boot\n        X   1\n        X   2\n",
		"second table": "Configurations:   Next Boot\n        X   1\nConfigurations:   Next Boot\n",
		"long line":    "Configurations:   Next Boot\n        X   " + strings.Repeat("1", MaxLine) + "\n",
		"too big":      strings.Repeat(" ", MaxOutput+1),
	} {
		t.Run(name, func(t *testing.T) {
			if _, err := Parse([]byte(in)); !errors.Is(err, ErrFormat) {
				t.Fatalf("err %v, want ErrFormat", err)
			}
		})
	}
	q, err := Parse([]byte("Device type:        Spectrum3\nConfigurations:   Next Boot\n        X   1\n"))
	if !errors.Is(err, ErrNotConnectX) || q == nil {
		t.Errorf("switch: %v", err)
	}
	_, err = Parse([]byte("Configurations:   Next Boot\n        X   1\n-E- Failed to query some of the TLVs:\n"))
	var te *ToolError
	if !errors.As(err, &te) || !errors.Is(err, ErrTool) {
		t.Errorf("failed TLVs: %v", err)
	}
	for msg, want := range map[string]error{
		"Unknown Parameter ROCE_CC_PRIO_MASK_P3":        ErrUnknownParam,
		"Failed to unlock semaphore: Semaphore locked.": ErrBusy,
		"Failed to open the device":                     ErrAccess,
		"Device in Livefish mode is not supported":      ErrNotConnectX,
	} {
		if _, err := Parse([]byte("-E- " + msg + "\n")); !errors.Is(err, want) {
			t.Errorf("%q: %v, want %v", msg, err, want)
		}
	}
}

func FuzzParse(f *testing.F) {
	ents, err := os.ReadDir("testdata")
	if err != nil {
		f.Fatal(err)
	}
	for _, e := range ents {
		if strings.HasSuffix(e.Name(), ".txt") {
			f.Add(readDump(f, e.Name()))
		}
	}
	f.Add([]byte(roceTable))
	f.Fuzz(func(t *testing.T, in []byte) {
		q, err := Parse(in)
		if err == nil && (q == nil || q.Columns == nil) {
			t.Fatal("nil query without error")
		}
		if q == nil {
			return
		}
		if len(q.Settings) > MaxSettings {
			t.Fatalf("%d settings", len(q.Settings))
		}
		for _, s := range q.Settings {
			got, gerr := q.Get(s.Name)
			if gerr != nil || got.Name != s.Name {
				t.Fatalf("Get(%q): %v", s.Name, gerr)
			}
			if !s.Shown[NextBoot] && q.Columns != nil {
				t.Fatalf("%s: no next-boot value", s.Name)
			}
		}
	})
}
