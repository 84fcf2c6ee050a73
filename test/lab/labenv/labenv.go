package labenv

import (
	"fmt"
	"net/netip"
	"os"
	"strconv"
	"testing"
)

// Env is the guest's topology.
type Env struct {
	// RXE are the rdma devices (LAB_RXE0/1): rxe0 and rxe1, one port each.
	RXE [2]string
	// If are their netdevs (LAB_IF0/1): a veth pair lab0/lab1, or eth0/eth1
	// with LAB_TOPO=virtio. Both live in the initial network namespace.
	If [2]string
	// IP are the IPv4 addresses on If (LAB_IP0/1).
	IP [2]netip.Addr
	// GIDIndex is the index of IP's RoCE v2 GID on port 1 of RXE
	// (LAB_GID_INDEX0/1).
	GIDIndex [2]int
	// Topo is "veth" or "virtio" (LAB_TOPO).
	Topo string
	// Rocectl is the path of the rocectl binary, "" when it was not built
	// (LAB_ROCECTL). It is static, without verbs: verify --peer/--listen
	// and --loopback answer "verbs support not built in".
	Rocectl string
	// MlnxTools is the folder of pinned mlnx_qos revisions, one
	// subfolder each (test/lab/mlnx-tools.sh), "" when setup could not
	// fetch them (LAB_MLNX_TOOLS).
	MlnxTools string
	// RocectlVerbs is the same rocectl built with verbs (cgo, -tags verbs,
	// as make build-verbs), "" when it was not built (LAB_ROCECTL_VERBS).
	RocectlVerbs string
}

// Parse reads the topology from getenv (os.Getenv in the guest).
func Parse(getenv func(string) string) (Env, error) {
	var e Env
	need := func(k string) (string, error) {
		v := getenv(k)
		if v == "" {
			return "", fmt.Errorf("labenv: %s is not set", k)
		}
		return v, nil
	}
	var err error
	for i := range 2 {
		n := strconv.Itoa(i)
		if e.RXE[i], err = need("LAB_RXE" + n); err != nil {
			return Env{}, err
		}
		if e.If[i], err = need("LAB_IF" + n); err != nil {
			return Env{}, err
		}
		v, err := need("LAB_IP" + n)
		if err != nil {
			return Env{}, err
		}
		if e.IP[i], err = netip.ParseAddr(v); err != nil {
			return Env{}, fmt.Errorf("labenv: LAB_IP%s: %w", n, err)
		}
		if v, err = need("LAB_GID_INDEX" + n); err != nil {
			return Env{}, err
		}
		if e.GIDIndex[i], err = strconv.Atoi(v); err != nil {
			return Env{}, fmt.Errorf("labenv: LAB_GID_INDEX%s: %w", n, err)
		}
	}
	e.Topo = getenv("LAB_TOPO")
	e.Rocectl = getenv("LAB_ROCECTL")
	e.MlnxTools = getenv("LAB_MLNX_TOOLS")
	e.RocectlVerbs = getenv("LAB_ROCECTL_VERBS")
	return e, nil
}

// Get returns the guest's topology; outside the lab guest (LAB_GUEST != 1)
// it skips the test, and a malformed environment fails it.
func Get(t testing.TB) Env {
	t.Helper()
	if os.Getenv("LAB_GUEST") != "1" {
		t.Skip("not in the lab guest (run via test/lab/run-go-tests.sh or make lab)")
	}
	e, err := Parse(os.Getenv)
	if err != nil {
		t.Fatal(err)
	}
	return e
}
