package main

import (
	"errors"
	"fmt"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"

	"golang.org/x/sys/unix"
)

// op is one call as the replay makes it.
type op struct {
	kind    kind
	want    outcome
	base    int32 // index into plan.bases; -1 for kindList (rel is then an absolute path)
	keep    int32 // index of the base this open's descriptor becomes and stays, or -1: close it
	flags   uint64
	resolve uint64
	rel     string
	line    int32
	errno   string
	data    string // kindWrite: the bytes to write
}

// plan is the list arranged for the replay.
//
// rocectl holds a directory open (a nic.Dir) and opens names below it: the
// list shows the directory as the dirfd of later calls, and, usually, the
// openat2 that opened it, whose -y result is that same path. That open is
// replayed in its place and its descriptor kept (keep), so the replay
// makes the same number of opens as the list; a base no call of the list
// produced (the snapshot root, which rocectl opens with openat) is opened
// by its path before the replay.
//
// rocectl holds a directory only for one burst of reads (a port's
// discovery, its GID search, its observation) and closes it after: a
// process that holds more descriptors than its table has room for (64 at
// first) waits for an RCU grace period each time the kernel grows the
// table (expand_fdtable), 10 to 20 ms on the bench machine. The replay
// does the same: the calls below one held directory (and below the
// directories opened below it), in list order from the open that made it,
// are one unit, run on one goroutine, whose directories are closed when
// it ends. Every other call is a unit of its own.
type plan struct {
	bases []string
	pre   []int32 // bases opened by path first
	units [][]op
}

func newPlan(calls []call) *plan {
	p := &plan{}
	index := map[string]int32{}
	baseOf := func(path string) int32 {
		i, ok := index[path]
		if !ok {
			i = int32(len(p.bases))
			index[path] = i
			p.bases = append(p.bases, path)
		}
		return i
	}
	ops := make([]op, 0, len(calls))
	for _, c := range calls {
		o := op{kind: c.kind, want: c.outcome, base: -1, keep: -1, flags: c.flags, resolve: c.resolve, rel: c.rel, line: int32(c.line), errno: c.errno, data: c.data}
		if c.kind == kindList {
			o.rel = c.base
		} else {
			o.base = baseOf(c.base)
		}
		ops = append(ops, o)
	}
	// The first successful directory open whose result is a base makes it.
	maker := make([]int, len(p.bases))
	for i := range maker {
		maker[i] = -1
	}
	for i, c := range calls {
		if c.kind == kindList || c.kind == kindFile || c.kind == kindWrite || c.outcome != opened {
			continue
		}
		if b, ok := index[c.result]; ok && maker[b] < 0 && ops[i].base != b {
			maker[b] = i
		}
	}
	// top is the held directory a base's burst belongs to: the base itself
	// when its maker opened it below a base opened by path, else its
	// parent's; -1 for the bases opened by path. A maker that comes after
	// a call below its base, or a cycle (neither possible in a real
	// trace), falls back to opening the base by path.
	first := make([]int, len(p.bases)) // the first call below each base
	for i := range first {
		first[i] = len(ops)
	}
	for i, o := range ops {
		if o.base >= 0 && first[o.base] > i {
			first[o.base] = i
		}
	}
	top := make([]int32, len(p.bases))
	const unknown, visiting = -2, -3
	for i := range top {
		top[i] = unknown
	}
	var topOf func(b int32) int32
	topOf = func(b int32) int32 {
		switch top[b] {
		case unknown:
		case visiting:
			return visiting
		default:
			return top[b]
		}
		top[b] = visiting
		t := int32(-1)
		if m := maker[b]; m >= 0 && m < first[b] {
			switch pt := topOf(ops[m].base); pt {
			case visiting:
				maker[b] = -1
			case -1:
				t = b
			default:
				t = pt
			}
		} else {
			maker[b] = -1
		}
		top[b] = t
		return t
	}
	for b := range p.bases {
		if topOf(int32(b)) == -1 {
			p.pre = append(p.pre, int32(b))
		}
	}
	for b, m := range maker {
		if m >= 0 {
			ops[m].keep = int32(b)
		}
	}
	unitOf := map[int32]int{}
	for _, o := range ops {
		t := int32(-1)
		switch {
		case o.keep >= 0:
			t = top[o.keep]
		case o.base >= 0:
			t = top[o.base]
		}
		if t < 0 {
			p.units = append(p.units, []op{o})
			continue
		}
		u, ok := unitOf[t]
		if !ok {
			u = len(p.units)
			unitOf[t] = u
			p.units = append(p.units, nil)
		}
		p.units[u] = append(p.units[u], o)
	}
	return p
}

// counts are the system calls a replay made.
type counts struct {
	ops      [nKinds]int
	opens    int
	failed   int
	fstat    int
	read     int
	write    int
	getdents int
	close    int
}

func (c *counts) add(d *counts) {
	for k := range c.ops {
		c.ops[k] += d.ops[k]
	}
	c.opens += d.opens
	c.failed += d.failed
	c.fstat += d.fstat
	c.read += d.read
	c.write += d.write
	c.getdents += d.getdents
	c.close += d.close
}

func (c *counts) calls() int { return c.opens + c.fstat + c.read + c.write + c.getdents + c.close }

// writes says whether the plan writes to the tree (kindWrite).
func (p *plan) writes() bool {
	for _, u := range p.units {
		for _, o := range u {
			if o.kind == kindWrite {
				return true
			}
		}
	}
	return false
}

// callsUnder keeps the calls made in dir's tree: relative to dir or a
// directory below it (a listing: of such a directory). An apply also
// lists its state dir's journals; those are its journal's work, not the
// host's.
func callsUnder(calls []call, dir string) []call {
	dir = filepath.Clean(dir)
	in := func(p string) bool { return p == dir || strings.HasPrefix(p, dir+"/") }
	var out []call
	for _, c := range calls {
		if in(c.base) {
			out = append(out, c)
		}
	}
	return out
}

// leastCalls keeps, of a list's calls, only what any apply that journals
// a setting's value before it changes it and reads it back once after
// must make: for each attribute the list writes, a read of it, the write
// and a read of it again. The discovery, the reads of settings left as
// they are, a second read-back, the listings and the failed probes are
// left out, and so is everything that is no file call (the MTU, set by
// netlink).
func leastCalls(calls []call) []call {
	var out []call
	for _, c := range calls {
		if c.kind != kindWrite || c.outcome != opened {
			continue
		}
		read := call{line: c.line, kind: kindFile, base: c.base, rel: c.rel, flags: unix.O_RDONLY | unix.O_NONBLOCK | unix.O_CLOEXEC, resolve: c.resolve, outcome: opened}
		out = append(out, read, c, read)
	}
	return out
}

// replay makes the plan's calls: the bases by path, then the units,
// spread over GOMAXPROCS goroutines as rocectl spreads its ports over the
// CPUs. It returns an error when an open succeeds or fails other than the
// list says: the tree is not the one traced, and the calls would not be
// the same.
func (p *plan) replay() (counts, error) {
	var total counts
	fds := make([]int, len(p.bases))
	for _, b := range p.pre {
		fd, err := unix.Open(p.bases[b], unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
		if err != nil {
			return total, fmt.Errorf("open %s: %w", p.bases[b], err)
		}
		fds[b] = fd
		total.opens++
	}
	r := runner{fds: fds}
	r.run(p.units, &total)
	return total, errors.Join(r.errs...)
}

type runner struct {
	fds  []int // a unit's held directories are written and read by its goroutine only
	mu   sync.Mutex
	errs []error
}

// run makes units on GOMAXPROCS goroutines, each taking the next unit in
// turn, and waits for them. A unit's held directories are closed when it
// ends.
func (r *runner) run(units [][]op, total *counts) {
	var next atomic.Int64
	n := runtime.GOMAXPROCS(0)
	per := make([]counts, n)
	var wg sync.WaitGroup
	for w := range n {
		wg.Go(func() {
			c := &per[w]
			buf := make([]byte, 4096)
			dents := make([]byte, 8192)
			var held []int32
			for {
				i := int(next.Add(1)) - 1
				if i >= len(units) {
					return
				}
				held = held[:0]
				for _, o := range units[i] {
					if r.one(&o, c, buf, dents) {
						held = append(held, o.keep)
					}
				}
				for _, b := range held {
					unix.Close(r.fds[b])
					c.close++
				}
			}
		})
	}
	wg.Wait()
	for i := range per {
		total.add(&per[i])
	}
}

// one makes o; it says whether it kept the descriptor (o.keep).
func (r *runner) one(o *op, c *counts, buf, dents []byte) (kept bool) {
	var fd int
	var err error
	if o.kind == kindList {
		fd, err = unix.Open(o.rel, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	} else {
		fd, err = unix.Openat2(r.fds[o.base], o.rel, &unix.OpenHow{Flags: o.flags, Resolve: o.resolve})
	}
	c.ops[o.kind]++
	c.opens++
	if err != nil {
		c.failed++
		if o.want == opened {
			r.fail(fmt.Errorf("line %d: open %s: %v; the list has it opened", o.line, o.rel, err))
		}
		return false
	}
	if o.want == failed {
		r.fail(fmt.Errorf("line %d: open %s succeeded; the list has it fail with %s", o.line, o.rel, o.errno))
	}
	switch o.kind {
	case kindDir, kindList:
		for {
			n, err := unix.Getdents(fd, dents)
			c.getdents++
			if n <= 0 || err != nil {
				break
			}
		}
	case kindFile, kindWrite:
		var st unix.Stat_t
		err := unix.Fstat(fd, &st)
		c.fstat++
		// rocectl's check before it reads or writes: a regular file (a
		// FIFO would block, a device could be anything).
		switch {
		case err != nil || st.Mode&unix.S_IFMT != unix.S_IFREG:
		case o.kind == kindFile:
			unix.Read(fd, buf)
			c.read++
		case o.data != "":
			if _, err := unix.Write(fd, []byte(o.data)); err != nil {
				r.fail(fmt.Errorf("line %d: write %s: %v", o.line, o.rel, err))
			}
			c.write++
		}
	}
	if o.keep >= 0 {
		r.fds[o.keep] = fd
		return true
	}
	unix.Close(fd)
	c.close++
	return false
}

func (r *runner) fail(err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.errs) < maxErrors {
		r.errs = append(r.errs, err)
	}
}
