package host

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/rocectl/rocectl/driver/mlx5"

	"github.com/rocectl/rocectl/nic"
	"github.com/rocectl/rocectl/policy"
)

// afterLinkToggle is the Arg of a recompute that follows a link toggle
// (mlx5.AfterLinkToggleArg): its write waits for the link's speed first.
const afterLinkToggle = mlx5.AfterLinkToggleArg

// speedWait is how long a recompute waits for a link that mlx5 toggled
// to report its speed again: link training takes seconds.
const speedWait = 30 * time.Second

// waitSpeed waits until ethtool reports netdev's speed: mlx5 reads it
// from the port's operational protocol (PTYS), as calculate_xoff does, so
// once it is known a recompute computes for it. IFLA_OPERSTATE would not
// do: the carrier drops some time after mlx5_toggle_port_link returns (the
// port change event, update_carrier_work, linkwatch), so a read right
// after the PFC write still finds the link up. It stops early when ctx
// ends, with ctx's error.
func (h *Host) waitSpeed(ctx context.Context, netdev string) error {
	deadline := time.Now().Add(speedWait)
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for {
		mbps, err := h.K.Speed(netdev)
		if err != nil || mbps > 0 {
			return err
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("no link speed %v after the PFC change toggled the link: the buffer thresholds cannot be computed for it", speedWait)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("waiting for the link speed after the PFC change toggled the link: %w", ctx.Err())
		case <-tick.C:
		}
	}
}

// Owed is what one transaction's writes owe mlx5's buffer thresholds:
// the netdevs whose thresholds a write left computed for another state
// (an MTU change, a PFC change that toggled the link) and that no
// recompute has redone since (writeIdenticalPFC). An apply and the
// rollback of it in the same process share one, so that the rollback
// recomputes what the apply's writes changed and nothing else; a
// rollback from a journal on disk starts with none owed. The zero value
// owes nothing; a nil *Owed owes nothing and records nothing (a single
// write outside any transaction).
type Owed struct {
	mu      sync.Mutex
	netdevs map[string]bool
}

// add records that a write left netdev's thresholds owed a recompute.
func (o *Owed) add(netdev string) {
	if o == nil {
		return
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.netdevs == nil {
		o.netdevs = map[string]bool{}
	}
	o.netdevs[netdev] = true
}

// has says whether netdev's thresholds are owed a recompute.
func (o *Owed) has(netdev string) bool {
	if o == nil {
		return false
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.netdevs[netdev]
}

// take says whether netdev's thresholds are owed a recompute, and
// forgets it: the caller makes it.
func (o *Owed) take(netdev string) bool {
	if o == nil {
		return false
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	t := o.netdevs[netdev]
	delete(o.netdevs, netdev)
	return t
}

// linkSpeed is the netdev's speed in Mb/s, 0 when unknown: the file is
// missing, or holds what is no speed (-1 on a link that is down, or not
// a number at all).
func (h *Host) linkSpeed(netdev string) int {
	v, err := h.FS.ReadTrimmed("/sys/class/net/" + netdev + "/speed")
	if err != nil {
		return 0
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 0 {
		return 0
	}
	return n
}

// writeIdenticalPFC writes the port's ieee_pfc back as it is, the same
// values in both directions, for what the driver does on any PFC write:
// mlx5 in manual buffer mode recomputes its buffer thresholds for the MTU
// of the moment (see the top of this file), bnxt moves the PFC
// priorities' TCs onto its lossless queues (bnxt.go).
//
// An mlx5 recompute is made only when a write of this process (an MTU
// change, a PFC change that toggled the link) left the thresholds owed
// one since the last recompute: a rollback also reaches the recomputes of
// changes it never made, on a link that may be down, where a recompute
// would replace the port's thresholds with those of 40 Gb/s. One that
// follows a link toggle (afterLinkToggle) waits for the link's speed
// first, and writes again when the link was still going down as it wrote
// (the speed unknown again after the write), at most three times.
func writeIdenticalPFC(w *stepWriter) error {
	nd := w.port.Netdev
	c, _ := w.only()
	if c.Kind != policy.KindXoffRecompute {
		return writeSamePFC(w.h, nd)
	}
	if !w.owed.take(nd) {
		return nil // nothing of this process changed what the thresholds depend on
	}
	if c.Arg != afterLinkToggle {
		return writeSamePFC(w.h, nd)
	}
	for try := 1; ; try++ {
		if err := w.h.waitSpeed(w.ctx, nd); err != nil {
			return err
		}
		if err := writeSamePFC(w.h, nd); err != nil {
			return err
		}
		if mbps, err := w.h.K.Speed(nd); err != nil || mbps > 0 || try == 3 {
			return err
		}
	}
}

// writeSamePFC is the identical ieee_pfc write itself.
func writeSamePFC(h *Host, netdev string) error {
	st, err := h.K.DCB(netdev)
	if err != nil {
		return err
	}
	if st.PFC == nil {
		return nic.Unsupportedf("driver does not expose PFC")
	}
	return h.K.SetPFC(netdev, *st.PFC)
}
