package apply

import (
	"errors"
	"fmt"

	"github.com/rocectl/rocectl/host"
	"github.com/rocectl/rocectl/policy"
	"github.com/rocectl/rocectl/statedir"
)

// Abandoned is what Abandon found and did.
type Abandoned struct {
	ID string
	// Journal is what the journal held; nil when it could not be read
	// (ReadErr says why: damaged, unknown version).
	Journal *Journal
	ReadErr error
	// AtBefore are the keys that hold their journalled before-values now
	// (restored, or never changed); NotRestored the others, each with
	// what the host holds or why it could not be read.
	AtBefore    []string
	NotRestored []string
	// MovedTo is where the journal now lies.
	MovedTo string
}

// Abandon gives up a journal rocectl cannot or should not act on (damaged,
// of an unknown version, or naming a device that is gone for good): it
// reads what it can of it, compares each journalled before-value with the
// host (writing nothing), and moves the file to journal/abandoned/, after
// which it no longer blocks applies, rollbacks or the agent. The caller
// holds the lock. Use `rocectl rollback ID` to restore; abandon only
// reports.
func Abandon(h *host.Host, store Store, id string) (*Abandoned, error) {
	src, err := store.Find(id)
	if err != nil {
		return nil, err
	}
	a := &Abandoned{ID: id}
	a.Journal, a.ReadErr = store.loadFile(src, id)
	if errors.Is(a.ReadErr, statedir.ErrUnsafe) {
		// Another user's file: nothing in it is worth reporting, and it
		// is not rocectl's to move.
		return nil, a.ReadErr
	}
	if j := a.Journal; j != nil {
		var parts []host.Step // a LAG step's slaves each on their own
		for _, st := range j.Steps {
			parts = append(parts, st.Parts()...)
		}
		for _, st := range parts {
			var err error
			if !sameRoot(j.Root, h.FS.Root()) {
				err = fmt.Errorf("journal is for root %s, not %s", j.Root, h.FS.Root())
			} else {
				err = h.CheckStep(st, true)
			}
			if err == nil {
				a.AtBefore = append(a.AtBefore, stepKeys(st)...)
				continue
			}
			var mm *policy.Mismatch
			if errors.As(err, &mm) {
				a.NotRestored = append(a.NotRestored, mm.String())
				continue
			}
			for _, k := range stepKeys(st) {
				a.NotRestored = append(a.NotRestored, fmt.Sprintf("%s: %v", k, err))
			}
		}
	}
	if a.MovedTo, err = store.SetAside(id, src); err != nil {
		return nil, err
	}
	return a, nil
}
