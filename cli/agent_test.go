package cli

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// `rocectl agent ARGS` runs rocectl-agent ARGS in its place, the global
// flags given before "agent" included, and --help is the daemon's.
func TestAgentRunsTheDaemonBinary(t *testing.T) {
	bin := t.TempDir()
	daemon := filepath.Join(bin, AgentBinary)
	if err := os.WriteFile(daemon, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	// The test binary has no rocectl-agent beside it: PATH has.
	t.Setenv("PATH", bin)
	for _, args := range [][]string{
		{"agent", "-p", "/etc/rocectl/profile.toml", "--mode", "enforce", "--once"},
		{"--snapshot", "/tmp/snap", "--log-format", "json", "agent", "-p", "x.toml"},
		{"agent", "--help"},
	} {
		var argv []string
		var out, errb bytes.Buffer
		env := NewEnv(&out, &errb)
		env.Exec = func(path string, a, envv []string) error {
			if path != daemon || len(envv) == 0 {
				t.Errorf("exec %s with %d variables", path, len(envv))
			}
			argv = a
			return nil
		}
		cmd := NewRootCommand(env)
		cmd.SetArgs(args)
		if err := cmd.ExecuteContext(context.Background()); err != nil {
			t.Fatalf("%v: %v\n%s", args, err, errb.String())
		}
		want := append([]string{daemon}, slices.DeleteFunc(slices.Clone(args), func(a string) bool { return a == "agent" })...)
		if !slices.Equal(argv, want) || out.Len() != 0 {
			t.Errorf("rocectl %v: exec %q, want %q (stdout %q)", args, argv, want, out.String())
		}
	}
}

func TestAgentWithoutTheDaemonBinary(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
	env := NewEnv(&bytes.Buffer{}, &bytes.Buffer{})
	env.Exec = func(string, []string, []string) error {
		t.Fatal("exec without a binary")
		return nil
	}
	cmd := NewRootCommand(env)
	cmd.SetArgs([]string{"agent", "-p", "x.toml"})
	err := cmd.ExecuteContext(context.Background())
	if err == nil || !strings.Contains(err.Error(), "rocectl-agent, and it is neither in") {
		t.Fatalf("got %v", err)
	}
}

// A stop (SIGTERM, SIGINT) that came before the exec ends rocectl agent
// there; a failed exec names the binary.
func TestAgentStopBeforeExecAndExecError(t *testing.T) {
	bin := t.TempDir()
	daemon := filepath.Join(bin, AgentBinary)
	if err := os.WriteFile(daemon, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", bin)
	stopped := errors.New("interrupted by signal terminated")
	ctx, cancel := context.WithCancelCause(context.Background())
	cancel(stopped)
	env := NewEnv(&bytes.Buffer{}, &bytes.Buffer{})
	env.Exec = func(string, []string, []string) error {
		t.Error("exec after the stop")
		return nil
	}
	cmd := NewRootCommand(env)
	cmd.SetArgs([]string{"agent", "-p", "x.toml"})
	if err := cmd.ExecuteContext(ctx); !errors.Is(err, stopped) {
		t.Errorf("stopped before exec: got %v", err)
	}

	env.Exec = func(string, []string, []string) error { return os.ErrPermission }
	cmd = NewRootCommand(env)
	cmd.SetArgs([]string{"agent", "-p", "x.toml"})
	if err := cmd.ExecuteContext(context.Background()); err == nil || !strings.Contains(err.Error(), "running "+daemon+": ") {
		t.Errorf("exec failed: got %v", err)
	}
}

// A file beside rocectl named like its daemon that this user cannot run
// (no x bit, which stops root too) is passed over for PATH's.
func TestAgentPathSkipsWhatCannotRun(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("PATH", dir)
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	beside := exe + "-agent" // in the test binary's own build directory
	if err := os.WriteFile(beside, []byte("#!/bin/sh\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.Remove(beside) })
	onPath := filepath.Join(dir, AgentBinary)
	if err := os.WriteFile(onPath, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	if p, err := agentPath(); err != nil || p != onPath {
		t.Errorf("agentPath: %q, %v; want %s", p, err, onPath)
	}
	if err := os.Chmod(beside, 0o755); err != nil {
		t.Fatal(err)
	}
	if p, err := agentPath(); err != nil || p != beside {
		t.Errorf("agentPath: %q, %v; want %s beside the binary", p, err, beside)
	}
}
