package peer

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync"
	"time"

	"github.com/rocectl/rocectl/driver"
	"github.com/rocectl/rocectl/driver/known"
	"github.com/rocectl/rocectl/lldp"
	"github.com/rocectl/rocectl/nic"
)

// Listen listens on every port without a verdict yet (the driver
// gave none) at once, until each has heard a valid frame or the deadline
// passes, and fills in the verdicts. driverWhy[i] is why port i's driver
// gave none, if it has peer ops.
func Listen(ctx context.Context, k nic.Kernel, ports []Result, driverWhy []string, e lldp.Expect, deadline time.Time, wait time.Duration) {
	var wg sync.WaitGroup
	for i := range ports {
		r := &ports[i]
		if r.Verdict != "" {
			continue
		}
		why := driverWhy[i]
		l, err := lldp.Listen(r.Netdev)
		if err != nil {
			r.Verdict, r.Reason = Error, err.Error()
			if why != "" {
				r.Reason += "; " + why
			}
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer l.Close()
			stop := context.AfterFunc(ctx, func() { l.Close() })
			defer stop()
			rec, bad, err := awaitFrame(l, deadline)
			if err != nil {
				r.Verdict, r.Reason = Unknown, silentReason(k, r, why, bad, wait)
				if !errors.Is(err, os.ErrDeadlineExceeded) {
					r.Reason = err.Error()
					if ctx.Err() != nil {
						r.Reason = "interrupted: " + ctx.Err().Error()
					}
				}
				return
			}
			Judge(r, rec, e)
		}()
	}
	wg.Wait()
}

// frameReader is what awaitFrame reads: an *lldp.Listener.
type frameReader interface {
	Read(deadline time.Time) (lldp.Received, error)
}

// awaitFrame reads until the first well-formed frame, or Read's error
// (os.ErrDeadlineExceeded when deadline passed); the malformed frames
// before it are summed up in bad, whose size does not grow with their
// number.
func awaitFrame(l frameReader, deadline time.Time) (rec lldp.Received, bad lldp.Malformed, err error) {
	for {
		rec, err = l.Read(deadline)
		switch {
		case err != nil:
			return lldp.Received{}, bad, err
		case rec.Err != nil:
			bad.Add(rec.Err)
		default:
			return rec, bad, nil
		}
	}
}

// silentReason words the likely reason a port heard no usable frame;
// driverWhy is why its driver reported no peer either, if it has peer ops.
func silentReason(k nic.Kernel, r *Result, driverWhy string, bad lldp.Malformed, wait time.Duration) string {
	switch {
	case bad.Count > 0:
		return fmt.Sprintf("heard %d malformed LLDP frame(s) and no valid one; last: %v%s", bad.Count, bad.Last, bad.ByKind())
	case driverWhy != "" && r.FirmwareLLDP != "":
		return fmt.Sprintf("no LLDP frame in %s and %s; %s", wait, driverWhy, r.FirmwareLLDP)
	case driverWhy != "":
		return fmt.Sprintf("no LLDP frame in %s and %s", wait, driverWhy)
	case r.FirmwareLLDP != "":
		return r.FirmwareLLDP
	}
	if li, err := k.Link(r.Netdev); err == nil && li.OperState != "up" && li.OperState != "unknown" {
		return fmt.Sprintf("no LLDP frame in %s: the link is %s", wait, li.OperState)
	}
	return fmt.Sprintf("no LLDP frame in %s: LLDP is off on the switch port, its transmit interval is longer than --wait, or something on the way consumes it", wait)
}

// FirmwareLLDP says when the NIC's firmware runs its own LLDP agent and
// takes the switch's frames before the host sees them, as the port's
// driver tells (driver.Driver.FirmwareLLDP); "" when not, or when it
// cannot be told.
func FirmwareLLDP(k nic.Kernel, netdev, module string) string {
	return known.For(module).FirmwareLLDP(driver.LLDPFacts{
		Netdev: netdev,
		DCBX: func() *uint8 {
			if st, err := k.DCB(netdev); err == nil {
				return st.DCBX
			}
			return nil
		},
		PrivFlags: func() map[string]bool {
			if flags, err := k.PrivFlags(netdev); err == nil {
				return flags
			}
			return nil
		},
	})
}
