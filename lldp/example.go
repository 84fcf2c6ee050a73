package lldp

// RoCEFrameForTest is the frame a switch port set up for the usual
// lossless RoCE recipe announces: PFC on priority 3 (not willing), DSCP 26
// to priority 3 and DSCP 48 (CNPs) to priority 6, priority 3 in its own ETS
// class with 50 %. Tests and documentation start from it and change one
// thing at a time.
func RoCEFrameForTest() *Frame {
	return &Frame{
		ChassisIDSubtype: 4, ChassisID: "0c:42:a1:00:00:01",
		PortIDSubtype: 5, PortID: "swp7",
		TTL:        120,
		SystemName: "leaf-a12",
		IEEE: &IEEE{
			ETS: &ETSConfig{MaxTCs: 0, PrioTC: [8]uint8{0, 0, 0, 3, 0, 0, 6, 0},
				TCBandwidth: [8]uint8{0: 50, 3: 50}, TSA: [8]uint8{TSAETS, TSAETS, TSAETS, TSAETS, TSAETS, TSAETS, TSAStrict, TSAETS}},
			PFC: &PFC{Cap: 8, Enable: 1 << 3},
			App: []App{{Priority: 3, Selector: SelDSCP, Protocol: 26}, {Priority: 6, Selector: SelDSCP, Protocol: 48}},
		},
	}
}
