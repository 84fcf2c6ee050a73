// Package ttar reads the plain-text archives ("ttar") that prometheus/procfs
// and node_exporter use for their sysfs fixture trees, so that rocectl's
// fixture hosts can be built from those real captures.
//
// The format, as written by the ttar shell script (ideaship/ttar), is a
// sequence of blocks separated by comment lines ("# ttar - - -"):
//
//	Directory: PATH        then  Mode: OCTAL
//	Path: PATH             then  Lines: N, N content lines, Mode: OCTAL
//	Path: PATH             then  SymlinkTo: TARGET
//
// Content lines are escaped: a NUL byte is written as NULLBYTE, a literal
// "NULLBYTE" or "EOF" in the data gets a backslash in front, and a file whose
// last line has no trailing newline ends that line with an unescaped EOF.
// Lines starting with '#' between blocks are comments.
//
// A test kit (row internal/testkit in internal/arch's table): only tests,
// other test kits, tools and benchmark programs import it, never the shipped
// binaries; of this module it may import nic, nic/nictest and other test
// kits.
package ttar
