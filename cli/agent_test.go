package cli

import (
	"bytes"
	"context"
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
