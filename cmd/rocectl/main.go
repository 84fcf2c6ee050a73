// Command rocectl configures RoCE hosts for lossless RDMA. See README.md.
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/rocectl/rocectl/agent"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	env := agent.NewEnv(os.Stdout, os.Stderr)
	err := agent.NewRootCommand(env).ExecuteContext(ctx)
	if msg := agent.ErrorMessage(err); msg != "" {
		fmt.Fprintln(os.Stderr, "rocectl:", msg)
	}
	os.Exit(agent.ExitCode(err))
}
