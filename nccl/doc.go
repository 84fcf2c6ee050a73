// Package nccl derives the NCCL variables a host's ports imply (Env,
// Derive: HCA list, GID index as NCCL selects it, IB_TC from the RoCE TOS,
// what could not be derived and why), reads and writes NCCL's config file
// format as NCCL itself parses it (conf.go), and gives PCIe topology hints
// with NCCL's path types (topo.go).
//
// In internal/arch's table nccl is layer 2: of this module it may import
// policy, nic, port and internal/lib.
package nccl
