// Package statedir is rocectl's state directory (default /var/lib/rocectl)
// as a trust boundary. The state dir steers what root does (a rollback
// writes every before-value a journal names), so everything rocectl reads
// from it goes through here and is refused unless only root or the user
// running rocectl could have written it: ownership, mode and symlink
// checks (trust.go). It holds
//
//   - the lock, one change at a time, naming its holder (lock.go);
//   - the state files, such as the last switch-peer result, written
//     atomically and durably (ReadStateFile, WriteStateFile);
//   - the journal file store: where open, finished and abandoned journals
//     lie, their durable writes with room reserved for the next one,
//     listing, the move to done/, pruning, and reading a journal's bytes
//     with a bound on their size (store.go).
//
// A journal is bytes here. Its format and what it holds (host steps, its
// state) are package apply's, which encodes and decodes it and says which
// journals are final or the last committed (Prune's callbacks).
//
// statedir imports the standard library only: not host, apply or any
// other package of rocectl, so that peer, agent and cli reach the state
// dir without linking the change lifecycle (internal/arch checks it).
package statedir
