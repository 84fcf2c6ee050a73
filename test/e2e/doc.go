// Package e2e runs the built rocectl binary against a fixture host root
// inside a network namespace the test creates, with veth links named like
// the fixture's netdevs: real rtnetlink, ethtool and dcbnl calls on links
// the test owns, sysfs/configfs writes into a temporary copy of a captured
// host. The host's own network is never touched.
//
// Tests only (row test in internal/arch's table): nothing imports it; its
// tests use the test kits.
package e2e
