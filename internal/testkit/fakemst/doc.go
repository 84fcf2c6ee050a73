// Package fakemst is a fake mstconfig for tests: the test binary itself,
// re-executed, that answers `mstconfig -e -d <pci> q` and
// `mstconfig -y -d <pci> set NAME=VALUE...` as mstflint's
// mlxconfig/mlxcfg_ui.cpp does (queryDevCfg's table, setDevCfg's
// "Applying... Done!", "-E- <msg>" on stdout with exit status 3,
// MLX_CFG_ERROR), over a device state kept in a JSON file, so that a set
// changes what the next query shows. Scenarios reproduce the failures
// the real tool reports: a busy device (its semaphore held), one it
// cannot open (not root, kernel lockdown under secure boot), a parameter
// unknown to the firmware, a hang, output in an unknown format.
//
// It is selected only through nvconfig.Reader's Path (the test binary)
// and ExtraEnv: the shipped binaries never see it.
//
// A test kit (row internal/testkit in internal/arch's table): only tests
// import it.
package fakemst
