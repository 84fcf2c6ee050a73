// Package ansible holds the tests of the rocectl Ansible role: the role's
// unit files are the shipped ones, every YAML file parses and uses only
// ansible.builtin modules, the playbook passes ansible-playbook
// --syntax-check, and the role runs against localhost, into temporary
// directories, reading the host from captured snapshots: check mode reports
// drift and writes nothing; a run installs a validated profile and is
// idempotent; a bad profile never lands; and, with a scripted stand-in for
// the changing commands (apply, verify, commit, rollback; validate and audit
// are the real rocectl), the apply / confirm / commit / rollback logic reads
// the CLI's exit codes and JSON as specified. No test changes this host.
//
// Tests only (row deploy in internal/arch's table): nothing imports it; its
// tests use the test kits.
package ansible
