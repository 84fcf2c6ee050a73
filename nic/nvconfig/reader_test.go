package nvconfig

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// The fake mstconfig: this test binary, re-executed with
// NVCONFIG_FAKE=<scenario>. It records its argv and answers as
// mlxcfg_ui.cpp does: the table on stdout and exit 0, or "-E- msg" on
// stdout and exit 3 (MLX_CFG_ERROR).
func TestMain(m *testing.M) {
	if sc := os.Getenv("NVCONFIG_FAKE"); sc != "" {
		os.Exit(fakeMstconfig(sc))
	}
	os.Exit(m.Run())
}

func fakeMstconfig(scenario string) int {
	if f := os.Getenv("NVCONFIG_ARGV"); f != "" {
		_ = os.WriteFile(f, []byte(strings.Join(os.Args[1:], "\x00")), 0o600)
	}
	switch scenario {
	case "ok":
		fmt.Print(roceTable)
		return 0
	case "open":
		fmt.Println("-E- Failed to open the device")
		return 3
	case "busy":
		fmt.Println("-E- Failed to unlock semaphore: Semaphore locked.")
		return 3
	case "unsupported":
		fmt.Println("-E- Unsupported device")
		return 3
	case "hang":
		time.Sleep(time.Minute)
		return 0
	case "flood":
		for {
			fmt.Print(strings.Repeat("x", 4096))
		}
	case "garbage":
		fmt.Println("Segmentation fault")
		return 0
	case "silent-fail":
		return 3
	case "set-ok":
		// A real set's output (testdata/cx6-mlxconfig-set.txt).
		b, err := os.ReadFile("testdata/cx6-mlxconfig-set.txt")
		if err != nil {
			return 5
		}
		os.Stdout.Write(b)
		return 0
	case "set-fail":
		// setDevCfg: the write started and the commander threw.
		fmt.Print("\n Apply new Configuration? (y/n) [n] : y\nApplying... Failed!\n-E- Failed to set configuration: Semaphore locked.\n")
		return 3
	case "set-unknown":
		fmt.Println("-E- Unknown Parameter: ROCE_CC_PRIO_MASK_P3")
		return 3
	case "set-no-done":
		fmt.Println("Applying... ")
		return 0
	}
	return 5
}

func fakeReader(t *testing.T, scenario string) (Reader, string) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	argv := filepath.Join(t.TempDir(), "argv")
	return Reader{Path: exe, Timeout: 5 * time.Second,
		ExtraEnv: []string{"NVCONFIG_FAKE=" + scenario, "NVCONFIG_ARGV=" + argv}}, argv
}

func TestReaderQuery(t *testing.T) {
	r, argvFile := fakeReader(t, "ok")
	q, err := r.Query(context.Background(), "0000:3b:00.0")
	if err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(argvFile)
	if err != nil {
		t.Fatal(err)
	}
	if want := "-e\x00-d\x000000:3b:00.0\x00q"; string(got) != want {
		t.Errorf("argv %q, want %q", got, want)
	}
	if s, err := q.Get("ROCE_CC_PRIO_MASK_P1"); err != nil || s.Next.Num != 8 {
		t.Errorf("mask %+v %v", s, err)
	}
}

func TestReaderErrors(t *testing.T) {
	for sc, want := range map[string]error{
		"open":        ErrAccess,
		"busy":        ErrBusy,
		"unsupported": ErrNotConnectX,
		"flood":       ErrTooLong,
		"garbage":     ErrFormat,
		"silent-fail": ErrTool,
	} {
		t.Run(sc, func(t *testing.T) {
			r, _ := fakeReader(t, sc)
			if _, err := r.Query(context.Background(), "0000:3b:00.0"); !errors.Is(err, want) {
				t.Fatalf("err %v, want %v", err, want)
			}
		})
	}
	t.Run("timeout", func(t *testing.T) {
		r, _ := fakeReader(t, "hang")
		r.Timeout = 200 * time.Millisecond
		start := time.Now()
		if _, err := r.Query(context.Background(), "0000:3b:00.0"); !errors.Is(err, ErrTimeout) {
			t.Fatalf("err %v", err)
		}
		if d := time.Since(start); d > 10*time.Second {
			t.Errorf("took %v", d)
		}
	})
	t.Run("missing", func(t *testing.T) {
		r := Reader{Path: filepath.Join(t.TempDir(), "mstconfig")}
		if _, err := r.Query(context.Background(), "0000:3b:00.0"); !errors.Is(err, ErrToolMissing) {
			t.Fatalf("err %v", err)
		}
		r = Reader{Path: "no-such-mstconfig-tool"}
		if _, err := r.Query(context.Background(), "0000:3b:00.0"); !errors.Is(err, ErrToolMissing) {
			t.Fatalf("err %v", err)
		}
	})
	t.Run("address", func(t *testing.T) {
		r, argvFile := fakeReader(t, "ok")
		for _, a := range []string{"", "-e", "3b:00.0", "0000:3b:00.0 q", "0000:3B:00.0x"} {
			if _, err := r.Query(context.Background(), a); !errors.Is(err, ErrBadAddress) {
				t.Errorf("%q: %v", a, err)
			}
		}
		if _, err := os.Stat(argvFile); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("the tool ran on a bad address")
		}
	})
}

func TestSetArgvByteExact(t *testing.T) {
	got := strings.Join(SetArgv("mstconfig", "0000:3b:00.1", []Param{{"ROCE_CC_PRIO_MASK_P2", 8}, {"CNP_DSCP_P2", 48}, {"ATS_ENABLED", 1}}), "\x00")
	want := "mstconfig\x00-y\x00-d\x000000:3b:00.1\x00set\x00ROCE_CC_PRIO_MASK_P2=8\x00CNP_DSCP_P2=48\x00ATS_ENABLED=1"
	if got != want {
		t.Errorf("argv %q\nwant %q", got, want)
	}
}

// Set runs the exact command line and reads the tool's answer as
// setDevCfg (mlxcfg_ui.cpp) gives it: "Applying... Done!" and exit 0 is
// success; "-E-" with exit 3 is the tool's error, classified; no "Done!"
// is not trusted. A bad address or name runs nothing.
func TestReaderSet(t *testing.T) {
	r, argvFile := fakeReader(t, "set-ok")
	if err := r.Set(context.Background(), "0000:c2:00.0", []Param{{"BOOT_UNDI_NETWORK_WAIT", 30}}); err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(argvFile)
	if err != nil {
		t.Fatal(err)
	}
	if want := "-y\x00-d\x000000:c2:00.0\x00set\x00BOOT_UNDI_NETWORK_WAIT=30"; string(got) != want {
		t.Errorf("argv %q, want %q", got, want)
	}
	for sc, want := range map[string][]error{
		"set-fail":    {ErrSetFailed, ErrBusy, ErrTool},
		"set-unknown": {ErrUnknownParam, ErrTool},
		"set-no-done": {ErrFormat},
		"busy":        {ErrBusy},
		"open":        {ErrAccess},
		"silent-fail": {ErrSetFailed},
	} {
		t.Run(sc, func(t *testing.T) {
			r, _ := fakeReader(t, sc)
			err := r.Set(context.Background(), "0000:3b:00.0", []Param{{"CNP_DSCP_P1", 48}})
			for _, w := range want {
				if !errors.Is(err, w) {
					t.Errorf("err %v, want %v", err, w)
				}
			}
		})
	}
	t.Run("timeout", func(t *testing.T) {
		r, _ := fakeReader(t, "hang")
		r.Timeout = 200 * time.Millisecond
		if err := r.Set(context.Background(), "0000:3b:00.0", []Param{{"CNP_DSCP_P1", 48}}); !errors.Is(err, ErrTimeout) {
			t.Fatalf("err %v", err)
		}
	})
	t.Run("refused before running", func(t *testing.T) {
		r, argvFile := fakeReader(t, "set-ok")
		if err := r.Set(context.Background(), "3b:00.0", []Param{{"X", 1}}); !errors.Is(err, ErrBadAddress) {
			t.Errorf("short address: %v", err)
		}
		for _, name := range []string{"X Y", "X=1", "-e", "A[0]", ""} {
			if err := r.Set(context.Background(), "0000:3b:00.0", []Param{{name, 1}}); !errors.Is(err, ErrFormat) {
				t.Errorf("name %q: %v", name, err)
			}
		}
		if _, err := os.Stat(argvFile); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("the tool ran")
		}
	})
}
