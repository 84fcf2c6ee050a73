// Command mkhosts regenerates rocectl's fixture hosts (testdata/hosts) from
// the real captures in testdata/captures:
//
//	go run ./internal/tools/mkhosts -o testdata/hosts
//
// Each host is a snapshot directory (docs/snapshot-format.md) with a
// README.md naming the source of every value. The hosts are defined in
// internal/testkit/hosts (Specs); the golden test there checks that
// the committed hosts match what this command writes.
//
// A tool (row internal/tools in internal/arch's table): nothing imports it;
// of this module it may import cli, cli/agentcmd and the test kits.
package main
