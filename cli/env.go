package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"syscall"

	"github.com/rocectl/rocectl/apply"
	"github.com/rocectl/rocectl/host"
	"github.com/rocectl/rocectl/nic"
	"github.com/rocectl/rocectl/nic/nvconfig"
	"github.com/rocectl/rocectl/nic/snapshot"
	"github.com/rocectl/rocectl/policy"
	"github.com/rocectl/rocectl/statedir"
)

// Exit codes of the CLI contract (DESIGN.md §3).
const (
	ExitOK         = 0
	ExitError      = 1 // error; after a failed apply the host was restored
	ExitDrift      = 2 // audit: the host differs from the profile
	ExitRolledBack = 3 // applied, then rolled back by the guard or verification
)

// ExitError carries a process exit code with its error.
type ExitErr struct {
	Code int
	Err  error
}

func (e *ExitErr) Error() string {
	if e.Err == nil {
		return fmt.Sprintf("exit status %d", e.Code)
	}
	return e.Err.Error()
}

func (e *ExitErr) Unwrap() error { return e.Err }

// ExitCode maps an error returned by a command to the process exit code.
func ExitCode(err error) int {
	if err == nil {
		return ExitOK
	}
	var ee *ExitErr
	if errors.As(err, &ee) {
		return ee.Code
	}
	return ExitError
}

// ErrorMessage is what to print for err: "" when there is nothing to say
// (success, or a command that already printed its own report).
func ErrorMessage(err error) string {
	if err == nil {
		return ""
	}
	var ee *ExitErr
	if errors.As(err, &ee) && ee.Err == nil {
		return ""
	}
	return err.Error()
}

// silent is an ExitErr whose message was already printed.
func silent(code int) error { return &ExitErr{Code: code} }

// Env is what every command shares: the global flags and the outputs.
type Env struct {
	Root                 string // --root
	Snapshot             string // --snapshot
	StateDir             string // --state-dir
	KeepJournals         int    // --keep-journals
	AllowInsecureProfile bool
	LogFormat            string
	Verbose              bool
	Stdout               io.Writer
	Stderr               io.Writer
	Log                  *slog.Logger

	// TuneGC lets a one-shot command set the process's garbage collector
	// (tuneGC). Only the rocectl binary sets it: a test runs commands in
	// its own process, whose collector is not theirs to change.
	TuneGC bool

	// Firmware reaches the ConnectX NVConfig of the live host; nil: the
	// real mstconfig when --root is /, none under another root (a fixture
	// tree's PCI addresses are not this machine's). Tests set a fake.
	Firmware host.Firmware
	// NewKernel builds the live kernel; tests may replace it.
	NewKernel func(log *slog.Logger) (nic.Kernel, func() error, error)

	// Exec replaces the process with another program (execve), as
	// `rocectl agent` runs the daemon; tests may replace it.
	Exec func(path string, argv, envv []string) error

	// Phase, when set, is called as each phase of an apply ends (the
	// cli's PhaseOpen, PhaseProfile, PhasePlan, PhaseRender, then
	// apply.RunOptions.Phase's): bench/cmd/applybench times them. Nil in
	// the binary.
	Phase func(name string)
}

// The phases of an apply before apply.Run, as Env.Phase names them.
const (
	PhaseOpen    = "open host, change lock, recovery check"
	PhaseProfile = "profile: read, parse, validate"
	PhasePlan    = "discover, observe, plan"
	PhaseRender  = "print the plan"
)

func (env *Env) phase(name string) {
	if env.Phase != nil {
		env.Phase(name)
	}
}

// NewEnv returns an Env writing to the given streams.
func NewEnv(stdout, stderr io.Writer) *Env {
	return &Env{Root: "/", StateDir: "/var/lib/rocectl", LogFormat: "text", Stdout: stdout, Stderr: stderr,
		Exec: syscall.Exec,
		NewKernel: func(log *slog.Logger) (nic.Kernel, func() error, error) {
			l, err := nic.NewLive(log)
			if err != nil {
				return nil, nil, err
			}
			return l, l.Close, nil
		}}
}

func (env *Env) setupLog() {
	level := slog.LevelInfo
	if env.Verbose {
		level = slog.LevelDebug
	}
	opts := &slog.HandlerOptions{Level: level}
	if env.LogFormat == "json" {
		env.Log = slog.New(slog.NewJSONHandler(env.Stderr, opts))
	} else {
		env.Log = slog.New(slog.NewTextHandler(env.Stderr, opts))
	}
}

// Host opens the host the command works on: a snapshot (read-only) or the
// live kernel with files under --root. done closes what it opened.
func (env *Env) Host(ctx context.Context) (*host.Host, func(), error) {
	if env.Snapshot != "" {
		s, err := snapshot.Open(env.Snapshot)
		if err != nil {
			return nil, nil, err
		}
		return &host.Host{FS: s.FS(), K: s.Kernel(), FW: s.Firmware(), Log: env.Log, NotCaptured: s.Meta.NotCaptured}, func() {}, nil
	}
	k, closeFn, err := env.NewKernel(env.Log)
	if err != nil {
		return nil, nil, fmt.Errorf("opening the kernel interfaces: %w", err)
	}
	fw := env.Firmware
	if fw == nil && (env.Root == "" || env.Root == "/") {
		fw = nvconfig.Reader{}
	}
	return &host.Host{FS: nic.NewFS(env.Root, false), K: k, FW: fw, Log: env.Log}, func() { _ = closeFn() }, nil
}

// State is the state dir as --state-dir and --keep-journals name it: the
// lock, the state files and the journals' files.
func (env *Env) State() statedir.Store {
	return statedir.Store{Dir: env.StateDir, Keep: env.KeepJournals}
}

// Store is the state dir's journals (and, through statedir, its lock).
func (env *Env) Store() apply.Store { return apply.Store{Store: env.State()} }

// ProfileOptions are the options of every profile load: the global
// --allow-insecure-profile.
func (env *Env) ProfileOptions() policy.LoadOptions {
	return policy.LoadOptions{AllowInsecure: env.AllowInsecureProfile}
}

// LoadProfile loads and validates a profile, printing its warnings.
func (env *Env) LoadProfile(path string) (*policy.Profile, error) {
	p, err := policy.Load(path, env.ProfileOptions())
	if err != nil {
		return nil, err
	}
	env.printWarnings(p)
	return p, nil
}

func (env *Env) printWarnings(p *policy.Profile) {
	for _, w := range p.Warnings {
		fmt.Fprintln(env.Stderr, w.String())
	}
}
