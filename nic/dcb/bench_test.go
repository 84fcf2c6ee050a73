package dcb

import "testing"

// go test -run x -bench . -benchmem ./nic/dcb/

// A full IEEE_GET reply as mlx5 sends it in DSCP trust: ETS, MAXRATE, PFC,
// BUFFER, all 64 DSCP APP entries (the driver pre-populates them), flagged
// rewrite/trust tables and DCBX.
func BenchmarkDecodeGetReply(b *testing.B) {
	apps := make([]App, 64)
	for d := range apps {
		apps[d] = App{Selector: SelDSCP, Priority: uint8(d >> 3), Protocol: uint16(d)}
	}
	msg := fullGetReply(apps)
	b.SetBytes(int64(len(msg)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := DecodeGetReply(msg); err != nil {
			b.Fatal(err)
		}
	}
}

// Encoding the largest APP message rocectl sends: all 64 DSCP entries.
func BenchmarkEncodeAppSet64(b *testing.B) {
	apps := make([]App, 64)
	for d := range apps {
		apps[d] = App{Selector: SelDSCP, Priority: uint8(d >> 3), Protocol: uint16(d)}
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := wire(1)(appRequest(CmdIEEESet, "ens1f0np0", apps)); err != nil {
			b.Fatal(err)
		}
	}
}
