// Package nictest is test support for code that drives NICs through
// nic.Kernel: Sim, a writable in-memory kernel that answers like the kernel
// plus the driver each link names (mlx5_core, bnxt_en; qede and cxgb4 for
// the switch's DCBX they report), side effects included. Only tests and
// fixture generators import it; the shipped binary does not link it
// (internal/arch checks).
//
// A test kit (row nic/nictest in internal/arch's table): it may import nic;
// only tests, other test kits, tools and benchmark programs import it, never
// the shipped binaries.
package nictest
