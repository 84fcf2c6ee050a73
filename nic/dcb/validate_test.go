package dcb

import (
	"errors"
	"strings"
	"testing"
)

func TestValidateETS(t *testing.T) {
	allETS := ETS{TCTSA: [8]uint8{2, 2, 2, 2, 2, 2, 2, 2}, TCTxBW: [8]uint8{10, 10, 10, 50, 5, 5, 5, 5}}
	mlx5Default := ETS{ // §A1.8: all vendor at 100 %, prio 0/1 swapped
		TCTSA:  [8]uint8{255, 255, 255, 255, 255, 255, 255, 255},
		TCTxBW: [8]uint8{100, 100, 100, 100, 100, 100, 100, 100},
		PrioTC: [8]uint8{1, 0, 2, 3, 4, 5, 6, 7},
	}
	for _, tc := range []struct {
		name  string
		e     ETS
		field string // "" = valid
		msg   string
	}{
		{"mlxsw capture", fixtureETS, "", ""},
		{"all ETS summing to 100", allETS, "", ""},
		{"mlx5 default as read back", mlx5Default, "", ""},
		{"all strict, no bandwidth", ETS{}, "", ""},
		{"ETS sum 80", ETS{TCTSA: [8]uint8{2, 2, 2, 2, 2, 2, 2, 2}, TCTxBW: [8]uint8{10, 10, 10, 10, 10, 10, 10, 10}},
			"tc_tx_bw", "add up to 80, must be 100"},
		{"ETS sum 0", ETS{TCTSA: [8]uint8{0, 2}}, "tc_tx_bw", "add up to 0"},
		{"prio_tc 8", ETS{PrioTC: [8]uint8{0, 0, 0, 8}}, "prio_tc", "priority 3 maps to TC 8"},
		{"unknown TSA", ETS{TCTSA: [8]uint8{0, 0, 3}}, "tc_tsa", "TC 2 has unknown TSA 3"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := ValidateETS(tc.e)
			checkValidation(t, err, "ETS", tc.field, tc.msg)
		})
	}
}

func TestNormalizeETS(t *testing.T) {
	e := ETS{
		TCTSA:  [8]uint8{TSAETS, TSAStrict, TSAVendor, TSACBShaper, TSAETS},
		TCTxBW: [8]uint8{60, 100, 100, 100, 40, 100, 100, 100},
	}
	n := NormalizeETS(e)
	if n.TCTxBW != [8]uint8{60, 0, 0, 0, 40, 0, 0, 0} {
		t.Fatalf("normalized bw %v", n.TCTxBW)
	}
	if e.TCTxBW[1] != 100 {
		t.Fatalf("NormalizeETS modified its argument")
	}
}

func TestValidateBuffer(t *testing.T) {
	for _, tc := range []struct {
		name  string
		b     Buffer
		field string
		msg   string
	}{
		{"mlxsw capture", fixtureBuffer, "", ""},
		{"unknown total", Buffer{Size: [8]uint32{1 << 31, 1 << 31, 1 << 31}}, "", ""},
		{"prio2buffer 8", Buffer{PrioBuffer: [8]uint8{7: 8}}, "prio2buffer", "priority 7 maps to buffer 8"},
		{"over the port total", Buffer{Size: [8]uint32{200000, 30000}, TotalSize: 221072},
			"buffer_size", "230000 bytes, the port has 221072"},
		// u32 sizes that would wrap a u32 sum.
		{"wrapping sum", Buffer{Size: [8]uint32{0xffffffff, 2}, TotalSize: 100}, "buffer_size", "4294967297"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			checkValidation(t, ValidateBuffer(tc.b), "BUFFER", tc.field, tc.msg)
		})
	}
}

func TestValidateApps(t *testing.T) {
	full := make([]App, 64)
	for d := range full {
		full[d] = App{SelDSCP, uint8(d >> 3), uint16(d)}
	}
	for _, tc := range []struct {
		name  string
		apps  []App
		field string
		msg   string
	}{
		{"mlxsw capture", fixtureApps, "", ""},
		{"full DSCP map", full, "", ""},
		{"none", nil, "", ""},
		{"one DSCP on two priorities", []App{{SelDSCP, 3, 26}, {SelDSCP, 4, 26}}, "", ""},
		{"PCP, ethertype, ports", []App{{SelPCP, 3, 15}, {SelEthertype, 4, 0x8915}, {SelDgram, 3, 4791}, {SelStream, 1, 22}, {SelAny, 2, 80}}, "", ""},
		{"DSCP 64", []App{{SelDSCP, 3, 26}, {SelDSCP, 3, 64}}, "protocol", "entry 1 {selector 5, priority 3, protocol 64}: DSCP must be ≤ 63"},
		{"priority 8", []App{{SelDSCP, 8, 26}}, "priority", "must be < 8"},
		{"PCP 16", []App{{SelPCP, 1, 16}}, "protocol", "PCP"},
		{"EtherType below 0x600", []App{{SelEthertype, 1, 0x5ff}}, "protocol", "EtherType"},
		{"port 0", []App{{SelDgram, 1, 0}}, "protocol", "port"},
		{"selector 0", []App{{0, 1, 1}}, "selector", "unknown selector"},
		{"selector 6", []App{{6, 1, 1}}, "selector", "unknown selector"},
		{"duplicate", []App{{SelDSCP, 3, 26}, {SelDSCP, 6, 48}, {SelDSCP, 3, 26}}, "", "entry 2 {selector 5, priority 3, protocol 26} is listed twice"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := ValidateApps(tc.apps)
			if tc.msg == "" {
				checkValidation(t, err, "APP", "", "")
				return
			}
			checkValidation(t, err, "APP", tc.field, tc.msg)
		})
	}
}

// checkValidation: msg "" means err must be nil; otherwise err must be a
// *ValidationError of the object and field whose text contains msg.
func checkValidation(t *testing.T, err error, object, field, msg string) {
	t.Helper()
	if msg == "" {
		if err != nil {
			t.Fatalf("unexpected error: %v", err)
		}
		return
	}
	var ve *ValidationError
	if !errors.As(err, &ve) {
		t.Fatalf("err %v (%T), want *ValidationError", err, err)
	}
	if ve.Object != object || ve.Field != field || !strings.Contains(ve.Error(), msg) {
		t.Fatalf("got {%q %q} %q; want {%q %q} containing %q", ve.Object, ve.Field, ve.Error(), object, field, msg)
	}
}
