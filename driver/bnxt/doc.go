// Package bnxt is the driver layer of Broadcom's bnxt_en (NetXtreme-C/E,
// Thor): ETS before PFC, the lossless queues a PFC write remaps, the APP
// delete that clears the hardware mapping, what its "firmware" DCBX mode
// is, and the placeholder ETS/PFC it reports in host mode. README.md
// lists each behaviour with the driver function it comes from.
//
// It may import driver, policy and nic/dcb.
package bnxt
