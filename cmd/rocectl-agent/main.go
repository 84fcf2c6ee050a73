// Command rocectl-agent is rocectl's daemon: it keeps the host on its
// profile (cli/agentcmd, agent). systemd starts it (rocectl-agent.service);
// `rocectl agent` runs it too. See README.md.
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
