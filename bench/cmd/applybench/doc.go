// Command applybench times `rocectl apply` of the ConnectX recipe on an
// N-port fixture host against bench/baseline-apply.sh, the same recipe as a
// hand-written bash script, and times `rocectl audit --snapshot` on 8- and
// 64-port hosts, packed (as capture writes them) and as trees, the tree
// beside its floor: the same file system calls made by
// bench/cmd/auditfloor and nothing else. bench/apply-vs-shell.sh builds
// and runs it (as root).
//
// The host: a fixture root written by mkhosts (WriteCX6DxFactoryN) and veth
// pairs named like its netdevs in a network namespace this program creates
// (so MTU changes go to a real kernel; DCB, pause and tunables are
// unsupported on veth for both sides alike). Before every run the root is a
// fresh copy, the state dir empty and every MTU 1500. Runs alternate
// rocectl/baseline so that drift in machine load hits both. After each run
// the MTUs are checked, and the file tree each side leaves must be the same.
//
// A benchmark program (row bench in internal/arch's table): it is not
// shipped, nothing imports it, and of this module it may import apply, cli,
// nic and the test kits.
package main
