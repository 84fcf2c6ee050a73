package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"runtime"
	"runtime/pprof"
	"runtime/trace"
	"time"

	"github.com/vishvananda/netns"

	"github.com/rocectl/rocectl/cli"
)

// profile runs the same apply as the binary, in this process (agent's
// command tree on a thread inside the namespace, the live kernel opened
// there too), runs times, with a CPU profile of the applies only (pprof
// label phase=apply; resets are left out with -tagfocus). Its median
// against the binary's shows what process start-up costs.
func (b *bench) profile(file string, runs int, prof string) ([]time.Duration, error) {
	f, err := os.Create(file)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if err := pprof.StartCPUProfile(f); err != nil {
		return nil, err
	}
	defer pprof.StopCPUProfile()
	if b.c.memprofile != "" {
		// A run allocates a few MB: sample every 4 KB, not every 512 KB.
		runtime.MemProfileRate = 4096
		defer writeHeapProfile(b.c.memprofile)
	}
	if b.c.trace != "" {
		tf, err := os.Create(b.c.trace)
		if err != nil {
			return nil, err
		}
		defer tf.Close()
		if err := trace.Start(tf); err != nil {
			return nil, err
		}
		defer trace.Stop()
	}
	var ds []time.Duration
	pprof.Do(context.Background(), pprof.Labels("phase", "apply"), func(ctx context.Context) {
		ds, err = b.inProcess(ctx, runs, prof, nil)
	})
	return ds, err
}

// inProcess runs the apply in this process runs times (the agent's command
// tree on a thread inside the namespace, the live kernel opened there
// too), each on a fresh host, and returns each run's time. phase, when
// set, gets each phase's end (cli.Env.Phase): run i, the phase's name
// and the time since the run began.
func (b *bench) inProcess(ctx context.Context, runs int, prof string, phase func(i int, name string, at time.Duration)) ([]time.Duration, error) {
	var ds []time.Duration
	for i := range runs {
		if err := b.reset(); err != nil {
			return nil, err
		}
		var out bytes.Buffer
		var code int
		var d time.Duration
		err := inThread(func() error {
			if err := netns.Set(b.ns.h); err != nil {
				return err
			}
			// NewEnv's live kernel opens its sockets on this thread, and
			// dcbnl's per call: all inside the namespace.
			t0 := time.Now()
			env := cli.NewEnv(&out, &out)
			if phase != nil {
				env.Phase = func(name string) { phase(i, name, time.Since(t0)) }
			}
			cmd := cli.NewRootCommand(env)
			cmd.SetArgs([]string{"--root", b.root(), "--state-dir", b.state(), "apply", "-p", prof})
			code = cli.ExitCode(cmd.ExecuteContext(ctx))
			d = time.Since(t0)
			return nil
		})
		if err != nil {
			return nil, err
		}
		if code != 0 {
			return nil, fmt.Errorf("in-process apply: exit %d\n%s", code, out.String())
		}
		ds = append(ds, d)
	}
	return ds, nil
}

func writeHeapProfile(file string) {
	f, err := os.Create(file)
	if err == nil {
		err = pprof.Lookup("allocs").WriteTo(f, 0)
		f.Close()
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "applybench: memprofile:", err)
	}
}
