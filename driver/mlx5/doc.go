// Package mlx5 is the driver layer of NVIDIA's mlx5_core (ConnectX-4 and
// later), mainline and DOCA-OFED alike: global pause as PFC's companion,
// the CNP priority mode upstream ECN implies, the ETS bandwidths it reads
// back otherwise, the link toggle of a PFC change, and the model of its
// receive buffers (Port: the checks of mlx5e_port_manual_buffer_config,
// the xoff it computes, the order of writes that passes them). README.md
// lists each behaviour with the driver function it comes from.
//
// It may import driver, policy and nic/dcb.
package mlx5
