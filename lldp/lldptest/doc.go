// Package lldptest is test support for code that reads LLDP: frames a
// switch would send. The shipped binary does not link it (internal/arch).
//
// A test kit (row lldp/lldptest in internal/arch's table): it may import
// lldp; only tests and other test kits import it.
package lldptest
