package main

import (
	"os"

	"github.com/rocectl/rocectl/cli"
)

func main() {
	// One-shot commands may turn the collector off (Env.TuneGC).
	os.Exit(cli.Main(cli.NewRootCommand, true))
}
