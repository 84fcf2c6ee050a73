package main

import (
	"flag"
	"fmt"
	"io"
	"os"
)

func main() {
	list := flag.String("list", "", "the strace output to replay (strace -f -y -e trace=openat2,getdents64 -o LIST)")
	planFile := flag.String("plan", "", "replay the plan -write-plan wrote instead of a list")
	writePlan := flag.String("write-plan", "", "with -list: also write the parsed list to this file, for -plan")
	verbose := flag.Bool("v", false, "print the calls made, by kind")
	none := flag.Bool("none", false, "with -plan: read the plan but replay nothing (the floor less its calls)")
	writes := flag.Bool("writes", false, "replay the list's writes too (strace … -e trace=openat2,getdents64,write -s 4096): they change the tree, so only on a copy of it")
	least := flag.Bool("least", false, "with -list -writes: keep only a read, the write and a read back of each attribute written")
	under := flag.String("under", "", "with -list: keep only the calls in this directory's tree (an apply's host root: not its state dir)")
	flag.Parse()
	if (*list == "") == (*planFile == "") || (*writePlan != "" && *list == "") || (*none && (*planFile == "" || *verbose)) || (*least && (*list == "" || !*writes)) || (*under != "" && *list == "") || flag.NArg() > 0 {
		fmt.Fprintln(os.Stderr, "usage: auditfloor -list LIST [-writes [-least]] [-under DIR] [-v] [-write-plan PLAN] | -plan PLAN [-writes] [-v] | -plan PLAN -none")
		os.Exit(2)
	}
	var err error
	if *list != "" {
		err = runList(*list, *writePlan, *verbose, *writes, *least, *under)
	} else {
		err = runPlan(*planFile, *verbose, *none, *writes)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "auditfloor:", err)
		os.Exit(1)
	}
}

func runList(list, writePlan string, verbose, writes, least bool, under string) error {
	f, err := os.Open(list)
	if err != nil {
		return err
	}
	calls, st, err := parseList(list, f, writes)
	f.Close()
	if err != nil {
		return err
	}
	if len(calls) == 0 {
		return fmt.Errorf("%s: no openat2 or getdents64 calls in %d lines: was it written with strace -f -y -e trace=openat2,getdents64?", list, st.lines)
	}
	if under != "" {
		calls = callsUnder(calls, under)
	}
	if least {
		if calls = leastCalls(calls); len(calls) == 0 {
			return fmt.Errorf("%s: no file is written through an openat2 of the list", list)
		}
	}
	p := newPlan(calls)
	if writePlan != "" {
		if err := os.WriteFile(writePlan, p.marshal(), 0o644); err != nil {
			return err
		}
	}
	c, err := p.replay()
	if verbose {
		fmt.Printf("%s: %d lines, %d calls strace split and were joined, %d getdents64, %d other lines ignored\n", list, st.lines, st.joined, st.getdents, st.ignored)
		report(os.Stdout, p, &c)
	}
	return err
}

func runPlan(file string, verbose, none, writes bool) error {
	data, err := os.ReadFile(file)
	if err != nil {
		return err
	}
	p, err := unmarshalPlan(data)
	if err != nil {
		return fmt.Errorf("%s: %w", file, err)
	}
	if p.writes() && !writes && !none {
		return fmt.Errorf("%s: the plan writes to the tree; -writes replays it, on a copy of the tree only", file)
	}
	if none {
		return nil
	}
	c, err := p.replay()
	if verbose {
		report(os.Stdout, p, &c)
	}
	return err
}

// report prints what a replay made. applybench reads the last line.
func report(w io.Writer, p *plan, c *counts) {
	kept, bursts := 0, 0
	for _, u := range p.units {
		n := 0
		for _, o := range u {
			if o.keep >= 0 {
				n++
			}
		}
		kept += n
		if n > 0 {
			bursts++
		}
	}
	fmt.Fprintf(w, "directories held: %d opened by path first, %d kept from the list's own opens, in %d bursts (closed as each ends)\n", len(p.pre), kept, bursts)
	fmt.Fprintf(w, "opens by kind:")
	for k := range nKinds {
		fmt.Fprintf(w, " %s %d,", k, c.ops[k])
	}
	fmt.Fprintf(w, " failed as the list says %d\n", c.failed)
	fmt.Fprintf(w, "system calls: open %d, fstat %d, read %d, write %d, getdents64 %d, close %d\n", c.opens, c.fstat, c.read, c.write, c.getdents, c.close)
	fmt.Fprintf(w, "file calls: %d\n", c.calls())
}
