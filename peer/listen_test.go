package peer

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/rocectl/rocectl/lldp"
)

// flood is a listener that hears n malformed frames, then nothing until
// the deadline: each frame is decoded by lldp.DecodeFrame from bytes cut
// one of several ways, and every seventh names a TLV of its own, so that
// there are far more kinds than a summary keeps.
type flood struct {
	n, sent int
}

func (f *flood) Read(time.Time) (lldp.Received, error) {
	if f.sent == f.n {
		return lldp.Received{}, os.ErrDeadlineExceeded
	}
	i := f.sent
	f.sent++
	var err error
	switch i % 7 {
	case 0:
		err = &lldp.DecodeError{TLV: fmt.Sprintf("TLV %d", i), Reason: "made up"}
	case 1:
		_, err = lldp.DecodeFrame(make([]byte, 10)) // shorter than its header
	default:
		b := append(make([]byte, 12), 0x88, 0xcc, 0x02, 0x07, 0x04, 1) // Chassis ID runs past the end
		_, err = lldp.DecodeFrame(b)
	}
	if err == nil {
		panic("flood: frame decoded")
	}
	return lldp.Received{At: time.Unix(int64(i), 0), Err: err}, nil
}

// A flood of malformed frames is kept as a bounded summary: the count
// is exact, the kinds and the errors kept do not grow with the frames,
// and the reason says how many and why.
func TestAwaitFrameMalformedFlood(t *testing.T) {
	const n = 100_000
	f := &flood{n: n}
	_, bad, err := awaitFrame(f, time.Time{})
	if !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("err %v, want the deadline", err)
	}
	if f.sent != n {
		t.Fatalf("read %d frames, want %d", f.sent, n)
	}
	if bad.Count != n {
		t.Errorf("count %d, want %d", bad.Count, n)
	}
	if len(bad.Kinds) > lldp.MaxMalformedKinds+1 {
		t.Errorf("%d kinds kept, want at most %d", len(bad.Kinds), lldp.MaxMalformedKinds+1)
	}
	sum := 0
	for _, k := range bad.Kinds {
		sum += k.Count
		if k.First == nil {
			t.Errorf("kind %q keeps no example", k.Kind)
		}
	}
	if sum != n {
		t.Errorf("kinds sum to %d, want %d", sum, n)
	}
	// i%7 == 0 for 14286 of i in [0, 100000), == 1 for 14286, else 71428.
	want := map[string]int{"frame": 14286, "Chassis ID": 71428}
	for _, k := range bad.Kinds {
		if w, ok := want[k.Kind]; ok && k.Count != w {
			t.Errorf("kind %q: %d, want %d", k.Kind, k.Count, w)
		}
		delete(want, k.Kind)
	}
	if len(want) != 0 {
		t.Errorf("kinds %v missing from %+v", want, bad.Kinds)
	}
	if last := bad.Kinds[len(bad.Kinds)-1]; last.Kind != lldp.OtherKinds {
		t.Errorf("last kind %q, want %q", last.Kind, lldp.OtherKinds)
	}
	var de *lldp.DecodeError
	if !errors.As(bad.Last, &de) || de.TLV != "Chassis ID" {
		t.Errorf("last error %v, want the last frame's (Chassis ID)", bad.Last)
	}
	r := &Result{Netdev: "p0"}
	why := silentReason(nil, r, "", bad, time.Second)
	for _, s := range []string{"heard 100000 malformed LLDP frame(s) and no valid one; last: malformed LLDPDU: Chassis ID TLV at byte 0: length 7 runs past the end",
		"; by kind: 1 TLV 0, 14286 frame, 71428 Chassis ID, 1 TLV 7, ", "14280 other kinds"} {
		if !strings.Contains(why, s) {
			t.Errorf("reason %q lacks %q", why, s)
		}
	}
}

// A valid frame after malformed ones ends the wait with it.
func TestAwaitFrameValidAfterMalformed(t *testing.T) {
	good := &lldp.Frame{ChassisID: "c"}
	rd := &seq{fn: func(i int) (lldp.Received, error) {
		if i < 3 {
			return lldp.Received{Err: &lldp.DecodeError{Reason: "x"}}, nil
		}
		return lldp.Received{Frame: good}, nil
	}}
	rec, bad, err := awaitFrame(rd, time.Time{})
	if err != nil || rec.Frame != good || bad.Count != 3 || len(bad.Kinds) != 1 {
		t.Errorf("got %+v, %+v, %v; want the valid frame after 3 malformed of one kind", rec, bad, err)
	}
}

// seq answers the i-th Read with fn(i).
type seq struct {
	fn func(i int) (lldp.Received, error)
	i  int
}

func (s *seq) Read(time.Time) (lldp.Received, error) {
	s.i++
	return s.fn(s.i - 1)
}
