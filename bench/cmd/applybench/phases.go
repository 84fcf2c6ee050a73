package main

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/rocectl/rocectl/apply"
	"github.com/rocectl/rocectl/internal/testkit/median"
)

// floorPhases are the apply's phases that its floor holds too: the two
// durable journal saves (journalSaver times the same Store.Save).
var floorPhases = []string{apply.PhaseBegin, apply.PhaseCommit}

// phases runs the apply in this process runs times with the phase hook
// (cli.Env.Phase, apply.RunOptions.Phase) and prints the median of each
// phase: where the time beyond the floor goes. In-process runs pay no
// fork/exec or runtime start; the binary's start-up is the floor's other
// part. Runs that name other phases (a changed apply) are an error, not
// a silently shorter table.
func (b *bench) phases(runs int, prof string) error {
	var order []string
	per := map[string][]time.Duration{}
	var lastAt []time.Duration
	ds, err := b.inProcess(context.Background(), runs, prof, func(i int, name string, at time.Duration) {
		for len(lastAt) <= i {
			lastAt = append(lastAt, 0)
		}
		if i == 0 {
			order = append(order, name)
		}
		per[name] = append(per[name], at-lastAt[i])
		lastAt[i] = at
	})
	if err != nil {
		return err
	}
	const rest = "result, locks released"
	for i, d := range ds {
		per[rest] = append(per[rest], d-lastAt[i])
	}
	order = append(order, rest)
	for _, name := range order {
		if len(per[name]) != len(ds) {
			return fmt.Errorf("phase %q ended in %d of %d in-process applies", name, len(per[name]), len(ds))
		}
	}
	fmt.Printf("\nwhere an apply's time goes: %d in-process applies (no fork/exec/runtime start), median of each phase\n", len(ds))
	var floor, other time.Duration
	for _, name := range order {
		m := median.Mean(per[name])
		note := ""
		if slices.Contains(floorPhases, name) {
			floor += m
			note = "   (floor)"
		} else {
			other += m
		}
		fmt.Printf("  %-40s %8s%s\n", name, ms(m), note)
	}
	fmt.Printf("  %-40s %8s   (the sum of the medians: %s floor, %s the rest)\n", "whole apply, median", ms(median.Mean(ds)), ms(floor), ms(other))
	b.summary(fmt.Sprintf("apply in-process: journal saves / everything else (medians of phases)|%s / %s|-|-", ms(floor), ms(other)))
	return nil
}
