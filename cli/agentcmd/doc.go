// Package agentcmd is the command of rocectl-agent, the daemon's own
// binary: the global flags of every rocectl program (cli.Program), the
// daemon's flags, and agent.Run. The daemon is a program apart so that
// rocectl, whose one-shot commands start and exit in milliseconds, does not
// link it: the Prometheus client and its HTTP server cost every process
// that links them about 3 ms of package initialisation before main
// (docs/decisions.md, "The daemon is its own binary").
//
// In internal/arch's table cli/agentcmd is layer 8: it may import cli and
// agent; only cmd/rocectl-agent and tools import it.
package agentcmd
