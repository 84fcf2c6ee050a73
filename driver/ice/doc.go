// Package ice is the driver layer of Intel's ice (E810/E830) and i40e
// (X710/XL710): the firmware LLDP agent's private flag as a journalled
// companion of a DCB write, qos.dcbx made by that flag, link flow control
// refused under PFC, the TC and PFC-class limits, and where the settings
// ice lacks live, and irdma's configfs congestion-control switches as
// the [ecn] mode. README.md
// lists each behaviour with the driver function it comes from.
//
// It may import driver.
package ice
