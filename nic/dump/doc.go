// Package dump reads the text output of the tools RoCE troubleshooting
// starts from — mlnx_qos, ethtool -S/-a/-i, show_gids, ip -d -s link,
// iproute2's dcb, rdma link and devlink dev param show, ibv_devinfo,
// lspci -vvv and -t, nvidia-smi topo -m — as pasted into a ticket: several commands in one file,
// with or without their prompt lines, from different tool versions. Each
// block is recognised by its content, never by the file's name; every
// value carries the file and line it came from, and a line that is
// recognised but cannot be used is a warning, never a default.
//
// `rocectl import` (Build) turns the blocks into a snapshot whose
// not_captured lists everything the dumps did not contain.
//
// Part of row nic in internal/arch's table (layer 1): of this module it may
// import only port, other nic packages and internal/lib, never policy.
package dump
