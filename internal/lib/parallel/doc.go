// Package parallel runs independent pieces of one pass over a host (a
// discovery, an observation) a few at a time.
//
// A shipped helper (internal/lib in internal/arch's table): anything may
// import it; it imports the standard library only.
package parallel
