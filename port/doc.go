// Package port holds the one type that names a RoCE port: what nic's
// discovery finds on a host and what policy matches profiles against and
// resolves settings for. It is pure data with the standard library only,
// so that policy and nic, which never import each other, share it instead
// of each keeping its own copy and a converter between them.
//
// In internal/arch's table port is layer 0: the standard library only, so
// that policy and nic share it without importing each other.
package port
