package dcb

import (
	"bytes"
	"errors"
	"fmt"
	"strings"
	"syscall"
	"testing"
)

// setStatus answers IEEE_SET/IEEE_DEL as dcbnl_ieee_set does: the request's
// cmd echoed in dcbmsg and the u8 status (0, or a negative errno as u8).
func setStatus(status byte) func(int, []byte) ([]byte, error) {
	return func(_ int, req []byte) ([]byte, error) {
		return dcbPayload(req[17], nla(AttrIEEE, u8(status))), nil
	}
}

func TestClientSetPFCSendsVectorAndChecksStatus(t *testing.T) {
	requireLittleEndian(t)
	f := &fakeKernel{reply: setStatus(0)}
	c := f.client()
	if err := c.SetPFC("eth0", PFC{Cap: 8, Enable: 0x08}); err != nil {
		t.Fatal(err)
	}
	want, _ := wire(1)(pfcSetRequest("eth0", PFC{Cap: 8, Enable: 0x08}))
	if len(f.sent) != 1 || !bytes.Equal(f.sent[0], want) || len(want) != 176 {
		t.Fatalf("sent %x", f.sent)
	}

	// In-band failure: u8 0xea = -22.
	f.reply = setStatus(0xea)
	err := c.SetPFC("eth0", PFC{Enable: 0x08})
	if !errors.Is(err, syscall.EINVAL) {
		t.Fatalf("err %v, want EINVAL", err)
	}
	if got := err.Error(); got != "dcbnl IEEE_SET PFC on eth0: invalid argument" {
		t.Errorf("message %q", got)
	}
}

func TestClientNLMSGErrorIsTyped(t *testing.T) {
	f := &fakeKernel{reply: func(int, []byte) ([]byte, error) { return nil, syscall.EOPNOTSUPP }}
	c := f.client()
	_, err := c.Get("ens1f0np0")
	var e *Error
	if !errors.As(err, &e) || e.Op != "IEEE_GET" || e.Ifname != "ens1f0np0" {
		t.Fatalf("err %#v", err)
	}
	if !errors.Is(err, syscall.EOPNOTSUPP) {
		t.Fatalf("errors.Is EOPNOTSUPP false for %v", err)
	}
	for name, call := range map[string]func() error{
		"IEEE_SET PFC":     func() error { return c.SetPFC("ens1f0np0", PFC{}) },
		"IEEE_SET ETS":     func() error { return c.SetETS("ens1f0np0", ETS{}) },
		"IEEE_SET BUFFER":  func() error { return c.SetBuffer("ens1f0np0", Buffer{}) },
		"IEEE_SET MAXRATE": func() error { return c.SetMaxrate("ens1f0np0", Maxrate{}) },
		"IEEE_SET APP":     func() error { return c.AddApps("ens1f0np0", fixtureApps) },
		"IEEE_DEL APP":     func() error { return c.DelApps("ens1f0np0", fixtureApps) },
		"SDCBX":            func() error { return c.SetDCBX("ens1f0np0", 9) },
		"GDCBX":            func() error { _, err := c.GetDCBX("ens1f0np0"); return err },
	} {
		err := call()
		want := "dcbnl " + name + " on ens1f0np0: operation not supported"
		if !errors.Is(err, syscall.EOPNOTSUPP) || err.Error() != want {
			t.Errorf("%s: %v, want %q", name, err, want)
		}
	}
}

func TestClientGetDecodes(t *testing.T) {
	requireLittleEndian(t)
	f := &fakeKernel{reply: func(_ int, req []byte) ([]byte, error) {
		want, _ := wire(1)(ieeeGetRequest("eni1np1"))
		if !bytes.Equal(req, want) {
			return nil, fmt.Errorf("unexpected request %x", req)
		}
		return fullGetReply(fixtureApps), nil
	}}
	st, err := f.client().Get("eni1np1")
	if err != nil {
		t.Fatal(err)
	}
	if *st.ETS != fixtureETS || *st.PFC != fixturePFC || len(st.Apps) != 3 || *st.DCBX != 9 {
		t.Fatalf("state %+v", st)
	}
	// A reply the decoder cannot use is ErrMalformed inside *Error.
	f.reply = func(int, []byte) ([]byte, error) { return dcbPayload(CmdIEEEGet), nil }
	_, err = f.client().Get("eni1np1")
	var e *Error
	if !errors.As(err, &e) || !errors.Is(err, ErrMalformed) {
		t.Fatalf("err %v", err)
	}
}

// SetETS validates first (nothing is sent for a bad sum) and zeroes the
// bandwidth of non-ETS TCs on the wire.
func TestClientSetETS(t *testing.T) {
	requireLittleEndian(t)
	f := &fakeKernel{reply: setStatus(0)}
	c := f.client()
	bad := ETS{TCTSA: [8]uint8{2, 2, 2, 2, 2, 2, 2, 2}, TCTxBW: [8]uint8{10, 10, 10, 10, 10, 10, 10, 10}}
	err := c.SetETS("eth0", bad)
	var ve *ValidationError
	if !errors.As(err, &ve) || len(f.sent) != 0 {
		t.Fatalf("bad sum: err %v, %d messages sent", err, len(f.sent))
	}
	if !strings.HasPrefix(err.Error(), "dcbnl IEEE_SET ETS on eth0: invalid ETS tc_tx_bw:") {
		t.Errorf("message %q", err)
	}
	e := fixtureETS
	e.TCTxBW = [8]uint8{100, 100, 100, 100, 100, 100, 100, 100} // as mlx5 reads back
	if err := c.SetETS("eth0", e); err != nil {
		t.Fatal(err)
	}
	// tc_tx_bw sits at message offset 40 (ETS payload) + 3.
	if got := f.sent[0][43:51]; !bytes.Equal(got, []byte{0, 0, 0, 0, 100, 0, 0, 0}) {
		t.Fatalf("tc_tx_bw on the wire % x", got)
	}
}

func TestClientSetBufferValidates(t *testing.T) {
	f := &fakeKernel{reply: setStatus(0)}
	err := f.client().SetBuffer("eth0", Buffer{PrioBuffer: [8]uint8{3: 9}})
	var ve *ValidationError
	if !errors.As(err, &ve) || len(f.sent) != 0 {
		t.Fatalf("err %v, sent %d", err, len(f.sent))
	}
	if err := f.client().SetBuffer("eth0", fixtureBuffer); err != nil || len(f.sent) != 1 {
		t.Fatalf("err %v, sent %d", err, len(f.sent))
	}
}

// 130 entries go out as 64 + 64 + 2; a failure in the second message stops
// the third and names the entries of the failed message.
func TestClientAddAppsChunks(t *testing.T) {
	requireLittleEndian(t)
	apps := make([]App, 130)
	for i := range apps {
		apps[i] = App{Selector: SelDgram, Priority: uint8(i % 8), Protocol: uint16(1000 + i)}
	}
	f := &fakeKernel{reply: setStatus(0)}
	if err := f.client().AddApps("eth0", apps); err != nil {
		t.Fatal(err)
	}
	if len(f.sent) != 3 {
		t.Fatalf("%d messages, want 3", len(f.sent))
	}
	for i, n := range []int{64, 64, 2} {
		want, _ := wire(1)(appRequest(CmdIEEESet, "eth0", apps[64*i:64*i+n]))
		if !bytes.Equal(f.sent[i], want) {
			t.Errorf("message %d differs", i)
		}
	}

	f = &fakeKernel{reply: func(i int, req []byte) ([]byte, error) {
		if i == 1 {
			return dcbPayload(req[17], nla(AttrIEEE, u8(0xef))), nil // -EEXIST
		}
		return dcbPayload(req[17], nla(AttrIEEE, u8(0))), nil
	}}
	err := f.client().AddApps("eth0", apps)
	if !errors.Is(err, syscall.EEXIST) || len(f.sent) != 2 {
		t.Fatalf("err %v after %d messages", err, len(f.sent))
	}
	if want := "dcbnl IEEE_SET APP on eth0: entries 64..127: file exists"; err.Error() != want {
		t.Errorf("message %q, want %q", err, want)
	}

	// Nothing to do is no message at all.
	f = &fakeKernel{reply: setStatus(0)}
	if err := f.client().DelApps("eth0", nil); err != nil || len(f.sent) != 0 {
		t.Fatalf("empty DelApps: %v, %d sent", err, len(f.sent))
	}
	// Invalid entries are refused before anything is sent.
	if err := f.client().AddApps("eth0", []App{{SelDSCP, 3, 64}}); err == nil || len(f.sent) != 0 {
		t.Fatalf("DSCP 64: %v, %d sent", err, len(f.sent))
	}
}

func TestClientDelAppsUsesIEEEDel(t *testing.T) {
	f := &fakeKernel{reply: setStatus(0xfe)} // -ENOENT
	err := f.client().DelApps("eth0", []App{{SelDSCP, 3, 26}})
	if !errors.Is(err, syscall.ENOENT) || err.Error() != "dcbnl IEEE_DEL APP on eth0: no such file or directory" {
		t.Fatalf("err %v", err)
	}
	if f.sent[0][17] != CmdIEEEDel {
		t.Fatalf("cmd %d", f.sent[0][17])
	}
}

func TestClientSetDCBX(t *testing.T) {
	f := &fakeKernel{reply: func(_ int, req []byte) ([]byte, error) {
		// Driver return value: refuse LLD_MANAGED, like mlx5.
		mode := req[36]
		status := byte(0)
		if mode&DCBXLLDManaged != 0 {
			status = 1
		}
		return dcbPayload(CmdSDCBX, nla(AttrDCBX, u8(status))), nil
	}}
	c := f.client()
	if err := c.SetDCBX("eth0", DCBXHost|DCBXVerIEEE); err != nil {
		t.Fatal(err)
	}
	err := c.SetDCBX("eth0", DCBXLLDManaged|DCBXVerIEEE)
	var de *DCBXError
	if !errors.As(err, &de) || de.Status != 1 || de.Mode != 0x0a {
		t.Fatalf("err %v", err)
	}
	if want := "dcbnl SDCBX on eth0: driver refused DCBX mode 0x0a (status 1)"; err.Error() != want {
		t.Errorf("message %q", err)
	}
	// Not an errno: EPERM (1) must not match.
	if errors.Is(err, syscall.EPERM) {
		t.Errorf("DCBX refusal reads as EPERM")
	}
}

func TestClientBadIfname(t *testing.T) {
	f := &fakeKernel{reply: setStatus(0)}
	err := f.client().SetPFC("this-name-is-too-long", PFC{})
	var ve *ValidationError
	var e *Error
	if !errors.As(err, &ve) || !errors.As(err, &e) || e.Op != "IEEE_SET PFC" || len(f.sent) != 0 {
		t.Fatalf("err %v, sent %d", err, len(f.sent))
	}
}
