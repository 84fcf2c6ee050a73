// Package policy is the profile: TOML → Profile (strict, with positions,
// every problem in one pass), Resolve per port into the settings a host
// must hold, the setting kinds with their value formats, and Diff, which
// compares those with what a host holds. Traffic classes ([classes],
// classes.go) state the QoS intent once; the settings they imply are
// derived or checked against them, and the same intent judges a host's
// or a switch's facts along the chain (chain.go). It is pure: it reads
// files it is given and nothing of the host.
//
// It may import the standard library, go-toml and port; it and nic never
// import each other.
package policy
