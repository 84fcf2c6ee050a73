package cli

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"

	"github.com/spf13/cobra"
	"golang.org/x/sys/unix"
)

// AgentBinary is the daemon's program (cmd/rocectl-agent, cli/agentcmd).
// rocectl does not link the daemon: see cli/agentcmd for why.
const AgentBinary = "rocectl-agent"

// newAgentCmd is `rocectl agent ARGS`: it runs rocectl-agent ARGS in this
// process's place (execve: same PID, so systemd's notify socket, watchdog
// and signals reach the daemon), for units and scripts written before
// the daemon had its own binary. Its flags are the daemon's, unparsed
// here: `rocectl agent --help` is rocectl-agent's help.
func newAgentCmd(env *Env) *cobra.Command {
	return &cobra.Command{
		Use:   "agent -p PROFILE [flags]",
		Short: "Run the daemon (" + AgentBinary + ") with these arguments: drift checks, metrics, sd_notify",
		Long: `agent runs ` + AgentBinary + `, rocectl's daemon, in this process's place with the
same arguments: rocectl agent -p PROFILE --mode audit is
` + AgentBinary + ` -p PROFILE --mode audit. ` + AgentBinary + ` is looked for beside
rocectl, then on PATH. See ` + AgentBinary + ` --help for its flags.`,
		DisableFlagParsing: true,
		RunE: func(cmd *cobra.Command, args []string) error {
			path, err := agentPath()
			if err != nil {
				return err
			}
			// A stop that came before the exec is not lost to it.
			if err := context.Cause(cmd.Context()); err != nil {
				return err
			}
			if err := env.Exec(path, append([]string{path}, args...), os.Environ()); err != nil {
				return fmt.Errorf("running %s: %w", path, err)
			}
			return nil
		},
	}
}

// agentPath finds the daemon's binary: beside this one, as this one's
// name with "-agent" (the Ansible role installs <rocectl_binary_path>-agent)
// or as rocectl-agent (the package, make build), else on PATH. A file
// there that this user cannot run is passed over.
func agentPath() (string, error) {
	exe, err := os.Executable()
	if err == nil {
		for _, p := range []string{exe + "-agent", filepath.Join(filepath.Dir(exe), AgentBinary)} {
			if st, err := os.Stat(p); err == nil && st.Mode().IsRegular() && unix.Access(p, unix.X_OK) == nil {
				return p, nil
			}
		}
	}
	p, err := exec.LookPath(AgentBinary)
	if err != nil {
		where := "this rocectl's directory"
		if exe != "" {
			where = filepath.Dir(exe)
		}
		return "", fmt.Errorf("the daemon is its own program, %s, and it is neither in %s nor on PATH: install it beside rocectl (make build builds both)", AgentBinary, where)
	}
	return p, nil
}
