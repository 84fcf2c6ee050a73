package report

import (
	"context"
	"runtime"
	"sync"
)

// Stream is Load and Build in one pass, for a fleet of any size: the files
// are read and decoded by a bounded pool of workers (one per CPU), each
// document folded into what it says about its host as soon as it is
// decoded, and dropped (see folder). Memory grows with the number of
// hosts and drift lines, not with the documents' bytes; the result is
// the one Build(Load(paths)) gives, whatever order the workers finish in.
// A path that does not exist is an error, as for Load; when ctx is done
// (SIGINT) Stream stops and returns its cause.
func Stream(ctx context.Context, paths []string, opt Options) (*Fleet, error) {
	return stream(ctx, paths, opt, runtime.GOMAXPROCS(0))
}

type job struct {
	path  string
	named bool
	file  int
}

// result is a file's folded documents, or its problem.
type result struct {
	file    int
	source  string
	docs    []*hostDoc
	hosts   []string
	sweep   []*Doc
	problem *Problem
}

func stream(ctx context.Context, paths []string, opt Options, workers int) (*Fleet, error) {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	jobs := make(chan job, 4*workers)
	results := make(chan result, 4*workers)
	var walkErr error
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		defer close(jobs)
		n := 0
		walkErr = walk(ctx, paths, func(p string, named bool) error {
			select {
			case jobs <- job{path: p, named: named, file: n}:
				n++
				return nil
			case <-ctx.Done():
				return context.Cause(ctx)
			}
		})
		if walkErr != nil {
			cancel(walkErr) // the workers stop reading
		}
	}()
	var workersWG sync.WaitGroup
	for range max(workers, 1) {
		workersWG.Add(1)
		go func() {
			defer workersWG.Done()
			for j := range jobs {
				if ctx.Err() != nil {
					continue // drain: the walker stops at the cancel
				}
				results <- work(ctx, j)
			}
		}()
	}
	go func() {
		workersWG.Wait()
		close(results)
	}()
	f := newFolder(opt)
	for r := range results {
		if r.problem != nil {
			f.problem(seq{file: r.file}, *r.problem)
			continue
		}
		for i, h := range r.docs {
			f.add(r.hosts[i], r.source, h)
		}
		f.sweep = append(f.sweep, r.sweep...)
	}
	wg.Wait()
	if walkErr != nil {
		return nil, walkErr
	}
	if ctx.Err() != nil {
		return nil, context.Cause(ctx)
	}
	return f.finish(), nil
}

// work reads, decodes and folds one file.
func work(ctx context.Context, j job) result {
	r := result{file: j.file, source: j.path}
	docs, prob := readDocs(ctx, j.path, j.named)
	if prob != nil {
		r.problem = prob
		return r
	}
	for i := range docs {
		d := &docs[i]
		if d.Kind == KindSweep {
			r.sweep = append(r.sweep, d)
			continue
		}
		r.docs = append(r.docs, foldDoc(d, seq{file: j.file, doc: i}))
		r.hosts = append(r.hosts, d.Host)
	}
	return r
}
