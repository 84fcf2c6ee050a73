package main

import (
	"fmt"
	"os/exec"
	"runtime"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"
)

// netNS is a throw-away, unnamed network namespace (the logic of
// internal/testkit/netnstest without a testing.TB). Nothing names it under
// /var/run/netns: it lives while h is open or a process runs inside, so it
// and its veths vanish with this program even when it is killed.
type netNS struct {
	h  netns.NsHandle
	nl *netlink.Handle // rtnetlink sockets bound to the namespace
}

func newNetNS() (*netNS, error) {
	var h netns.NsHandle
	if err := inThread(func() (err error) { h, err = netns.New(); return err }); err != nil {
		return nil, fmt.Errorf("create network namespace: %w", err)
	}
	nl, err := netlink.NewHandleAt(h)
	if err != nil {
		h.Close()
		return nil, fmt.Errorf("netlink handle in namespace: %w", err)
	}
	return &netNS{h: h, nl: nl}, nil
}

// Close deletes the links made here and drops the namespace.
func (ns *netNS) Close() {
	if links, err := ns.nl.LinkList(); err == nil {
		for _, l := range links {
			if l.Type() == "veth" {
				_ = ns.nl.LinkDel(l) // deleting one end deletes its peer
			}
		}
	}
	ns.nl.Close()
	ns.h.Close()
}

// addVethUp creates a <-> b inside the namespace and sets both up.
func (ns *netNS) addVethUp(a, b string) error {
	if err := ns.nl.LinkAdd(&netlink.Veth{LinkAttrs: netlink.LinkAttrs{Name: a}, PeerName: b}); err != nil {
		return fmt.Errorf("add veth %s/%s: %w", a, b, err)
	}
	for _, n := range []string{a, b} {
		l, err := ns.nl.LinkByName(n)
		if err == nil {
			err = ns.nl.LinkSetUp(l)
		}
		if err != nil {
			return fmt.Errorf("set %s up: %w", n, err)
		}
	}
	return nil
}

func (ns *netNS) setMTU(name string, mtu int) error {
	l, err := ns.nl.LinkByName(name)
	if err != nil {
		return err
	}
	return ns.nl.LinkSetMTU(l, mtu)
}

func (ns *netNS) mtu(name string) (int, error) {
	l, err := ns.nl.LinkByName(name)
	if err != nil {
		return 0, err
	}
	return l.Attrs().MTU, nil
}

// start starts c inside the namespace: the child inherits the namespace of
// the thread that forks it, so the fork happens on a locked thread that has
// entered the namespace.
func (ns *netNS) start(c *exec.Cmd) error {
	return inThread(func() error {
		if err := netns.Set(ns.h); err != nil {
			return fmt.Errorf("enter namespace: %w", err)
		}
		return c.Start()
	})
}

// inThread runs fn locked to its OS thread and moves the thread back to the
// namespace it started in. Should that fail, the thread would run other
// goroutines inside the bench namespace: give up instead.
func inThread(fn func() error) error {
	runtime.LockOSThread()
	orig, err := netns.Get()
	if err != nil {
		runtime.UnlockOSThread()
		return err
	}
	defer orig.Close()
	ferr := fn()
	if err := netns.Set(orig); err != nil {
		panic(fmt.Sprintf("applybench: cannot return to the original network namespace: %v", err))
	}
	runtime.UnlockOSThread()
	return ferr
}
