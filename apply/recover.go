package apply

import (
	"errors"
	"fmt"
	"time"

	"github.com/rocectl/rocectl/host"
)

// recoveryOptions are those of every rollback that settles an earlier
// apply: nmstate's 5 × 1 s read-back.
func recoveryOptions(store Store) Options {
	return Options{Store: store, Retries: 5, Interval: time.Second}
}

// Recovery is one earlier apply that Recover put back.
type Recovery struct {
	Journal *Journal
	State   string // the journal's state when found
	// Expired: a confirm window whose deadline passed; otherwise an apply
	// that died half-way.
	Expired bool
	// Err is why the rollback failed; Recover stops there.
	Err error
}

// ErrConfirmPending is a confirm window still open: a new change waits
// for `rocectl commit` or rollback.
var ErrConfirmPending = errors.New("a confirm window is open")

// Recover finishes what an earlier rocectl left open: an apply that died
// half-way is rolled back; a confirm window whose deadline passed is
// reverted; an open confirm window is an error wrapping ErrConfirmPending
// unless allowPending. It returns what it restored, in order; on a failed
// rollback the last entry carries the error, and Recover returns it too.
// The caller holds the lock.
func Recover(h *host.Host, store Store, allowPending bool, now time.Time) ([]Recovery, error) {
	open, err := store.Open()
	if err != nil {
		return nil, err
	}
	var out []Recovery
	for _, j := range open {
		pending := j.State == StateConfirmPending
		if pending && j.Deadline != nil && now.Before(*j.Deadline) {
			if allowPending {
				continue
			}
			return out, fmt.Errorf("%w: apply %s of profile %q waits for `rocectl commit %s` (or rollback) until %s",
				ErrConfirmPending, j.ID, j.Profile, j.ID, j.Deadline.Format(time.RFC3339))
		}
		r := Recovery{Journal: j, State: j.State, Expired: pending}
		if err := Rollback(h, j, recoveryOptions(store)); err != nil {
			r.Err = fmt.Errorf("restoring apply %s: %w (journal kept: `rocectl rollback %s` retries)", j.ID, err, j.ID)
			return append(out, r), r.Err
		}
		out = append(out, r)
	}
	return out, nil
}

// ErrInConfirmWindow is a revert asked for before the apply's deadline.
var ErrInConfirmWindow = errors.New("still within its confirm window")

// RevertExpired is the confirm deadline's action: it reverts the apply id
// if, and only if, it is still uncommitted at its deadline. It returns the
// journal and whether it reverted it (false: the apply was settled
// already). Before the deadline it returns an error wrapping
// ErrInConfirmWindow. The caller holds the lock.
func RevertExpired(h *host.Host, store Store, id string, now time.Time) (*Journal, bool, error) {
	j, err := store.Load(id)
	if err != nil {
		return nil, false, err
	}
	if j.State != StateConfirmPending {
		return j, false, nil
	}
	if j.Deadline != nil && now.Before(*j.Deadline) {
		return j, false, fmt.Errorf("apply %s is %w (until %s)", j.ID, ErrInConfirmWindow, j.Deadline.Format(time.RFC3339))
	}
	if err := Rollback(h, j, recoveryOptions(store)); err != nil {
		return j, false, fmt.Errorf("reverting unconfirmed apply %s: %w", j.ID, err)
	}
	return j, true, nil
}

// Expired lists the confirm-pending applies whose deadline has passed.
func Expired(store Store, now time.Time) ([]*Journal, error) {
	open, err := store.Open()
	if err != nil {
		return nil, err
	}
	var out []*Journal
	for _, j := range open {
		if j.State == StateConfirmPending && j.Deadline != nil && now.After(*j.Deadline) {
			out = append(out, j)
		}
	}
	return out, nil
}

// ExpiredNotice words an expired, uncommitted confirm window for audit and
// the agent: the host holds that apply's changes until the revert runs.
func ExpiredNotice(j *Journal) string {
	return fmt.Sprintf("apply %s's confirm window expired at %s without `rocectl commit`: it will be reverted by the next apply, rollback or agent check (the host holds its changes until then)",
		j.ID, j.Deadline.UTC().Format(time.RFC3339))
}
