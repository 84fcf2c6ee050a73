package snapshot

import (
	"bytes"
	"testing"

	"github.com/rocectl/rocectl/nic"
)

// A pack that parses is written back byte for byte, and no read of any of
// its entries, through any path form, panics. `go test -fuzz
// FuzzParsePack ./nic/snapshot/` explores; plain `go test` runs the seeds.
func FuzzParsePack(f *testing.F) {
	f.Add([]byte(packMagic + "d 4 0\n/sys\nf 8 3\n/sys/mtu900\n"))
	f.Add([]byte(packMagic + "d 4 0\n/sys\nl 8 3\n/sys/lnk../\nd 6 0\n/sys/x\nf 8 1\n/sys/x/yZ\n"))
	f.Add([]byte(packMagic + "d 2 0\n/a\nl 4 5\n/a/b/a/b/\nl 4 2\n/a/c..\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		in := bytes.Clone(b)
		tr, err := parsePack("p", b)
		if err != nil {
			return
		}
		if out := encodePack(tr); !bytes.Equal(out, in) {
			t.Fatalf("round trip differs:\nin:  %q\nout: %q", in, out)
		}
		fs := nic.NewMemFS("/nonexistent-root", tr)
		tr.Walk(func(p string, typ uint8, data string) error {
			for _, q := range []string{p, p + "/", p + "/..", p + "/x", "/.." + p} {
				fs.ReadString(q)
				fs.ReadDir(q)
				fs.Exists(q)
				fs.Readlink(q)
				fs.Resolve(q)
				d := fs.Dir(q)
				d.ReadString("x/../y")
				d.ReadDir(".")
				d.Exists("..")
				d.Resolve("a/b")
				if in, err := fs.OpenFileIn(q); err == nil {
					in.Read()
					in.Stat()
				}
			}
			return nil
		})
	})
}
