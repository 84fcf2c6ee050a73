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
