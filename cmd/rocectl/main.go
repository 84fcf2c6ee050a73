// Command rocectl configures RoCE hosts for lossless RDMA. See README.md.
package main

import (
	"context"
	"fmt"
	"os"
	"syscall"

	"github.com/rocectl/rocectl/cli"
)

func main() {
	// SIGINT and SIGTERM cancel the context with the signal as its cause:
	// an apply in progress rolls back and says "interrupted by signal …".
	ctx, stop := cli.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	env := cli.NewEnv(os.Stdout, os.Stderr)
	env.TuneGC = true
	err := cli.NewRootCommand(env).ExecuteContext(ctx)
	stop()
	if msg := cli.ErrorMessage(err); msg != "" {
		fmt.Fprintln(os.Stderr, "rocectl:", msg)
	}
	os.Exit(cli.ExitCode(err))
}
