// Command rocectl configures RoCE hosts for lossless RDMA. See README.md.
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/rocectl/rocectl/cli"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	env := cli.NewEnv(os.Stdout, os.Stderr)
	err := cli.NewRootCommand(env).ExecuteContext(ctx)
	if msg := cli.ErrorMessage(err); msg != "" {
		fmt.Fprintln(os.Stderr, "rocectl:", msg)
	}
	os.Exit(cli.ExitCode(err))
}
