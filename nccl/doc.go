// Package nccl derives the NCCL variables a host's ports imply (Env,
// Derive: HCA list with rails, GID index as NCCL selects it, or, for
// "select", the family/range/version NCCL selects by, checked on every
// port's GID table (select.go), IB_TC from the RoCE TOS, what could not be
// derived and why, and what the variables decide beyond what may be meant
// (notes.go)), reads and writes NCCL's config file
// format as NCCL itself parses it (conf.go), and gives PCIe topology hints
// with NCCL's path types (topo.go).
//
// In internal/arch's table nccl is layer 2: of this module it may import
// policy, nic, port and internal/lib.
package nccl
