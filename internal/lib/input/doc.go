// Package input reads what a user names on a command line (a dump to
// import, a report's documents, a list of hosts) with bounds: regular
// files only, opened so that a FIFO cannot block the open, no more than a
// cap that the error names, and a context (the command's, cancelled by
// SIGINT or SIGTERM) honoured while reading, a slow stdin pipe included.
//
// A shipped helper (internal/lib in internal/arch's table): anything may
// import it; it imports the standard library and golang.org/x/sys only.
package input
