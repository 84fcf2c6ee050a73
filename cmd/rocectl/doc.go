// Command rocectl configures RoCE hosts for lossless RDMA. See README.md.
//
// A shipped program (row cmd in internal/arch's table): it may import cli
// and cli/agentcmd only, and nothing imports it.
package main
