// Package lldp decodes LLDP frames (IEEE 802.1AB) and the DCBX TLVs a switch
// announces in them: IEEE 802.1Qaz (organisationally specific TLVs of OUI
// 00-80-C2: ETS Configuration, ETS Recommendation, PFC Configuration,
// Application Priority) and the older CEE DCBX 1.01 (OUI 00-1B-21). It also
// listens for them (listen.go) and compares what the switch says with what
// the host is set up to do (check.go).
//
// The decoder is strict: every TLV it knows must have the length its layout
// defines, and a TLV that runs past the frame, a missing mandatory TLV or an
// oversized frame is rejected with a *DecodeError that names the TLV and
// the reason. It never panics on any input (FuzzDecode).
//
// The package imports only the standard library and golang.org/x/sys.
//
// In internal/arch's table lldp is layer 0: it imports nothing of this
// module, and outside the standard library only x/sys.
package lldp
