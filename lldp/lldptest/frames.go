package lldptest

import "github.com/rocectl/rocectl/lldp"

// RoCEFrame is the frame a switch port set up for the usual
// lossless RoCE recipe announces: PFC on priority 3 (not willing), DSCP 26
// to priority 3 and DSCP 48 (CNPs) to priority 6, priority 3 in its own ETS
// class with 50 %. Tests and documentation start from it and change one
// thing at a time.
func RoCEFrame() *lldp.Frame {
	return &lldp.Frame{
		ChassisIDSubtype: 4, ChassisID: "0c:42:a1:00:00:01",
		PortIDSubtype: 5, PortID: "swp7",
		TTL:        120,
		SystemName: "leaf-a12",
		IEEE: &lldp.IEEE{
			ETS: &lldp.ETSConfig{MaxTCs: 0, PrioTC: [8]uint8{0, 0, 0, 3, 0, 0, 6, 0},
				TCBandwidth: [8]uint8{0: 50, 3: 50}, TSA: [8]uint8{lldp.TSAETS, lldp.TSAETS, lldp.TSAETS, lldp.TSAETS, lldp.TSAETS, lldp.TSAETS, lldp.TSAStrict, lldp.TSAETS}},
			PFC: &lldp.PFC{Cap: 8, Enable: 1 << 3},
			App: []lldp.App{{Priority: 3, Selector: lldp.SelDSCP, Protocol: 26}, {Priority: 6, Selector: lldp.SelDSCP, Protocol: 48}},
		},
	}
}
