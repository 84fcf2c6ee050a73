// Command mkhosts regenerates rocectl's fixture hosts (testdata/hosts) from
// the real captures in testdata/captures:
//
//	go run ./internal/tools/mkhosts -o testdata/hosts
//
// Each host is a snapshot directory (docs/snapshot-format.md) with a
// README.md naming the source of every value. The hosts are defined in
// internal/testkit/hosts (Specs); the golden test there checks that
// the committed hosts match what this command writes.
package main

import (
	"flag"
	"fmt"
	"os"

	"github.com/rocectl/rocectl/internal/testkit/hosts"
)

func main() {
	out := flag.String("o", "testdata/hosts", "output directory; each host replaces <dir>/<name>")
	caps := flag.String("captures", "testdata/captures", "directory of the capture files")
	ports := flag.Int("ports", 0, "instead of the fixture hosts, write the cx6dx factory host with this many ports into -o (which must be empty)")
	flag.Parse()

	var err error
	if *ports > 0 {
		err = hosts.WriteCX6DxFactoryN(*caps, *out, *ports)
	} else {
		err = hosts.WriteAll(*caps, *out)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "mkhosts:", err)
		os.Exit(1)
	}
}
