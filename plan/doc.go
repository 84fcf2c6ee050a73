// Package plan builds the plan: what an apply will write, in which order,
// with what each driver adds and refuses. Build runs named passes over a
// Builder, which keeps each port's positions in the plan itself: the diff
// of the desired and observed settings (policy.Diff), the driver's
// companions and implied settings, the driver passes (the mlx5 buffer
// checks and write order, ETS before PFC, ETS refusals, the lossless
// queues, DCBX, the buffer-threshold recomputes), and the disruptions a
// plan causes. It reads the host only through Host, and only before any
// write; every driver fact it acts on comes from package driver.
//
// It may import policy, port, driver (and the driver packages) and nic/dcb.
package plan
