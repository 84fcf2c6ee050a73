// Package packaging holds the Debian package's definition (nfpm.yaml,
// maintainer scripts, copyright) and its test: `make deb` builds a package
// that lintian accepts, that carries what the operator needs, and that
// installs, removes and purges cleanly in a throwaway root.
//
// Tests only (row packaging in internal/arch's table): nothing imports it;
// its tests use the test kits.
package packaging
