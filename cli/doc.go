// Package cli holds rocectl's commands (validate, audit, apply, verify,
// commit, rollback, capture, nccl-env, topo, peer, watch, report, …) and
// their rendering: Terraform-style text and the JSON documents. The work
// is done by apply (the change lifecycle), verify and the rest; the daemon
// is a program of its own (cli/agentcmd, agent), which `rocectl agent`
// runs. cmd/rocectl only turns signals into a context and errors into exit
// codes.
//
// In internal/arch's table cli is layer 7: of this module it may import
// apply, host, verify, peer, policy, nccl, nic, port, lldp, report and
// internal/lib, never agent; only cli/agentcmd and programs import it.
package cli
