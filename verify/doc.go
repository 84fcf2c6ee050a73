// Package verify checks that a host really is what the profile asked for:
// read-back of every setting and real verbs traffic (loopback and
// two-host), together Run, the work of rocectl verify; the counter
// Sampler that rocectl watch (Rates), the pause-storm guard and the
// agent's metrics read ports through; and the pause-storm guard that
// watches PFC counters after a change.
//
// In internal/arch's table verify is layer 2: of this module it may import
// policy, nic, port and internal/lib; it never imports apply.
package verify
