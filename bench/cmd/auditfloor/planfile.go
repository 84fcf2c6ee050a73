package main

import (
	"encoding/binary"
	"errors"
	"fmt"
)

// The plan file: the parsed list in a compact binary form, so that the
// timed process does not parse strace's text. A 64-port audit's list is
// ≈ 1.1 MB and takes ≈ 7 ms to parse here, a third of the audit's target;
// its plan is ≈ 150 KB of varints and names, decoded in well under a
// millisecond. The file is written by -write-plan and read back by the
// same binary only; it is no exchange format.
//
//	magic
//	bases:  count, then each name
//	pre:    count, then each base index
//	units:  count, then each as ops
//	ops:    count, then each op: kind, want, base+1, keep+1, flags,
//	        resolve, line (uvarints), rel, errno, data (names)
//	name:   uvarint length, bytes
const planMagic = "auditfloor plan 3\n"

func (p *plan) marshal() []byte {
	b := []byte(planMagic)
	name := func(s string) {
		b = binary.AppendUvarint(b, uint64(len(s)))
		b = append(b, s...)
	}
	ops := func(list []op) {
		b = binary.AppendUvarint(b, uint64(len(list)))
		for _, o := range list {
			for _, v := range []uint64{uint64(o.kind), uint64(o.want), uint64(o.base + 1), uint64(o.keep + 1), o.flags, o.resolve, uint64(o.line)} {
				b = binary.AppendUvarint(b, v)
			}
			name(o.rel)
			name(o.errno)
			name(o.data)
		}
	}
	b = binary.AppendUvarint(b, uint64(len(p.bases)))
	for _, s := range p.bases {
		name(s)
	}
	b = binary.AppendUvarint(b, uint64(len(p.pre)))
	for _, i := range p.pre {
		b = binary.AppendUvarint(b, uint64(i))
	}
	b = binary.AppendUvarint(b, uint64(len(p.units)))
	for _, u := range p.units {
		ops(u)
	}
	return b
}

var errPlan = errors.New("not a plan written by this auditfloor (-write-plan)")

// unmarshalPlan decodes data; the names share one copy of it.
func unmarshalPlan(data []byte) (*plan, error) {
	s := string(data)
	if len(s) < len(planMagic) || s[:len(planMagic)] != planMagic {
		return nil, errPlan
	}
	d := decoder{b: data, s: s, i: len(planMagic)}
	p := &plan{}
	p.bases = make([]string, d.count())
	for i := range p.bases {
		p.bases[i] = d.name()
	}
	p.pre = make([]int32, d.count())
	for i := range p.pre {
		p.pre[i] = d.index(len(p.bases))
	}
	p.units = make([][]op, d.count())
	for i := range p.units {
		p.units[i] = d.ops(len(p.bases))
	}
	if d.bad || d.i != len(s) {
		return nil, fmt.Errorf("%w: corrupt at byte %d", errPlan, d.i)
	}
	return p, nil
}

type decoder struct {
	b   []byte // the plan, for its varints
	s   string // the same bytes, once, for its names
	i   int
	bad bool
}

func (d *decoder) uvarint() uint64 {
	v, n := binary.Uvarint(d.b[d.i:])
	if n <= 0 {
		d.bad = true
		return 0
	}
	d.i += n
	return v
}

// count reads a length no larger than the bytes left could hold.
func (d *decoder) count() int {
	n := d.uvarint()
	if n > uint64(len(d.s)-d.i) {
		d.bad = true
		return 0
	}
	return int(n)
}

func (d *decoder) name() string {
	n := d.count()
	s := d.s[d.i : d.i+n]
	d.i += n
	return s
}

// index reads the index of one of bases.
func (d *decoder) index(bases int) int32 {
	v := d.uvarint()
	if v >= uint64(bases) {
		d.bad = true
		return 0
	}
	return int32(v)
}

func (d *decoder) ops(bases int) []op {
	list := make([]op, d.count())
	for i := range list {
		o := &list[i]
		k, want := d.uvarint(), d.uvarint()
		base, keep := d.uvarint(), d.uvarint()
		o.flags, o.resolve, o.line = d.uvarint(), d.uvarint(), int32(d.uvarint())
		o.rel, o.errno, o.data = d.name(), d.name(), d.name()
		if k >= uint64(nKinds) || want > uint64(unknown) || base > uint64(bases) || keep > uint64(bases) || (base == 0) != (k == uint64(kindList)) {
			d.bad = true
		}
		if d.bad {
			return nil
		}
		o.kind, o.want, o.base, o.keep = kind(k), outcome(want), int32(base)-1, int32(keep)-1
	}
	return list
}
