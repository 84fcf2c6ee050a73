//go:build race

package nic

// raceBuild: the race detector's instrumentation moves values to the heap
// that a plain build keeps on the stack, so allocation counts differ.
const raceBuild = true
