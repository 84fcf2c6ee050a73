// Package known picks a port's driver layer by its kernel module's name
// (For): the one place in rocectl that looks at a driver's name.
//
// It may import driver and the driver packages.
package known
