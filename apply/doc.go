// Package apply runs transactions on a host: the lifecycle of one change
// as the CLI's apply and the enforcing daemon both run it (Run → Result:
// write every step with read-back, verify the host against the profile,
// soak under the pause-storm guard, then commit or open a confirm window;
// roll back on a failed check or a passed deadline), the durable journal
// every step's before-values are written to first (docs/journal-format.md),
// the state-dir lock, crash recovery, commit, rollback and abandon. It
// renders nothing: the CLI prints a Result and the daemon logs it.
//
// In internal/arch's table apply is layer 4: of this module it may import
// host, verify, policy, nccl, nic, port and internal/lib; it never imports
// peer, agent or cli.
package apply
