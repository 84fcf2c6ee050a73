// Command rocectl-agent is rocectl's daemon: it keeps the host on its
// profile (cli/agentcmd, agent). systemd starts it (rocectl-agent.service);
// `rocectl agent` runs it too. See README.md.
package main

import (
	"context"
	"fmt"
	"os"
	"syscall"

	"github.com/rocectl/rocectl/cli"
	"github.com/rocectl/rocectl/cli/agentcmd"
)

func main() {
	// SIGINT and SIGTERM cancel the context with the signal as its cause:
	// an apply in progress rolls back, and the daemon stops.
	ctx, stop := cli.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	env := cli.NewEnv(os.Stdout, os.Stderr)
	err := agentcmd.NewRootCommand(env).ExecuteContext(ctx)
	stop()
	if msg := cli.ErrorMessage(err); msg != "" {
		fmt.Fprintln(os.Stderr, agentcmd.Name+":", msg)
	}
	os.Exit(cli.ExitCode(err))
}
