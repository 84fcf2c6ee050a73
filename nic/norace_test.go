//go:build !race

package nic

const raceBuild = false
