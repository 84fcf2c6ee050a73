// Package ice is the driver layer of Intel's ice (E810/E830) and i40e
// (X710/XL710): today, where their firmware LLDP agent is switched
// (ethtool private flags). README.md lists each behaviour with the
// driver function it comes from.
//
// It may import driver.
package ice
