package main

import (
	"os"

	"github.com/rocectl/rocectl/cli"
	"github.com/rocectl/rocectl/cli/agentcmd"
)

func main() {
	// A daemon keeps the runtime's collector (Env.TuneGC).
	os.Exit(cli.Main(agentcmd.NewRootCommand, false))
}
