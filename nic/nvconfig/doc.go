// Package nvconfig reads a ConnectX's firmware non-volatile configuration
// (NVConfig, what mstconfig/mlxconfig set): the query's output parsed into
// three states per setting — default, current, next boot — and the one
// place rocectl runs an external program (mstconfig) to get it. The format
// was read from github.com/Mellanox/mstflint, mlxconfig/mlxcfg_ui.cpp; real
// dumps and their sources are in testdata/.
//
// Nothing here writes: a write changes only the next-boot value, and
// rocectl never resets firmware or reboots by itself.
package nvconfig
