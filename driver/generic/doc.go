// Package generic is the driver layer of every driver rocectl knows no
// side effect of: a write does what it asks, and nothing else.
//
// It may import driver.
package generic
