// Package arch is the one import contract of DESIGN.md §2: Table (table.go)
// names every top-level package of the module with its layer, its kind
// (program, product, lib, test kit, tool, test), a line on its job and
// what of this module it may import. Its tests enforce the table against
// `go list` (no package imports a package of its own layer or above, test
// kits stay out of the shipped binaries, rocectl links no part of the
// daemon, policy and nic never import each other, nothing imports cmd) and
// check that docs/architecture.md is what Markdown generates from it
// (`go test ./internal/arch -update` rewrites it).
//
// It imports nothing of this module; nothing imports it.
package arch
