package dump

import (
	"bytes"
	"errors"
	"flag"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/rocectl/rocectl/internal/testkit/netnstest"
	"github.com/rocectl/rocectl/nic/snapshot"
)

var captureReal = flag.Bool("capture-real", false, "rerun the real tools on a veth pair in a test namespace and rewrite testdata/corpus/veth-*.txt (root only)")

// TestCaptureRealVeth regenerates the corpus files that are real output of
// this machine's iproute2 and ethtool: a veth pair in a namespace of the
// test's own, with fixed MACs and no IPv6 address generation, so that no
// packet moves and every counter stays 0 (the files are then the same on
// every run on one kernel and tool version). It only runs with
// -capture-real, because a new kernel or tool version changes the files
// and SOURCES.md must then be updated by hand; the normal run reads the
// committed files (TestCorpusGolden).
func TestCaptureRealVeth(t *testing.T) {
	if !*captureReal {
		t.Skip("rewrites the committed corpus: run with -capture-real (as root)")
	}
	ns := netnstest.New(t)
	ns.AddVeth("va", "vb")
	for _, args := range [][]string{
		{"link", "set", "va", "address", "02:00:00:00:00:0a"},
		{"link", "set", "vb", "address", "02:00:00:00:00:0b"},
		{"link", "set", "va", "addrgenmode", "none"},
		{"link", "set", "vb", "addrgenmode", "none"},
		{"link", "set", "va", "mtu", "9000"},
		{"link", "set", "vb", "mtu", "9000"},
		{"link", "set", "va", "up"},
		{"link", "set", "vb", "up"},
	} {
		if out, err := ns.Command("ip", args...).CombinedOutput(); err != nil {
			t.Fatalf("ip %v: %v\n%s", args, err, out)
		}
	}
	// stdout only: what the tool printed for a request it could answer.
	stdout := func(name string, args ...string) []byte {
		out, err := ns.Command(name, args...).Output()
		if err != nil {
			t.Fatalf("%s %v: %v", name, args, err)
		}
		return out
	}
	write := func(file string, b []byte) {
		if err := os.WriteFile(filepath.Join("testdata/corpus", file), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("veth-ip-d-s-link-show.txt", stdout("ip", "-d", "-s", "link", "show", "va"))
	write("veth-ethtool-i.txt", stdout("ethtool", "-i", "va"))
	write("veth-ethtool-S.txt", stdout("ethtool", "-S", "va"))

	// ethtool -a on veth fails: the terminal shows the command and the
	// error on stderr; nothing goes to stdout.
	var o, e bytes.Buffer
	c := ns.Command("ethtool", "-a", "va")
	c.Stdout, c.Stderr = &o, &e
	var ee *exec.ExitError
	if err := c.Run(); !errors.As(err, &ee) || o.Len() != 0 {
		t.Fatalf("ethtool -a va on veth: err %v, stdout %q (want a failure with no output)", err, o.Bytes())
	}
	write("veth-ethtool-a-not-supported.txt", append([]byte("# ethtool -a va\n"), e.Bytes()...))
}

// TestVethPauseNotSupported: the real refusal of `ethtool -a` becomes the
// errno a capture records for the same link, not a pause value and not
// "not captured".
func TestVethPauseNotSupported(t *testing.T) {
	b, err := os.ReadFile("testdata/corpus/veth-ethtool-a-not-supported.txt")
	if err != nil {
		t.Fatal(err)
	}
	blocks, warns := Parse("a.txt", b)
	if len(warns) != 0 || len(blocks) != 1 || blocks[0].Errno != "EOPNOTSUPP" || blocks[0].Netdev != "va" || blocks[0].Pause != nil {
		t.Fatalf("blocks %+v, warnings %v", blocks, warns)
	}
	im, err := Build(blocks, "")
	if err != nil {
		t.Fatal(err)
	}
	ls := im.State.Links["va"]
	if ls.Errors[snapshot.OpPause] != "EOPNOTSUPP" || ls.Pause != nil {
		t.Errorf("errors %v, pause %v", ls.Errors, ls.Pause)
	}
	for _, op := range ls.NotCaptured {
		if op == snapshot.OpPause {
			t.Errorf("pause is both refused and not captured: %v", ls.NotCaptured)
		}
	}
	// Without the prompt line nothing says which request was refused.
	if blocks, warns := Parse("b.txt", []byte("netlink error: Operation not supported\n")); len(blocks) != 0 || len(warns) != 1 {
		t.Errorf("bare refusal: blocks %+v, warnings %v", blocks, warns)
	}
}
