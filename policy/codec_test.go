package policy

import (
	"testing"
)

func TestEveryKindHasACodec(t *testing.T) {
	for _, k := range Kinds() {
		if _, ok := KindCodecs[k]; !ok {
			t.Errorf("kind %s has no codec", k)
		}
	}
}

func TestCodecsReadWhatTheyWrite(t *testing.T) {
	for _, tc := range []struct {
		k    Kind
		v    string
		good bool
	}{
		{KindMTU, "9000", true},
		{KindMTU, "9k", false},
		{KindMTU, "09000", false}, // not canonical
		{KindPrivFlag, "on", true},
		{KindPrivFlag, "true", false},
		{KindGlobalPause, "off", true},
		{KindGlobalPause, "rx on, tx off", true},
		{KindGlobalPause, "rx maybe, tx off", false},
		{KindPFC, "[3,4]", true},
		{KindPFC, "[]", true},
		{KindPFC, "[8]", false},
		{KindETSPrioTC, "[0,0,0,1,0,0,0,0]", true},
		{KindETSPrioTC, "[0,0,0,1]", false},
		{KindETSTSA, "[ets,ets,strict,strict,strict,strict,strict,strict]", true},
		{KindBufferSize, "[63KiB,192KiB,0,0,0,0,0,0]", true},
		{KindBufferSize, "[63KiB,192KiB]", false},
		{KindDSCPMap, "0-7:0,8-15:1,16-23:2,24-31:3,32-39:4,40-47:5,48-55:6,56-63:7", true},
		{KindDSCPMap, "26:3,48:6", true},
		{KindDSCPMap, "64:3", false},
		{KindStormPrevention, "auto", true},
		{KindStormPrevention, "100ms", true},
		{KindStormPrevention, "soon", false},
		{KindLosslessRemap, "[3]", true},
		{KindXoffRecompute, "1500", true},
		{KindNCCL, "anything at all", true},
	} {
		err := CheckValue(tc.k, tc.v)
		if (err == nil) != tc.good {
			t.Errorf("%s %q: %v, want good=%v", tc.k, tc.v, err, tc.good)
		}
	}
}

func TestECNArg(t *testing.T) {
	for _, tc := range []struct {
		k    Kind
		arg  string
		want ECNArg
		bad  bool
	}{
		{KindECNEnable, "rp/3", ECNArg{Dir: "rp", Prio: 3}, false},
		{KindECNEnable, "np/7", ECNArg{Dir: "np", Prio: 7}, false},
		{KindECNEnable, "np/8", ECNArg{}, true},
		{KindECNEnable, "np/x", ECNArg{}, true},
		{KindECNParam, "np/cnp_dscp", ECNArg{Dir: "np", Param: "cnp_dscp"}, false},
		{KindECNParam, "xp/cnp_dscp", ECNArg{}, true},
		{KindECNParam, "np", ECNArg{}, true},
	} {
		got, err := ParseECNArg(tc.k, tc.arg)
		if (err != nil) != tc.bad || got != tc.want {
			t.Errorf("%s %q: %+v %v", tc.k, tc.arg, got, err)
		}
	}
}

// FuzzCodecs: no text makes a codec panic, and whatever a codec reads,
// it writes as canonical text that it reads back to the same value.
func FuzzCodecs(f *testing.F) {
	for _, s := range []string{"9000", "[3]", "[0,0,0,1,0,0,0,0]", "rx on, tx off", "auto", "100ms", "[63KiB,0,0,0,0,0,0,0]", "0-7:0,26:3", "on"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		canonical(t, IntCodec, s)
		canonical(t, BoolCodec, s)
		canonical(t, PauseCodec, s)
		canonical(t, PrioCodec, s)
		canonical(t, Ints8Codec, s)
		canonical(t, Strings8Codec, s)
		canonical(t, Sizes8Codec, s)
		canonical(t, DSCPMapCodec, s)
		canonical(t, StormCodec, s)
		canonical(t, Int64Codec, s)
	})
}

func canonical[T any](t *testing.T, c Codec[T], s string) {
	x, err := c.Parse(s)
	if err != nil {
		return
	}
	text := c.Format(x)
	y, err := c.Parse(text)
	if err != nil {
		t.Fatalf("%q read, but its canonical %q does not read: %v", s, text, err)
	}
	if again := c.Format(y); again != text {
		t.Fatalf("%q: canonical %q reads back as %q", s, text, again)
	}
}

func TestSizesInOneUnit(t *testing.T) {
	for _, tc := range []struct{ in, want []string }{
		// A ConnectX's own sizes are not whole KiB: bytes on both sides.
		{[]string{"[524160,0,0,0,0,0,0,0]", "[63KiB,192KiB,0,0,0,0,0,0]"}, []string{"[524160,0,0,0,0,0,0,0]", "[64512,196608,0,0,0,0,0,0]"}},
		// Every size whole KiB: KiB on both sides, never MiB beside KiB.
		{[]string{"[1MiB,0,0,0,0,0,0,0]", "[63KiB,192KiB,0,0,0,0,0,0]"}, []string{"[1024KiB,0,0,0,0,0,0,0]", "[63KiB,192KiB,0,0,0,0,0,0]"}},
		// What does not parse is left as it is, and does not decide the unit.
		{[]string{"(none)", "[63KiB,0,0,0,0,0,0,0]"}, []string{"(none)", "[63KiB,0,0,0,0,0,0,0]"}},
	} {
		got := SizesInOneUnit(tc.in...)
		for i := range got {
			if got[i] != tc.want[i] {
				t.Errorf("%q: got %q, want %q", tc.in, got, tc.want)
				break
			}
		}
	}
}
