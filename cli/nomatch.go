package cli

import "fmt"

// One rule for "nothing matched", on every command that works on RoCE
// ports (audit, apply, verify, nccl-env, peer, watch, topo): a host
// without a RoCE port the profile selects is not an error. The command
// says why in one line ("No RoCE devices found on this host: nothing to
// do.", "...: nothing checked.") and exits 0, and its JSON document says
// matched_ports 0 where it has that field: fleet playbooks run on CPU
// nodes too. --require-match makes it an error (exit 1), for the hosts
// that must be RoCE hosts: requireMatchError.

// requireMatchError is the error of --require-match; reason is what
// matched nothing (apply.Prepared.NoPortsReason). It does not say
// "nothing to do": under the flag, that is the failure.
func requireMatchError(reason string) error {
	return fmt.Errorf("no RoCE port to work on (--require-match): %s", reason)
}

const requireMatchUsage = "fail (exit 1) when no RoCE port matches the profile (or the host has none), instead of saying so and exiting 0"
