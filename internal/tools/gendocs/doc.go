// Command gendocs writes what the Debian package ships beside the binary
// and derives from the command trees: man pages (section 8, one per
// command, and rocectl-agent's) and bash, zsh and fish completions for
// rocectl and rocectl-agent. It is a program of its own so that cobra/doc
// and go-md2man are not linked into rocectl.
//
//	go run ./internal/tools/gendocs -out DIR -version V
//
// The pages' date comes from SOURCE_DATE_EPOCH when set (reproducible
// builds).
//
// A tool (row internal/tools in internal/arch's table): nothing imports it;
// of this module it may import cli, cli/agentcmd and the test kits.
package main
