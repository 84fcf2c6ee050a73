package mlx5

import (
	"strings"
	"testing"

	"github.com/rocectl/rocectl/driver"
	"github.com/rocectl/rocectl/nic/dcb"
	"github.com/rocectl/rocectl/policy"
	"github.com/rocectl/rocectl/port"
)

// The minimum a lossless buffer needs (calculate_xoff + max_mtu + one
// cell), worked by hand from port_buffer.c's formula: at 100 Gb/s, 7 m,
// MTU 9000 and max_mtu 9978, xoff = (301 + 15) × 100 + 24480 = 56080.
func TestNeedFollowsCalculateXoff(t *testing.T) {
	for _, tc := range []struct {
		p    Port
		want int
	}{
		{Port{Speed: 100000, MTU: 9000, Cable: 7, MaxMTU: 9978}, 56080 + 9978 + 128},
		// Below 40 Gb/s (or unknown) the driver takes 40 Gb/s.
		{Port{Speed: 25000, MTU: 1500, Cable: 7, MaxMTU: 9978}, 316*40 + 4080 + 9978 + 128},
		{Port{Speed: 0, MTU: 1500, Cable: 7, MaxMTU: 9978}, 316*40 + 4080 + 9978 + 128},
		// max_mtu unknown or small: MINIMUM_MAX_MTU.
		{Port{Speed: 100000, MTU: 9000, Cable: 7}, 56080 + 9216 + 128},
		{Port{Speed: 100000, MTU: 9000, Cable: 7, MaxMTU: 1500}, 56080 + 9216 + 128},
		// 30 m of cable: 2.16 × 30 = 64.8, truncated as the driver does.
		{Port{Speed: 100000, MTU: 9000, Cable: 30, MaxMTU: 9978}, (301+64)*100 + 24480 + 9978 + 128},
	} {
		if got := tc.p.Need(); got != tc.want {
			t.Errorf("%+v: Need %d, want %d", tc.p, got, tc.want)
		}
	}
}

func lossless(bufs ...int) [8]bool {
	var out [8]bool
	for _, b := range bufs {
		out[b] = true
	}
	return out
}

// mlx5_set_port_pfc writes PFCC with global pause off: a PFC change
// leaves the port without global pause, and the new pfc_en's buffers
// lossless.
func TestSetPFCTurnsGlobalPauseOff(t *testing.T) {
	p := Port{Pause: true, PauseKnown: true, Prio2Buf: [8]uint8{0, 0, 0, 1}, Sizes: [8]uint32{200000, 200000},
		Cable: 7, MTU: 1500, Speed: 100000, MaxMTU: 9978}
	if sf := p.SetPFC(1<<3, 7); sf != nil {
		t.Fatalf("unexpected shortfall %v", sf)
	}
	if p.Pause || !p.PauseKnown || p.PFC != 1<<3 || p.Lossless != lossless(1) {
		t.Errorf("after SetPFC: %+v", p)
	}
	// The same write again changes nothing and still checks.
	p.Sizes[1] = 100
	if sf := p.SetPFC(1<<3, 7); sf == nil || sf.Buf != 1 {
		t.Errorf("a PFC write in manual mode checks the buffers: got %v", sf)
	}
}

// fill_pfc_en: a map write under global pause makes every buffer a
// priority maps to lossless, checked against the sizes before the write.
func TestSetBufferUnderGlobalPauseMakesEveryUsedBufferLossless(t *testing.T) {
	p := Port{Pause: true, PauseKnown: true, Sizes: [8]uint32{100000, 0}, Cable: 7, MTU: 1500, Speed: 100000, MaxMTU: 9978}
	sf := p.SetBuffer([8]uint8{0, 0, 0, 1}, [8]uint32{100000, 100000})
	if sf == nil || sf.Buf != 1 || sf.Size != 0 || !strings.Contains(sf.Why, "fill_pfc_en") {
		t.Fatalf("map into an empty buffer under global pause: got %v", sf)
	}
	// Without global pause only PFC's buffers are lossless: PFC off, none.
	q := Port{Sizes: [8]uint32{100000, 0}, Cable: 7, MTU: 1500, Speed: 100000, MaxMTU: 9978}
	if sf := q.SetBuffer([8]uint8{0, 0, 0, 1}, [8]uint32{100000, 100000}); sf != nil {
		t.Errorf("no PFC, no global pause: %v", sf)
	}
	// An unchanged write does nothing (mlx5e_dcbnl_setbuffer returns).
	r := Port{PFC: 1 << 3, Prio2Buf: [8]uint8{0, 0, 0, 1}, Lossless: lossless(1), Cable: 7, MTU: 1500, Speed: 100000}
	if sf := r.SetBuffer(r.Prio2Buf, r.Sizes); sf != nil {
		t.Errorf("unchanged buffer write checked: %v", sf)
	}
}

// PlanPath keeps the plan's order when it passes, moves the buffer write
// before PFC when only that passes, goes through intermediate buffer
// states when no order of the plan's own writes does, and refuses a
// profile whose own state the driver would refuse.
func TestPlanPath(t *testing.T) {
	objs := func(path []Step) string {
		var out []string
		for _, st := range path {
			o := st.Obj
			if st.Via != "" {
				o += "(via)"
			}
			out = append(out, o)
		}
		return strings.Join(out, " ")
	}
	cur := Port{PauseKnown: true, Sizes: [8]uint32{262016}, Total: 524288, Cable: 7, MTU: 1500, Speed: 100000, MaxMTU: 9978}
	final := cur
	final.PFC = 1 << 3
	final.Prio2Buf = [8]uint8{0, 0, 0, 1}
	final.Sizes = [8]uint32{64512, 196608}
	path, ref := PlanPath(cur, final, []Write{PFCWrite(cur, final), BufferWrite(cur, final)}, true)
	if ref != nil || objs(path) != "buffer pfc" {
		t.Errorf("PFC onto a new buffer: %q %v, want the buffers first", objs(path), ref)
	}
	// Already lossless on buffer 0, moving to buffer 1 while buffer 0
	// shrinks: no order of the two writes passes (the map is checked
	// against the sizes of the moment), grow, move, shrink does.
	lossless := cur
	lossless.PFC, lossless.Sizes = 1<<3, [8]uint32{524160}
	lossless.AssumeLossless()
	final = lossless
	final.Prio2Buf, final.Sizes, final.Cable = [8]uint8{0, 0, 0, 1}, [8]uint32{64512, 196608}, 30
	ws := []Write{PFCWrite(lossless, final), BufferWrite(lossless, final)}
	if sf := RunWrites(lossless, ws); sf == nil {
		t.Fatal("the plan's own order passes: the case tests nothing")
	}
	path, ref = PlanPath(lossless, final, ws, true)
	if ref != nil || objs(path) != "pfc buffer(via) buffer" {
		t.Fatalf("retune a lossless port: %q %v", objs(path), ref)
	}
	if path[1].Buffer.Sizes[1] != 196608 || path[1].Buffer.Sizes[0]+path[1].Buffer.Sizes[1] > 524288 || !strings.Contains(path[1].Via, "grow buffer 1") {
		t.Errorf("first step %+v: want buffer 1 grown to its final size within the port's total", path[1])
	}
	// The MTU rises from 1500 to 9000 while priority 3 moves from
	// buffer 0, whose 48 KiB hold what MTU 1500 needs and not what 9000
	// does, to buffer 1. Written first, the MTU leaves buffer 0 short for
	// the rollback (which maps priority 3 back onto it); the path grows
	// buffer 0 for the new MTU first, at the old one, then writes the MTU.
	mtuUp := cur
	mtuUp.PFC, mtuUp.Sizes = 1<<3, [8]uint32{49152}
	mtuUp.AssumeLossless()
	final = mtuUp
	final.MTU, final.Prio2Buf, final.Sizes = 9000, [8]uint8{0, 0, 0, 1}, [8]uint32{64512, 196608}
	ws = []Write{MTUWrite(mtuUp, final), BufferWrite(mtuUp, final)}
	if sf := RunWrites(mtuUp, ws); sf == nil {
		t.Fatal("the plan's own order passes: the case tests nothing")
	}
	path, ref = PlanPath(mtuUp, final, ws, true)
	if ref != nil || objs(path) != "buffer(via) mtu buffer(via) buffer" {
		t.Fatalf("MTU up while the map moves: %q %v", objs(path), ref)
	}
	if need := uint32(Xoff(100000, 9000, 7) + 9978 + 128); path[0].Buffer.Sizes[0] < need {
		t.Errorf("first step %+v: want buffer 0 grown to the %d bytes MTU 9000 needs", path[0], need)
	}
	// A start state below the driver's minimum at the port's own speed
	// (sized while the link trained): no path can be rolled back, and
	// the refusal says why.
	short := cur
	short.PFC, short.Sizes = 1<<3, [8]uint32{45056, 262144}
	short.AssumeLossless()
	final = short
	final.Prio2Buf, final.Sizes = [8]uint8{0, 0, 0, 1}, [8]uint32{64512, 196608}
	_, ref = PlanPath(short, final, []Write{PFCWrite(short, final), BufferWrite(short, final)}, true)
	if ref == nil || !strings.Contains(ref.Why, "holds 45056 bytes, lossless, below the 45786") || strings.Count(ref.Why, "\n") != 1 {
		t.Errorf("a start state below the driver's minimum: %+v", ref)
	}
	// A final state the driver refuses is refused, whatever the path.
	small := final
	small.Sizes = [8]uint32{64512, 4096}
	_, ref = PlanPath(lossless, small, []Write{PFCWrite(lossless, small), BufferWrite(lossless, small)}, true)
	if ref == nil || ref.On[0] != policy.KindBufferSize || !strings.Contains(ref.Why, "buffer 1 would be lossless with 4096 bytes") {
		t.Errorf("too small a lossless buffer: %+v", ref)
	}
	// More than the port has, on the way or at the end: EINVAL.
	over := lossless
	if sf := over.SetBuffer(lossless.Prio2Buf, [8]uint32{524160, 196608}); sf == nil || sf.Sum != 720768 {
		t.Errorf("sizes past the port's total: %+v", sf)
	}
}

// The cell is the device's: a ConnectX-7 reports 19872 / 220896 /
// 4151520 (gcd 288, none a multiple of 128); a port whose sizes are all
// whole 128-byte cells keeps the driver's fallback; sizes that tell
// nothing leave it unknown.
func TestInferCell(t *testing.T) {
	for _, tc := range []struct {
		sizes [8]uint32
		total uint32
		want  int
	}{
		{[8]uint32{19872, 220896}, 4151520, 288},
		{[8]uint32{524160}, 524160, 128},        // one size: the fallback fits it
		{[8]uint32{65536, 131072}, 262144, 128}, // round sizes: gcd 65536 says nothing
		{[8]uint32{19872}, 0, 0},                // one size, not whole 128-byte cells
		{[8]uint32{}, 0, 0},
	} {
		if got, how := InferCell(tc.sizes, tc.total); got != tc.want || how == "" {
			t.Errorf("%v total %d: cell %d (%s), want %d", tc.sizes, tc.total, got, how, tc.want)
		}
	}
	if got := Truncated(196700, 128); got != 196608 {
		t.Errorf("Truncated(196700, 128) = %d", got)
	}
	if got := Truncated(196700, 0); got != 196700 {
		t.Errorf("Truncated with the cell unknown = %d", got)
	}
}

// A size the NIC reports itself is never refused or changed; another is
// programmed in whole cells, which the checks then see, and the note
// says so; with the cell unknown the note says the driver may round.
func TestCellNote(t *testing.T) {
	cx7 := Port{Sizes: [8]uint32{19872, 220896}, Cell: 288, CellHow: "inferred"}
	final := cx7
	if note := CellNote(cx7, &final); note != "" || final.Sizes != cx7.Sizes {
		t.Errorf("the NIC's own sizes: note %q, sizes %v", note, final.Sizes)
	}
	final.Sizes = [8]uint32{19872, 200000}
	note := CellNote(cx7, &final)
	if final.Sizes[1] != 199872 || !strings.Contains(note, "200000 bytes is programmed as 199872") || !strings.Contains(note, "288-byte cells") {
		t.Errorf("200000 bytes on 288-byte cells: sizes %v, note %q", final.Sizes, note)
	}
	unknown := Port{Sizes: [8]uint32{19872}, CellHow: "not told"}
	final = unknown
	final.Sizes[1] = 65536
	if note := CellNote(unknown, &final); final.Sizes[1] != 65536 || !strings.Contains(note, "cell size is unknown") {
		t.Errorf("cell unknown: sizes %v, note %q", final.Sizes, note)
	}
	// The extra cell the driver's minimum adds is the device's.
	p := Port{Speed: 100000, MTU: 9000, Cable: 7, MaxMTU: 9978, Cell: 288}
	if got := p.Need(); got != 56080+9978+288 {
		t.Errorf("Need with 288-byte cells = %d", got)
	}
}

func TestCompanionsAndImplied(t *testing.T) {
	d := Driver{}
	pfc := policy.Change{Setting: policy.Setting{Kind: policy.KindPFC}}
	if cs := d.Companions(pfc); len(cs) != 1 || cs[0].Kind != policy.KindGlobalPause || cs[0].Value != "off" {
		t.Errorf("PFC's companions: %+v", cs)
	}
	if cs := d.Companions(policy.Change{Setting: policy.Setting{Kind: policy.KindETSTSA}}); cs != nil {
		t.Errorf("ETS has no companion on mlx5: %+v", cs)
	}
	cnp := policy.Setting{Kind: policy.KindECNParam, Arg: "np/cnp_802p_prio"}
	upstream := driver.Facts{ECN: func() driver.ECNFlavour { return driver.ECNUpstream }}
	ofed := driver.Facts{ECN: func() driver.ECNFlavour { return driver.ECNOFED }}
	if cs := d.Implied(cnp, upstream); len(cs) != 1 || cs[0].Arg != "np/cnp_prio_mode" || cs[0].Value != "0" {
		t.Errorf("upstream CNP priority implies mode 0: %+v", cs)
	}
	if cs := d.Implied(cnp, ofed); cs != nil {
		t.Errorf("OFED sysfs has no CNP priority mode: %+v", cs)
	}
	if cs := d.Implied(cnp, driver.Facts{}); cs != nil {
		t.Errorf("ECN interface unknown: %+v", cs)
	}
}

func TestRefuseETSOnlyWhenZeroTCsReadBackAsShare(t *testing.T) {
	d := Driver{}
	strict := [8]string{"ets", "ets", "strict", "strict", "strict", "strict", "strict", "strict"}
	if why := d.RefuseETS(&policy.ETS{TCTSA: strict, TCBandwidth: [8]int{100, 0}}); why == "" {
		t.Error("0 % beside a single 100 % TC must be refused")
	}
	if why := d.RefuseETS(&policy.ETS{TCTSA: strict, TCBandwidth: [8]int{50, 50}}); why != "" {
		t.Errorf("shares refused: %s", why)
	}
	three := strict
	three[2] = "ets"
	if why := d.RefuseETS(&policy.ETS{TCTSA: three, TCBandwidth: [8]int{60, 40, 0}}); why != "" {
		t.Errorf("0 %% beside TCs below 100 %% reads back as 0: %s", why)
	}
}

func TestDisruptions(t *testing.T) {
	d := Driver{}
	at := func(k policy.Kind, hca, note string) []string {
		return d.Disruptions(&policy.Change{Setting: policy.Setting{Kind: k, Port: &port.Port{HCAType: hca}}, Note: note})
	}
	if ds := at(policy.KindPFC, "MT4125", ""); len(ds) != 1 || !strings.HasPrefix(ds[0], "link toggle") {
		t.Errorf("PFC: %v", ds)
	}
	if ds := at(policy.KindTrust, "MT4117", ""); len(ds) != 1 || !strings.Contains(ds[0], "inline L2") {
		t.Errorf("trust on a ConnectX-4 Lx: %v", ds)
	}
	if ds := at(policy.KindTrust, "MT4125", ""); ds != nil {
		t.Errorf("trust on a ConnectX-6 Dx: %v", ds)
	}
	if ds := at(policy.KindDCBX, "MT4125", WillingUndoNote); len(ds) != 1 || !strings.Contains(ds[0], "willing") {
		t.Errorf("host DCBX: %v", ds)
	}
}

func TestDCBX(t *testing.T) {
	d := Driver{}
	reported := func() uint8 { return dcb.DCBXVerCEE | dcb.DCBXVerIEEE }
	if m := d.DCBXMode(true, reported); m != dcb.DCBXHost|dcb.DCBXVerCEE|dcb.DCBXVerIEEE {
		t.Errorf("host mode keeps the reported versions: %#x", m)
	}
	if m := d.DCBXMode(false, reported); m != 0 {
		t.Errorf("firmware mode is 0: %#x", m)
	}
	if p := d.PlanDCBX("host", true, nil); p.Note != WillingUndoNote {
		t.Errorf("to host: %+v", p)
	}
	if p := d.PlanDCBX("host", false, nil); p != (driver.DCBXPlan{}) {
		t.Errorf("in sync: %+v", p)
	}
	if w := d.WillingDCBX([]string{"qos.pfc"}); !strings.Contains(w, "qos.pfc") {
		t.Errorf("willing warning: %s", w)
	}
	fw := uint8(dcb.DCBXVerIEEE)
	if msg := d.FirmwareLLDP(driver.LLDPFacts{DCBX: func() *uint8 { return &fw }}); !strings.Contains(msg, "firmware DCBX") {
		t.Errorf("firmware DCBX takes LLDP: %q", msg)
	}
	host := uint8(dcb.DCBXHost | dcb.DCBXVerIEEE)
	if msg := d.FirmwareLLDP(driver.LLDPFacts{DCBX: func() *uint8 { return &host }}); msg != "" {
		t.Errorf("host DCBX: %q", msg)
	}
	if c := d.Caps(); !c.BufferChecks || !c.CableLength || !c.PFCTogglesLink || c.LosslessQueues {
		t.Errorf("caps: %+v", c)
	}
}

// Hostile start states (what a broken tool or a hand edit can leave, and
// what a snapshot can hold): sizes past the port's total, a lossless
// priority on a zero-size buffer, every buffer lossless under global
// pause, sizes not on a cell boundary, no total at all. The search
// neither panics nor runs past its bound: it answers a path or a
// refusal for each.
func TestPathOnHostileStartStates(t *testing.T) {
	base := Port{PauseKnown: true, Total: 524288, Cable: 7, MTU: 9000, Speed: 100000, MaxMTU: 9978, Cell: 128}
	hostile := map[string]Port{}
	over := base
	over.Sizes = [8]uint32{524288, 524288}
	hostile["sizes past the total"] = over
	zero := base
	zero.PFC, zero.Prio2Buf, zero.Sizes = 1<<3, [8]uint8{0, 0, 0, 1}, [8]uint32{262144, 0}
	hostile["lossless on a zero-size buffer"] = zero
	paused := base
	paused.Pause, paused.Prio2Buf, paused.Sizes = true, [8]uint8{0, 1, 2, 3, 4, 5, 6, 7}, [8]uint32{1024, 1024, 1024, 1024, 1024, 1024, 1024, 1024}
	hostile["every buffer lossless under global pause"] = paused
	odd := base
	odd.PFC, odd.Sizes = 1<<3, [8]uint32{130001, 99999}
	hostile["sizes off the cell boundary"] = odd
	noTotal := base
	noTotal.Total = 0
	hostile["no total"] = noTotal
	final := base
	final.PFC, final.Prio2Buf, final.Sizes, final.Cable = 1<<3, [8]uint8{0, 0, 0, 1}, [8]uint32{64512, 196608}, 30
	for name, cur := range hostile {
		cur.AssumeLossless()
		ws := []Write{PauseWrite(cur, final), PFCWrite(cur, final), BufferWrite(cur, final), MTUWrite(cur, final)}
		path, ref := PlanPath(cur, final, ws, true)
		if (path == nil) == (ref == nil) {
			t.Errorf("%s: path %v and refusal %v: want exactly one", name, path, ref)
		}
		if ref != nil && strings.Count(ref.Why, "\n") > 1 {
			t.Errorf("%s: refusal in more than two lines: %s", name, ref.Why)
		}
	}
}
