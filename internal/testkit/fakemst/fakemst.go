package fakemst

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/rocectl/rocectl/nic/nvconfig"
)

// EnvState names the state file; its presence makes Main act as mstconfig.
const EnvState = "FAKEMST_STATE"

// Param is one NVConfig parameter's three values, as the firmware holds
// them. Bool ones print as False(0)/True(1), as mlxconfig prints enums.
type Param struct {
	Name    string `json:"name"`
	Default uint64 `json:"default"`
	Current uint64 `json:"current"`
	Next    uint64 `json:"next"`
	Bool    bool   `json:"bool,omitempty"`
	// CurrentNA: the firmware returned no current value (N/A).
	CurrentNA bool `json:"current_na,omitempty"`
}

// Device is one PCI function's view of its adapter's NVConfig.
type Device struct {
	Type   string   `json:"type"` // "ConnectX6DX"; "" for a device mstconfig does not know
	Params []*Param `json:"params"`
	// Fail makes the next runs fail: "busy", "open" (not root / lockdown),
	// "hang", "garbage", "set-fail" (the write itself fails; "set-fail-once"
	// the next one only), "set-silent"
	// (a set that says "Done!" and changes nothing).
	Fail string `json:"fail,omitempty"`
}

// State is the fake's world: devices by PCI address, and every command
// line it ran.
type State struct {
	Devices map[string]*Device `json:"devices"`
	// Alias maps a PCI function to the one whose Device it shares: the
	// functions of one adapter show (and set) one NVConfig, per-port
	// parameters as _P1, _P2.
	Alias map[string]string `json:"alias,omitempty"`
	Argv  [][]string        `json:"argv"`
}

// Fake is a test's handle on the fake: the Reader that runs it and the
// state file.
type Fake struct {
	path string
	t    testing.TB
}

// New writes st and returns its handle.
func New(t testing.TB, st *State) *Fake {
	t.Helper()
	f := &Fake{path: filepath.Join(t.TempDir(), "fakemst.json"), t: t}
	f.Save(st)
	return f
}

// Reader is an nvconfig.Reader that runs the fake: this test binary,
// which must call Main first thing in its TestMain.
func (f *Fake) Reader() nvconfig.Reader {
	exe, err := os.Executable()
	if err != nil {
		f.t.Fatal(err)
	}
	return nvconfig.Reader{Path: exe, Timeout: 10 * time.Second, ExtraEnv: []string{EnvState + "=" + f.path}}
}

// Load reads the state as the fake left it.
func (f *Fake) Load() *State {
	f.t.Helper()
	st, err := load(f.path)
	if err != nil {
		f.t.Fatal(err)
	}
	return st
}

// Save replaces the state.
func (f *Fake) Save(st *State) {
	f.t.Helper()
	b, err := json.Marshal(st)
	if err != nil {
		f.t.Fatal(err)
	}
	if err := os.WriteFile(f.path, b, 0o600); err != nil {
		f.t.Fatal(err)
	}
}

// Get returns the named parameter of the device at pci.
func (st *State) Get(pci, name string) *Param {
	if a, ok := st.Alias[pci]; ok {
		pci = a
	}
	d := st.Devices[pci]
	if d == nil {
		return nil
	}
	for _, p := range d.Params {
		if p.Name == name {
			return p
		}
	}
	return nil
}

func load(path string) (*State, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	st := &State{}
	return st, json.Unmarshal(b, st)
}

// QueryOutput is what `mstconfig -e -d pci q` prints for the device at
// pci, for a test that needs the text (a snapshot's firmware) without
// running the fake.
func (st *State) QueryOutput(pci string) string {
	d := st.Devices[pci]
	if a, ok := st.Alias[pci]; ok {
		d = st.Devices[a]
	}
	var b strings.Builder
	opening(&b, d, pci)
	table(&b, d, true, nil)
	return b.String()
}

// Main acts as mstconfig when EnvState is set (and exits), else returns:
// call it first in TestMain.
func Main() {
	path := os.Getenv(EnvState)
	if path == "" {
		return
	}
	os.Exit(run(path, os.Args[1:]))
}

// Exit statuses of mlxcfg_ui.h's mlxCfgStatus.
const (
	exitOK    = 0 // MLX_CFG_OK
	exitError = 3 // MLX_CFG_ERROR
)

func run(path string, args []string) int {
	// One run at a time: rocectl queries the ports of a host in
	// parallel, and each run rewrites the state file.
	lock, err := os.OpenFile(path+".lock", os.O_CREATE|os.O_RDWR, 0o600)
	if err == nil {
		defer lock.Close()
		_ = syscall.Flock(int(lock.Fd()), syscall.LOCK_EX)
	}
	st, err := load(path)
	if err != nil {
		fmt.Printf("-E- fake: %v\n", err)
		return exitError
	}
	st.Argv = append(st.Argv, append([]string{"mstconfig"}, args...))
	defer func() {
		b, _ := json.Marshal(st)
		_ = os.WriteFile(path+".tmp", b, 0o600)
		_ = os.Rename(path+".tmp", path)
	}()
	var pci, cmd string
	var sets []string
	extended := false
	for i := 0; i < len(args); i++ {
		switch a := args[i]; {
		case a == "-d" && i+1 < len(args):
			pci = args[i+1]
			i++
		case a == "-e":
			extended = true
		case a == "-y":
		case a == "q" || a == "query":
			cmd = "q"
		case a == "s" || a == "set":
			cmd = "set"
			sets = args[i+1:]
			i = len(args)
		default:
			// mlxcfg_parser.cpp: an unknown flag is a usage error.
			fmt.Printf("-E- Unrecognized flag: %s\n", a)
			return exitError
		}
	}
	d := st.Devices[pci]
	if a, ok := st.Alias[pci]; ok {
		d = st.Devices[a]
	}
	if d == nil {
		// mopen of a function that is not there.
		fmt.Println("-E- Failed to open the device")
		return exitError
	}
	if d.Type == "" {
		fmt.Println("-E- Unsupported device")
		return exitError
	}
	switch d.Fail {
	case "open":
		fmt.Println("-E- Failed to open the device")
		return exitError
	case "busy":
		fmt.Println("-E- Failed to query device current configuration: Semaphore locked. Retry or use -clearSemaphore option.")
		return exitError
	case "hang":
		time.Sleep(time.Hour)
	case "garbage":
		fmt.Println("mstconfig: Segmentation fault")
		return exitOK
	}
	switch cmd {
	case "q":
		opening(os.Stdout, d, pci)
		table(os.Stdout, d, extended, nil)
		return exitOK
	case "set":
		return set(d, pci, sets)
	}
	fmt.Println("-E- No command found. For more information please read the help message:")
	return exitError
}

func opening(w io.Writer, d *Device, pci string) {
	// printOpening: "%-16s%-16s\n" per line.
	fmt.Fprintf(w, "\nDevice #1:\n----------\n\n")
	fmt.Fprintf(w, "%-16s%-16s\n", "Device type:", d.Type)
	fmt.Fprintf(w, "%-16s%-16s\n", "Name:", "N/A")
	fmt.Fprintf(w, "%-16s%-16s\n", "Description:", "N/A")
	fmt.Fprintf(w, "%-16s%-16s\n", "Device:", pci)
	fmt.Fprintln(w)
}

func value(p *Param, v uint64) string {
	if p.Bool {
		if v == 1 {
			return "True(1)"
		}
		return "False(0)"
	}
	return strconv.FormatUint(v, 10)
}

// table prints printConfHeader and printSingleParam's rows; news holds a
// set's New column.
func table(w io.Writer, d *Device, extended bool, news map[string]uint64) {
	switch {
	case extended:
		fmt.Fprintf(w, "%-16s%36s%16s%18s", "Configurations:", "Default", "Current", "Next Boot")
	default:
		fmt.Fprintf(w, "%-16s%38s", "Configurations:", "Next Boot")
	}
	if news != nil {
		fmt.Fprintf(w, "       %s", "New")
	}
	fmt.Fprintln(w)
	for _, p := range d.Params {
		if news != nil {
			if _, ok := news[p.Name]; !ok {
				continue
			}
		}
		cur := value(p, p.Current)
		if p.CurrentNA {
			cur = "N/A"
		}
		mark := " "
		if extended && (p.Next != p.Default || p.Next != p.Current) {
			mark = "*"
		}
		fmt.Fprintf(w, "%s        %-36s", mark, p.Name)
		// printSingleParam: each value "%-16s", and one space before
		// the next only after a value wider than 16 (PRINT_SPACE_IF_NEEDED).
		cols := []string{value(p, p.Next)}
		if extended {
			cols = []string{value(p, p.Default), cur, value(p, p.Next)}
		}
		if news != nil {
			cols = append(cols, value(p, news[p.Name]))
		}
		width := 0
		for _, c := range cols {
			if width > 16 {
				fmt.Fprint(w, " ")
			}
			width, _ = fmt.Fprintf(w, "%-16s", c)
		}
		fmt.Fprintln(w)
	}
	if extended {
		fmt.Fprintln(w, "The '*' shows parameters with next value different from default/current value.")
	}
}

func set(d *Device, pci string, sets []string) int {
	news := map[string]uint64{}
	var order []string
	for _, s := range sets {
		name, v, ok := strings.Cut(s, "=")
		n, err := strconv.ParseUint(v, 10, 32)
		if !ok || err != nil {
			fmt.Printf("-E- Failed to parse value %q of %s\n", v, name)
			return exitError
		}
		if !slices.ContainsFunc(d.Params, func(p *Param) bool { return p.Name == name }) {
			// The parameter lookup of mlxcfg_generic_commander.cpp throws
			// before the write starts.
			fmt.Printf("-E- Unknown Parameter: %s\n", name)
			return exitError
		}
		news[name] = n
		order = append(order, name)
	}
	opening(os.Stdout, d, pci)
	table(os.Stdout, d, false, news)
	fmt.Printf("\n Apply new Configuration? (y/n) [n] : y\n")
	fmt.Printf("Applying... ")
	switch d.Fail {
	case "set-fail", "set-fail-once":
		if d.Fail == "set-fail-once" {
			d.Fail = ""
		}
		fmt.Println("Failed!")
		fmt.Println("-E- Failed to set configuration: Operation not permitted by the firmware's lock")
		return exitError
	case "set-silent":
		fmt.Println("Done!")
		fmt.Println("-I- Please reboot machine to load new configurations.")
		return exitOK
	}
	for _, name := range order {
		for _, p := range d.Params {
			if p.Name == name {
				p.Next = news[name]
			}
		}
	}
	fmt.Println("Done!")
	fmt.Println("-I- Please reboot machine to load new configurations.")
	return exitOK
}
