package main

import (
	"errors"
	"fmt"
	"runtime"
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
}

// plan is the list arranged for the replay.
//
// rocectl holds a directory open (a nic.Dir) and opens names below it: the
// list shows the directory as the dirfd of later calls, and, usually, the
// openat2 that opened it, whose -y result is that same path. That open is
// replayed first and its descriptor kept (keep), so the replay makes the
// same number of opens as the list; a base no call of the list produced
// (the snapshot root, which rocectl opens with openat) is opened by its
// path before the replay. Bases opened below other bases come in waves,
// each after the one its dirfd belongs to.
type plan struct {
	bases []string
	pre   []int32 // bases opened by path first
	waves [][]op  // the opens that make bases, wave k relative to bases of waves < k
	rest  []op
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
		o := op{kind: c.kind, want: c.outcome, base: -1, keep: -1, flags: c.flags, resolve: c.resolve, rel: c.rel, line: int32(c.line), errno: c.errno}
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
		if c.kind == kindList || c.kind == kindFile || c.outcome != opened {
			continue
		}
		if b, ok := index[c.result]; ok && maker[b] < 0 && ops[i].base != b {
			maker[b] = i
		}
	}
	// depth of a base: 0 when opened by path, else one more than the
	// base its maker's open is relative to. A cycle (not possible from a
	// real trace) falls back to opening by path.
	depth := make([]int, len(p.bases))
	const visiting = -2
	for i := range depth {
		depth[i] = -1
	}
	var depthOf func(b int32) int
	depthOf = func(b int32) int {
		switch depth[b] {
		case -1:
		case visiting:
			return -1
		default:
			return depth[b]
		}
		depth[b] = visiting
		d := 0
		if m := maker[b]; m >= 0 {
			if pd := depthOf(ops[m].base); pd >= 0 {
				d = pd + 1
			} else {
				maker[b] = -1
			}
		}
		depth[b] = d
		return d
	}
	for b := range p.bases {
		if depthOf(int32(b)) == 0 {
			p.pre = append(p.pre, int32(b))
		}
	}
	for b, m := range maker {
		if m < 0 {
			continue
		}
		ops[m].keep = int32(b)
		for len(p.waves) < depth[b] {
			p.waves = append(p.waves, nil)
		}
		p.waves[depth[b]-1] = append(p.waves[depth[b]-1], ops[m])
	}
	for _, o := range ops {
		if o.keep < 0 {
			p.rest = append(p.rest, o)
		}
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
	c.getdents += d.getdents
	c.close += d.close
}

func (c *counts) calls() int { return c.opens + c.fstat + c.read + c.getdents + c.close }

// replay makes the plan's calls: the bases by path, then the waves, then
// the rest, each wave and the rest spread over GOMAXPROCS goroutines as
// rocectl spreads its ports over the CPUs. It returns an error when an
// open succeeds or fails other than the list says: the tree is not the
// one traced, and the calls would not be the same.
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
	for _, w := range p.waves {
		r.run(w, &total)
	}
	r.run(p.rest, &total)
	return total, errors.Join(r.errs...)
}

type runner struct {
	fds  []int
	mu   sync.Mutex
	errs []error
}

// run makes ops on GOMAXPROCS goroutines, each taking the next few ops in
// turn, and waits for them.
func (r *runner) run(ops []op, total *counts) {
	const chunk = 8
	var next atomic.Int64
	n := runtime.GOMAXPROCS(0)
	per := make([]counts, n)
	var wg sync.WaitGroup
	for w := range n {
		wg.Go(func() {
			c := &per[w]
			buf := make([]byte, 4096)
			dents := make([]byte, 8192)
			for {
				i := int(next.Add(chunk)) - chunk
				if i >= len(ops) {
					return
				}
				for _, o := range ops[i:min(i+chunk, len(ops))] {
					r.one(&o, c, buf, dents)
				}
			}
		})
	}
	wg.Wait()
	for i := range per {
		total.add(&per[i])
	}
}

func (r *runner) one(o *op, c *counts, buf, dents []byte) {
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
		return
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
	case kindFile:
		var st unix.Stat_t
		err := unix.Fstat(fd, &st)
		c.fstat++
		// rocectl's check before it reads: a regular file (a FIFO would
		// block, a device could be anything).
		if err == nil && st.Mode&unix.S_IFMT == unix.S_IFREG {
			unix.Read(fd, buf)
			c.read++
		}
	}
	if o.keep >= 0 {
		r.fds[o.keep] = fd
		return
	}
	unix.Close(fd)
	c.close++
}

func (r *runner) fail(err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.errs) < maxErrors {
		r.errs = append(r.errs, err)
	}
}
