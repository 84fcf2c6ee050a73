package cli

import (
	"context"
	"fmt"
	"os"
	"syscall"

	"github.com/spf13/cobra"
)

// Main runs the program whose root command newRoot builds (rocectl,
// rocectl-agent) on the process's arguments and returns the exit code of
// the CLI contract. SIGINT and SIGTERM cancel the context with the signal
// as its cause: an apply in progress rolls back and says "interrupted by
// signal …", and the daemon stops. What is left to say of an error goes
// to stderr after the program's name. tuneGC is Env.TuneGC.
func Main(newRoot func(*Env) *cobra.Command, tuneGC bool) int {
	ctx, stop := NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	env := NewEnv(os.Stdout, os.Stderr)
	env.TuneGC = tuneGC
	root := newRoot(env)
	err := root.ExecuteContext(ctx)
	stop()
	if msg := ErrorMessage(err); msg != "" {
		fmt.Fprintln(os.Stderr, root.Name()+":", msg)
	}
	return ExitCode(err)
}
