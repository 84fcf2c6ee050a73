// Package systemd holds the tests of the unit files the package ships
// beside it (rocectl-agent.service, rocectl-apply.service, the audit
// service and timer, rocectl.default): their syntax, directives and
// capabilities, systemd-analyze's verdict, and the units run against the
// built binaries. README.md says how the units are meant to be used.
//
// Tests only (row systemd in internal/arch's table): nothing imports it;
// its tests use the test kits.
package systemd
