// Package agent is rocectl's daemon: it keeps a host on its profile. It
// checks for drift on a timer and on link and address events, logs drift
// when the drifted set changes (a pure DriftTracker decides), applies the
// profile in enforce mode through apply.Run, honours --confirm deadlines,
// serves Prometheus metrics and talks to systemd (READY, STATUS,
// watchdog). rocectl-agent's command (cli/agentcmd) starts it; rocectl
// itself does not link this package.
//
// In internal/arch's table (docs/architecture.md) agent is layer 6: of this
// module it may import apply, host, verify, peer, policy, nccl, nic, port,
// lldp and internal/lib; only cli/agentcmd and programs import it, and
// rocectl does not link it.
package agent
