// Command auditfloor replays the file system calls of one `rocectl audit
// --snapshot` run, and nothing else, as fast as it can: timed as a
// process, it is the floor of that audit on the machine — the least any
// program can take to make the same opens, reads and listings of the
// snapshot's files. bench/cmd/applybench times it beside the audit.
//
//	strace -f -y -e trace=openat2,getdents64 -o LIST rocectl audit … --snapshot DIR
//	auditfloor -list LIST [-v] [-write-plan PLAN]
//	auditfloor -plan PLAN [-v]
//	auditfloor -plan PLAN -none
//
// It replays an apply's calls too, writes included (-writes), on a fresh
// copy of the tree the apply wrote (bench/cmd/applybench makes one for
// each run):
//
//	strace -f -y -s 4096 -e trace=openat2,getdents64,write -o LIST rocectl --root ROOT … apply …
//	auditfloor -list LIST -writes [-least] [-v] [-write-plan PLAN]
//	auditfloor -plan PLAN -writes [-v]
//
// An open for writing is made with its flags, fstat-ed and given, in one
// write, the bytes the list shows written through its descriptor; opens
// that could create a file or append are refused. With -least only a
// read, the write and a read back of each attribute written are kept:
// the least calls any apply that journals a value before it changes it,
// and reads it back once, makes.
//
// Each openat2 of the list is made again with the same flags and resolve
// bits, relative to a descriptor of the same directory: an O_PATH open is
// opened and closed, an O_DIRECTORY open is also listed to its end
// (getdents64 until 0), any other open is fstat-ed and read once (up to
// 4096 bytes, an attribute file's one line). Opens that failed in the list
// (ENOENT probes, EXDEV from RESOLVE_BENEATH) are made again too: they
// cost the same path walks. A directory the list shows listed through a
// descriptor no openat2 returned (rocectl's os.ReadDir opens with openat)
// is opened by the path strace printed and listed. The calls are spread
// over GOMAXPROCS goroutines, as rocectl spreads its ports.
//
// Parsing strace's text (≈ 1.1 MB for 64 ports) takes longer than a third
// of the audit's 20 ms target here, work the audit does not do; so the
// process to time is `-plan PLAN`, which replays the list as -write-plan
// stored it, parsed. `-list LIST -write-plan PLAN` parses, writes the plan
// and replays once, which also checks that the list matches the tree.
//
// With -none it reads and decodes the plan but replays nothing: timed as a
// process, that is the part of the floor that is not the calls (fork,
// exec, the Go runtime's start, the plan), which applybench takes off the
// floor to put rocectl's own start-up in its place.
//
// It prints nothing unless -v (then what it made, by kind) and exits 1 if
// an open did not succeed or fail as the list says (the tree is not the
// one traced).
//
// A benchmark program (row bench in internal/arch's table): it is not
// shipped, nothing imports it, and of this module it may import apply, cli,
// nic and the test kits.
package main
