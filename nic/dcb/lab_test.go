//go:build lab

package dcb

// Lab test: the client against the real kernel dcbnl code, on a netdevsim
// port that the lab's patch (test/lab/nsim-dcb/netdevsim-dcbnl.patch)
// gives IEEE DCB ops: PFC, ETS, maxrate, buffer and DCBX are stored by the
// driver, APP entries go to the kernel's generic table. It runs only inside
// the throw-away lab VM, where writing to /sys is harmless:
//
//	CGO_ENABLED=0 go test -tags lab -c -o /tmp/dcblab.test ./nic/dcb
//	make lab-short (or test/lab/run-go-tests.sh)
//
// What the patch's driver does, which the expectations below follow:
//   - getets forces ets_cap 8; setets refuses prio_tc ≥ 8 and an ETS
//     bandwidth sum other than 0 or 100 (-EINVAL);
//   - getpfc forces pfc_cap 8 and reports the debugfs counter
//     ports/0/stats/{tx,rx}_prio3_pause as requests[3] and indications[3]; setpfc keeps
//     pfc_en, mbc, delay;
//   - getbuffer forces total_size 256 KiB; setbuffer refuses buffers adding
//     up to more (-EINVAL);
//   - setdcbx returns 1 for LLD_MANAGED or a mode without VER_IEEE;
//   - initial state: TC 0 ETS at 100 %, TCs 1..7 strict, DCBX HOST|VER_IEEE.

import (
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/vishvananda/netlink/nl"
	"github.com/vishvananda/netns"
	"golang.org/x/sys/unix"
)

const nsimID = "1"

// newNetdevsim creates netdevsim device 1 with one port and returns the
// port's netdev name; the device is deleted when the test ends.
func newNetdevsim(t *testing.T) string {
	t.Helper()
	if out, err := exec.Command("modprobe", "netdevsim").CombinedOutput(); err != nil {
		t.Fatalf("modprobe netdevsim: %v: %s", err, out)
	}
	if err := os.WriteFile("/sys/bus/netdevsim/new_device", []byte(nsimID+" 1"), 0); err != nil {
		t.Fatalf("netdevsim new_device: %v", err)
	}
	t.Cleanup(func() {
		if err := os.WriteFile("/sys/bus/netdevsim/del_device", []byte(nsimID), 0); err != nil {
			t.Errorf("netdevsim del_device: %v", err)
		}
	})
	dir := "/sys/bus/netdevsim/devices/netdevsim" + nsimID + "/net"
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		if ents, _ := os.ReadDir(dir); len(ents) == 1 {
			return ents[0].Name()
		}
	}
	t.Fatalf("no netdev under %s", dir)
	return ""
}

// TestLabNetdevsimDCB runs every request twice over: with a socket per
// call (NewClient) and on one shared socket (NewClientOn, as Live does),
// where each SET must read its trailing ACK or the next request skip it.
func TestLabNetdevsimDCB(t *testing.T) {
	if os.Getenv("LAB_IF0") == "" {
		t.Skip("runs only inside the lab VM (make lab / test/lab/run-go-tests.sh sets LAB_IF0)")
	}
	t.Run("socket per call", func(t *testing.T) {
		labNetdevsimDCB(t, newNetdevsim(t), NewClient())
	})
	t.Run("shared socket", func(t *testing.T) {
		s, err := nl.GetNetlinkSocketAt(netns.None(), netns.None(), unix.NETLINK_ROUTE)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(s.Close)
		labNetdevsimDCB(t, newNetdevsim(t), NewClientOn(&nl.SocketHandle{Socket: s}))
	})
}

func labNetdevsimDCB(t *testing.T, ifname string, c *Client) {
	get := func(t *testing.T) *State {
		t.Helper()
		st, err := c.Get(ifname)
		if err != nil {
			t.Fatalf("read back: %v", err)
		}
		return st
	}
	wantErrno := func(t *testing.T, err error, errno syscall.Errno, op string) {
		t.Helper()
		var e *Error
		if !errors.Is(err, errno) || !errors.As(err, &e) || e.Op != op || e.Ifname != ifname {
			t.Fatalf("err %v, want %s from %s", err, errno, op)
		}
		t.Logf("kernel said, as expected: %v", err)
	}

	t.Run("initial state", func(t *testing.T) {
		st := get(t)
		wantETS := ETS{ETSCap: 8, TCTxBW: [8]uint8{100}, TCTSA: [8]uint8{TSAETS}}
		if st.ETS == nil || *st.ETS != wantETS {
			t.Errorf("ETS %+v, want %+v", st.ETS, wantETS)
		}
		if st.PFC == nil || *st.PFC != (PFC{Cap: 8}) {
			t.Errorf("PFC %+v", st.PFC)
		}
		if st.Buffer == nil || *st.Buffer != (Buffer{TotalSize: 256 * 1024}) {
			t.Errorf("Buffer %+v", st.Buffer)
		}
		if st.Maxrate == nil || *st.Maxrate != (Maxrate{}) {
			t.Errorf("Maxrate %+v", st.Maxrate)
		}
		if st.DCBX == nil || *st.DCBX != DCBXHost|DCBXVerIEEE {
			t.Errorf("DCBX %v", st.DCBX)
		}
		if len(st.Apps) != 0 || st.AppTrust != nil {
			t.Errorf("Apps %v AppTrust %v", st.Apps, st.AppTrust)
		}
	})

	t.Run("PFC prio 3 with delay", func(t *testing.T) {
		p := *get(t).PFC
		p.Enable = 1 << 3
		p.Delay = 4096
		if err := c.SetPFC(ifname, p); err != nil {
			t.Fatal(err)
		}
		got := *get(t).PFC
		if got.Enable != 0x08 || got.Delay != 4096 || got.Cap != 8 {
			t.Fatalf("read back %+v", got)
		}
		// The driver's pause counters land at requests[3] (sent) and
		// indications[3] (received): offsets 8+3*8 and 72+3*8 of ieee_pfc,
		// for real. Two different values tell the two arrays apart.
		stats := "/sys/kernel/debug/netdevsim/netdevsim" + nsimID + "/ports/0/stats/"
		if err := os.WriteFile(stats+"tx_prio3_pause", []byte("42"), 0); err != nil {
			t.Fatalf("debugfs: %v", err)
		}
		if err := os.WriteFile(stats+"rx_prio3_pause", []byte("17"), 0); err != nil {
			t.Fatalf("debugfs: %v", err)
		}
		got = *get(t).PFC
		if got.Requests != [8]uint64{3: 42} || got.Indications != [8]uint64{3: 17} {
			t.Fatalf("counters %v / %v", got.Requests, got.Indications)
		}
		crossCheckPFCWithIproute2(t, ifname, got)
	})

	t.Run("ETS", func(t *testing.T) {
		e := *get(t).ETS
		e.TCTSA = [8]uint8{TSAETS, TSAETS, TSAETS, TSAETS, TSAETS, TSAETS, TSAETS, TSAETS}
		e.TCTxBW = [8]uint8{10, 10, 10, 50, 5, 5, 5, 5}
		e.PrioTC = [8]uint8{0, 0, 0, 3, 4, 0, 0, 0}
		if err := c.SetETS(ifname, e); err != nil {
			t.Fatal(err)
		}
		if got := *get(t).ETS; got != e {
			t.Fatalf("read back %+v, want %+v", got, e)
		}

		// Strict TCs with bandwidth, as mlx5 reads them back: the driver
		// stores what arrives, so zeros prove the zeroing went on the wire.
		e.TCTSA = [8]uint8{TSAETS, TSAETS, TSAETS, TSAETS, TSAStrict, TSAStrict, TSAStrict, TSAStrict}
		e.TCTxBW = [8]uint8{25, 25, 25, 25, 100, 100, 100, 100}
		if err := c.SetETS(ifname, e); err != nil {
			t.Fatal(err)
		}
		if got := get(t).ETS.TCTxBW; got != [8]uint8{25, 25, 25, 25, 0, 0, 0, 0} {
			t.Fatalf("tc_tx_bw read back %v", got)
		}
	})

	t.Run("ETS bad sum", func(t *testing.T) {
		before := *get(t).ETS
		bad := before
		bad.TCTSA = [8]uint8{TSAETS, TSAETS, TSAETS, TSAETS, TSAETS, TSAETS, TSAETS, TSAETS}
		bad.TCTxBW = [8]uint8{10, 10, 10, 10, 10, 10, 10, 10} // 80
		// The public API refuses it before the kernel sees it...
		var ve *ValidationError
		if err := c.SetETS(ifname, bad); !errors.As(err, &ve) {
			t.Fatalf("SetETS sum 80: %v, want a *ValidationError", err)
		}
		// ...and sent anyway, the driver's own check answers in-band EINVAL
		// (the patch: "ETS bandwidths must add up to 100").
		wantErrno(t, c.set(etsSetRequest(ifname, bad)), syscall.EINVAL, "IEEE_SET ETS")
		bad = before
		bad.PrioTC[5] = 8
		wantErrno(t, c.set(etsSetRequest(ifname, bad)), syscall.EINVAL, "IEEE_SET ETS")
		if got := *get(t).ETS; got != before {
			t.Fatalf("ETS changed by refused SETs: %+v, was %+v", got, before)
		}
	})

	t.Run("APP DSCP add and delete", func(t *testing.T) {
		apps := []App{{SelDSCP, 3, 26}, {SelDSCP, 6, 48}}
		if err := c.AddApps(ifname, apps); err != nil {
			t.Fatal(err)
		}
		assertApps(t, get(t).Apps, apps)
		// The generic table refuses an exact duplicate...
		wantErrno(t, c.AddApps(ifname, apps[:1]), syscall.EEXIST, "IEEE_SET APP")
		// ...but keeps a second priority for the same DSCP.
		if err := c.AddApps(ifname, []App{{SelDSCP, 4, 26}}); err != nil {
			t.Fatal(err)
		}
		assertApps(t, get(t).Apps, append(slices.Clone(apps), App{SelDSCP, 4, 26}))
		if err := c.DelApps(ifname, []App{{SelDSCP, 4, 26}, apps[0]}); err != nil {
			t.Fatal(err)
		}
		assertApps(t, get(t).Apps, apps[1:])
		wantErrno(t, c.DelApps(ifname, apps[:1]), syscall.ENOENT, "IEEE_DEL APP")
		if err := c.DelApps(ifname, apps[1:]); err != nil {
			t.Fatal(err)
		}
		assertApps(t, get(t).Apps, nil)
	})

	t.Run("APP full DSCP map and ports in two messages", func(t *testing.T) {
		var apps []App
		for d := range 64 {
			apps = append(apps, App{SelDSCP, uint8(d >> 3), uint16(d)})
		}
		for i := range 10 {
			apps = append(apps, App{SelDgram, 3, uint16(4791 + i)})
		}
		if err := c.AddApps(ifname, apps); err != nil {
			t.Fatal(err)
		}
		assertApps(t, get(t).Apps, apps)
		if err := c.DelApps(ifname, apps); err != nil {
			t.Fatal(err)
		}
		assertApps(t, get(t).Apps, nil)
	})

	t.Run("APP PCP on a 6.1 kernel is skipped silently", func(t *testing.T) {
		// Kernels before the PCP selector (≈6.1 net-next, not in Debian's
		// 6.1) skip DCB_ATTR_DCB_APP entries and report success: why every
		// SET must be read back.
		rel, _ := os.ReadFile("/proc/sys/kernel/osrelease")
		if !strings.HasPrefix(string(rel), "6.1.") {
			t.Skipf("kernel %s: PCP support varies", strings.TrimSpace(string(rel)))
		}
		if err := c.AddApps(ifname, []App{{SelPCP, 2, 5}}); err != nil {
			t.Fatalf("PCP entry: %v, want the kernel's silent success", err)
		}
		assertApps(t, get(t).Apps, nil)
	})

	t.Run("BUFFER", func(t *testing.T) {
		b := *get(t).Buffer
		b.PrioBuffer = [8]uint8{0, 0, 0, 1, 0, 0, 0, 0}
		b.Size = [8]uint32{64 * 1024, 128 * 1024}
		if err := c.SetBuffer(ifname, b); err != nil {
			t.Fatal(err)
		}
		if got := *get(t).Buffer; got != b {
			t.Fatalf("read back %+v, want %+v", got, b)
		}
		// Over the port total: refused locally when total_size is known...
		over := b
		over.Size = [8]uint32{200 * 1024, 100 * 1024}
		var ve *ValidationError
		if err := c.SetBuffer(ifname, over); !errors.As(err, &ve) {
			t.Fatalf("oversized buffers: %v, want *ValidationError", err)
		}
		// ...and by the driver in-band when it is not.
		over.TotalSize = 0
		wantErrno(t, c.SetBuffer(ifname, over), syscall.EINVAL, "IEEE_SET BUFFER")
		// prio2buffer 8: the kernel core's own check (dcbnl_ieee_set).
		bad := b
		bad.PrioBuffer[7] = 8
		wantErrno(t, c.set(bufferSetRequest(ifname, bad)), syscall.EINVAL, "IEEE_SET BUFFER")
		if got := *get(t).Buffer; got != b {
			t.Fatalf("buffer changed by refused SETs: %+v", got)
		}
	})

	t.Run("MAXRATE", func(t *testing.T) {
		m := Maxrate{TCMaxrate: [8]uint64{3: 25_000_000}}
		if err := c.SetMaxrate(ifname, m); err != nil {
			t.Fatal(err)
		}
		if got := *get(t).Maxrate; got != m {
			t.Fatalf("read back %+v", got)
		}
	})

	t.Run("DCBX", func(t *testing.T) {
		var de *DCBXError
		for _, mode := range []uint8{DCBXHost | DCBXVerCEE, DCBXLLDManaged | DCBXVerIEEE} {
			err := c.SetDCBX(ifname, mode)
			if !errors.As(err, &de) || de.Status != 1 || de.Mode != mode {
				t.Fatalf("mode 0x%02x: %v, want a refusal with status 1", mode, err)
			}
		}
		if got := *get(t).DCBX; got != DCBXHost|DCBXVerIEEE {
			t.Fatalf("refused modes changed DCBX to 0x%02x", got)
		}
		if err := c.SetDCBX(ifname, DCBXHost|DCBXVerIEEE|DCBXStatic); err != nil {
			t.Fatal(err)
		}
		if got := *get(t).DCBX; got != 0x19 {
			t.Fatalf("IEEE_GET DCBX 0x%02x, want 0x19", got)
		}
		if got, err := c.GetDCBX(ifname); err != nil || got != 0x19 {
			t.Fatalf("GDCBX 0x%02x, %v", got, err)
		}
		if err := c.SetDCBX(ifname, DCBXHost|DCBXVerIEEE); err != nil {
			t.Fatal(err)
		}
	})

	t.Run("a veth has no DCB", func(t *testing.T) {
		_, err := c.Get(os.Getenv("LAB_IF0"))
		if !errors.Is(err, syscall.EOPNOTSUPP) {
			t.Fatalf("Get on %s: %v", os.Getenv("LAB_IF0"), err)
		}
	})
}

// assertApps compares APP tables as sets: the kernel prepends new entries
// to its list, so GET returns them newest first.
func assertApps(t *testing.T, got, want []App) {
	t.Helper()
	key := func(a, b App) int {
		return int(a.Selector)<<24 | int(a.Protocol)<<8 | int(a.Priority) - (int(b.Selector)<<24 | int(b.Protocol)<<8 | int(b.Priority))
	}
	g, w := slices.Clone(got), slices.Clone(want)
	slices.SortFunc(g, key)
	slices.SortFunc(w, key)
	if len(g) != len(w) || (len(g) > 0 && !reflect.DeepEqual(g, w)) {
		t.Fatalf("APP table %v, want %v", got, want)
	}
}

// crossCheckPFCWithIproute2 compares our decode with iproute2's own reading
// of the same kernel state (`dcb -j -s pfc show dev X`), e.g.
// {"pfc_cap":8,"macsec_bypass":false,"delay":4096,"prio_pfc":[false,...],
// "requests":[0,0,0,42,...],"indications":[...]}.
func crossCheckPFCWithIproute2(t *testing.T, ifname string, p PFC) {
	t.Helper()
	dcb, err := exec.LookPath("dcb")
	if err != nil {
		t.Fatalf("iproute2 dcb not in the lab image: %v", err)
	}
	out, err := exec.Command(dcb, "-j", "-s", "pfc", "show", "dev", ifname).Output()
	if err != nil {
		t.Fatalf("%s: %v", filepath.Base(dcb), err)
	}
	var j struct {
		PFCCap       uint8    `json:"pfc_cap"`
		MACsecBypass bool     `json:"macsec_bypass"`
		Delay        uint16   `json:"delay"`
		PrioPFC      []bool   `json:"prio_pfc"`
		Requests     []uint64 `json:"requests"`
		Indications  []uint64 `json:"indications"`
	}
	if err := json.Unmarshal(out, &j); err != nil {
		t.Fatalf("dcb -j output %q: %v", out, err)
	}
	var prio []bool
	for i := range NumTCs {
		prio = append(prio, p.Enable&(1<<i) != 0)
	}
	if j.PFCCap != p.Cap || j.MACsecBypass != (p.MBC != 0) || j.Delay != p.Delay ||
		!slices.Equal(j.PrioPFC, prio) || !slices.Equal(j.Requests, p.Requests[:]) || !slices.Equal(j.Indications, p.Indications[:]) {
		t.Fatalf("iproute2 says %s\nwe decoded %+v", out, p)
	}
	t.Logf("iproute2 agrees: %s", strings.TrimSpace(string(out)))
}
