// Command rocectl-agent is rocectl's daemon: it keeps the host on its
// profile (cli/agentcmd, agent). systemd starts it (rocectl-agent.service);
// `rocectl agent` runs it too. See README.md.
//
// A shipped program (row cmd in internal/arch's table): it may import cli
// and cli/agentcmd only, and nothing imports it.
package main
